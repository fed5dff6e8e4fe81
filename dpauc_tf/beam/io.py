"""Reading score files with Beam's own IO, so that the driver never holds the rows.

[`ReadScores`][] is a ``PTransform`` from a path (a file, a glob, a directory, a
hive-partitioned directory; any file system Beam knows: local, ``gs://``, ``s3://``, HDFS)
or a list of files to a ``PCollection`` of **column batches**: ``dict``\\ s of NumPy
arrays, one per named column, of up to ``batch_size`` rows. What a path means is the one
rule of [`dpauc_tf.io.paths.input_files`][] (the same files as every other backend: names
starting with ``.`` or ``_`` skipped at every level below a directory or a glob's
wildcard; compression by suffix; `input_files` here applies it on Beam's file systems
too). It reads with Beam's sources, on the workers (``ReadAll*`` of the files):

* Parquet (``.parquet``, ``.pq``): ``beam.io.ReadFromParquetBatched`` (record batches, only
  the named columns);
* TFRecord (``.tfrecord``, ``.tfrecords``, ``.tfr``; ``.gz`` gzip): ``ReadAllFromTFRecord``
  of ``tf.train.Example`` records with one value per feature;
* CSV (anything else; ``.gz``, ``.bz2``, ``.xz``, ``.zst`` read compressed): ``ReadAllFromText``,
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
import os
import re
from collections.abc import Sequence
from typing import Any

import apache_beam as beam
import numpy as np

from dpauc_tf.io.paths import (
    InputFile,
    ScoreFormat,
    check_readable,
    describe,
    is_hidden,
)
from dpauc_tf.io.paths import input_files as local_input_files
from dpauc_tf.io.scores import ScoreFileError

BATCH_ROWS = 65_536
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def file_format(file_pattern: str) -> str:
    """``"parquet"``, ``"tfrecord"`` or ``"csv"`` from the name, a compression suffix aside
    ([`dpauc_tf.io.paths.describe`][]).

    Examples:
        >>> file_format("gs://bucket/part-*.csv.gz"), file_format("data/x.tfrecord.gz")
        ('csv', 'tfrecord')
    """
    return describe(str(file_pattern))[0]


def input_files(path: str | Sequence[str]) -> list[InputFile]:
    """The files that ``path`` names by the one path rule: a local path through
    [`dpauc_tf.io.paths.input_files`][]; a path on another of Beam's file systems
    (``gs://``, ``s3://``, ...) through ``FileSystems.match``, with the same hidden-name rule
    (a directory is matched as ``dir/**``); a list: those files. Every file is one Beam can
    read (its format and compression), else ``ValueError`` in one line."""
    if not isinstance(path, str):
        files = [InputFile.of(str(p)) for p in path]
        if not files:
            raise ValueError("ReadScores: an empty list of files")
    elif _SCHEME.match(path) is None or path.startswith("file://"):
        try:
            files = local_input_files(path.removeprefix("file://"))
        except ScoreFileError as error:
            raise ValueError(f"ReadScores: {error}") from None
    else:
        files = _remote_input_files(path)
    try:
        check_readable(files, "beam")
    except ScoreFileError as error:
        raise ValueError(f"ReadScores: {error}") from None
    formats = {f.format for f in files}
    if len(formats) > 1:
        raise ValueError(f"ReadScores: files of several formats ({', '.join(sorted(formats))})")
    return files


def _remote_input_files(path: str) -> list[InputFile]:
    from apache_beam.io.filesystems import FileSystems

    magic = any(c in path for c in "*?[")
    pattern, base = path, path
    if magic:
        parts = path.split("/")
        fixed = next(i for i, part in enumerate(parts) if any(c in part for c in "*?["))
        base = "/".join(parts[:fixed])
    else:
        found = FileSystems.match([path])[0].metadata_list
        exact = [m for m in found if m.path.rstrip("/") == path.rstrip("/") and m.size_in_bytes]
        if exact:
            return [InputFile.of(exact[0].path)]
        pattern = path.rstrip("/") + "/**"
    matched = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    base = base.rstrip("/") + "/"
    kept = [
        p for p in matched if not p.endswith("/") and not is_hidden(p.removeprefix(base).split("/"))
    ]
    if not kept:
        raise ValueError(f"ReadScores: no file matches {path!r}")
    return [InputFile.of(p) for p in kept]


class ReadScores(beam.PTransform):
    """A file pattern -> column batches (``{column: array}``), read by Beam's sources.

    Args:
      file_pattern: a path (file, directory, glob) on any file system Beam supports, read by
        the one path rule (`input_files`), or a list of files.
      columns: the columns to read (score, label, and any weight, client or slice column).
      format: ``"parquet"``, ``"tfrecord"`` or ``"csv"`` (default: from the suffix).
      batch_size: rows per batch for TFRecord and CSV (Parquet keeps its record batches).

    Examples:
        >>> ReadScores("s.csv", ["score", "label"], batch_size=10).batch_size
        10
    """

    def __init__(
        self,
        file_pattern: str | Sequence[str],
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
        self._explicit_format = format is not None
        if format is None and (not isinstance(file_pattern, str) or os.path.isdir(file_pattern)):
            format = input_files(file_pattern)[0].format  # a directory's files say it
        try:
            self.format = ScoreFormat(format or file_format(file_pattern)).value
        except ValueError as error:
            raise ValueError(f"ReadScores: {error}") from None
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"ReadScores: batch_size must be an int >= 1, got {batch_size!r}")
        self.file_pattern = file_pattern if isinstance(file_pattern, str) else list(file_pattern)
        self.columns, self.batch_size = columns, batch_size

    def expand(self, pbegin):
        columns = self.columns
        files = input_files(self.file_pattern)
        if not self._explicit_format:  # the files' names say it (a pattern "dir/*" does not)
            self.format = files[0].format
        paths = [str(f.path) for f in files]
        names = pbegin | "Files" >> beam.Create(paths, reshuffle=False)
        if self.format == "parquet":
            return (
                names
                | "ReadParquet" >> beam.io.ReadAllFromParquetBatched(columns=columns)
                | "ArrowToColumns" >> beam.Map(_arrow_columns, columns=columns)
            )
        batches = beam.BatchElements(min_batch_size=self.batch_size, max_batch_size=self.batch_size)
        if self.format == "tfrecord":
            return (
                names
                | "ReadTFRecord" >> beam.io.ReadAllFromTFRecord()
                | "Batch" >> batches
                | "ParseExamples" >> beam.Map(_example_columns, columns=columns)
            )
        headers = csv_headers(paths, columns)
        return (
            names
            | "ReadCSV" >> beam.io.ReadAllFromText(skip_header_lines=1, with_filename=True)
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


def csv_headers(file_pattern: str | Sequence[str], columns: Sequence[str]) -> dict[str, list[int]]:
    """Every file's positions of ``columns`` (the files of the path rule, [`input_files`][];
    the driver reads one line per file).

    Raises ``ValueError`` when nothing matches or a file lacks a column."""
    headers = {}
    for file in input_files(file_pattern):
        path = str(file.path)
        names = _csv_names(path)
        missing = [name for name in columns if name not in names]
        if missing:
            raise ValueError(
                f"ReadScores: {path} has no column {missing[0]!r} "
                f"(its header: {', '.join(names) or 'empty'})"
            )
        headers[path] = [names.index(name) for name in columns]
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


def available_columns(file_pattern: str | Sequence[str], format: str | None = None) -> list[str]:
    """The columns of the first file that ``file_pattern`` names (the path rule,
    [`input_files`][]), read from its metadata (Parquet's schema, CSV's header line, the first
    TFRecord example's features): never the rows. ``ValueError`` when nothing matches."""
    from apache_beam.io.filesystems import FileSystems

    first = input_files(file_pattern)[0]
    path = str(first.path)
    fmt = format or first.format
    if fmt == "csv":
        return _csv_names(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        with FileSystems.open(path) as handle:
            return list(pq.read_schema(handle).names)
    import tensorflow as tf
    from tensorflow.core.example import example_pb2

    gzip = first.compression == "gzip"
    dataset = tf.data.TFRecordDataset(path, compression_type="GZIP" if gzip else "")
    first = next(iter(dataset.take(1)), None)
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
