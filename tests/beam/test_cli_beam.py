"""``dpauc evaluate --backend beam`` on the local runner with 2 worker processes equals
``--backend simulate`` exactly with noise off (clients' reports summed), same JSON."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("apache_beam")

from dpauc_tf.cli import main

AUC_FIELDS = ("exact_auc", "tf_auc", "auc_mean", "auc_std", "aucs", "num_undefined", "roc")


def run_json(capsys, *args):
    assert main(["evaluate", *map(str, args), "--format", "json", "--show-exact"]) == 0
    return json.loads(capsys.readouterr().out)


def test_beam_backend_two_workers_equals_simulate(capsys, tmp_path):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 3000)
    scores = 1 / (1 + np.exp(-(rng.normal(size=3000) + labels - 0.5)))
    path = tmp_path / "scores.csv"
    frame = pd.DataFrame({"score": scores, "label": labels, "client": rng.integers(0, 4, 3000)})
    frame.to_csv(path, index=False)
    common = ["--scores", path, "--mechanism", "none", "--num-thresholds", 50, "--repeats", 2]
    simulated = run_json(capsys, *common, "--backend", "simulate")
    beam = run_json(capsys, *common, "--backend", "beam")  # DirectRunner, 2 processes
    assert beam["backend"] == "beam" and beam["num_clients"] == 4
    for field in AUC_FIELDS:
        assert beam[field] == simulated[field], field
    assert set(beam) == set(simulated)


def test_beam_backend_releases_auc_only_with_no_curve(capsys, tmp_path):
    """auc-only through --backend beam: counted on its own grid, an AUC and no curve (it
    failed after the release with "no curve to show")."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 4000)
    scores = 1 / (1 + np.exp(-(rng.normal(size=4000) + labels - 0.5)))
    path = tmp_path / "scores.csv"
    pd.DataFrame({"score": scores, "label": labels}).to_csv(path, index=False)
    out = run_json(
        capsys,
        *("--scores", path, "--mechanism", "auc-only", "--epsilon", 100, "--delta", 1e-6),
        *("--seed", 0, "--backend", "beam", "--beam-options=--runner=DirectRunner"),
    )
    assert out["backend"] == "beam" and out["roc"] is None
    assert out["count_thresholds"] == 2**17 + 1
    assert out["aucs"][0] == pytest.approx(roc_auc_score(labels, scores), abs=1e-3)
