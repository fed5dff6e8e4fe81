"""Fuzzing the raw-Criteo reader with corrupted lines: every line is a row or a reported error."""

import pathlib
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

reader = pytest.importorskip("data_prep.reader")

NUM_FIELDS = 40
SAFE_TEXT = st.text(
    alphabet=st.characters(blacklist_characters="\t\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
    max_size=12,
)


def valid_lines(seed: int, count: int) -> list[str]:
    """``count`` well-formed raw lines (numpy-generated: hypothesis only draws the seed)."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(count):
        label = str(rng.integers(0, 2))
        ints = ["" if rng.random() < 0.3 else str(rng.integers(-5, 10**9)) for _ in range(13)]
        cats = ["" if rng.random() < 0.3 else f"{rng.integers(0, 2**32):08x}" for _ in range(26)]
        lines.append("\t".join([label, *ints, *cats]))
    return lines


@st.composite
def corrupted(draw, line: str):
    """(text, surely_malformed): a damaged version of a valid line."""
    fields = line.split("\t")
    kind = draw(
        st.sampled_from(
            [
                "bad-label",
                "bad-int",
                "extra-fields",
                "few-fields",
                "empty",
                "junk-cat",
                "nul",
                "truncate",
            ]
        )
    )
    if kind == "bad-label":
        fields[0] = draw(st.sampled_from(["2", "-1", "x", "0.5", "", "nan", "１"]))
        return "\t".join(fields), True
    if kind == "bad-int":
        i = draw(st.integers(1, 13))
        fields[i] = draw(st.sampled_from(["1.5", "abc", "--1", "9" * 30, "0x10", "1 2", "inf"]))
        return "\t".join(fields), fields[i] in ("abc", "--1", "0x10", "1 2")
    if kind == "extra-fields":
        extra = draw(st.integers(1, 20))
        return line + "\t" * extra, True
    if kind == "few-fields":
        keep = draw(st.integers(1, 5))
        return "\t".join(fields[:keep]), keep < 5
    if kind == "empty":
        return draw(st.sampled_from(["", " ", "\t"])), True
    if kind == "junk-cat":
        i = draw(st.integers(14, NUM_FIELDS - 1))
        fields[i] = draw(SAFE_TEXT)
        return "\t".join(fields), False
    if kind == "nul":  # a NUL byte anywhere makes the line malformed
        i = draw(st.integers(0, NUM_FIELDS - 1))
        fields[i] = fields[i] + "\x00"
        return "\t".join(fields), True
    cut = draw(st.integers(0, len(line)))
    return line[:cut], False


@st.composite
def corrupted_file(draw):
    lines, damaged = [], {}
    count = draw(st.integers(1, 30))
    for number, line in enumerate(valid_lines(draw(st.integers(0, 2**32)), count), start=1):
        if draw(st.integers(0, 3)) == 0:
            line, surely_bad = draw(corrupted(line))
            damaged[number] = surely_bad
        lines.append(line)
    return lines, damaged


@settings(max_examples=60, deadline=None)
@given(corrupted_file())
def test_corrupted_lines_are_skipped_and_reported_never_misread(case):
    lines, damaged = case
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "train.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        fmt = reader.CriteoFormat.RAW_TSV
        rows, report = reader.read_criteo(path, fmt=fmt, chunk_rows=7)
        # Every line is either a row or a reported malformed line.
        assert report.rows == len(rows)
        assert report.rows + report.malformed_lines == len(lines)
        kept = set(rows.line_numbers.tolist())
        malformed = {m.line_number for m in report.malformed_examples}
        assert kept.isdisjoint(malformed)
        for number in range(1, len(lines) + 1):
            if number not in damaged:
                assert number in kept, (number, lines[number - 1])
            elif damaged[number]:
                assert number not in kept, (number, lines[number - 1])
        # What was kept is well formed.
        assert set(np.unique(rows.labels).tolist()) <= {0, 1}
        values = rows.integers[~np.isnan(rows.integers)]
        assert np.all(np.isfinite(values)) and np.all(values == np.round(values))
        assert rows.categoricals.shape == (len(rows), 26)
        # strict mode raises exactly when something was malformed.
        if report.malformed_lines:
            with pytest.raises(reader.MalformedInputError):
                reader.read_criteo(path, fmt=fmt, strict=True)
        else:
            strict_rows, _ = reader.read_criteo(path, fmt=fmt, strict=True)
            assert len(strict_rows) == len(rows)


def test_nul_bytes_in_numeric_fields_are_malformed(tmp_path):
    fields = valid_lines(0, 1)[0].split("\t")
    fields[0], fields[3] = "1\x00", "5\x00"
    path = tmp_path / "train.txt"
    path.write_text("\t".join(fields) + "\n")
    rows, report = reader.read_criteo(path, fmt=reader.CriteoFormat.RAW_TSV)
    assert len(rows) == 0 and report.malformed_lines == 1
