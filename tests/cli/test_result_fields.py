"""Every backend of ``dpauc evaluate`` gives the one result type (AUCResult): its JSON adds
``to_dict()``'s whole-output cost to the command's 0.2 fields, which keep their meaning."""

import numpy as np
import pandas as pd
import pytest

from dpauc_tf.mechanisms.release import ReleaseSpec

OLD_FIELDS = {"mechanism", "epsilon", "delta", "guaranteed_epsilon", "privacy", "aucs", "roc"}
OLD_FIELDS |= {"auc_mean", "auc_std", "num_undefined", "num_examples", "num_clients", "repeats"}


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, 400)
    scores = 1 / (1 + np.exp(-(rng.normal(size=400) + labels)))
    path = tmp_path_factory.mktemp("fields") / "s.csv"
    frame = pd.DataFrame({"score": scores, "label": labels, "client": rng.integers(0, 3, 400)})
    frame.to_csv(path, index=False)
    return path


def test_every_backend_states_the_cost_of_the_whole_output(backend, evaluate_json, small_csv):
    out = evaluate_json(
        *("--scores", small_csv, "--backend", backend, "--num-thresholds", 20),
        *("--mechanism", "histogram", "--epsilon", 1, "--repeats", 3, "--seed", 0),
        *("--client-column", "client"),
    )
    assert OLD_FIELDS <= set(out) and out["epsilon"] == 1.0 and len(out["aucs"]) == 3
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=20)
    assert out["epsilon_total"] == pytest.approx(spec.build().privacy_spent(3).best)
    assert out["num_reporting"] == out["num_clients"] == 3
    assert out["slices_per_example"] == 1


def test_no_noise_has_no_epsilon_total(evaluate_json, small_csv):
    out = evaluate_json("--scores", small_csv, "--mechanism", "none", "--repeats", 2)
    assert out["epsilon_total"] is None and out["delta_total"] == 0.0
