"""Tree mechanisms in TFF: exact without noise, integer secure sums, noise independent of K."""

from __future__ import annotations

import numpy as np
import pytest

tff = pytest.importorskip("tensorflow_federated")

import tensorflow as tf  # noqa: E402

from dpauc_tf.core.counts import bucket_counts  # noqa: E402
from dpauc_tf.core.partitions import iid_partition, non_iid_partition  # noqa: E402
from dpauc_tf.core.thresholds import Thresholds  # noqa: E402
from dpauc_tf.federated import client_data_from_partition, evaluate  # noqa: E402
from dpauc_tf.mechanisms.tree import SecureTreeHistogram  # noqa: E402

pytestmark = pytest.mark.federated

FINE = 255  # 256 buckets: a complete 4-ary tree of depth 4


def _scores_labels(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype(np.float32)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + labels)))
    return scores.astype(np.float32), labels


@pytest.mark.parametrize("mechanism", ["tree-histogram", "secure-tree-histogram"])
def test_tree_without_noise_equals_the_flat_auc_on_a_fine_grid(mechanism):
    scores, labels = _scores_labels()
    reference = tf.keras.metrics.AUC(num_thresholds=FINE)
    reference.update_state(labels, scores)
    clients = client_data_from_partition(scores, labels, non_iid_partition(scores, 7), 7)
    # epsilon 1e9: per-node scale ~1e-8, so the discrete Laplace shares are exactly 0 and the
    # continuous Laplace noise is far below the tolerance.
    out = evaluate(clients, mechanism=mechanism, epsilon=1e9, num_thresholds=FINE, seed=0)
    assert out.mechanism == mechanism and out.num_reporting == 7 and out.epsilon == 1e9
    assert abs(out.auc - float(reference.result())) < 1e-6
    assert out.fpr[0].size == FINE and np.all(np.diff(out.fpr[0]) >= 0)
    if mechanism == "secure-tree-histogram":
        pos, neg = bucket_counts(labels, scores, Thresholds.make(FINE), dtype=tf.float64)
        mech = SecureTreeHistogram(1.0, FINE)
        np.testing.assert_array_equal(
            out.noisy_counts["pos_tree"][0], mech.layout.node_counts(pos).numpy()
        )
        np.testing.assert_array_equal(
            out.noisy_counts["neg_tree"][0], mech.layout.node_counts(neg).numpy()
        )


def _node_residual_variance(k, scores, labels, seeds, **kwargs):
    clients = client_data_from_partition(scores, labels, iid_partition(scores.size, k, seed=0), k)
    pos, neg = bucket_counts(labels, scores, Thresholds.make(15), dtype=tf.float64)
    layout = SecureTreeHistogram(1.0, 15).layout
    exact = [layout.node_counts(pos).numpy(), layout.node_counts(neg).numpy()]
    residuals = []
    for seed in seeds:
        out = evaluate(
            clients,
            mechanism="secure-tree-histogram",
            epsilon=1.0,
            num_thresholds=15,
            seed=seed,
            **kwargs,
        )
        for key, counts in zip(("pos_tree", "neg_tree"), exact, strict=True):
            released = out.noisy_counts[key][0]
            assert np.all(released == np.round(released))  # integers: a secure sum
            residuals.append(released - counts)
    return np.stack(residuals), out


def test_secure_tree_noise_does_not_grow_with_the_number_of_clients():
    scores, labels = _scores_labels(400)
    mechanism = SecureTreeHistogram(1.0, 15)
    node_var = np.asarray(mechanism.level_variances)[mechanism.layout.node_levels()]
    for k in (1, 12):
        residuals, out = _node_residual_variance(k, scores, labels, seeds=range(6))
        # 12 releases x 21 nodes; normalised by each node's stated variance -> mean 1.
        ratio = float(np.mean(residuals**2 / node_var))
        assert 0.6 < ratio < 1.6, (k, ratio)  # a halved or doubled scale gives 0.25 / 4
        assert out.epsilon == 1.0 and out.statement.mechanism == "secure-tree-histogram"


def test_local_tree_and_skellam_secure_tree_run_in_tff():
    scores, labels = _scores_labels(600)
    clients = client_data_from_partition(scores, labels, iid_partition(600, 3, seed=1), 3)
    local = evaluate(clients, mechanism="tree-histogram", epsilon=1.0, num_thresholds=15, seed=1)
    assert sorted(local.noisy_counts) == ["neg_tree", "pos_tree"]
    assert not np.all(local.noisy_counts["pos_tree"] == np.round(local.noisy_counts["pos_tree"]))
    skellam = evaluate(
        clients,
        mechanism="secure-tree-histogram",
        epsilon=1.0,
        delta=1e-6,
        noise_family="skellam",
        num_thresholds=15,
        seed=1,
        dropout=0.34,
        secure_shares=3,
    )
    assert skellam.num_reporting == 2 and skellam.delta == 1e-6
    assert skellam.epsilon > 1.0  # 2 of the 3 shares arrived: the shortfall is reported
    assert "Skellam" in skellam.statement.noise
