"""``dpauc evaluate`` in chunks: the same JSON as in one piece, honest reference AUCs."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from dpauc_tf.cli import main

N = 1500


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, N)
    scores = np.round(1 / (1 + np.exp(-(rng.normal(size=N) + labels))), 3)  # ties
    frame = pd.DataFrame({"score": scores, "label": labels, "client": rng.integers(0, 9, N) * 5})
    path = tmp_path_factory.mktemp("stream") / "scores.csv"
    frame.to_csv(path, index=False)
    return path


def run_json(capsys, *args):
    code = main(["evaluate", *map(str, args), "--format", "json", "--show-exact"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


NOISY = ["--mechanism", "histogram", "--epsilon", "1", "--seed", "3", "--repeats", "2"]


def test_chunks_give_the_same_json(capsys, csv_path):
    argv = ["evaluate", "--scores", str(csv_path), *NOISY, "--format", "json", "--show-exact"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # --progress auto: no bar when stderr is not a terminal
    whole = json.loads(captured.out)
    chunked = run_json(capsys, "--scores", csv_path, *NOISY, "--chunk-rows", 7)
    assert chunked == whole
    assert whole["num_clients"] == 9
    assert whole["exact_auc_max_error"] == 0.0 and whole["exact_auc_method"].startswith("exact")


def test_past_the_memory_limit_the_reference_auc_states_its_bound(capsys, csv_path):
    kept = run_json(capsys, "--scores", csv_path, *NOISY)
    counted = run_json(capsys, "--scores", csv_path, *NOISY, "--max-rows-in-memory", 100)
    assert counted["exact_auc_method"].startswith("fine histogram")
    bound = counted["exact_auc_max_error"]
    assert 0 < bound < 0.01
    assert abs(counted["exact_auc"] - kept["exact_auc"]) <= bound
    frame = pd.read_csv(csv_path)
    assert abs(counted["exact_auc"] - roc_auc_score(frame["label"], frame["score"])) <= bound
    # The release and TF's AUC come from the counts: identical either way.
    for key in ("tf_auc", "aucs", "roc", "num_clients", "privacy"):
        assert counted[key] == kept[key], key


@pytest.mark.parametrize(
    "args, message",
    [
        (["--clients", "3"], "--clients 3 (a partition) needs every example in memory"),
        (["--mechanism", "score-noise", "--epsilon", "1"], "'score-noise' (it transforms"),
    ],
)
def test_what_needs_every_example_is_refused_past_the_limit(capsys, csv_path, args, message):
    base = ["evaluate", "--scores", str(csv_path), "--max-rows-in-memory", "10"]
    if "--mechanism" not in args:
        base += ["--mechanism", "histogram", "--epsilon", "1"]
    assert main(base + args) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.err.count("\n") == 1 and captured.out == ""


def test_a_bad_last_row_is_one_line_and_no_output(capsys, tmp_path, csv_path):
    path = tmp_path / "bad.csv"
    path.write_text(csv_path.read_text() + "0.5,1,\n")
    code = main(["evaluate", "--scores", str(path), "--mechanism", "none", "--chunk-rows", "100"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert f"row {N + 1}: client id is missing" in captured.err
    assert captured.err.count("\n") == 1


def test_parquet_directory_and_tfrecord(capsys, tmp_path, csv_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    import tensorflow as tf

    frame = pd.read_csv(csv_path)
    parts = tmp_path / "parts"
    parts.mkdir()
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table.slice(0, 700), parts / "a.parquet")
    pq.write_table(table.slice(700), parts / "b.parquet")
    record = tmp_path / "s.tfrecord"
    with tf.io.TFRecordWriter(str(record)) as writer:
        for score, label in frame[["score", "label"]].itertuples(index=False):
            feature = {
                "score": tf.train.Feature(float_list=tf.train.FloatList(value=[score])),
                "label": tf.train.Feature(float_list=tf.train.FloatList(value=[label])),
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )
    whole = run_json(capsys, "--scores", csv_path, *NOISY)
    assert run_json(capsys, "--scores", parts, *NOISY, "--chunk-rows", 500) == whole
    out = run_json(capsys, "--scores", record, "--mechanism", "none", "--chunk-rows", 400)
    f32 = frame["score"].to_numpy(np.float32)
    assert out["num_examples"] == N and out["num_clients"] == 1
    assert out["exact_auc"] == pytest.approx(roc_auc_score(frame["label"], f32), abs=1e-12)


def test_defaults_mirror_the_library():
    import importlib

    from dpauc_tf.experiments import score_sources, streaming

    cli_main = importlib.import_module("dpauc_tf.cli.main")

    assert cli_main.DEFAULT_MAX_ROWS_IN_MEMORY == streaming.DEFAULT_MAX_ROWS_IN_MEMORY
    assert cli_main.DEFAULT_CHUNK_ROWS == score_sources.DEFAULT_CHUNK_ROWS


def test_piped_through_cat_with_a_progress_bar(csv_path):
    """``| cat`` ends, stdout is exactly the JSON, the bar (asked for) goes to stderr only."""
    command = [sys.executable, "-m", "dpauc_tf", "evaluate", "--scores", str(csv_path)]
    command += [*NOISY, "--format", "json", "--progress", "on", "--chunk-rows", "500"]
    shell = " ".join(f"'{c}'" for c in command) + " | cat"
    done = subprocess.run(
        shell, shell=True, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["num_examples"] == N
    assert "rows" in done.stderr  # tqdm's bar
