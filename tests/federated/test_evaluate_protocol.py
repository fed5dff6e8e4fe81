"""dpauc_tf.federated.evaluate on the release protocol: a ReleaseSpec sets it up, every
client's seed is spec.seed_for("tff", repeat, client), finish_release post-processes, and
FederatedEvaluation is a view of the AUCResult (its 0.2 attributes unchanged)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tensorflow_federated")

from dpauc_tf.core.partitions import client_data_from_partition, non_iid_partition
from dpauc_tf.federated import evaluate
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec
from dpauc_tf.simulation import client_histograms, simulate

pytestmark = pytest.mark.federated
T = 20
K = 10


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    labels = (rng.random(1500) < 0.4).astype(np.float64)
    scores = 1 / (1 + np.exp(-(rng.normal(size=1500) + labels)))
    ids = np.asarray(non_iid_partition(scores, K), np.int64)
    return scores, labels, ids


def test_noise_off_equals_the_simulate_backend_k10_non_iid(data):
    scores, labels, ids = data
    spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=T)
    out = evaluate(client_data_from_partition(scores, labels, ids, K), **spec.settings())
    pos, neg = client_histograms(labels, scores, spec.count_grid(), ids, K)
    expected = simulate(spec, pos, neg)
    assert isinstance(out.result, AUCResult)
    assert out.result.aucs.tolist() == expected.aucs.tolist()
    np.testing.assert_array_equal(out.roc.fpr, expected.fpr[0])
    assert np.isinf(out.epsilon) and out.result.epsilon is None  # 0.2's inf, the result's None
    assert out.num_clients == out.num_reporting == K and out.num_examples == 1500


def test_repeats_are_accounted_once_and_views_read_through(data):
    scores, labels, ids = data
    clients = client_data_from_partition(scores, labels, ids, K)
    out = evaluate(clients, mechanism="histogram", epsilon=1.0, num_thresholds=T, seed=3, repeats=3)
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T)
    assert out.result.repeats == 3 and len(set(out.aucs.tolist())) == 3
    assert out.epsilon_total == pytest.approx(spec.build().privacy_spent(3).best)
    assert out.auc == out.aucs[0] and out.noisy_counts["pos"].shape == (T + 1,)
    assert out.to_dict()["num_reporting"] == K
    again = evaluate(clients, mechanism="histogram", epsilon=1.0, num_thresholds=T, seed=3)
    assert again.auc == out.auc  # repeat 0's seeds do not depend on the number of repeats
    with pytest.raises(ValueError, match="once per repeat"):
        evaluate(iter(clients), epsilon=1.0, num_thresholds=T, num_clients=K, repeats=2)
