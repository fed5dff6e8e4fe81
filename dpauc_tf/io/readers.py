"""Score files read in chunks: CSV, Parquet and TFRecord, one file, a directory or a glob.

[`iter_score_chunks`][] yields validated `ScoreChunk` s of at most ``chunk_rows``
examples, so that a file of any size is read in bounded memory. Validation is as strict as
[`dpauc_tf.io.scores.read_score_file`][]'s and every problem is a
[`ScoreFileError`][] with a one-line message that names
the file and the row (``row N``: the N-th example of that file, counted from 1, header not
counted): a missing column, a missing value, a NaN or text score, a score outside [0, 1]
(infinite included), a label other than 0/1, missing or mixed-type client ids.

Formats, chosen by the file name's suffix:

* ``.parquet`` / ``.pq``: ``pyarrow.parquet.ParquetFile.iter_batches`` (extra ``parquet``);
* ``.tfrecord`` / ``.tfrecords`` / ``.tfr`` (``.gz``: gzip): ``tf.train.Example`` records with one value
  per feature (``score`` a float, ``label`` an int or a float, ``client`` an int or bytes);
* anything else: CSV with a header row (``pandas.read_csv(chunksize=...)``).

What a path means (a file, a directory at any depth, a glob; names starting with ``.`` or
``_`` skipped at every level; compression by suffix, ``.csv.gz``, ``.tfrecord.gz``) is the
one rule of [`dpauc_tf.io.paths.input_files`][], which every backend reads by.

Examples:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "s.csv"
    >>> _ = path.write_text("score,label\\n0.2,0\\n0.7,1\\n0.4,1\\n")
    >>> [(c.first_row, c.labels.tolist()) for c in iter_score_chunks(path, chunk_rows=2)]
    [(1, [0, 1]), (3, [1])]
"""

from __future__ import annotations

import dataclasses
import io
import os
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dpauc_tf.core.extras import install_hint
from dpauc_tf.io.errors import EXCERPT_CHARS, ScoreFileError, column_excerpt, excerpt
from dpauc_tf.io.paths import (
    check_readable,
    describe,
    input_files,
)

DEFAULT_CHUNK_ROWS = 1 << 20


@dataclasses.dataclass(frozen=True)
class ScoreChunk:
    """Validated examples: labels (int8, 0/1), scores (float64 in [0, 1]), raw client ids.

    ``first_row`` is the row number (from 1) of the first example in its file ``source``.

    Examples:
        >>> ScoreChunk(np.array([1, 0], np.int8), np.array([0.5, 0.1]), None, "f.csv", 1).num_examples
        2
    """

    labels: np.ndarray
    scores: np.ndarray
    clients: np.ndarray | None
    source: str
    first_row: int

    @property
    def num_examples(self) -> int:
        return int(self.labels.size)


def file_format(path: Path) -> str:
    """``"parquet"``, ``"tfrecord"`` or ``"csv"`` from the name, a compression suffix aside
    ([`dpauc_tf.io.paths.describe`][])."""
    return describe(path)[0]


def score_files(path: str | os.PathLike) -> list[Path]:
    """The files a ``--scores`` argument names ([`dpauc_tf.io.paths.input_files`][], the one
    rule), each one that this reader can decompress."""
    files = input_files(path)
    check_readable(files, "dpauc")
    return [f.path for f in files]


def count_rows(files: list[Path]) -> int | None:
    """The number of examples when the metadata says it (Parquet), else ``None``."""
    if any(file_format(p) != "parquet" for p in files):
        return None
    pq = _pyarrow_parquet(files[0])
    try:
        return sum(pq.ParquetFile(p).metadata.num_rows for p in files)
    except Exception:  # the reader reports the error with its context
        return None


def iter_score_chunks(
    path: str | os.PathLike,
    *,
    score_column: str = "score",
    label_column: str = "label",
    client_column: str | None = None,
    client_column_optional: bool = False,
    from_logits: bool = False,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
) -> Iterator[ScoreChunk]:
    """Validated chunks of the score file(s) at ``path`` (see the module docstring).

    Column arguments as in [`dpauc_tf.io.scores.read_score_file`][];
    ``from_logits``: [`dpauc_tf.core.logit_scale.logit_scores`][] maps the scores (a
    strictly increasing map onto [0, 1] that, unlike the sigmoid, does not saturate the
    grid's end buckets). Empty chunks are skipped; a file of zero bytes is an error.
    """
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    columns = _Columns(score_column, label_column, client_column, client_column_optional)
    for file in score_files(path):
        if file.stat().st_size == 0:
            raise ScoreFileError(f"{file}: empty file")
        row = 1
        for labels, scores, *clients in _READERS[file_format(file)](file, columns, chunk_rows):
            clients = clients[0] if clients else None
            if len(labels) == 0:
                continue
            chunk = check_chunk(labels, scores, clients, str(file), row, from_logits)
            yield chunk
            row += chunk.num_examples


def iter_column_chunks(
    path: str | os.PathLike, columns: list[str], *, chunk_rows: int = DEFAULT_CHUNK_ROWS
) -> Iterator[tuple[str, int, dict[str, np.ndarray]]]:
    """``(source, first_row, {column: values})`` chunks of the named columns of the file(s)
    at ``path``, unvalidated (the caller checks the values), read by the same readers and
    path rule as [`iter_score_chunks`][]: the same one-line errors for a missing file or
    column, an empty, truncated or corrupt file."""
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    named = _Named(list(dict.fromkeys(columns)))
    for file in score_files(path):
        if file.stat().st_size == 0:
            raise ScoreFileError(f"{file}: empty file")
        row = 1
        for values in _READERS[file_format(file)](file, named, chunk_rows):
            size = len(values[0])
            if size:
                yield str(file), row, dict(zip(named.names, values, strict=True))
            row += size


@dataclasses.dataclass(frozen=True)
class _Named:
    names: list[str]

    def wanted(self, source: str, names: list[str]) -> list[str]:
        missing = [c for c in self.names if c not in names]
        if missing:
            raise ScoreFileError(
                f"{source}: missing column(s) {excerpt(', '.join(map(repr, missing)))}; "
                f"found {column_excerpt(names)}"
            )
        return self.names


@dataclasses.dataclass(frozen=True)
class _Columns:
    score: str
    label: str
    client: str | None
    client_optional: bool

    def wanted(self, source: str, names: list[str]) -> list[str]:
        """The columns to read, in order: label, score[, client] (checked present)."""
        client = self.present(source, names)
        return [self.label, self.score] + ([client] if client else [])

    def present(self, source: str, names: list[str]) -> str | None:
        """Checks the required columns; returns the client column to read (or None)."""
        required = [self.score, self.label]
        if self.client is not None and not self.client_optional:
            required.append(self.client)
        missing = [c for c in required if c not in names]
        if missing:
            raise ScoreFileError(
                f"{source}: missing column(s) {excerpt(', '.join(map(repr, missing)))}; "
                f"found {column_excerpt(names)}"
            )
        return self.client if self.client is not None and self.client in names else None


# -- readers: (labels, scores, clients) per chunk, unvalidated ----------------------------------
def _csv_columns(path: Path, columns: _Columns, chunk_rows: int):
    import pandas as pd

    source = None
    try:
        source = csv_source(path)
        reader = iter(pd.read_csv(source, chunksize=chunk_rows))
        wanted: list[str] = []
        index = 0
        while True:
            with warnings.catch_warnings():
                # A column of numbers and text: the row check below names the row; pandas'
                # advice (dtype=, low_memory=) is noise here.
                warnings.simplefilter("ignore", pd.errors.DtypeWarning)
                frame = next(reader, None)
            if frame is None:
                return
            if index == 0:
                wanted = columns.wanted(str(path), list(frame.columns))
            index += 1
            yield [frame[name].to_numpy() for name in wanted]
    except pd.errors.EmptyDataError:
        raise ScoreFileError(f"{path}: empty file") from None
    except ScoreFileError:
        raise
    except Exception as error:
        damaged = compression_error(path, error)
        if damaged is not None:
            raise damaged from None
        if isinstance(error, (pd.errors.ParserError, UnicodeDecodeError, OSError, ImportError)):
            raise ScoreFileError(f"{path}: cannot read ({_one_line(error)})") from None
        raise
    finally:
        if isinstance(source, io.IOBase):  # pandas leaves a stream it was given open
            source.close()


def compression_error(path: Path, error: BaseException) -> ScoreFileError | None:
    """The one-line error for a truncated or corrupt compressed file (gzip, bz2, xz, zip,
    zstd, tar, as pandas infers them from the suffix), or ``None`` for another error."""
    import tarfile
    import zipfile
    import zlib

    kinds: tuple[type[BaseException], ...] = (zlib.error, zipfile.BadZipFile, tarfile.TarError)
    try:
        import lzma

        kinds += (lzma.LZMAError,)
    except ImportError:  # Python built without lzma
        pass
    zstandard = sys.modules.get("zstandard")
    if zstandard is not None:
        kinds += (zstandard.ZstdError,)
    if isinstance(error, EOFError):
        return ScoreFileError(
            f"{path}: truncated compressed file: it ends before its end-of-stream marker "
            "(a copy or download that did not finish?); no result from a partial file"
        )
    text = _one_line(error)
    if isinstance(error, kinds) or (
        isinstance(error, OSError)
        and _compressed(path)
        and re.search(r"gzip|invalid data stream|compressed|magic|crc", text, re.IGNORECASE)
    ):
        return ScoreFileError(f"{path}: corrupt compressed file ({text})")
    return None


class _CheckedZstd(io.RawIOBase):
    """A ``.zst`` file's decompressed bytes, with an `EOFError` where it ends inside
    a frame (pandas' own zstd reader returns the bytes so far: a shorter file, silently)."""

    def __init__(self, path: Path):
        import zstandard

        self._zstd = zstandard
        self._file = open(path, "rb")  # closed by close()
        self._frame = zstandard.ZstdDecompressor().decompressobj()
        self._pending = b""
        self._offset = 0
        self._done = False

    def readable(self) -> bool:
        return True

    def _decompress(self, data: bytes) -> bytes:
        out = []
        while data:
            if self._frame.eof:
                self._frame = self._zstd.ZstdDecompressor().decompressobj()
            out.append(self._frame.decompress(data))
            data = self._frame.unused_data if self._frame.eof else b""
        return b"".join(out)

    def readinto(self, buffer) -> int:
        while self._offset == len(self._pending) and not self._done:
            data = self._file.read(1 << 16)
            if not data:
                if not self._frame.eof:
                    raise EOFError("the zstd stream ends inside a frame")
                self._done = True
            else:
                self._pending, self._offset = self._decompress(data), 0
        size = min(len(buffer), len(self._pending) - self._offset)
        buffer[:size] = self._pending[self._offset : self._offset + size]
        self._offset += size
        return size

    def close(self) -> None:
        self._file.close()
        super().close()


_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zip", ".zst", ".tar", ".tgz")


def _compressed(path: Path) -> bool:
    return path.suffix.lower() in _COMPRESSED_SUFFIXES


def csv_source(path: Path):
    """What ``pandas.read_csv`` is given for ``path``: the path, or a checked ``.zst`` stream."""
    return _CheckedZstd(path) if path.suffix.lower() == ".zst" else path


def _pyarrow_parquet(path: Path):
    try:
        import pyarrow.parquet as pq
    except ImportError as error:
        raise ScoreFileError(
            f"{path}: reading Parquet needs pyarrow: {install_hint('parquet')} ({error})"
        ) from None
    return pq


def _arrow_to_numpy(array, source: str, name: str, first_row: int) -> np.ndarray:
    if array.null_count:
        missing = int(np.flatnonzero(array.is_null().to_numpy(zero_copy_only=False))[0])
        raise ScoreFileError(f"{source}: row {first_row + missing}: {name} is missing (null)")
    return array.to_numpy(zero_copy_only=False)


def _parquet_columns(path: Path, columns: _Columns, chunk_rows: int):
    pq = _pyarrow_parquet(path)
    try:
        parquet = pq.ParquetFile(path)
        wanted = columns.wanted(str(path), list(parquet.schema_arrow.names))
        row = 1
        for batch in parquet.iter_batches(batch_size=chunk_rows, columns=wanted):
            arrays = [batch.column(name) for name in wanted]
            values = [
                _arrow_to_numpy(a, str(path), n, row) for a, n in zip(arrays, wanted, strict=True)
            ]
            row += batch.num_rows
            yield values
    except (OSError, ValueError) as error:
        if isinstance(error, ScoreFileError):
            raise
        raise ScoreFileError(f"{path}: cannot read ({_one_line(error)})") from None


def _tfrecord_kinds(path: Path, columns: _Columns) -> dict[str, str]:
    import tensorflow as tf

    first = next(iter(_tfrecord_dataset(path).take(1)), None)
    if first is None:
        return {}
    example = tf.train.Example.FromString(first.numpy())
    names = sorted(example.features.feature)
    wanted = columns.wanted(f"{path}: row 1", names)
    return {name: example.features.feature[name].WhichOneof("kind") for name in wanted}


# A TFRecord is a sequence of (uint64 length, uint32 CRC of it, data, uint32 CRC of the data).
_TFRECORD_FRAMING_BYTES = 16


def _tfrecord_columns(path: Path, columns: _Columns, chunk_rows: int):
    """TensorFlow's reader ends quietly at a record cut short (its length says more bytes
    than the file holds): the bytes of the records read must add up to the file's size."""
    import tensorflow as tf

    dtypes = {"float_list": tf.float32, "int64_list": tf.int64, "bytes_list": tf.string}
    compression = describe(path)[1]
    row = 1
    consumed = 0
    try:
        kinds = _tfrecord_kinds(path, columns)
        spec = {name: tf.io.VarLenFeature(dtypes[kind]) for name, kind in kinds.items()}
        for batch in _tfrecord_dataset(path).batch(chunk_rows):
            size = int(batch.shape[0])
            consumed += int(tf.reduce_sum(tf.strings.length(batch))) + size * (
                _TFRECORD_FRAMING_BYTES
            )
            parsed = tf.io.parse_example(batch, spec)
            values = []
            for name in kinds:  # in the order wanted (parse_example sorts its keys)
                sparse = parsed[name]
                lengths = np.bincount(sparse.indices[:, 0].numpy(), minlength=size)
                bad = np.flatnonzero(lengths != 1)
                if bad.size:
                    raise ScoreFileError(
                        f"{path}: row {row + int(bad[0])}: feature {name!r} has "
                        f"{int(lengths[bad[0]])} values (expected 1)"
                    )
                value = sparse.values.numpy()
                if value.dtype == object:
                    value = np.array([v.decode("utf-8", "replace") for v in value], dtype=object)
                values.append(value)
            row += size
            yield values
    except tf.errors.OpError as error:
        text = _one_line(error)
        if compression is not None:
            raise ScoreFileError(
                f"{path}: truncated or corrupt {compression} TFRecord file ({text}); no result "
                "from a damaged file"
            ) from None
        if _starts_with(path, _COMPRESSED_MAGICS):
            raise _compressed_tfrecord(path) from None
        where = re.search(r"(corrupted|truncated) record at (\d+)", text)
        if where and where.group(1) == "truncated":
            raise ScoreFileError(
                f"{path}: truncated TFRecord file: the record at byte {where.group(2)} is cut "
                "off (a copy or write that did not finish?); no result from a partial file"
            ) from None
        if where:
            raise ScoreFileError(
                f"{path}: corrupt TFRecord file: the record at byte {where.group(2)} fails its "
                "checksum; no result from a damaged file"
            ) from None
        raise ScoreFileError(f"{path}: cannot read ({text})") from None
    if compression is not None:
        # TensorFlow's gzip reader also ends quietly where the file is cut: the stream must
        # reach its end marker, and the records' bytes add up to its decompressed size.
        size_on_disk = _gzip_size(path)
        if consumed != size_on_disk:
            raise ScoreFileError(
                f"{path}: truncated gzip TFRecord file: the record at byte {consumed} of the "
                f"decompressed stream is cut off; no result from a partial file"
            )
        return
    size_on_disk = path.stat().st_size
    if consumed != size_on_disk and _starts_with(path, _COMPRESSED_MAGICS):
        raise _compressed_tfrecord(path)
    if consumed != size_on_disk:
        raise ScoreFileError(
            f"{path}: truncated TFRecord file: the record at byte {consumed} is cut off "
            f"(the file has {size_on_disk} bytes; a copy or write that did not finish?); "
            "no result from a partial file"
        )


_COMPRESSED_MAGICS = (b"\x1f\x8b", b"\x28\xb5\x2f\xfd")  # gzip, zstd
_READERS = {"parquet": _parquet_columns, "tfrecord": _tfrecord_columns, "csv": _csv_columns}


def _gzip_size(path: Path) -> int:
    """The decompressed size of a gzip file, read in bounded memory; a one-line
    [`ScoreFileError`][] where the stream is cut or corrupt."""
    import gzip
    import zlib

    size = 0
    try:
        with gzip.open(path, "rb") as stream:
            while block := stream.read(1 << 20):
                size += len(block)
    except EOFError:
        raise ScoreFileError(
            f"{path}: truncated gzip TFRecord file: it ends before its end-of-stream marker "
            "(a copy or write that did not finish?); no result from a partial file"
        ) from None
    except (OSError, zlib.error) as error:
        raise ScoreFileError(
            f"{path}: corrupt gzip TFRecord file ({_one_line(error)}); no result from a damaged "
            "file"
        ) from None
    return size


def _tfrecord_dataset(path: Path):
    """TensorFlow's reader of ``path``, gzip-decompressed for ``.gz`` (the path rule)."""
    import tensorflow as tf

    gzip = describe(path)[1] == "gzip"
    return tf.data.TFRecordDataset(str(path), compression_type="GZIP" if gzip else "")


def _compressed_tfrecord(path: Path) -> ScoreFileError:
    return ScoreFileError(
        f"{path}: a compressed file (gzip or zstd) named as a TFRecord; TFRecord files are "
        "read uncompressed: decompress it first"
    )


def _starts_with(path: Path, magics: tuple[bytes, ...]) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4).startswith(magics)
    except OSError:
        return False


def _one_line(error: BaseException) -> str:
    """A reader's error on one line, cut short: a parser's message may quote the file."""
    text = getattr(error, "message", None) or str(error)
    return excerpt(text, 2 * EXCERPT_CHARS) or type(error).__name__


# -- validation with row numbers ------------------------------------------------------------------
def _as_float(values: np.ndarray, what: str, source: str, first_row: int) -> np.ndarray:
    if values.dtype.kind in "biuf":
        return values.astype(np.float64, copy=False)
    import pandas as pd

    numbers = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(np.float64)
    text = np.array([isinstance(v, str) for v in values], dtype=bool)
    bad = np.flatnonzero(np.isnan(numbers) & text)
    if bad.size:
        raise ScoreFileError(
            f"{_where(source, first_row, int(bad[0]))}: {what} must be numbers "
            f"(got {excerpt(repr(values[bad[0]]))})"
        )
    return numbers


def _first_bad(ok: np.ndarray) -> int:
    return int(np.argmin(ok))


def _where(source: str, first_row: int | None, at: int | None, size: int = 0) -> str:
    """``source: row N`` (``rows A-B`` for a chunk), or ``source`` for arrays (no rows)."""
    if first_row is None:
        return source
    if at is None:
        return f"{source}: rows {first_row}-{first_row + size - 1}"
    return f"{source}: row {first_row + at}"


def check_chunk(labels, scores, clients, source, first_row, from_logits=False) -> ScoreChunk:
    """The one validation of examples (every reader and [`ScoreSet.checked`][dpauc_tf.io.scores.ScoreSet.checked]): labels
    0/1, scores in [0, 1] (after [`dpauc_tf.core.logit_scale.logit_scores`][] with ``from_logits``), client ids present and of
    one type; a [`ScoreFileError`][] naming ``source`` and the row otherwise
    (``first_row=None``: arrays, no row numbers)."""
    labels = _as_float(np.asarray(labels).ravel(), "labels", source, first_row)
    scores = _as_float(np.asarray(scores).ravel(), "scores", source, first_row)
    label_ok = (labels == 0) | (labels == 1)
    if not label_ok.all():
        at = _first_bad(label_ok)
        what = "label is missing or NaN" if np.isnan(labels[at]) else "labels must be 0 or 1"
        raise ScoreFileError(
            f"{_where(source, first_row, at)}: {what} (got {labels[at]:g}; NaN means missing)"
        )
    if from_logits:  # onto [0, 1] without saturating the grid's end buckets
        from dpauc_tf.core.logit_scale import logit_scores

        scores = logit_scores(scores)
    score_ok = (scores >= 0) & (scores <= 1)  # NaN fails both
    if not score_ok.all():
        at = _first_bad(score_ok)
        if np.isnan(scores[at]):
            what = "score is NaN or missing"
        else:
            what = f"scores must be in [0, 1] (got {scores[at]:g}; use --from-logits for logits)"
        raise ScoreFileError(f"{_where(source, first_row, at)}: {what}")
    if clients is not None:
        clients = _checked_clients(np.asarray(clients).ravel(), source, first_row)
    return ScoreChunk(labels.astype(np.int8), scores, clients, source, first_row or 1)


def _checked_clients(clients: np.ndarray, source: str, first_row: int) -> np.ndarray:
    if clients.dtype.kind == "f":
        nan = np.isnan(clients)
        if nan.any():
            at = int(np.argmax(nan))
            raise ScoreFileError(f"{_where(source, first_row, at)}: client id is missing (NaN)")
    if clients.dtype == object:
        missing = np.fromiter(
            (v is None or (isinstance(v, float) and v != v) for v in clients), bool, clients.size
        )
        if missing.any():
            at = int(np.argmax(missing))
            raise ScoreFileError(
                f"{_where(source, first_row, at)}: client id is missing (empty or NaN)"
            )
        kinds = sorted({type(c).__name__ for c in clients})
        if len(kinds) > 1:
            raise ScoreFileError(
                f"{_where(source, first_row, None, clients.size)}: client ids mix "
                f"types ({', '.join(kinds)}); use one type"
            )
    return clients
