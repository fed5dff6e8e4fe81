"""What an input path means: the one rule every backend reads by (``docs/inputs.md``).

[`input_files`][] turns a ``--scores`` argument (or any path given to a reader) into the
list of files to read, each with its format and compression (`InputFile`):

* a **file** is read whatever its name;
* a **directory** means every file below it, at any depth (a hive-partitioned directory,
  ``dir/country=fr/part-0.parquet``, is read as any other directory: ``key=value`` names add
  no column), skipping every name that starts with ``.`` or ``_`` **at any level below the
  directory** (``_SUCCESS``, ``.part-0.crc``, ``_temporary/``, ``.ipynb_checkpoints/``);
* a path with ``*``, ``?`` or ``[`` is a **glob** (``**`` crosses directories); the hidden
  rule applies to the parts of each match below the pattern's first wildcard;
* the files are sorted by path; they must all have one format.

A file's **format** comes from its name once a compression suffix is removed: ``.parquet``
/ ``.pq`` Parquet, ``.tfrecord`` / ``.tfrecords`` / ``.tfr`` TFRecord, anything else CSV.
Its **compression** comes from that suffix (``.gz``, ``.bz2``, ``.xz``, ``.zst``, ``.zip``,
``.tar``, ``.tgz``): ``scores.csv.gz`` is gzip CSV, ``scores.tfrecord.gz`` gzip TFRecord.
What each engine can decompress differs; `check_readable` says so in one line.

Only regular files are read: a named pipe (FIFO), a device (``/dev/null``, ``/dev/zero``)
or a socket is refused for what it is (a reader would block on a pipe with no writer, or
read a device without end). `read_regular_bytes` reads a small file (a thresholds
file) with the same rule and a size bound, without blocking on a pipe.

Examples:
    >>> describe("part-0.tfrecord.gz")
    ('tfrecord', 'gzip')
    >>> describe("scores.csv"), describe("x.PQ")
    (('csv', None), ('parquet', None))
    >>> is_hidden(("year=2024", "_temporary", "part-0.csv")), is_hidden(("a", "b.csv"))
    (True, False)
"""

from __future__ import annotations

import dataclasses
import glob as globbing
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from dpauc_tf.core.vocabulary import Vocabulary
from dpauc_tf.io.errors import ScoreFileError

PARQUET_SUFFIXES = (".parquet", ".pq")
TFRECORD_SUFFIXES = (".tfrecord", ".tfrecords", ".tfr")
# Compression by the last suffix (what pandas infers; ``.tgz`` is a gzip tar).
COMPRESSION_SUFFIXES = {
    ".gz": "gzip",
    ".bz2": "bz2",
    ".xz": "xz",
    ".zst": "zstd",
    ".zip": "zip",
    ".tar": "tar",
    ".tgz": "tar",
}


class ScoreFormat(Vocabulary):
    """The score file formats every reader takes (``format=``).

    Examples:
        >>> ScoreFormat("Parquet")
        <ScoreFormat.PARQUET: 'parquet'>
    """

    CSV = "csv"
    PARQUET = "parquet"
    TFRECORD = "tfrecord"

    @classmethod
    def argument(cls) -> str:
        return "format"


# What each reader decompresses: dpauc's own (pandas, TensorFlow), Beam's and Spark's.
READABLE = {
    "dpauc": {
        "csv": {None, "gzip", "bz2", "xz", "zstd", "zip", "tar"},
        "parquet": {None},
        "tfrecord": {None, "gzip"},
    },
    "beam": {
        "csv": {None, "gzip", "bz2", "xz", "zstd"},
        "parquet": {None},
        "tfrecord": {None, "gzip"},
    },
    "spark": {"csv": {None, "gzip", "bz2"}, "parquet": {None}},
}
_GLOB_MAGIC = "*?["


@dataclasses.dataclass(frozen=True)
class InputFile:
    """One file to read: its path, format (``csv``, ``parquet``, ``tfrecord``) and
    compression (``None`` or a name of `COMPRESSION_SUFFIXES`).

    Examples:
        >>> InputFile.of("d/part-0.csv.gz")
        InputFile(path=PosixPath('d/part-0.csv.gz'), format='csv', compression='gzip')
    """

    path: Path
    format: str
    compression: str | None

    @classmethod
    def of(cls, path: str | os.PathLike) -> InputFile:
        fmt, compression = describe(path)
        return cls(Path(path), fmt, compression)


def describe(path: str | os.PathLike) -> tuple[str, str | None]:
    """``(format, compression)`` of a file name (see the module docstring)."""
    name = os.path.basename(str(path)).lower()
    stem, suffix = os.path.splitext(name)
    compression = COMPRESSION_SUFFIXES.get(suffix)
    if compression is not None:
        name = stem
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet", compression
    if name.endswith(TFRECORD_SUFFIXES):
        return "tfrecord", compression
    return "csv", compression


def is_hidden(parts: Sequence[str]) -> bool:
    """Whether any of ``parts`` (path components) starts with ``.`` or ``_``."""
    return any(part.startswith((".", "_")) for part in parts if part not in (".", ".."))


def _kind(mode: int) -> str | None:
    """What a non-regular, non-directory file is, in words (``None`` for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def special_file_error(path: str | os.PathLike, mode: int, what: str = "") -> ScoreFileError:
    """The one-line refusal of a file that is not a regular file (``what``: the option)."""
    prefix = f"{what} " if what else ""
    return ScoreFileError(
        f"{prefix}{path}: {_kind(mode)}, not a regular file; only regular files are read (a "
        "pipe blocks until a writer comes and a device may never end): write the data to a "
        "file first"
    )


def _stat(path: str) -> os.stat_result:
    try:
        return os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise ScoreFileError(
                f"{path}: a broken symbolic link (its target is missing)"
            ) from None
        raise ScoreFileError(f"{path}: no such file or directory") from None
    except OSError as error:
        raise ScoreFileError(f"{path}: cannot read it ({error.strerror or error})") from None


def _regular(path: str, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise special_file_error(path, mode)


def _walk(top: str) -> tuple[list[str], int]:
    """Every file below ``top`` (hidden names pruned at every level) and how many hidden
    entries were skipped; symbolic links to directories are followed once."""
    found: list[str] = []
    skipped = 0
    seen: set[tuple[int, int]] = set()

    def on_error(error: OSError) -> None:
        raise ScoreFileError(f"{error.filename}: cannot read it ({error.strerror or error})")

    for directory, subdirectories, files in os.walk(top, onerror=on_error, followlinks=True):
        info = os.stat(directory)
        if (info.st_dev, info.st_ino) in seen:  # a link loop
            subdirectories[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        kept = [d for d in subdirectories if not d.startswith((".", "_"))]
        skipped += len(subdirectories) - len(kept)
        subdirectories[:] = sorted(kept)
        for name in files:
            if name.startswith((".", "_")):
                skipped += 1
            else:
                found.append(os.path.join(directory, name))
    return found, skipped


def _glob(pattern: str) -> tuple[list[str], int]:
    """The matches of ``pattern``, hidden ones (below its first wildcard) left out."""
    parts = Path(pattern).parts
    fixed = next(i for i, part in enumerate(parts) if any(c in part for c in _GLOB_MAGIC))
    found, skipped = [], 0
    for match in globbing.glob(pattern, recursive=True):
        if is_hidden(Path(match).parts[fixed:]):
            skipped += 1
        elif not os.path.isdir(match):
            found.append(match)
    return found, skipped


def input_files(path: str | os.PathLike) -> list[InputFile]:
    """The files that ``path`` names, sorted, each with its format and compression (the
    rule in the module docstring); a one-line [`ScoreFileError`][dpauc_tf.io.errors.ScoreFileError]
    for a missing path, an empty directory or glob, a pipe or device, or files of several
    formats."""
    text = os.fspath(path)
    if not isinstance(text, str):
        text = os.fsdecode(text)
    if any(c in text for c in _GLOB_MAGIC) and not os.path.exists(text):
        names, skipped = _glob(text)
        if not names:
            raise ScoreFileError(f"{text}: no file matches{_hidden_note(skipped)}")
    else:
        info = _stat(text)
        if stat.S_ISDIR(info.st_mode):
            names, skipped = _walk(text)
            if not names:
                raise ScoreFileError(f"{text}: directory has no files{_hidden_note(skipped)}")
        else:
            _regular(text, info.st_mode)
            names = [text]
    for name in names:
        _regular(name, _stat(name).st_mode)
    files = [InputFile.of(name) for name in sorted(names)]
    formats = {f.format for f in files}
    if len(formats) > 1:
        raise ScoreFileError(f"{text}: files of several formats ({', '.join(sorted(formats))})")
    return files


def _hidden_note(skipped: int) -> str:
    if not skipped:
        return ""
    return (
        f" ({skipped} hidden name(s) skipped: a name starting with '.' or '_' at any level "
        "is not read)"
    )


def check_readable(files: Sequence[InputFile], reader: str, what: str = "") -> None:
    """One line when ``reader`` (``"dpauc"``, ``"beam"``, ``"spark"``) cannot read one of
    ``files``: its format, or its compression (see `READABLE`)."""
    table = READABLE[reader]
    name = "" if reader == "dpauc" else f"--backend {reader} "
    prefix = f"{what} " if what else ""
    for file in files:
        if file.format not in table:
            readable = " and ".join(sorted(table))
            raise ScoreFileError(
                f"{prefix}{file.path}: a {file.format} file; {name or 'this reader '}reads "
                f"{readable} files"
            )
        if file.compression not in table[file.format]:
            kinds = sorted(c for c in table[file.format] if c) or ["none"]
            raise ScoreFileError(
                f"{prefix}{file.path}: a {file.compression}-compressed {file.format} file; "
                f"{name or 'this reader '}reads {file.format} compressed with "
                f"{', '.join(kinds)} only: decompress it first"
            )


def read_regular_bytes(path: str | os.PathLike, limit: int, what: str = "") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them: a pipe, a device
    or a socket is refused without blocking (it is opened non-blocking and checked before
    any read), and a larger file is refused (nothing unbounded is read)."""
    prefix = f"{what} " if what else ""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise ScoreFileError(f"{prefix}{path}: cannot read it (no such file)") from None
    except OSError as error:
        raise ScoreFileError(
            f"{prefix}{path}: cannot read it ({error.strerror or error})"
        ) from None
    with os.fdopen(descriptor, "rb") as handle:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise ScoreFileError(f"{prefix}{path}: a directory, not a file")
        if not stat.S_ISREG(mode):
            raise special_file_error(path, mode, what)
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ScoreFileError(
            f"{prefix}{path}: larger than {limit:,} bytes, the most this file is read to "
            "(is it the right file?)"
        )
    return data
