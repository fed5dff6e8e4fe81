"""``dpauc evaluate --backend spark``: Spark's reader, equal to --backend simulate without
noise (K = 10 non-IID clients), one-line errors (one local Spark session for the module)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyspark")
pd = pytest.importorskip("pandas")

from dpauc_tf.cli.main import main  # noqa: E402
from tests.helpers.cli import evaluate_json as _evaluate  # noqa: E402


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(5)
    n = 3000
    client = rng.integers(0, 10, n)
    label = (rng.random(n) < 0.1 + 0.08 * client).astype(int)
    score = np.clip(0.3 + 0.3 * label + 0.02 * client + rng.normal(0, 0.2, n), 0, 1)
    frame = pd.DataFrame({"score": score, "label": label, "client": client})
    root = tmp_path_factory.mktemp("spark-cli")
    paths = {"csv": root / "scores.csv", "parquet": root / "scores.parquet"}
    frame.to_csv(paths["csv"], index=False)
    frame.to_parquet(paths["parquet"], index=False)
    frame.drop(columns="client").to_csv(root / "one.csv", index=False)
    paths["one"] = root / "one.csv"
    (root / "scores.tsv").write_text("score\tlabel\n0.5\t1\n")
    paths["tsv"] = root / "scores.tsv"
    return paths


@pytest.mark.parametrize("kind", ["csv", "parquet", "one"])
def test_noise_off_equals_simulate(spark, capsys, files, kind):
    common = ("--scores", files[kind], "--mechanism", "none", "--num-thresholds", 40)
    common += () if kind == "one" else ("--client-column", "client")
    mine = _evaluate(capsys, *common, "--backend", "spark")
    theirs = _evaluate(capsys, *common, "--backend", "simulate")
    assert mine["aucs"] == theirs["aucs"]
    assert mine["roc"] == theirs["roc"]
    assert mine["num_clients"] == theirs["num_clients"] == (1 if kind == "one" else 10)
    assert mine["backend"] == "spark"


def test_noise_and_repeats_through_spark(spark, capsys, files):
    out = _evaluate(
        capsys,
        "--scores",
        files["parquet"],
        "--mechanism",
        "histogram",
        "--epsilon",
        1.0,
        "--num-thresholds",
        20,
        "--repeats",
        5,
        "--seed",
        3,
        "--backend",
        "spark",
    )
    assert len(out["aucs"]) == 5 and len(set(out["aucs"])) == 5
    assert out["guaranteed_epsilon"] == 1.0


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (
            ("--clients", 4, "--mechanism", "none"),
            "takes its clients from the file's client column",
        ),
        (("--mechanism", "score-noise", "--epsilon", 1.0), "changes every example"),
    ],
)
def test_one_line_errors(spark, capsys, files, argv, match):
    code = main(["evaluate", "--scores", str(files["one"]), "--backend", "spark", *map(str, argv)])
    err = capsys.readouterr().err
    assert code != 0 and match in err and "Traceback" not in err


def test_a_format_spark_cannot_read_is_refused(files, tmp_path):
    """The one path rule names the format (a .tsv is CSV on every backend, as simulate reads
    it); Spark refuses in one line what it cannot read: TFRecord, xz-compressed CSV."""
    from dpauc_tf.cli.main import CommandError
    from dpauc_tf.cli.spark import spark_format

    (tmp_path / "s.tfrecord").write_bytes(b"x")
    with pytest.raises(CommandError, match=r"a tfrecord file; --backend spark reads csv and"):
        spark_format(str(tmp_path / "s.tfrecord"))
    (tmp_path / "s.csv.xz").write_bytes(b"x")
    with pytest.raises(CommandError, match=r"xz-compressed csv .* bz2, gzip only"):
        spark_format(str(tmp_path / "s.csv.xz"))
    assert spark_format(str(files["parquet"])) == "parquet"
    assert spark_format(str(files["tsv"])) == "csv"


def test_the_driver_reads_no_row(spark, capsys, files, monkeypatch):
    """Without --show-exact/--clients/--plot only Spark reads the file: the command's own
    reader is never called, and the release equals --backend simulate with noise off."""
    from dpauc_tf.cli import evaluate as cli_evaluate

    common = ("--scores", files["parquet"], "--mechanism", "none", "--num-thresholds", 40)
    common += ("--client-column", "client")
    theirs = _evaluate(capsys, *common, "--backend", "simulate")

    def no_driver_reading(*args, **kwargs):
        raise AssertionError("the driver read the file")

    monkeypatch.setattr(cli_evaluate, "count_scores", no_driver_reading)
    mine = _evaluate(capsys, *common, "--backend", "spark")
    assert mine["aucs"] == theirs["aucs"] and mine["num_examples"] == theirs["num_examples"]
    assert mine["num_clients"] == 10
