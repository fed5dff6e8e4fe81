"""``dpauc multiclass --mechanism rank-sum`` and ``dpauc compare --method rank-sum``: the
per-class rank sums and the rank-sum comparison from the command line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from tests.helpers.cli import cli_json, cli_status


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 1200
    labels = rng.integers(0, 3, n)
    logits = rng.normal(size=(n, 3))
    logits[np.arange(n), labels] += 1.0
    scores = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    out = pd.DataFrame(scores, columns=["p0", "p1", "p2"])
    out["y"] = labels
    out["label"] = (labels == 0).astype(int)
    out["score"] = scores[:, 0]
    out["score_b"] = np.clip(scores[:, 0] + 0.05 * rng.normal(size=n), 0, 1)
    return out


@pytest.fixture()
def csv_path(frame, tmp_path):
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path


def test_multiclass_rank_sum_json_with_intervals_and_clients(capsys, csv_path, frame):
    argv = ["--scores", csv_path, "--class-column", "y", "--score-columns", "p0,p1,p2"]
    out = cli_json(
        capsys, "multiclass", *argv, "--mechanism", "rank-sum", "--epsilon", "1e6",
        "--average", "micro", "--confidence", "0.9", "--seed", "1",
    )  # fmt: skip
    scores, labels = frame[["p0", "p1", "p2"]].to_numpy(), frame["y"].to_numpy()
    assert out["micro"] == pytest.approx(
        roc_auc_score(np.eye(3)[labels], scores, average="micro"), abs=1e-4
    )
    assert out["roc"] is None and len(out["class_intervals"]) == 3
    assert out["mechanism"] == "one-vs-rest rank-sum" and out["epsilon"] == pytest.approx(1e6)
    secure = cli_json(
        capsys, "multiclass", *argv, "--mechanism", "secure-rank-sum", "--epsilon", "1",
        "--clients", "4", "--seed", "2",
    )  # fmt: skip
    assert secure["num_clients"] == 4 and "4 client shares" in secure["privacy"]


def test_compare_rank_sum_and_refusals(capsys, csv_path, frame):
    out = cli_json(
        capsys, "compare", "--scores", csv_path, "--score-column-b", "score_b",
        "--epsilon", "1e9", "--method", "rank-sum", "--seed", "0",
    )  # fmt: skip
    exact = roc_auc_score(frame["label"], frame["score_b"]) - roc_auc_score(
        frame["label"], frame["score"]
    )
    assert out["difference"] == pytest.approx(exact, abs=1e-9)
    code, captured = cli_status(
        capsys, "compare", "--scores", csv_path, "--score-column-b", "score_b",
        "--epsilon", "1", "--method", "rank-sum", "--positive-rate", "0.3",
    )  # fmt: skip
    assert code != 0 and "only method='histogram' takes" in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_tff_runs_the_two_rounds_and_equals_the_simulation_seeded(capsys, csv_path):
    """``--backend tff`` runs the one-vs-rest rank sums in two TFF rounds: seeded, the
    release of the simulate backend on the same clients (its client seeds)."""
    pytest.importorskip("tensorflow_federated")
    argv = ["--scores", csv_path, "--class-column", "y", "--score-columns", "p0,p1,p2"]
    argv += ["--mechanism", "secure-rank-sum", "--epsilon", "1", "--clients", "3", "--seed", "4"]
    argv += ["--mechanism-option", "resolution=1001"]
    simulated = cli_json(capsys, "multiclass", *argv)
    federated = cli_json(capsys, "multiclass", *argv, "--backend", "tff")
    assert federated["backend"] == "tff" and federated["num_reporting"] == 3
    for key in ("macro", "weighted", "class_aucs"):
        assert federated[key] == pytest.approx(simulated[key], rel=1e-12)
    assert federated["privacy"] == simulated["privacy"]
