"""Parsing Criteo files: the three layouts, gzip, missing values, short and malformed lines."""

import gzip

import numpy as np
import pytest

from data_prep.reader import (
    CriteoFormat,
    MalformedInputError,
    iter_chunks,
    read_criteo,
    sniff_format,
)
from data_prep.schema import CATEGORICAL_COLUMNS, INTEGER_COLUMNS

HEX = [f"{i:08x}" for i in range(26)]


def raw_line(label="1", ints=None, cats=None, sep="\t"):
    ints = [str(i) for i in range(13)] if ints is None else ints
    cats = HEX if cats is None else cats
    return sep.join([label, *ints, *cats])


def write(tmp_path, name, text, compress=False):
    path = tmp_path / name
    if compress:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def test_raw_tsv_values_and_missing(tmp_path):
    ints = ["5", "-1", "", *["7"] * 10]
    cats = ["", *HEX[1:]]
    path = write(tmp_path, "train.txt", raw_line("0", ints, cats) + "\n" + raw_line() + "\n")
    chunk, report = read_criteo(path)
    assert sniff_format(path) is CriteoFormat.RAW_TSV
    assert chunk.labels.tolist() == [0, 1]
    assert chunk.integers[0, :3].tolist()[:2] == [5.0, -1.0]
    assert np.isnan(chunk.integers[0, 2])
    assert chunk.categoricals[0, 0] == "" and chunk.categoricals[0, 1] == HEX[1]
    assert chunk.line_numbers.tolist() == [1, 2]
    assert chunk.row_index.tolist() == [0, 1]
    assert report.rows == 2 and report.malformed_lines == 0


def test_kaggle_csv_drops_id_and_header(tmp_path):
    header = ",".join(["Id", "Label", *INTEGER_COLUMNS, *CATEGORICAL_COLUMNS])
    rows = [f"{10_000_000 + i}," + raw_line(str(i % 2), sep=",") for i in range(3)]
    path = write(tmp_path, "train.csv", "\n".join([header, *rows]) + "\n")
    chunk, _ = read_criteo(path)
    assert sniff_format(path) is CriteoFormat.KAGGLE_CSV
    assert chunk.labels.tolist() == [0, 1, 0]
    assert chunk.integers[0].tolist() == [float(i) for i in range(13)]
    assert chunk.categoricals[2].tolist() == HEX
    assert chunk.line_numbers.tolist() == [2, 3, 4]
    assert chunk.row_index.tolist() == [0, 1, 2]


def test_deepctr_csv_reads_floats_as_integers(tmp_path):
    header = ",".join(["label", *INTEGER_COLUMNS, *CATEGORICAL_COLUMNS])
    ints = ["1382.0", "", "3", *["0.0"] * 10]
    path = write(tmp_path, "criteo_sample.txt", header + "\n" + raw_line("1", ints, sep=","))
    chunk, report = read_criteo(path)
    assert sniff_format(path) is CriteoFormat.DEEPCTR_CSV
    assert chunk.integers[0, 0] == 1382.0 and np.isnan(chunk.integers[0, 1])
    assert report.malformed_lines == 0


def test_gzip_is_detected_by_content(tmp_path):
    path = write(tmp_path, "no_suffix", raw_line() + "\n", compress=True)
    chunk, _ = read_criteo(path)
    assert len(chunk) == 1 and chunk.categoricals[0, -1] == HEX[-1]


def test_short_lines_are_padded_and_no_final_newline(tmp_path):
    short = raw_line(cats=HEX[:23])  # 37 fields: C24..C26 dropped
    path = write(tmp_path, "t.txt", raw_line() + "\n" + short)
    chunk, report = read_criteo(path)
    assert len(chunk) == 2 and report.padded_lines == 1
    assert chunk.categoricals[1, 22] == HEX[22]
    assert chunk.categoricals[1, 23:].tolist() == ["", "", ""]


def test_malformed_lines_are_counted_with_line_numbers(tmp_path):
    lines = [
        raw_line(),
        raw_line() + "\textra",  # 41 fields
        raw_line(ints=["x", *["1"] * 12]),  # non-numeric integer
        raw_line(label="2"),  # bad label
        "",  # empty line
        "1\t2\t3",  # truncated
        raw_line(ints=["1.5", *["1"] * 12]),  # not an integer
        raw_line("0"),
    ]
    path = write(tmp_path, "t.txt", "\n".join(lines) + "\n")
    chunk, report = read_criteo(path, chunk_rows=3)
    assert chunk.line_numbers.tolist() == [1, 8]
    assert chunk.row_index.tolist() == [0, 7]
    assert report.malformed_lines == 6
    assert [m.line_number for m in report.malformed_examples] == [2, 3, 4, 5, 6, 7]
    reasons = [m.reason for m in report.malformed_examples]
    assert reasons[0] == "expected 40 fields, found 41"
    assert reasons[1] == "I1 is not an integer: 'x'"
    assert reasons[2].startswith("label must be 0 or 1")
    assert reasons[3] == "empty line"
    assert report.to_dict()["malformed_by_reason"] == {
        "empty line": 1,
        "field count": 2,
        "integer value": 2,
        "label": 1,
    }


def test_strict_raises_at_first_malformed_line(tmp_path):
    path = write(tmp_path, "t.txt", raw_line() + "\n" + raw_line(ints=["a"] * 13) + "\n")
    with pytest.raises(MalformedInputError, match="line 2"):
        read_criteo(path, strict=True)


def test_chunking_does_not_change_rows(tmp_path):
    lines = [raw_line(str(i % 2), ints=[str(i)] * 13) for i in range(10)]
    path = write(tmp_path, "t.txt", "\n".join(lines) + "\n")
    whole, _ = read_criteo(path)
    sizes = [len(c) for c in iter_chunks(path, chunk_rows=3)]
    assert sizes == [3, 3, 3, 1]
    pieces, _ = read_criteo(path, chunk_rows=3)
    np.testing.assert_array_equal(whole.integers, pieces.integers)


def test_not_a_criteo_file(tmp_path):
    path = write(tmp_path, "x.csv", "a,b,c\n1,2,3\n")
    with pytest.raises(MalformedInputError, match="not a Criteo file"):
        sniff_format(path)
    with pytest.raises(FileNotFoundError):
        read_criteo(tmp_path / "missing.txt")


def truncated_gzip(tmp_path, name="input.txt.gz", rows=400, keep=0.5):
    """A gzip file of ``rows`` synthetic lines, cut after ``keep`` of its compressed bytes."""
    from data_prep.synthetic import SyntheticCriteo

    plain = tmp_path / (name + ".plain")
    SyntheticCriteo(seed=0).write_tsv(plain, rows)
    whole = gzip.compress(plain.read_bytes())
    plain.unlink()
    path = tmp_path / name
    path.write_bytes(whole[: int(len(whole) * keep)])
    return path


@pytest.mark.parametrize("keep", [0.5, 0.002])  # midway, and inside the first line
def test_truncated_gzip_is_a_clear_error_naming_the_file(tmp_path, keep):
    path = truncated_gzip(tmp_path, keep=keep)
    with pytest.raises(MalformedInputError) as caught:
        read_criteo(path, chunk_rows=50)
    message = str(caught.value)
    assert isinstance(caught.value, ValueError)
    assert message.startswith(f"{path}: truncated gzip file (") and "\n" not in message


def test_corrupt_gzip_is_a_clear_error_naming_the_file(tmp_path):
    path = truncated_gzip(tmp_path, keep=1.0)
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)  # zeros in the deflate stream
    path.write_bytes(bytes(data))
    with pytest.raises(MalformedInputError, match=r"(truncated|corrupt) gzip") as caught:
        read_criteo(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_undecodable_bytes_stay_distinct_categories(tmp_path, write_undecodable):
    path = tmp_path / "bad_bytes.txt"
    raw_values = write_undecodable(path)
    chunk, report = read_criteo(path)
    assert report.malformed_lines == 0 and len(chunk) == len(raw_values)
    values = chunk.categoricals[:, 0].tolist()
    assert len(set(values)) == len(raw_values)
    assert values[-1] == "café"  # valid UTF-8 is decoded as before
    for value in values:
        value.encode("utf-8")  # no lone surrogates: valid text for any JSON reader
