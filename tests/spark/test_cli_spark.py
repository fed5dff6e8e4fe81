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


def test_secure_rank_sum_over_the_client_column(spark, capsys, files):
    """``--backend spark --client-column c --mechanism secure-rank-sum`` runs the two rounds
    (before: refused as if the rank sum could not be summed); with the noise rounding to
    nothing it equals --backend simulate."""
    mechanism = "secure-rank-sum"
    common = ("--scores", files["parquet"], "--client-column", "client")
    common += ("--mechanism", mechanism, "--epsilon", 1e9, "--seed", 0)
    mine = _evaluate(capsys, *common, "--backend", "spark")
    theirs = _evaluate(capsys, *common, "--backend", "simulate")
    assert mine["mechanism"] == mechanism and mine["num_clients"] == 10
    assert mine["aucs"][0] == pytest.approx(theirs["aucs"][0], abs=1e-9)
    noisy = _evaluate(
        capsys, *common[:-4], "--epsilon", 1.0, "--confidence", 0.95, "--backend", "spark"
    )
    release = noisy["releases"][0]
    assert release["ci_low"] < release["auc"] < release["ci_high"]
    assert noisy["guaranteed_epsilon"] == 1.0


def _exact_summaries(frame, max_fpr, target_fpr, bins):
    from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

    y, s = frame["label"].to_numpy(), frame["score"].to_numpy()
    fpr, tpr, _ = roc_curve(y, s)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.ceil(s * bins).astype(int) - 1, 0, bins - 1)
    ece = sum(
        np.mean(which == b) * abs(s[which == b].mean() - y[which == b].mean())
        for b in range(bins)
        if np.any(which == b)
    )
    return {
        "partial_auc": roc_auc_score(y, s, max_fpr=max_fpr),
        "tpr_at_fpr": tpr[fpr <= target_fpr].max(),
        "average_precision": average_precision_score(y, s),
        "ece": ece,
        "edges": edges,
    }


def test_summaries_with_noise_off_equal_sklearn(spark, capsys, tmp_path):
    """Issue 33 on Spark: partial AUC, TPR at FPR, average precision and the ECE of
    --mechanism none equal scikit-learn's (ECE within 1e-6) where every score has a bucket
    of its own; and equal --backend simulate's field for field."""
    rng = np.random.default_rng(9)
    n, grid = 3000, 100  # --num-thresholds 101: buckets of width 1/100
    label = (rng.random(n) < 0.3).astype(int)
    raw = np.clip(0.35 + 0.3 * label + rng.normal(0, 0.2, n), 0, 0.999)
    score = (np.floor(raw * grid) + 0.5) / grid  # bucket midpoints: one score per bucket
    frame = pd.DataFrame({"score": score, "label": label})
    path = tmp_path / "scores.parquet"
    frame.to_parquet(path, index=False)
    argv = ("--scores", path, "--mechanism", "none", "--num-thresholds", grid + 1)
    argv += ("--max-fpr", 0.1, "--tpr-at-fpr", 0.1, "--calibration-bins", 10)
    mine = _evaluate(capsys, *argv, "--backend", "spark")
    exact = _exact_summaries(frame, 0.1, 0.1, 10)
    assert mine["partial_auc"] == pytest.approx(exact["partial_auc"], abs=1e-9)
    assert mine["tpr_at_fpr"] == pytest.approx(exact["tpr_at_fpr"], abs=1e-9)
    assert mine["average_precision"] == pytest.approx(exact["average_precision"], abs=1e-9)
    assert mine["ece"] == pytest.approx(exact["ece"], abs=1e-6)
    theirs = _evaluate(capsys, *argv, "--backend", "simulate")
    for key in ("partial_auc", "tpr_at_fpr", "tpr_at_fpr_threshold", "average_precision", "ece"):
        assert mine[key] == pytest.approx(theirs[key], abs=1e-12), key
    assert mine["reliability"] == theirs["reliability"]


def test_the_registered_backend_reads_the_source(spark, files):
    """``backends.backend("spark")`` is what the command runs: ScoreSource in, AUCResult out;
    a bad master is one line before any JVM starts."""
    from dpauc_tf.backends import EvaluationData, ScoreSource, backend, backend_class
    from dpauc_tf.mechanisms.release import ReleaseSpec
    from dpauc_tf.spark.session import SparkMasterError

    assert backend_class("spark").reads_files
    spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=40)
    source = ScoreSource(str(files["parquet"]), client_column="client")
    result = backend("spark").evaluate(spec, EvaluationData(source=source))
    frame = pd.read_parquet(files["parquet"])
    from dpauc_tf.simulation import client_histograms, simulate

    pos, neg = client_histograms(
        frame["label"].to_numpy(), frame["score"].to_numpy(), spec.count_grid(),
        frame["client"].to_numpy(), 10,
    )  # fmt: skip
    assert result.aucs.tolist() == simulate(spec.build(10), pos, neg).aucs.tolist()
    assert result.num_clients == 10
    with pytest.raises(SparkMasterError, match=r"^'nowhere': not a Spark master URL"):
        backend("spark", master="nowhere")
    with pytest.raises(ValueError, match="takes its clients from the file's client column"):
        backend("spark").evaluate(
            spec, EvaluationData(source=source, client_ids=np.zeros(3, int), num_clients=2)
        )
