"""``dpauc evaluate`` end to end: JSON parsed and checked, bad input exits."""

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf
from sklearn.metrics import roc_auc_score

from dpauc_tf.cli import main
from dpauc_tf.mechanisms import list_mechanisms
from tests.helpers.cli import evaluate_json as run_json

N = 2000
T = 50


@pytest.fixture(scope="module")
def score_frame():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, N)
    scores = 1 / (1 + np.exp(-(1.2 * rng.normal(size=N) + labels - 0.5)))
    return pd.DataFrame({"score": scores, "label": labels, "client": rng.integers(0, 5, N)})


@pytest.fixture(scope="module")
def csv_path(score_frame, tmp_path_factory):
    path = tmp_path_factory.mktemp("scores") / "scores.csv"
    score_frame.to_csv(path, index=False)
    return path


def mechanism_args(name):
    if name == "none":
        return []
    if name == "paper-gaussian":
        return ["--epsilon", "1", "--delta", "1e-6"]
    return ["--epsilon", "1"]


# auc-only takes one client (this file has five) and releases no curve: tests/mechanisms/test_auc_only.py
@pytest.mark.parametrize("name", list_mechanisms(releases="curve"))
def test_every_mechanism_json(capsys, csv_path, score_frame, name):
    out = run_json(
        capsys,
        "--scores",
        csv_path,
        "--mechanism",
        name,
        *mechanism_args(name),
        "--num-thresholds",
        T,
        "--repeats",
        6,
        "--seed",
        1,
        "--show-exact",
        "--client-column",
        "client",
    )
    for key in (
        "exact_auc",
        "tf_auc",
        "mechanism",
        "epsilon",
        "delta",
        "num_clients",
        "num_thresholds",
        "repeats",
        "auc_mean",
        "auc_std",
        "aucs",
        "roc",
    ):
        assert key in out
    exact = roc_auc_score(score_frame.label, score_frame.score)
    keras_auc = tf.keras.metrics.AUC(num_thresholds=T)
    keras_auc.update_state(score_frame.label.to_numpy(), score_frame.score.to_numpy())
    assert out["exact_auc"] == pytest.approx(exact, abs=1e-12)
    assert out["tf_auc"] == pytest.approx(float(keras_auc.result()), abs=1e-6)
    assert out["mechanism"] == name and out["num_thresholds"] == T and out["repeats"] == 6
    assert out["num_clients"] == 5  # the file's client column
    assert len(out["aucs"]) == 6
    assert out["auc_mean"] == pytest.approx(np.mean(out["aucs"]))
    assert out["auc_std"] == pytest.approx(np.std(out["aucs"]))
    assert len(out["roc"]["fpr"]) == len(out["roc"]["tpr"]) >= T
    assert np.all(np.diff(out["roc"]["fpr"]) >= 0)
    if name == "none":
        assert out["aucs"] == [pytest.approx(out["tf_auc"], abs=1e-6)] * 6
        assert out["guaranteed_epsilon"] is None
        assert out["pld_epsilon"] is None
    else:
        assert out["auc_std"] > 0
        assert 0.3 < out["auc_mean"] < 1.0
    if name == "paper":
        assert out["guaranteed_epsilon"] == 0.5  # tight accounting of the paper's noise
        # by the PLD accountant (2T unit Laplace losses composed), far below the pure 0.5
        assert 0.05 < out["pld_epsilon"] < 0.4 and out["pld_delta"] == 1e-6


def test_seed_reproduces_and_partition_sets_clients(capsys, csv_path):
    args = ["--scores", csv_path, "--mechanism", "histogram", "--epsilon", 2, "--repeats", 4]
    a = run_json(capsys, *args, "--seed", 3, "--clients", 20, "--partition", "noniid")
    b = run_json(capsys, *args, "--seed", 3, "--clients", 20, "--partition", "noniid")
    c = run_json(capsys, *args, "--seed", 4, "--clients", 20, "--partition", "iid")
    assert a["aucs"] == b["aucs"] != c["aucs"]
    assert a["num_clients"] == 20 and a["partition"] == "non-iid" and c["partition"] == "iid"


def test_more_clients_means_more_local_noise(capsys, csv_path):
    args = ["--scores", csv_path, "--mechanism", "histogram", "--epsilon", 1, "--repeats", 200]
    few = run_json(capsys, *args, "--seed", 0, "--clients", 1)
    many = run_json(capsys, *args, "--seed", 0, "--clients", 100)
    assert many["auc_std"] > 3 * few["auc_std"]


def test_table_format_and_plot(capsys, csv_path, tmp_path):
    png = tmp_path / "roc.png"
    code = main(
        [
            "evaluate",
            "--scores",
            str(csv_path),
            "--mechanism",
            "histogram",
            "--epsilon",
            "1",
            "--repeats",
            "20",
            "--seed",
            "0",
            "--plot",
            str(png),
            "--show-exact",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "private AUC" in text and "exact AUC" in text
    assert "PLD epsilon" in text and "at delta 1e-06 (one release)" in text
    assert png.stat().st_size > 10_000


def test_parquet_and_column_names(capsys, score_frame, tmp_path):
    if importlib.util.find_spec("pyarrow") is None:
        pytest.skip("pyarrow not installed")
    try:
        import pyarrow  # noqa: F401
    except ImportError as error:
        pytest.skip(f"pyarrow does not import here: {error}")
    path = tmp_path / "s.parquet"
    score_frame.rename(columns={"score": "p", "label": "y"}).drop(columns="client").to_parquet(path)
    out = run_json(
        capsys,
        "--scores",
        path,
        "--score-column",
        "p",
        "--label-column",
        "y",
        "--mechanism",
        "histogram",
        "--epsilon",
        1,
        "--seed",
        0,
    )
    assert out["num_clients"] == 1 and out["num_examples"] == N


def write(tmp_path, text):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    return str(path)


BAD_FILES = {
    "missing column": ("score,lab\n0.1,0\n", "missing column"),
    "label 2": ("score,label\n0.1,0\n0.4,2\n", "labels must be 0 or 1"),
    "score 1.5": ("score,label\n0.1,0\n1.5,1\n", "scores must be in [0, 1]"),
    "negative score": ("score,label\n-0.1,0\n0.5,1\n", "scores must be in [0, 1]"),
    "NaN score": ("score,label\n0.1,0\nnan,1\n", "NaN"),
    "NaN label": ("score,label\n0.1,0\n0.3,\n", "NaN"),
    "empty file": ("", "empty file"),
    "header only": ("score,label\n", "no examples"),
    "text score": ("score,label\n0.1,0\nabc,1\n", "numbers"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_files_exit_with_one_line(capsys, tmp_path, case):
    text, message = BAD_FILES[case]
    code = main(
        [
            "evaluate",
            "--scores",
            write(tmp_path, text),
            "--mechanism",
            "histogram",
            "--epsilon",
            "1",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("dpauc: error:") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--clients", "5000"], "exceeds the number of examples"),
        (["--epsilon", "0"], "epsilon"),
        (["--epsilon", "-1"], "epsilon"),
        (["--epsilon", "nan"], "finite"),
        (["--mechanism", "bogus"], "invalid choice"),
        (["--mechanism", "none", "--epsilon", "1"], "leave --epsilon unset"),
        (["--mechanism", "paper"], "needs --epsilon"),
        (["--mechanism", "paper-gaussian", "--epsilon", "1"], "delta"),
        (["--repeats", "0"], ">= 1"),
    ],
)
def test_bad_arguments_exit_with_one_line(capsys, csv_path, args, message):
    base = ["evaluate", "--scores", str(csv_path)]
    if "--mechanism" not in args:
        base += ["--mechanism", "histogram"]
    if "--epsilon" not in args and "--mechanism" not in args:
        base += ["--epsilon", "1"]
    code = main(base + args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("dpauc: error:") and message in err and err.count("\n") == 1


def test_missing_file(capsys, tmp_path):
    assert main(["evaluate", "--scores", str(tmp_path / "nope.csv"), "--mechanism", "none"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_tff_backend_without_federated_evaluate_is_a_clear_error(capsys, csv_path):
    if importlib.util.find_spec("tensorflow_federated") is not None:
        from dpauc_tf import federated

        if hasattr(federated, "evaluate"):
            pytest.skip("dpauc_tf.federated.evaluate exists; see test_tff_backend")
    code = main(
        [
            "evaluate",
            "--scores",
            str(csv_path),
            "--mechanism",
            "histogram",
            "--epsilon",
            "1",
            "--backend",
            "tff",
        ]
    )
    assert code == 2
    assert "--backend tff" in capsys.readouterr().err


def test_python_dash_m_runs_the_cli(csv_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dpauc_tf",
            "evaluate",
            "--scores",
            str(csv_path),
            "--mechanism",
            "histogram-public-scores",
            "--epsilon",
            "2",
            "--repeats",
            "3",
            "--seed",
            "0",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["mechanism"] == "histogram-public-scores" and len(out["aucs"]) == 3
