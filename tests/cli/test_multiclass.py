"""``dpauc multiclass``: scikit-learn's averages with noise off, the guarantee with noise, the
simulated clients, class names, and one-line errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from dpauc_tf.cli.main import main
from tests.helpers.cli import cli_json


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n, classes = 1500, 3
    logits = rng.normal(size=(n, classes))
    labels = rng.integers(0, classes, n)
    logits[np.arange(n), labels] += 1.0
    scores = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    out = pd.DataFrame(scores, columns=["p0", "p1", "p2"])
    out["y"] = labels
    out["client"] = np.arange(n) % 4
    return out


@pytest.fixture()
def csv_path(frame, tmp_path):
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path


def _json(capsys, *argv):
    return cli_json(capsys, "multiclass", *argv)


def test_noise_off_gives_scikit_learns_averages(capsys, csv_path, frame):
    out = _json(
        capsys,
        "--scores",
        csv_path,
        "--class-column",
        "y",
        "--score-columns",
        "p0,p1,p2",
        "--num-thresholds",
        "2000",
        "--mechanism",
        "none",
    )
    scores, labels = frame[["p0", "p1", "p2"]].to_numpy(), frame["y"].to_numpy()
    for average in ("macro", "weighted", "micro"):
        exact = roc_auc_score(labels, scores, multi_class="ovr", average=average)
        assert abs(out[average] - exact) < 2e-3
    assert out["epsilon"] is None and out["num_classes"] == 3 and len(out["roc"]) == 3


def test_noise_states_the_two_class_guarantee(capsys, csv_path):
    out = _json(
        capsys,
        "--scores",
        csv_path,
        "--class-column",
        "y",
        "--score-columns",
        "p0,p1,p2",
        "--epsilon",
        "1",
        "--seed",
        "0",
        "--repeats",
        "3",
        "--average",
        "weighted",
    )
    assert out["epsilon"] == pytest.approx(1.0) and out["epsilon_total"] == pytest.approx(3.0)
    assert "L1 = 4" in out["privacy"] and "Laplace(scale=4)" in out["privacy"]
    assert out["auc"] == out["weighted"] and len(out["aucs"]) == 3


def test_clients_by_column_with_secure_shares(capsys, csv_path):
    out = _json(
        capsys,
        "--scores",
        csv_path,
        "--class-column",
        "y",
        "--score-columns",
        "p0,p1,p2",
        "--epsilon",
        "1",
        "--seed",
        "0",
        "--clients",
        "4",
        "--client-column",
        "client",
        "--mechanism",
        "secure-histogram",
    )
    assert out["num_clients"] == 4 and "4 client shares" in out["privacy"]
    assert all(value == int(value) for value in out["class_support"])


def test_class_names_parquet_and_the_table(capsys, frame, tmp_path):
    named = frame.assign(y=frame["y"].map({0: "p0", 1: "p1", 2: "p2"}))
    path = tmp_path / "scores.parquet"
    named.to_parquet(path)
    base = [
        "multiclass",
        "--scores",
        str(path),
        "--class-column",
        "y",
        "--score-columns",
        "p0,p1,p2",
        "--mechanism",
        "none",
    ]
    assert main([*base, "--format", "json"]) == 0
    by_name = json.loads(capsys.readouterr().out)
    assert main(base) == 0
    table = capsys.readouterr().out
    assert "macro average" in table and "not private" in table
    frame.to_csv(tmp_path / "ids.csv", index=False)
    assert main([*base[:2], str(tmp_path / "ids.csv"), *base[3:], "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["class_aucs"] == by_name["class_aucs"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--score-columns", "p0"], "at least two columns"),
        (["--score-columns", "p0,p1,nope"], "missing column"),  # as evaluate says it
        (["--score-columns", "p0,p1"], r"class ids must be integers in \[0, 2\)"),
        (["--score-columns", "p0,p1,p2", "--client-column", "client"], "needs --clients"),
        (["--score-columns", "p0,p1,p2", "--mechanism", "rr", "--epsilon", "1"], "one-vs-rest"),
        (["--score-columns", "p0,p1,p2", "--average", "samples"], "invalid choice"),
    ],
)
def test_errors_are_one_line(capsys, csv_path, extra, message):
    argv = ["multiclass", "--scores", str(csv_path), "--class-column", "y", "--mechanism", "none"]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpauc: error:") and len(err.splitlines()) == 1
    assert re.search(message, err), err


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.mark.parametrize(
    ("backend", "module", "message"),
    [("tff", "tensorflow_federated", "TensorFlow Federated"), ("flower", "flwr", "Flower")],
)
def test_a_backend_whose_world_is_not_installed_is_one_line(
    capsys, csv_path, backend, module, message
):
    if _has(module):
        pytest.skip(f"{module} is installed in this world")
    argv = ["multiclass", "--scores", str(csv_path), "--class-column", "y", "--mechanism", "none"]
    assert main([*argv, "--score-columns", "p0,p1,p2", "--backend", backend]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpauc: error:") and len(err.splitlines()) == 1 and message in err


@pytest.mark.parametrize(
    ("backend", "module"), [("tff", "tensorflow_federated"), ("flower", "flwr")]
)
def test_federated_backends_equal_the_simulation(capsys, monkeypatch, csv_path, backend, module):
    if not _has(module):
        pytest.skip(f"--backend {backend} needs {module}")
    monkeypatch.setenv("DPAUC_FLOWER_ENGINE", "in-process")
    base = ["--scores", csv_path, "--class-column", "y", "--score-columns", "p0,p1,p2"]
    base += ["--num-thresholds", "50", "--clients", "4", "--client-column", "client"]
    base += ["--mechanism", "none"]  # noise off, asked for explicitly
    simulated = _json(capsys, *base)
    federated = _json(capsys, *base, "--backend", backend)
    assert federated["backend"] == backend and federated["num_clients"] == 4
    for key in ("macro", "weighted", "micro", "class_aucs"):
        assert federated[key] == pytest.approx(simulated[key], abs=1e-12)
    noisy = _json(
        capsys, *base, "--backend", backend, "--epsilon", "1", "--mechanism", "secure-histogram"
    )
    assert noisy["epsilon"] == 1.0 and noisy["num_reporting"] == 4
    assert "4 client shares" in noisy["privacy"]


# -- issue 30: read through dpauc_tf.io, duplicated columns, a missing epsilon --------------------
def _error(capsys, *argv) -> str:
    assert main(["multiclass", *map(str, argv)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpauc: error:") and len(err.splitlines()) == 1, err
    return err


def test_a_truncated_gzip_file_is_one_line_naming_it(capsys, frame, tmp_path):
    """Before: a raw EOFError traceback (multiclass read with its own pd.read_csv)."""
    path = tmp_path / "scores.csv.gz"
    frame.to_csv(path, index=False)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    err = _error(capsys, "--scores", path, "--class-column", "y", "--score-columns", "p0,p1,p2",
                 "--mechanism", "none")  # fmt: skip
    assert f"{path}: truncated compressed file" in err


def test_an_empty_file_is_named(capsys, tmp_path):
    """Before: 'No columns to parse from file', without the file's name."""
    path = tmp_path / "empty.csv"
    path.write_bytes(b"")
    err = _error(capsys, "--scores", path, "--class-column", "y", "--score-columns", "p0,p1",
                 "--mechanism", "none")  # fmt: skip
    assert f"{path}: empty file" in err


def test_an_empty_cell_names_the_row(capsys, frame, tmp_path):
    path = tmp_path / "holes.csv"
    holed = frame.copy()
    holed.loc[6, "p1"] = np.nan
    holed.to_csv(path, index=False)
    err = _error(capsys, "--scores", path, "--class-column", "y", "--score-columns", "p0,p1,p2",
                 "--mechanism", "none")  # fmt: skip
    assert f"{path}: row 7: empty cell in 'p1'" in err


def test_a_repeated_score_column_is_refused(capsys, csv_path):
    """Before: p0,p1,p2,p0 ran, and class p1's AUC came from p0's scores."""
    err = _error(capsys, "--scores", csv_path, "--class-column", "y",
                 "--score-columns", "p0,p1,p2,p0", "--mechanism", "none")  # fmt: skip
    assert "--score-columns names 'p0' more than once" in err


def test_a_missing_epsilon_is_refused_as_evaluate_refuses_it(capsys, csv_path, tmp_path):
    """Before: no --epsilon meant no noise (an exact result printed as the default).
    Now the same one-line refusal as ``dpauc evaluate``; the exact result needs the
    explicit ``--mechanism none``."""
    err = _error(capsys, "--scores", csv_path, "--class-column", "y", "--score-columns",
                 "p0,p1,p2")  # fmt: skip
    binary = tmp_path / "binary.csv"
    binary.write_text("score,label\n0.2,0\n0.7,1\n")
    assert main(["evaluate", "--scores", str(binary), "--mechanism", "histogram"]) == 2
    evaluate_err = capsys.readouterr().err.strip()
    assert err == evaluate_err == "dpauc: error: mechanism 'histogram' needs --epsilon"
    err = _error(capsys, "--scores", csv_path, "--class-column", "y", "--score-columns",
                 "p0,p1,p2", "--mechanism", "none", "--epsilon", "1")  # fmt: skip
    assert "adds no noise: leave --epsilon unset" in err


def test_a_directory_is_read_by_the_one_path_rule(capsys, frame, tmp_path):
    """multiclass reads what evaluate reads: a directory's files, hidden ones skipped at
    every level."""
    (tmp_path / "out" / "_temporary").mkdir(parents=True)
    frame.iloc[:700].to_csv(tmp_path / "out" / "part-0.csv", index=False)
    frame.iloc[700:].to_parquet(tmp_path / "out" / "part-1.parquet", index=False)
    err = _error(capsys, "--scores", tmp_path / "out", "--class-column", "y",
                 "--score-columns", "p0,p1,p2", "--mechanism", "none")  # fmt: skip
    assert "files of several formats" in err
    (tmp_path / "out" / "part-1.parquet").unlink()
    frame.iloc[700:].to_csv(tmp_path / "out" / "part-1.csv", index=False)
    frame.to_csv(tmp_path / "out" / "_temporary" / "part-0.csv", index=False)
    base = ["--class-column", "y", "--score-columns", "p0,p1,p2", "--mechanism", "none"]
    whole = _json(capsys, "--scores", tmp_path / "out", *base, "--num-thresholds", "100")
    single = tmp_path / "all.csv"
    frame.to_csv(single, index=False)
    assert whole["class_aucs"] == _json(capsys, "--scores", single, *base,
                                        "--num-thresholds", "100")["class_aucs"]  # fmt: skip
    assert sum(whole["class_support"]) == len(frame)
