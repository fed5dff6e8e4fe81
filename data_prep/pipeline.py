"""End-to-end preparation: a Criteo file (or synthetic rows) -> a prepared directory.

Two streaming passes with bounded memory: pass 1 reads every row and fits vocabularies and
scaling on the training part; pass 2 reads again, transforms, and writes shards per split.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from data_prep.io import (
    FORMAT_VERSION,
    METADATA_FILE,
    VOCABULARIES_FILE,
    ShardWriter,
    replacing_directory,
    write_json,
)
from data_prep.preprocess import (
    ChunkSource,
    check_test_fraction,
    fit_preprocessing,
    resolve_seed,
    transform_splits,
)
from data_prep.reader import DEFAULT_CHUNK_ROWS, CriteoFormat, iter_chunks, sniff_format
from data_prep.schema import (
    CATEGORICAL_COLUMNS,
    CATEGORICAL_IDS_KEY,
    INTEGER_COLUMNS,
    INTEGER_FEATURES_KEY,
    LABEL_COLUMN,
    LABEL_KEY,
    OOV_ID,
)
from data_prep.synthetic import SyntheticCriteo


def prepare_criteo(
    input_path: str | os.PathLike,
    output_dir: str | os.PathLike,
    *,
    test_fraction: float = 0.1,
    seed: int | None = 0,
    min_count: int = 1,
    integer_transform: str = "identity",
    strict: bool = False,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: bool = False,
) -> dict[str, Any]:
    """Prepare a Criteo file (raw TSV, Kaggle CSV or DeepCTR CSV; gzip or not).

    Args:
        input_path: the file.
        output_dir: the prepared directory. It is written as a temporary sibling that replaces
            it only when everything succeeded: a failed run leaves an earlier output intact.
            An existing directory must be empty or hold prepared data only.
        test_fraction: each row goes to the test split with this probability.
        seed: the split's seed; ``None`` draws one (recorded in the metadata).
        min_count: categorical values seen fewer times in the training part map to the OOV id.
        integer_transform: ``"identity"`` (the paper: plain min-max) or ``"log1p"``.
        strict: stop at the first malformed line instead of counting and skipping it.
        chunk_rows: lines per chunk (bounds memory).
        progress: show progress bars.

    Returns:
        The metadata written to ``output_dir/metadata.json``.

    Example:
        >>> import tempfile, pathlib
        >>> from data_prep.synthetic import SyntheticCriteo
        >>> tmp = pathlib.Path(tempfile.mkdtemp())
        >>> SyntheticCriteo(seed=1).write_tsv(tmp / "train.txt", 500)
        >>> meta = prepare_criteo(tmp / "train.txt", tmp / "prepared", seed=0)
        >>> meta["splits"]["train"]["rows"] + meta["splits"]["test"]["rows"]
        500
    """
    input_path = os.fspath(input_path)
    if not os.path.isfile(input_path):
        raise FileNotFoundError(f"no such file: {input_path}")
    fmt = sniff_format(input_path)

    def source(report, description):
        return iter_chunks(
            input_path,
            fmt=fmt,
            chunk_rows=chunk_rows,
            strict=strict,
            report=report,
            progress=progress,
            description=description,
        )

    origin = {
        "path": os.path.abspath(input_path),
        "format": fmt.value,
        "bytes": os.path.getsize(input_path),
    }
    return _prepare(
        source,
        output_dir,
        origin=origin,
        test_fraction=test_fraction,
        seed=seed,
        min_count=min_count,
        integer_transform=integer_transform,
    )


def prepare_synthetic(
    rows: int,
    output_dir: str | os.PathLike,
    *,
    test_fraction: float = 0.1,
    seed: int | None = 0,
    min_count: int = 1,
    integer_transform: str = "identity",
    progress: bool = False,
) -> dict[str, Any]:
    """Generate ``rows`` synthetic rows (:class:`SyntheticCriteo` with ``seed``) and prepare them
    like a Criteo file (the same seed also drives the split).

    Example:
        >>> import tempfile
        >>> meta = prepare_synthetic(1000, tempfile.mkdtemp(), seed=0)
        >>> meta["splits"]["test"]["rows"]
        97
    """
    seed = resolve_seed(seed)
    generator = SyntheticCriteo(seed=seed)
    if rows < 1:
        raise ValueError(f"rows must be at least 1, got {rows}")

    def source(report, description):
        from tqdm.auto import tqdm

        bar = tqdm(total=rows, desc=description, unit="rows", disable=not progress, leave=False)
        try:
            for chunk in generator.chunks(rows):
                report.data_lines += len(chunk)
                report.rows += len(chunk)
                bar.update(len(chunk))
                yield chunk
        finally:
            bar.close()

    origin = {"synthetic": {"rows": rows, "seed": seed, "positive_rate": generator.positive_rate}}
    return _prepare(
        source,
        output_dir,
        origin=origin,
        test_fraction=test_fraction,
        seed=seed,
        min_count=min_count,
        integer_transform=integer_transform,
    )


def _prepare(
    source: ChunkSource,
    output_dir: str | os.PathLike,
    *,
    origin: dict[str, Any],
    test_fraction: float,
    seed: int | None,
    min_count: int,
    integer_transform: str,
) -> dict[str, Any]:
    check_test_fraction(test_fraction)
    seed = resolve_seed(seed)
    started = time.perf_counter()
    with replacing_directory(output_dir) as work_dir:
        return _prepare_into(
            source,
            work_dir,
            started=started,
            origin=origin,
            test_fraction=test_fraction,
            seed=seed,
            min_count=min_count,
            integer_transform=integer_transform,
        )


def _prepare_into(
    source: ChunkSource,
    output_dir: Path,
    *,
    started: float,
    origin: dict[str, Any],
    test_fraction: float,
    seed: int,
    min_count: int,
    integer_transform: str,
) -> dict[str, Any]:
    preprocessing, report = fit_preprocessing(
        source,
        seed=seed,
        test_fraction=test_fraction,
        min_count=min_count,
        integer_transform=integer_transform,
    )
    writers = {split: ShardWriter(output_dir, split) for split in ("train", "test")}
    transform_splits(
        source,
        preprocessing,
        {split: writer.write for split, writer in writers.items()},
        seed=seed,
        test_fraction=test_fraction,
    )
    write_json(
        output_dir / VOCABULARIES_FILE,
        dict(zip(CATEGORICAL_COLUMNS, preprocessing.vocabularies, strict=True)),
    )
    metadata = {
        "format_version": FORMAT_VERSION,
        "source": origin,
        "seed": seed,
        "test_fraction": test_fraction,
        "split_rule": "row i is a test row iff hash(seed, i) < test_fraction (i = 0-based data line)",
        "min_count": min_count,
        "columns": {
            "label": LABEL_COLUMN,
            "integer": list(INTEGER_COLUMNS),
            "categorical": list(CATEGORICAL_COLUMNS),
        },
        "arrays": {
            LABEL_KEY: "int8 [n], 0 or 1",
            INTEGER_FEATURES_KEY: "float32 [n, 13], scaled into [0, 1]",
            CATEGORICAL_IDS_KEY: "int32 [n, 26], column j in [0, vocab_sizes[j])",
        },
        "oov_id": OOV_ID,
        "vocab_sizes": preprocessing.vocab_sizes,
        "vocabularies_file": VOCABULARIES_FILE,
        "integer_scaling": preprocessing.scaling_metadata(),
        "splits": {split: writer.summary() for split, writer in writers.items()},
        "read_report": report.to_dict(),
        "seconds": round(time.perf_counter() - started, 3),
    }
    if writers["train"].rows == 0 or writers["test"].rows == 0:
        empty = "train" if writers["train"].rows == 0 else "test"
        raise ValueError(
            f"the {empty} split is empty ({report.rows} valid rows, test fraction "
            f"{test_fraction}); give more rows or another test fraction"
        )
    write_json(output_dir / METADATA_FILE, metadata)
    return metadata


__all__ = ["CriteoFormat", "prepare_criteo", "prepare_synthetic"]
