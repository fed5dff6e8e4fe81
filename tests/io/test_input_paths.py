"""One rule for what an input path means (dpauc_tf.io.paths.input_files), the same on every
backend: hidden names at every level of a directory, hive-partitioned directories,
compression by suffix, pipes and devices refused for what they are (issues 30 and 35)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpauc_tf.cli.main import main
from dpauc_tf.io.paths import describe, input_files
from dpauc_tf.io.scores import ScoreFileError
from tests.helpers.cli import evaluate_json
from tests.helpers.worlds import ENGINES, FEDERATED

N = 300


def _frame(n: int = N, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0, 1)
    return pd.DataFrame({"score": scores, "label": labels})


def spark_output(root, frame):
    """A Spark output directory with a leftover attempt and a notebook checkpoint: every
    example twice more below hidden directories, and hidden marker files."""
    out = root / "out"
    attempt = out / "_temporary" / "0" / "_temporary" / "attempt_0"
    attempt.mkdir(parents=True)
    (out / ".ipynb_checkpoints").mkdir()
    half = len(frame) // 2
    frame.iloc[:half].to_csv(out / "part-00000.csv", index=False)
    frame.iloc[half:].to_csv(out / "part-00001.csv", index=False)
    frame.to_csv(attempt / "part-00000.csv", index=False)
    frame.to_csv(out / ".ipynb_checkpoints" / "part-00000-checkpoint.csv", index=False)
    (out / "_SUCCESS").write_text("")
    (out / ".part-00000.csv.crc").write_bytes(b"\x00\x01")
    return out


def hive_parquet(root, frame):
    out = root / "hive"
    for country, part in (("fr", frame.iloc[::2]), ("de", frame.iloc[1::2])):
        (out / f"country={country}").mkdir(parents=True)
        part.to_parquet(out / f"country={country}" / "part-0.parquet", index=False)
    (out / "_SUCCESS").write_text("")
    return out


def gzip_tfrecord(root, frame):
    tf = pytest.importorskip("tensorflow")
    path = root / "scores.tfrecord.gz"
    with tf.io.TFRecordWriter(str(path), options="GZIP") as writer:
        for score, label in zip(frame.score, frame.label, strict=True):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "score": tf.train.Feature(float_list=tf.train.FloatList(value=[score])),
                        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                    }
                )
            )
            writer.write(example.SerializeToString())
    return path


# Beam reads the files here on its in-process DirectRunner: the same source as on the default
# 2-process runner (tests/beam/test_beam_io.py and test_cli_beam.py run that one), without two
# worker processes that each import TensorFlow.
IN_PROCESS_BEAM = "--runner=DirectRunner"


def _evaluate(capsys, path, backend="simulate", *extra) -> dict:
    argv = ["--scores", path, "--mechanism", "none", "--num-thresholds", 20, "--backend", backend]
    if backend == "beam":
        argv.append(f"--beam-options={IN_PROCESS_BEAM}")
    return evaluate_json(capsys, *argv, *extra)


def _error(capsys, *argv) -> str:
    assert main(list(map(str, argv))) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


# -- the rule itself ---------------------------------------------------------------------------
def test_hidden_names_are_skipped_at_every_level(tmp_path):
    out = spark_output(tmp_path, _frame())
    assert [f.path.name for f in input_files(out)] == ["part-00000.csv", "part-00001.csv"]
    # A glob's matches below its wildcard follow the same rule (``**`` crosses levels) ...
    assert len(input_files(f"{out}/**/*.csv")) == 2
    # ... and a hidden directory the user names is read: the rule applies below the path.
    assert len(input_files(out / "_temporary" / "0" / "_temporary" / "attempt_0")) == 1


def test_compression_is_read_from_the_suffix():
    assert describe("a.csv.gz") == ("csv", "gzip")
    assert describe("a.tfrecord.gz") == ("tfrecord", "gzip")
    assert describe("d/part-0.PARQUET") == ("parquet", None)
    assert describe("a.gz") == ("csv", "gzip")
    assert describe("a.csv.zst") == ("csv", "zstd")


def test_a_directory_of_only_hidden_files_says_so(tmp_path):
    (tmp_path / "_temporary").mkdir()
    (tmp_path / "_temporary" / "part-0.csv").write_text("score,label\n0.5,1\n")
    with pytest.raises(ScoreFileError, match=r"directory has no files \(1 hidden"):
        input_files(tmp_path)


# -- simulate (the command's own reader) ---------------------------------------------------------
def test_a_spark_output_directory_counts_every_example_once(tmp_path, capsys):
    """Before: n = 900 for 300 examples (the leftover attempt and the checkpoint read too),
    so a label flip moved the counts three times as far as stated."""
    frame = _frame()
    out = _evaluate(capsys, spark_output(tmp_path, frame))
    assert out["num_examples"] == N


def test_a_gzip_tfrecord_is_read_as_tfrecord(tmp_path, capsys):
    """Before: read as CSV, a UTF-8 decoding error."""
    frame = _frame()
    out = _evaluate(capsys, gzip_tfrecord(tmp_path, frame), "simulate", "--show-exact")
    assert out["num_examples"] == N
    from sklearn.metrics import roc_auc_score

    expected = roc_auc_score(frame.label, frame.score.astype(np.float32))
    assert out["exact_auc"] == pytest.approx(expected, abs=1e-12)


def test_a_truncated_gzip_tfrecord_is_a_one_line_error(tmp_path, capsys):
    path = gzip_tfrecord(tmp_path, _frame())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    err = _error(capsys, "evaluate", "--scores", path, "--mechanism", "none")
    assert "truncated gzip TFRecord file" in err or "truncated or corrupt gzip" in err


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_pipe_or_a_device_is_refused_for_what_it_is(tmp_path, capsys, kind):
    """Before: 'no such file' for both (a FIFO is not is_file())."""
    if kind == "fifo":
        path = tmp_path / "scores.csv"
        os.mkfifo(path)
        expected = "a named pipe (FIFO), not a regular file"
    else:
        path = "/dev/null"
        expected = "a character device, not a regular file"
    err = _error(capsys, "evaluate", "--scores", path, "--mechanism", "none")
    assert expected in err and "no such file" not in err


def test_a_pipe_inside_a_directory_is_refused(tmp_path):
    (tmp_path / "part-0.csv").write_text("score,label\n0.5,1\n")
    os.mkfifo(tmp_path / "part-1.csv")
    with pytest.raises(ScoreFileError, match=r"part-1\.csv: a named pipe"):
        input_files(tmp_path)


# -- --thresholds FILE: bounded, regular files only ---------------------------------------------
def _thresholds_error(tmp_path, capsys, path) -> str:
    scores = tmp_path / "s.csv"
    _frame().to_csv(scores, index=False)
    return _error(
        capsys,
        *("evaluate", "--scores", scores, "--mechanism", "histogram", "--epsilon", 1),
        *("--thresholds", path),
    )


def test_thresholds_file_larger_than_the_bound_is_refused(tmp_path, capsys):
    """Before: read whole, however large (/dev/zero until memory ran out)."""
    big = tmp_path / "grid.txt"
    with open(big, "wb") as f:
        f.truncate(65 * 10**6)  # sparse: no disk used
    err = _thresholds_error(tmp_path, capsys, big)
    assert "larger than 64,000,000 bytes" in err


def test_thresholds_from_dev_zero_is_refused_without_reading(tmp_path, capsys):
    err = _thresholds_error(tmp_path, capsys, "/dev/zero")
    assert "a character device, not a regular file" in err


def test_thresholds_from_a_pipe_with_no_writer_does_not_block(tmp_path):
    """Before: blocked forever in open(); run in a child with a deadline."""
    fifo = tmp_path / "grid"
    os.mkfifo(fifo)
    code = (
        "from dpauc_tf.cli.release import read_thresholds\n"
        "from dpauc_tf.cli.errors import CommandError\n"
        f"try:\n    read_thresholds({str(fifo)!r})\n"
        "except CommandError as e:\n    print(e)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.fail("reading a FIFO with no writer blocked")
    assert "a named pipe (FIFO), not a regular file" in done.stdout, done.stderr


# -- every backend reads the same files ----------------------------------------------------------


@pytest.mark.parametrize("backend", ENGINES)
@pytest.mark.parametrize("layout", ["spark-output", "hive"])
def test_every_engine_reads_what_simulate_reads(tmp_path, capsys, backend, layout):
    """Before: Beam refused a directory ('Is a directory'); Spark refused hive-partitioned
    Parquet ('neither CSV nor Parquet'). The engines read the files themselves here (no
    --show-exact): the same n and the same release without noise as --backend simulate."""
    frame = _frame()
    path = (spark_output if layout == "spark-output" else hive_parquet)(tmp_path, frame)
    simulated = _evaluate(capsys, path)
    engine = _evaluate(capsys, path, backend)
    assert simulated["num_examples"] == engine["num_examples"] == N
    assert engine["aucs"] == pytest.approx(simulated["aucs"], abs=1e-12)


@pytest.mark.skipif(importlib.util.find_spec("apache_beam") is None, reason="needs Apache Beam")
def test_beam_reads_a_gzip_tfrecord(tmp_path, capsys):
    frame = _frame()
    path = gzip_tfrecord(tmp_path, frame)
    assert _evaluate(capsys, path, "beam")["num_examples"] == N


@pytest.mark.skipif(importlib.util.find_spec("pyspark") is None, reason="needs PySpark")
def test_spark_refuses_tfrecord_in_one_line(tmp_path, capsys):
    path = gzip_tfrecord(tmp_path, _frame())
    err = _error(capsys, "evaluate", "--scores", path, "--mechanism", "none", "--backend", "spark")
    assert "a tfrecord file; --backend spark reads csv and parquet files" in err


@pytest.mark.skipif(importlib.util.find_spec("pyspark") is None, reason="needs PySpark")
@pytest.mark.parametrize(
    ("master", "expected"),
    [
        ("nonsense://nowhere:1", "not a Spark master URL"),
        ("spark://127.0.0.1:1", "cannot start a Spark session"),  # nothing listens there
    ],
)
def test_a_bad_spark_master_is_one_line(tmp_path, master, expected):
    """Before: a py4j/Java traceback. In a child process, so that the JVM's own output to
    file descriptor 2 is seen too: stderr is one line."""
    path = tmp_path / "s.csv"
    _frame().to_csv(path, index=False)
    argv = ["evaluate", "--scores", str(path), "--mechanism", "none", "--backend", "spark"]
    argv += ["--spark-master", master]
    done = subprocess.run(
        [sys.executable, "-m", "dpauc_tf", *argv], capture_output=True, text=True, timeout=300
    )
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1, done.stderr
    assert f"--spark-master {master!r}: {expected}" in err[0]


@pytest.mark.skipif(importlib.util.find_spec("apache_beam") is None, reason="needs Apache Beam")
def test_beams_read_scores_takes_a_directory_by_the_same_rule(tmp_path):
    """The library transform itself: a directory (before: 'Is a directory' from Beam's
    source) is its visible files, the format comes from them."""
    from dpauc_tf.beam import PrivateAUC, ReadScores
    from dpauc_tf.beam.pipeline import pipeline_options, run_and_collect

    out = hive_parquet(tmp_path, _frame())
    read = ReadScores(str(out), ["score", "label"])
    assert read.format == "parquet"
    releases, _ = run_and_collect(
        lambda p: p | read | PrivateAUC(epsilon=None, slicing=[()]),
        pipeline_options([IN_PROCESS_BEAM]),
    )
    assert releases[0].num_examples == N


@pytest.mark.parametrize("backend", FEDERATED)
def test_the_federated_backends_read_the_same_files(tmp_path, capsys, monkeypatch, backend):
    """TFF and Flower start from the command's own reader: the same n as simulate."""
    monkeypatch.setenv("DPAUC_FLOWER_ENGINE", "in-process")
    out = spark_output(tmp_path, _frame())
    argv = ["evaluate", "--scores", str(out), "--mechanism", "histogram", "--epsilon", "1"]
    argv += ["--num-thresholds", "20", "--seed", "0", "--backend", backend, "--format", "json"]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out)["num_examples"] == N
