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
