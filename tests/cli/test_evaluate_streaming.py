"""``dpauc evaluate`` in chunks: the same JSON as in one piece, honest reference AUCs."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from dpauc_tf.cli import main
from dpauc_tf.io.readers import iter_score_chunks
from dpauc_tf.io.scores import ScoreFileError, read_score_file
from tests.helpers.cli import evaluate_exact_json as run_json

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


NOISY = ["--mechanism", "histogram", "--epsilon", "1", "--seed", "3", "--repeats", "2"]
NOISY += ["--client-column", "client"]  # the file's clients, named (issue 24)


def test_chunks_give_the_same_json(capsys, csv_path):
    argv = ["evaluate", "--scores", str(csv_path), *NOISY, "--format", "json", "--show-exact"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    # --progress auto: no bar when stderr is not a terminal (only the small-n noise warning)
    assert all(
        line.startswith("dpauc: warning: the privacy noise") for line in captured.err.splitlines()
    )
    whole = json.loads(captured.out)
    chunked = run_json(capsys, "--scores", csv_path, *NOISY, "--chunk-rows", 1000)
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
    argv = ["evaluate", "--scores", str(path), "--mechanism", "none", "--chunk-rows", "1000"]
    code = main([*argv, "--client-column", "client"])
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
    assert run_json(capsys, "--scores", parts, *NOISY, "--chunk-rows", 1000) == whole
    out = run_json(capsys, "--scores", record, "--mechanism", "none", "--chunk-rows", 1000)
    f32 = frame["score"].to_numpy(np.float32)
    assert out["num_examples"] == N and out["num_clients"] == 1
    assert out["exact_auc"] == pytest.approx(roc_auc_score(frame["label"], f32), abs=1e-12)


def test_defaults_mirror_the_library():
    import importlib

    from dpauc_tf.io import readers as score_sources
    from dpauc_tf.io import streaming

    cli_main = importlib.import_module("dpauc_tf.cli.arguments")

    assert cli_main.DEFAULT_MAX_ROWS_IN_MEMORY == streaming.DEFAULT_MAX_ROWS_IN_MEMORY
    assert cli_main.DEFAULT_CHUNK_ROWS == score_sources.DEFAULT_CHUNK_ROWS


def test_piped_through_cat_with_a_progress_bar(csv_path):
    """``| cat`` ends, stdout is exactly the JSON, the bar (asked for) goes to stderr only."""
    command = [sys.executable, "-m", "dpauc_tf", "evaluate", "--scores", str(csv_path)]
    command += [*NOISY, "--format", "json", "--progress", "on", "--chunk-rows", "1000"]
    shell = " ".join(f"'{c}'" for c in command) + " | cat"
    done = subprocess.run(
        shell, shell=True, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["num_examples"] == N
    assert "rows" in done.stderr  # tqdm's bar


# -- damaged input: one line naming the file, no result (issue 21) ------------------------------
def evaluate_cli(*args):
    """``python -m dpauc_tf evaluate ARGS`` as a user runs it: (exit status, stdout, stderr)."""
    command = [sys.executable, "-m", "dpauc_tf", "evaluate", *map(str, args)]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )
    return done.returncode, done.stdout, done.stderr


def error_line(stderr: str) -> str:
    """The ``dpauc: error:`` line; TensorFlow's start-up log lines aside, nothing else."""
    lines = [line for line in stderr.splitlines() if line.startswith("dpauc: error:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "Warning" not in stderr, stderr
    return lines[0]


def write_records(path, frame):
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as writer:
        for score, label in frame[["score", "label"]].itertuples(index=False):
            feature = {
                "score": tf.train.Feature(float_list=tf.train.FloatList(value=[score])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(label)])),
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )


@pytest.fixture(scope="module")
def tfrecord_bytes(csv_path, tmp_path_factory):
    path = tmp_path_factory.mktemp("records") / "whole.tfrecord"
    write_records(path, pd.read_csv(csv_path))
    return path.read_bytes()


@pytest.mark.parametrize(
    "damage, message",
    [
        # cut inside the 12-byte header of record 751: TensorFlow's reader stops there quietly
        ("header", "truncated TFRecord file: the record at byte"),
        ("data", "truncated TFRecord file: the record at byte"),  # cut inside its data
        ("crc", "corrupt TFRecord file: the record at byte"),  # a flipped byte mid-file
    ],
)
def test_a_damaged_tfrecord_is_one_line_naming_the_file(tmp_path, tfrecord_bytes, damage, message):
    record = len(tfrecord_bytes) // N  # every record has the same length here
    middle = (N // 2) * record
    data = bytearray(tfrecord_bytes)
    if damage == "header":
        data = data[: middle + 5]
    elif damage == "data":
        data = data[: middle + 20]
    else:
        data[middle + 20] ^= 0xFF
    path = tmp_path / f"{damage}.tfrecord"
    path.write_bytes(bytes(data))
    code, out, err = evaluate_cli("--scores", path, "--mechanism", "none", "--format", "json")
    assert code == 2 and out == ""
    line = error_line(err)
    assert str(path) in line and message in line


def compressed(kind: str, data: bytes) -> bytes:
    import bz2
    import gzip
    import io
    import lzma
    import zipfile

    if kind == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("scores.csv", data)
        return buffer.getvalue()
    if kind == "zst":
        zstandard = pytest.importorskip("zstandard")
        return zstandard.ZstdCompressor().compress(data)
    return {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}[kind](data)


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zip", "zst"])
def test_a_truncated_compressed_csv_is_one_line_naming_the_file(tmp_path, csv_path, kind):
    data = compressed(kind, csv_path.read_bytes())
    whole = tmp_path / f"scores.csv.{kind}"
    whole.write_bytes(data)
    code, out, err = evaluate_cli("--scores", whole, "--mechanism", "none", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["num_examples"] == N
    cut = tmp_path / f"cut.csv.{kind}"
    cut.write_bytes(data[: len(data) * 3 // 4])
    code, out, err = evaluate_cli("--scores", cut, "--mechanism", "none")
    assert code == 2 and out == ""
    line = error_line(err)
    assert str(cut) in line
    assert "truncated compressed file" in line or "corrupt compressed file" in line


def test_a_zstd_file_cut_between_blocks_is_not_read_as_a_shorter_file(tmp_path):
    """pandas' zstd reader returns the blocks before the cut: rows lost without a word."""
    zstandard = pytest.importorskip("zstandard")
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {"score": rng.random(40_000).round(6), "label": rng.integers(0, 2, 40_000)}
    )
    data = zstandard.ZstdCompressor().compress(frame.to_csv(index=False).encode())
    path = tmp_path / "cut.csv.zst"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ScoreFileError, match="truncated compressed file"):
        list(iter_score_chunks(path))
    with pytest.raises(ScoreFileError, match="truncated compressed file"):
        read_score_file(path)


def test_mixed_types_in_a_large_csv_give_the_row_error_without_a_pandas_warning(tmp_path):
    path = tmp_path / "mixed.csv"
    # More rows than pandas' low-memory block: it types the column per block, then warns.
    path.write_text("score,label\n" + "0.5,1\n" * 300_000 + "abc,1\n")
    code, out, err = evaluate_cli("--scores", path, "--mechanism", "none")
    assert code == 2 and out == ""
    assert "row 300001: scores must be numbers (got 'abc')" in error_line(err)
    assert "DtypeWarning" not in err and "mixed types" not in err


@pytest.mark.parametrize("value", ["1", "999"])
def test_chunks_too_small_to_be_cheap_are_refused(csv_path, value):
    """Each chunk costs milliseconds: --chunk-rows 1 made a 10M-row file take a day."""
    code, out, err = evaluate_cli(
        "--scores", csv_path, "--mechanism", "none", "--chunk-rows", value
    )
    assert code == 2 and out == ""
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) == 1
    assert f"--chunk-rows: expected at least 1000 examples per chunk, got {value}" in lines[-1]
