"""The tree's AUC estimate (bias and variance) and its Skellam family (noise, accounting)."""

import math

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.analysis.tree_design import mechanism_auc_variance
from dpauc_tf.core.curve import auc_from_confusion, auc_from_histogram
from dpauc_tf.mechanisms.tree import SecureTreeHistogram, TreeHistogram
from dpauc_tf.privacy.skellam import (
    rdp_to_epsilon,
    skellam_precision_shares,
    skellam_rdp,
    skellam_tree_mus,
)

REPEATS = 3000


def _histogram(num_buckets=64, scale=40):
    rng = np.random.default_rng(3)
    pos = np.sort(rng.integers(0, 30, size=num_buckets)) * scale  # rising with the score
    neg = np.sort(rng.integers(0, 90, size=num_buckets))[::-1] * scale  # falling
    pos[0] = pos[-1] = neg[0] = neg[-1] = 0  # the grid's two end buckets are empty
    return tf.constant(pos, tf.float64), tf.constant(neg, tf.float64)


def _whole_split(counts, clients: int) -> tf.Tensor:
    """``counts`` split into ``clients`` rows of whole counts that sum to it."""
    counts = np.asarray(counts, np.int64)
    parts = np.repeat((counts // clients)[None, :], clients, axis=0)
    parts += np.arange(clients)[:, None] < (counts % clients)[None, :]
    return tf.constant(parts.astype(np.float64))


@pytest.mark.parametrize("public_scores", [False, True])
def test_estimate_auc_is_unbiased_at_high_noise_where_the_monotone_curve_is_not(public_scores):
    pos, neg = _histogram()
    exact = float(auc_from_histogram(pos, neg))
    m = TreeHistogram(epsilon=1.0, num_thresholds=63, public_scores=public_scores)
    nodes = {"pos_tree": m.layout.node_counts(pos), "neg_tree": m.layout.node_counts(neg)}
    if public_scores:
        nodes = {"pos_tree": nodes["pos_tree"], "total": pos + neg}
    assert abs(float(m.estimate_auc(nodes)) - exact) < 1e-12
    # 300 local releases summed: per-leaf noise comparable to the counts.
    clients = 300
    per_client = [_whole_split(c, clients) for c in (pos, neg)]  # public totals: whole counts
    release = m.release(*per_client, seed=2, repeats=REPEATS // 10)
    summed = {key: tf.reduce_sum(value, axis=1) for key, value in release.items()}
    direct = m.estimate_auc(summed).numpy()
    curve = auc_from_confusion(m.to_confusion(summed)).numpy()
    stderr = direct.std() / math.sqrt(direct.size)
    assert abs(direct.mean() - exact) < 4 * stderr
    assert curve.mean() - exact < -3 * curve.std() / math.sqrt(curve.size)  # biased low
    # the linearised variance predicts the spread: a halved or doubled scale would not fit
    predicted = math.sqrt(clients * mechanism_auc_variance(pos.numpy(), neg.numpy(), m))
    assert 0.8 < direct.std() / predicted < 1.25


def test_skellam_secure_tree_noise_sums_to_the_stated_skellam_for_any_k():
    for clients in (1, 25):
        m = SecureTreeHistogram(
            1.0, 15, delta=1e-6, num_clients=clients, family="skellam", public_scores=True
        )
        share = m.release(
            tf.zeros([clients, 16], tf.float64),
            tf.zeros([clients, 16], tf.float64),
            seed=clients,
            repeats=REPEATS // clients + 20,
        )["pos_tree"]
        summed = tf.reduce_sum(share, axis=1).numpy()
        assert np.all(summed == np.round(summed))
        offsets = m.layout.offsets
        for level, mu in enumerate(m.level_mus):
            drawn = summed[:, offsets[level] : offsets[level + 1]].ravel()
            assert abs(np.var(drawn) / (2.0 * mu) - 1.0) < 0.15, (clients, level)
    statement = m.statement()
    assert "Skellam" in statement.noise and statement.delta == 1e-6
    assert "L2^2 = 1 per level" in statement.sensitivity
    assert m.aggregate().level_mus == m.level_mus and m.aggregate().num_clients == 1
    with pytest.raises(ValueError, match="delta"):
        SecureTreeHistogram(1.0, 15, family="skellam")
    with pytest.raises(ValueError, match="family"):
        SecureTreeHistogram(1.0, 15, family="gaussian")


def test_skellam_tree_accounting_is_tight_and_composes_by_renyi():
    m = SecureTreeHistogram(1.0, 63, delta=1e-6, family="skellam")
    orders = np.arange(2, 1025, dtype=np.float64)
    rdp = sum(skellam_rdp(orders, mu, 2.0, 2.0) for mu in m.level_mus)
    assert abs(rdp_to_epsilon(orders, rdp, 1e-6) - 1.0) < 1e-6  # calibrated exactly
    one = m.privacy_spent(1)
    assert one.rdp == pytest.approx(1.0, rel=1e-6)  # the calibration's figure
    assert one.best == one.pld < 1.0  # the exact PLD from the pmf is tighter (issue 21)
    ten = m.privacy_spent(10)
    assert 1.0 < ten.rdp < 10.0 * 0.6  # Renyi composition: far below 10 x
    # smaller shares of the Renyi budget get more noise; one m for all levels
    shares = skellam_precision_shares(m.level_shares)
    ratios = np.asarray(m.level_mus) * shares
    np.testing.assert_allclose(ratios, ratios[0])
    assert m.level_mus == skellam_tree_mus(1.0, 1e-6, shares, 2.0)
    # dropout: 3 of 4 shares give less noise, a larger epsilon
    dropout = SecureTreeHistogram(1.0, 63, delta=1e-6, family="skellam", num_clients=4)
    assert dropout.achieved_epsilon(4) == 1.0 < dropout.achieved_epsilon(3)
    laplace = SecureTreeHistogram(1.0, 63, num_clients=4)
    assert laplace.achieved_epsilon(4) == 1.0 < laplace.achieved_epsilon(3) < math.inf
    assert laplace.achieved_epsilon(0) == math.inf
