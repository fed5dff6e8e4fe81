"""``dpauc evaluate --backend tff`` runs dpauc_tf.federated.evaluate (TFF world only)."""

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("tensorflow_federated")

from dpauc_tf.cli import main


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory):
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, 600)
    scores = 1 / (1 + np.exp(-(rng.normal(size=600) + labels)))
    path = tmp_path_factory.mktemp("tff") / "s.csv"
    pd.DataFrame({"score": scores, "label": labels, "client": rng.integers(0, 3, 600)}).to_csv(
        path, index=False
    )
    return path


def test_tff_backend_matches_tf_auc_without_noise_and_adds_noise_with_it(capfd, csv_path):
    base = ["evaluate", "--scores", str(csv_path), "--num-thresholds", "50", "--backend", "tff"]
    base += ["--client-column", "client"]
    assert main([*base, "--mechanism", "none", "--format", "json", "--show-exact"]) == 0
    exact = json.loads(capfd.readouterr().out)
    assert exact["backend"] == "tff" and exact["num_clients"] == 3
    assert exact["aucs"] == [pytest.approx(exact["tf_auc"], abs=1e-6)]
    args = [*base, "--mechanism", "histogram", "--epsilon", "1", "--repeats", "2", "--seed", "0"]
    assert main([*args, "--format", "json"]) == 0
    noisy = json.loads(capfd.readouterr().out)
    assert len(noisy["aucs"]) == 2 and noisy["aucs"][0] != noisy["aucs"][1]
    assert noisy["guaranteed_epsilon"] == 1.0
