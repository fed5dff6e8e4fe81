"""Reading Criteo files: format sniffing, gzip, chunked parsing, malformed-line accounting.

Three layouts are understood (the Criteo Display Advertising Challenge's raw TSV and the two common CSV exports):

* raw TSV, the layout of Criteo's ``train.txt``: 40 tab-separated fields
  (label, I1..I13, C1..C26), no header;
* Kaggle CSV: a header ``Id,Label,I1,...,C26`` and 41 comma-separated fields;
* DeepCTR CSV: a header ``label,I1,...,C26`` and 40 comma-separated fields, with the integer
  columns written as floats (``1382.0``).

Any of them may be gzip-compressed (detected from the magic bytes, not the file name); a
truncated or corrupt gzip stream raises :class:`MalformedInputError` naming the file.
Bytes that are not UTF-8 are kept apart, not merged: see :func:`escape_undecodable`.
An empty field is a missing value. Lines that drop trailing empty fields are padded.
Lines with a wrong field count, a label other than 0/1, or a non-integer value in an integer
column are *malformed*: they are counted and reported with their line numbers, and skipped,
unless ``strict=True``, which raises :class:`MalformedInputError` at the first one.
"""

from __future__ import annotations

import contextlib
import csv
import enum
import gzip
import io
import itertools
import os
import re
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

import numpy as np
import pandas as pd

from data_prep.schema import (
    INTEGER_COLUMNS,
    MIN_FIELDS_TO_PAD,
    NUM_CATEGORICAL_FEATURES,
    NUM_INTEGER_FEATURES,
    NUM_RAW_FIELDS,
)

DEFAULT_CHUNK_ROWS = 200_000
_GZIP_MAGIC = b"\x1f\x8b"
_EXCERPT_CHARS = 120
_UNDECODABLE = re.compile("[\udc80-\udcff]")  # what errors="surrogateescape" makes of bad bytes
_MARK = "\ufffd"


class CriteoFormat(str, enum.Enum):
    """The on-disk layouts of Criteo data that :func:`iter_chunks` reads."""

    RAW_TSV = "raw_tsv"
    KAGGLE_CSV = "kaggle_csv"
    DEEPCTR_CSV = "deepctr_csv"

    @property
    def separator(self) -> str:
        return "\t" if self is CriteoFormat.RAW_TSV else ","

    @property
    def header_lines(self) -> int:
        return 0 if self is CriteoFormat.RAW_TSV else 1

    @property
    def leading_id_fields(self) -> int:
        """Fields before the label (Kaggle's ``Id``), dropped when parsing."""
        return 1 if self is CriteoFormat.KAGGLE_CSV else 0

    @property
    def num_fields(self) -> int:
        return NUM_RAW_FIELDS + self.leading_id_fields


class MalformedInputError(ValueError):
    """Raised for a malformed line when reading with ``strict=True``, or for unreadable input."""


@dataclass(frozen=True)
class MalformedLine:
    """One skipped line: its 1-based line number in the file, why, and its first characters."""

    line_number: int
    reason: str
    excerpt: str


@dataclass
class ReadReport:
    """What reading a file found: row counts and the malformed lines (the first few in full).

    Example:
        >>> report = ReadReport()
        >>> report.add_malformed(MalformedLine(3, "expected 40 fields, found 12", "0\\t1"))
        >>> report.malformed_lines
        1
    """

    max_examples: int = 100
    data_lines: int = 0
    rows: int = 0
    padded_lines: int = 0
    malformed_lines: int = 0
    malformed_by_reason: Counter = field(default_factory=Counter)
    malformed_examples: list[MalformedLine] = field(default_factory=list)

    def add_malformed(self, bad: MalformedLine) -> None:
        self.malformed_lines += 1
        self.malformed_by_reason[_reason_kind(bad.reason)] += 1
        if len(self.malformed_examples) < self.max_examples:
            self.malformed_examples.append(bad)

    def to_dict(self) -> dict:
        return {
            "data_lines": self.data_lines,
            "rows": self.rows,
            "padded_lines": self.padded_lines,
            "malformed_lines": self.malformed_lines,
            "malformed_by_reason": dict(sorted(self.malformed_by_reason.items())),
            "malformed_examples": [
                {"line": m.line_number, "reason": m.reason, "excerpt": m.excerpt}
                for m in self.malformed_examples
            ],
        }

    def summary(self) -> str:
        text = (
            f"{self.rows:,} rows read, {self.malformed_lines:,} malformed lines skipped, "
            f"{self.padded_lines:,} short lines padded"
        )
        if self.malformed_examples:
            first = self.malformed_examples[0]
            text += f" (first malformed: line {first.line_number}: {first.reason})"
        return text


def _reason_kind(reason: str) -> str:
    """The reason without its specifics, for counting (``"field count"``, ``"label"``...)."""
    if reason.startswith("expected"):
        return "field count"
    if reason.startswith("empty"):
        return "empty line"
    if reason.startswith("label"):
        return "label"
    return "integer value"


@dataclass
class ParsedChunk:
    """Parsed rows of one chunk.

    Attributes:
        labels: int8 array ``(n,)`` of 0/1.
        integers: float64 array ``(n, 13)``, NaN where the field was empty.
        categoricals: object array ``(n, 26)`` of strings, ``""`` where the field was empty.
        row_index: int64 array ``(n,)``, the 0-based position of each row among the file's data
            lines (malformed lines included), so that it does not depend on chunking.
        line_numbers: int64 array ``(n,)``, 1-based line numbers in the file.
    """

    labels: np.ndarray
    integers: np.ndarray
    categoricals: np.ndarray
    row_index: np.ndarray
    line_numbers: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    @staticmethod
    def concatenate(chunks: list[ParsedChunk]) -> ParsedChunk:
        if not chunks:
            return ParsedChunk(
                labels=np.zeros(0, np.int8),
                integers=np.zeros((0, NUM_INTEGER_FEATURES)),
                categoricals=np.zeros((0, NUM_CATEGORICAL_FEATURES), dtype=object),
                row_index=np.zeros(0, np.int64),
                line_numbers=np.zeros(0, np.int64),
            )
        return ParsedChunk(
            labels=np.concatenate([c.labels for c in chunks]),
            integers=np.concatenate([c.integers for c in chunks]),
            categoricals=np.concatenate([c.categoricals for c in chunks]),
            row_index=np.concatenate([c.row_index for c in chunks]),
            line_numbers=np.concatenate([c.line_numbers for c in chunks]),
        )


@contextlib.contextmanager
def open_text(path: str | os.PathLike) -> Iterator[tuple[IO[str], IO[bytes]]]:
    """Open a plain or gzip-compressed text file (gzip is detected from its magic bytes).

    Yields ``(text, raw)``: the decoded text stream and the underlying file, whose ``tell()``
    is the number of (compressed) bytes consumed so far. Bytes that are not UTF-8 decode to
    lone surrogates (``errors="surrogateescape"``, one per byte, so distinct bytes stay
    distinct); :func:`parse_lines` spells them with :func:`escape_undecodable`.

    Raises:
        MalformedInputError: when reading a truncated or corrupt gzip stream (the message
            names ``path``).
    """
    with open(path, "rb") as raw:
        magic = raw.peek(2)[:2]
        compressed = magic == _GZIP_MAGIC
        stream: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        text = io.TextIOWrapper(stream, encoding="utf-8", errors="surrogateescape", newline="")
        try:
            yield text, raw
        except EOFError as error:
            if not compressed:
                raise
            raise MalformedInputError(
                f"{os.fspath(path)}: truncated gzip file ({error})"
            ) from error
        except (gzip.BadGzipFile, zlib.error) as error:
            if not compressed:
                raise
            raise MalformedInputError(f"{os.fspath(path)}: corrupt gzip file ({error})") from error
        finally:
            text.detach()
            if stream is not raw:
                stream.close()


def escape_undecodable(text: str) -> str:
    """Spell each undecodable byte (a lone surrogate from ``surrogateescape``) as U+FFFD and
    its two lowercase hex digits, and double every U+FFFD that was in the input.

    The result is valid Unicode (JSON- and UTF-8-safe), valid UTF-8 text is unchanged unless
    it holds U+FFFD, and distinct byte strings stay distinct (the spelling can be undone).

    Example:
        >>> escape_undecodable(b"a\\xff\\xfe".decode("utf-8", "surrogateescape"))
        'a\ufffdff\ufffdfe'
        >>> escape_undecodable("\ufffdff")
        '\ufffd\ufffdff'
    """
    if text.isascii():
        return text
    if _MARK in text:
        text = text.replace(_MARK, _MARK * 2)
    return _UNDECODABLE.sub(lambda m: f"{_MARK}{ord(m.group()) - 0xDC00:02x}", text)


def sniff_format(path: str | os.PathLike) -> CriteoFormat:
    """Tell which Criteo layout ``path`` holds, from its first line.

    Raises:
        MalformedInputError: if the first line matches none of the layouts.
    """
    with open_text(path) as (f, _):
        first = f.readline().rstrip("\r\n")
    if not first:
        raise MalformedInputError(f"{path}: the file is empty")
    lowered = first.lower()
    if lowered.startswith("id,label,"):
        return CriteoFormat.KAGGLE_CSV
    if lowered.startswith("label,i1,"):
        return CriteoFormat.DEEPCTR_CSV
    if "\t" in first:
        return CriteoFormat.RAW_TSV
    raise MalformedInputError(
        f"{path}: not a Criteo file: the first line is neither a Kaggle header (Id,Label,...), "
        f"a DeepCTR header (label,I1,...) nor tab-separated raw data: {first[:_EXCERPT_CHARS]!r}"
    )


def _parse_integer_field(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Parse strings as integers. Returns (float64 values with NaN for empty, bad mask)."""
    series = pd.Series(values, dtype=object)
    empty = (series == "").to_numpy()
    numbers = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, copy=True)
    with np.errstate(invalid="ignore"):
        not_integral = np.isfinite(numbers) & (np.floor(numbers) != numbers)
    bad = (np.isnan(numbers) & ~empty) | np.isinf(numbers) | not_integral
    numbers[empty] = np.nan
    return numbers, bad


def _parse_fields(
    lines: list[str], fmt: CriteoFormat, first_line_number: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split lines of exactly ``fmt.num_fields`` fields.

    Returns ``(numbers, bad, categoricals)``: the label and 13 integers as float64 ``[n, 14]``
    (NaN where empty), a mask of values that are not integers ``[n, 14]``, and the categorical
    strings ``[n, 26]`` (``""`` where empty).

    Fast path: pandas parses the numeric columns as floats; a chunk holding a non-numeric value
    falls back to parsing every field as a string and converting column by column.
    """
    lead = fmt.leading_id_fields
    numeric = list(range(lead, lead + 1 + NUM_INTEGER_FEATURES))
    options = {
        "sep": fmt.separator,
        "header": None,
        "names": range(fmt.num_fields),
        "quoting": csv.QUOTE_NONE,
        "engine": "c",
    }
    text = "\n".join(lines)
    try:
        table = pd.read_csv(
            io.StringIO(text),
            dtype={c: (np.float64 if c in numeric else object) for c in range(fmt.num_fields)},
            na_values={c: [""] for c in numeric},
            keep_default_na=False,
            **options,
        )
        numbers = table.iloc[:, numeric].to_numpy(dtype=np.float64, copy=True)
        with np.errstate(invalid="ignore"):
            bad = np.isinf(numbers) | (np.isfinite(numbers) & (np.floor(numbers) != numbers))
    except ValueError:  # a non-numeric value somewhere in the chunk
        table = pd.read_csv(io.StringIO(text), dtype=str, na_filter=False, **options)
        fields = table.to_numpy(dtype=object)
        numbers = np.empty((len(lines), len(numeric)), dtype=np.float64)
        bad = np.zeros((len(lines), len(numeric)), dtype=bool)
        for k, column in enumerate(numeric):
            numbers[:, k], bad[:, k] = _parse_integer_field(fields[:, column])
    if "\x00" in text:  # pandas < 3 reads "5\x00" as 5: a line with NUL bytes is malformed
        nul = np.fromiter(("\x00" in line for line in lines), dtype=bool, count=len(lines))
        bad[nul, 0] = True
    categoricals = table.iloc[:, numeric[-1] + 1 :].to_numpy(dtype=object)
    if categoricals.shape != (len(lines), NUM_CATEGORICAL_FEATURES):
        raise MalformedInputError(
            f"lines from {first_line_number}: parsed {categoricals.shape} categorical fields, "
            f"expected ({len(lines)}, {NUM_CATEGORICAL_FEATURES})"
        )
    # No NA conversion applies to these columns: an empty field stays "" (its own category).
    return numbers, bad, categoricals


def parse_lines(
    lines: list[str],
    first_line_number: int,
    fmt: CriteoFormat,
    report: ReadReport,
    strict: bool = False,
) -> ParsedChunk:
    """Parse consecutive data lines of a file in layout ``fmt``.

    Args:
        lines: the lines (with or without line endings).
        first_line_number: the 1-based line number of ``lines[0]`` in its file.
        fmt: the layout.
        report: receives row counts and malformed lines.
        strict: raise :class:`MalformedInputError` at the first malformed line.
    """
    sep = fmt.separator
    expected = fmt.num_fields
    min_fields = MIN_FIELDS_TO_PAD + fmt.leading_id_fields
    good_lines: list[str] = []
    good_positions: list[int] = []

    rejected: list[MalformedLine] = []

    def reject(position: int, reason: str, text: str) -> None:
        rejected.append(MalformedLine(first_line_number + position, reason, text[:_EXCERPT_CHARS]))

    for position, line in enumerate(lines):
        text = line.rstrip("\r\n")
        if not text.isascii():  # O(1); Criteo lines are ASCII
            text = escape_undecodable(text)
        count = text.count(sep) + 1
        if count == expected:
            good_lines.append(text)
        elif not text:
            reject(position, "empty line", text)
            continue
        elif min_fields <= count < expected:
            good_lines.append(text + sep * (expected - count))
            report.padded_lines += 1
        else:
            reject(position, f"expected {expected} fields, found {count}", text)
            continue
        good_positions.append(position)
    report.data_lines += len(lines)

    if not good_lines:
        _record_rejected(rejected, report, strict)
        return ParsedChunk.concatenate([])
    numbers, bad_numbers, categoricals = _parse_fields(good_lines, fmt, first_line_number)
    labels = numbers[:, 0]
    integers = numbers[:, 1:]
    bad_label = bad_numbers[:, 0] | ~np.isin(labels, (0.0, 1.0))
    bad_integer = bad_numbers[:, 1:]
    bad = bad_label | bad_integer.any(axis=1)

    positions = np.asarray(good_positions, dtype=np.int64)
    for i in np.flatnonzero(bad):
        fields = good_lines[i].split(sep)[fmt.leading_id_fields :]
        if bad_label[i]:
            reason = f"label must be 0 or 1, found {fields[0]!r}"
        else:
            j = int(np.argmax(bad_integer[i]))
            reason = f"{INTEGER_COLUMNS[j]} is not an integer: {fields[1 + j]!r}"
        reject(int(positions[i]), reason, good_lines[i])
    _record_rejected(rejected, report, strict)
    keep = ~bad
    line_numbers = first_line_number + positions[keep]
    report.rows += int(keep.sum())
    return ParsedChunk(
        labels=labels[keep].astype(np.int8),
        integers=integers[keep],
        categoricals=categoricals[keep],
        row_index=line_numbers - 1 - fmt.header_lines,
        line_numbers=line_numbers,
    )


def _record_rejected(rejected: list[MalformedLine], report: ReadReport, strict: bool) -> None:
    """Report a chunk's malformed lines in line order (or raise at the first if strict)."""
    rejected.sort(key=lambda bad: bad.line_number)
    if strict and rejected:
        bad = rejected[0]
        raise MalformedInputError(f"line {bad.line_number}: {bad.reason}: {bad.excerpt!r}")
    for bad in rejected:
        report.add_malformed(bad)


def iter_chunks(
    path: str | os.PathLike,
    *,
    fmt: CriteoFormat | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    strict: bool = False,
    report: ReadReport | None = None,
    progress: bool = False,
    description: str | None = None,
) -> Iterator[ParsedChunk]:
    """Stream a Criteo file as :class:`ParsedChunk` s of at most ``chunk_rows`` lines.

    Memory is bounded by the chunk size. Malformed lines go to ``report`` (pass one to see
    them) or raise with ``strict=True``.

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "train.txt"
        >>> _ = path.write_text("1\\t" + "\\t" * 38 + "\\n")
        >>> [len(c) for c in iter_chunks(path)]
        [1]
    """
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be at least 1, got {chunk_rows}")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such file: {path}")
    fmt = fmt or sniff_format(path)
    report = report if report is not None else ReadReport()
    total_bytes = os.path.getsize(path)
    with open_text(path) as (f, raw):
        for _ in range(fmt.header_lines):
            f.readline()
        line_number = fmt.header_lines + 1
        bar = _progress_bar(total_bytes, description or os.path.basename(path), progress)
        try:
            while True:
                lines = list(itertools.islice(f, chunk_rows))
                if not lines:
                    break
                chunk = parse_lines(lines, line_number, fmt, report, strict=strict)
                line_number += len(lines)
                bar.update(raw.tell() - bar.n)
                if len(chunk):
                    yield chunk
        finally:
            bar.close()


def read_criteo(
    path: str | os.PathLike,
    *,
    fmt: CriteoFormat | None = None,
    strict: bool = False,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
) -> tuple[ParsedChunk, ReadReport]:
    """Read a whole (small) Criteo file into memory; return its rows and the read report."""
    report = ReadReport()
    chunks = list(iter_chunks(path, fmt=fmt, strict=strict, report=report, chunk_rows=chunk_rows))
    return ParsedChunk.concatenate(chunks), report


def _progress_bar(total: int, description: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        desc=description,
        disable=not enabled,
        leave=False,
    )
