"""Error output publishes no label statistic and no file contents: ``dpauc compare`` refuses
files whose labels differ without counting the differing rows (with a placeholder label
column in one file, the count was the exact number of positives), and a file read in the
wrong format (JSON as CSV) is not echoed into the error (it printed its whole first line,
every score and label)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from dpauc_tf.cli.main import main
from dpauc_tf.io.scores import ScoreFileError, read_score_file

N = 3000


def _write(path, scores, labels):
    path.write_text(
        "score,label\n" + "".join(f"{s!r},{y}\n" for s, y in zip(scores, labels, strict=True))
    )
    return str(path)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    labels = (rng.random(N) < 0.3).astype(int)
    return rng.random(N).tolist(), rng.random(N).tolist(), labels


def _compare_error(capsys, file_a, file_b) -> str:
    assert main(["compare", "--scores", file_a, "--scores-b", file_b, "--epsilon", "1"]) == 2
    return capsys.readouterr().err.strip()


def test_compare_counts_no_differing_labels(capsys, data, tmp_path):
    sa, sb, labels = data
    file_a = _write(tmp_path / "a.csv", sa, labels)
    placeholder = _write(tmp_path / "b.csv", sb, np.zeros(N, int))  # an all-0 label column
    err = _compare_error(capsys, file_a, placeholder)
    assert err.startswith("dpauc: error:") and "labels of" in err
    # before: "... differ in 901 rows", the exact number of positives
    assert str(int(labels.sum())) not in err.replace(str(tmp_path), "")
    messages = set()
    for flips in (1, 3, 7):  # neighbouring label columns: the same message whatever differs
        other = labels.copy()
        other[:flips] = 1 - other[:flips]
        _write(tmp_path / "b.csv", sb, other)
        messages.add(_compare_error(capsys, file_a, placeholder))
    assert len(messages) == 1, messages


@pytest.fixture
def json_files(data, tmp_path):
    scores, _, labels = data
    records = [{"score": s, "label": int(y)} for s, y in zip(scores, labels, strict=True)]
    one_line = tmp_path / "records.json"
    one_line.write_text(json.dumps(records) + "\n")  # about 100 KB on one line
    columns = tmp_path / "columns.json"
    columns.write_text(json.dumps({"score": scores, "label": labels.tolist()}) + "\n")
    return scores, [str(one_line), str(columns)]


def _no_data_in(text: str, scores) -> None:
    assert len(text) < 400, len(text)  # before: about 100,000 characters
    assert not any(repr(s)[:8] in text for s in scores[:200])
    assert not re.search(r'"label": [01]', text)


def test_reading_json_as_csv_quotes_no_data(json_files):
    scores, paths = json_files
    for path in paths:
        with pytest.raises(ScoreFileError) as error:
            read_score_file(path)
        _no_data_in(str(error.value), scores)
        assert "JSON" in str(error.value)


@pytest.mark.parametrize(
    "command",
    [
        ["evaluate", "--mechanism", "histogram", "--epsilon", "1"],
        ["compare", "--score-column-b", "other", "--epsilon", "1"],
    ],
)
def test_the_commands_quote_no_data_of_a_json_file(capsys, json_files, command):
    scores, paths = json_files
    for path in paths:
        assert main([command[0], "--scores", path, *command[1:]]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("dpauc: error:") and "\n" not in err
        _no_data_in(err, scores)


def test_a_wide_header_is_cut_short(tmp_path):
    path = tmp_path / "wide.csv"
    names = [f"feature_{i}" for i in range(5000)]
    path.write_text(",".join(names) + "\n" + ",".join("0" for _ in names) + "\n")
    with pytest.raises(ScoreFileError, match=r"\(5000 columns\)") as error:
        read_score_file(str(path))
    assert len(str(error.value)) < 300 and "'feature_0'" in str(error.value)
