"""Reading score files with Beam's own IO, so that the driver never holds the rows.

[`ReadScores`][] is a ``PTransform`` from a file pattern (a path, a glob, a directory's
``dir/*``; any file system Beam knows: local, ``gs://``, ``s3://``, HDFS) to a
``PCollection`` of **column batches**: ``dict``\\ s of NumPy arrays, one per named column,
of up to ``batch_size`` rows. It reads with Beam's sources, on the workers:

* Parquet (``.parquet``, ``.pq``): ``beam.io.ReadFromParquetBatched`` (record batches, only
  the named columns);
* TFRecord (``.tfrecord``, ``.tfrecords``, ``.tfr``): ``beam.io.ReadFromTFRecord`` of
  ``tf.train.Example`` records with one value per feature;
* CSV (anything else; ``.gz`` is read compressed): ``beam.io.ReadFromTextWithFilename``,
  one header line per file (the driver reads each file's first line to find the columns,
  never a row).

[`PrivateAUC`][] with ``slicing=`` takes these batches directly.

Examples:
    >>> ReadScores("scores-*.parquet", ["score", "label"]).format
    'parquet'
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

import apache_beam as beam
import numpy as np

BATCH_ROWS = 65_536
PARQUET_SUFFIXES = (".parquet", ".pq")
TFRECORD_SUFFIXES = (".tfrecord", ".tfrecords", ".tfr")
FORMATS = ("parquet", "tfrecord", "csv")


def file_format(file_pattern: str) -> str:
    """``"parquet"``, ``"tfrecord"`` or ``"csv"`` from the pattern's suffix (``.gz`` aside).

    Examples:
        >>> file_format("gs://bucket/part-*.csv.gz"), file_format("data/x.tfrecord")
        ('csv', 'tfrecord')
    """
    name = str(file_pattern).lower()
    if name.endswith(".gz"):
        name = name[: -len(".gz")]
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(TFRECORD_SUFFIXES):
        return "tfrecord"
    return "csv"


class ReadScores(beam.PTransform):
    """A file pattern -> column batches (``{column: array}``), read by Beam's sources.

    Args:
      file_pattern: a path or glob on any file system Beam supports.
      columns: the columns to read (score, label, and any weight, client or slice column).
      format: ``"parquet"``, ``"tfrecord"`` or ``"csv"`` (default: from the suffix).
      batch_size: rows per batch for TFRecord and CSV (Parquet keeps its record batches).

    Examples:
        >>> ReadScores("s.csv", ["score", "label"], batch_size=10).batch_size
        10
    """

    def __init__(
        self,
        file_pattern: str,
        columns: Sequence[str],
        *,
        format: str | None = None,
        batch_size: int = BATCH_ROWS,
        label: str | None = None,
    ):
        super().__init__(label)
        columns = list(dict.fromkeys(columns))
        if not columns or not all(isinstance(c, str) and c for c in columns):
            raise ValueError(f"ReadScores: columns must be non-empty names, got {columns!r}")
        self.format = format or file_format(file_pattern)
        if self.format not in FORMATS:
            raise ValueError(f"ReadScores: format must be one of {FORMATS}, got {format!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"ReadScores: batch_size must be an int >= 1, got {batch_size!r}")
        self.file_pattern, self.columns, self.batch_size = str(file_pattern), columns, batch_size

    def expand(self, pbegin):
        columns = self.columns
        if self.format == "parquet":
            return (
                pbegin
                | "ReadParquet"
                >> beam.io.ReadFromParquetBatched(self.file_pattern, columns=columns)
                | "ArrowToColumns" >> beam.Map(_arrow_columns, columns=columns)
            )
        batches = beam.BatchElements(min_batch_size=self.batch_size, max_batch_size=self.batch_size)
        if self.format == "tfrecord":
            return (
                pbegin
                | "ReadTFRecord" >> beam.io.ReadFromTFRecord(self.file_pattern)
                | "Batch" >> batches
                | "ParseExamples" >> beam.Map(_example_columns, columns=columns)
            )
        headers = csv_headers(self.file_pattern, columns)
        return (
            pbegin
            | "ReadCSV" >> beam.io.ReadFromTextWithFilename(self.file_pattern, skip_header_lines=1)
            | "Batch" >> batches
            | "ParseLines" >> beam.Map(_csv_columns, headers=headers, columns=columns)
        )


def _arrow_columns(table, columns: list[str]) -> dict[str, np.ndarray]:
    out = {}
    for name in columns:
        column = table.column(name)
        values = column.to_numpy(zero_copy_only=False)
        if column.null_count and values.dtype.kind in "iub":  # ints with nulls
            values = np.where(column.is_null().to_numpy(zero_copy_only=False), np.nan, values)
        out[name] = values
    return out


def _example_columns(records: list[bytes], columns: list[str]) -> dict[str, np.ndarray]:
    from tensorflow.core.example import example_pb2

    values: dict[str, list] = {name: [] for name in columns}
    for row, record in enumerate(records):
        example = example_pb2.Example.FromString(record)
        features = example.features.feature
        for name in columns:
            if name not in features:
                raise ValueError(f"ReadScores: a TFRecord example has no feature {name!r}")
            feature = features[name]
            kind = feature.WhichOneof("kind")
            found = list(getattr(feature, kind).value) if kind else []
            if len(found) != 1:
                raise ValueError(
                    f"ReadScores: feature {name!r} must hold one value per example, "
                    f"got {len(found)} (record {row} of a batch)"
                )
            value = found[0]
            values[name].append(value.decode() if isinstance(value, bytes) else value)
    return {name: np.asarray(found) for name, found in values.items()}


def csv_headers(file_pattern: str, columns: Sequence[str]) -> dict[str, list[int]]:
    """Every matched file's positions of ``columns`` (the driver reads one line per file).

    Raises ``ValueError`` when nothing matches or a file lacks a column."""
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    matched = FileSystems.match([file_pattern])[0].metadata_list
    if not matched:
        raise ValueError(f"ReadScores: no file matches {file_pattern!r}")
    headers = {}
    for metadata in matched:
        compression = CompressionTypes.detect_compression_type(metadata.path)
        with FileSystems.open(metadata.path, compression_type=compression) as handle:
            first = handle.readline().decode("utf-8-sig").strip()
        names = next(csv.reader([first])) if first else []
        missing = [name for name in columns if name not in names]
        if missing:
            raise ValueError(
                f"ReadScores: {metadata.path} has no column {missing[0]!r} "
                f"(its header: {', '.join(names) or 'empty'})"
            )
        headers[metadata.path] = [names.index(name) for name in columns]
    return headers


def _csv_columns(
    lines: list[tuple[str, str]], headers: dict[str, list[int]], columns: list[str]
) -> dict[str, np.ndarray]:
    import pandas as pd

    parts = []
    by_file: dict[str, list[str]] = {}
    for filename, line in lines:
        if line.strip():
            by_file.setdefault(filename, []).append(line)
    for filename, found in by_file.items():
        positions = _positions(headers, filename)
        frame = pd.read_csv(
            io.StringIO("\n".join(found)), header=None, usecols=positions, dtype=str
        )
        parts.append(
            {name: frame[pos].to_numpy() for name, pos in zip(columns, positions, strict=True)}
        )
    if not parts:
        return {name: np.zeros(0) for name in columns}
    return {name: _numeric(np.concatenate([part[name] for part in parts])) for name in columns}


def _positions(headers: dict[str, list[int]], filename: str) -> list[int]:
    if filename in headers:
        return headers[filename]
    for path, positions in headers.items():  # the same file named another way
        if path.endswith(filename) or filename.endswith(path):
            return positions
    raise ValueError(f"ReadScores: {filename} appeared after the pipeline was built")


def _numeric(values: np.ndarray) -> Any:
    """Numbers where every value is one (slice and client columns may stay strings)."""
    try:
        return values.astype(np.float64)
    except (TypeError, ValueError):  # strings; an empty cell stays missing (None)
        return np.array([None if _missing(v) else str(v) for v in values], dtype=object)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def available_columns(file_pattern: str, format: str | None = None) -> list[str]:
    """The columns of the first file that ``file_pattern`` matches, read from its metadata
    (Parquet's schema, CSV's header line, the first TFRecord example's features): never the
    rows. ``ValueError`` when nothing matches."""
    from apache_beam.io.filesystems import FileSystems

    matched = FileSystems.match([file_pattern])[0].metadata_list
    if not matched:
        raise ValueError(f"ReadScores: no file matches {file_pattern!r}")
    path = sorted(m.path for m in matched)[0]
    fmt = format or file_format(file_pattern)
    if fmt == "csv":
        return _csv_names(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        with FileSystems.open(path) as handle:
            return list(pq.read_schema(handle).names)
    import tensorflow as tf
    from tensorflow.core.example import example_pb2

    first = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    if first is None:
        return []
    return sorted(example_pb2.Example.FromString(first.numpy()).features.feature)


def _csv_names(path: str) -> list[str]:
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    compression = CompressionTypes.detect_compression_type(path)
    with FileSystems.open(path, compression_type=compression) as handle:
        first = handle.readline().decode("utf-8-sig").strip()
    return next(csv.reader([first])) if first else []
