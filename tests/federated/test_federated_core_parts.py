"""Partitions, randomized response and secure-histogram shares (no TFF needed)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import noise
from dpauc_tf.counts import bucket_counts
from dpauc_tf.curve import auc_from_histogram
from dpauc_tf.distributed import SecureHistogram, skellam_epsilon
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.partitions import (
    client_slices,
    iid_partition,
    label_skewed_partition,
    non_iid_partition,
    partition,
)
from dpauc_tf.randomized_response import debias_auc, flip_labels, flip_probability, statement
from dpauc_tf.thresholds import Thresholds


def test_non_iid_is_contiguous_equal_blocks_like_reference():
    scores = np.random.default_rng(0).random(103)
    ids = non_iid_partition(scores, 10)
    ranks = np.argsort(np.argsort(scores, kind="stable"), kind="stable")
    np.testing.assert_array_equal(ids, [int(r / (103 / 10)) for r in ranks])
    order = np.argsort(scores)
    assert np.all(np.diff(ids[order]) >= 0)
    assert np.bincount(ids).min() >= 10


def test_iid_and_label_skew_are_seeded_and_cover_all_examples():
    a, b = iid_partition(1000, 7, seed=3), iid_partition(1000, 7, seed=3)
    np.testing.assert_array_equal(a, b)
    assert a.min() >= 0 and a.max() < 7
    labels = (np.arange(2000) % 4 == 0).astype(int)
    ids = label_skewed_partition(labels, 20, concentration=0.1, seed=0)
    per_client = np.bincount(ids[labels == 1], minlength=20)
    assert per_client.max() > 3 * per_client.mean()  # skewed
    slices = client_slices(ids, 25)  # five clients empty
    assert sum(s.size for s in slices) == 2000 and slices[24].size == 0
    with pytest.raises(ValueError, match="unknown partition"):
        partition("random", labels, labels, 3)
    with pytest.raises(ValueError):
        iid_partition(10, 0)


def test_rr_statement_and_flip_rate():
    s = statement(1.0)
    assert s.epsilon == 1.0 and s.delta == 0.0 and "label DP" in s.neighbouring
    assert "1/(1+e^eps)" in s.noise
    labels = tf.zeros([200_000])
    flipped = flip_labels(labels, 1.0, seed=0)
    rate = float(tf.reduce_mean(flipped))
    # p = 0.2689; sd of the rate ~ 0.001.
    assert abs(rate - flip_probability(1.0)) < 0.005
    with pytest.raises(ValueError):
        flip_probability(0.0)


def test_rr_debiased_auc_is_unbiased():
    rng = np.random.default_rng(1)
    n = 20_000
    labels = (rng.random(n) < 0.3).astype(np.float32)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.0 * labels - 0.5))).astype(np.float32)
    thresholds = Thresholds.make(200)
    true_auc = float(
        auc_from_histogram(*bucket_counts(labels, scores, thresholds, dtype=tf.float64))
    )
    estimates, flipped_aucs = [], []
    for seed in range(40):
        flipped = flip_labels(labels, 2.0, seed=seed)
        pos, neg = bucket_counts(flipped, scores, thresholds, dtype=tf.float64)
        auc_flipped = auc_from_histogram(pos, neg)
        flipped_aucs.append(float(auc_flipped))
        estimates.append(
            float(debias_auc(auc_flipped, tf.reduce_sum(pos), tf.reduce_sum(neg), 2.0))
        )
    # The flipped AUC is far off; the debiased mean is within ~4 standard errors.
    assert true_auc - np.mean(flipped_aucs) > 0.05
    standard_error = np.std(estimates) / math.sqrt(len(estimates))
    assert abs(np.mean(estimates) - true_auc) < max(4 * standard_error, 0.003)


def test_secure_histogram_statement():
    m = get_mechanism("secure-histogram", epsilon=0.5, num_thresholds=100, num_clients=10)
    s = m.statement()
    assert "label DP" in s.neighbouring and "secure sum" in s.neighbouring
    assert s.sensitivity.startswith("L1 = 2") and "discrete Laplace(scale=4)" in s.noise
    assert (s.epsilon, s.delta) == (0.5, 0.0)
    assert m.privacy_spent(1).basic == pytest.approx(0.5)
    sk = SecureHistogram(1.0, 100, delta=1e-6, num_clients=10, family="skellam")
    assert sk.statement().delta == 1e-6 and "Skellam" in sk.statement().noise
    assert skellam_epsilon(sk.noise_scale, 1e-6) == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="delta"):
        SecureHistogram(1.0, 100, num_clients=3, family="skellam")
    with pytest.raises(ValueError, match="family"):
        SecureHistogram(1.0, 100, family="gaussian")


@pytest.mark.parametrize("family", ["discrete-laplace", "skellam"])
def test_secure_shares_sum_to_the_stated_noise_for_any_k(family):
    """Shares are integers; their sum over K clients has the stated variance for K = 1 and 50."""
    delta = 1e-6 if family == "skellam" else None
    zeros = tf.zeros([101], tf.float64)
    for k in (1, 50):
        m = SecureHistogram(1.0, 100, delta=delta, num_clients=k, family=family)
        seeds = noise.split_seed(noise.make_seed(k), k)
        total = sum(m.release(zeros, zeros, seed=seeds[i], repeats=40)["pos"] for i in range(k))
        assert bool(tf.reduce_all(total == tf.round(total)))
        ratio = float(tf.math.reduce_variance(total)) / m.noise_stddev**2
        # 4040 samples: the ratio's sd is < 0.05; half/double the scale gives 0.25 / 4.
        assert 0.8 < ratio < 1.25, (k, ratio)


def test_secure_histogram_dropout_shortfall_raises_epsilon():
    m = SecureHistogram(1.0, 100, num_clients=10)
    assert m.achieved_epsilon(10) == 1.0 and m.achieved_epsilon(20) == 1.0
    eps = [m.achieved_epsilon(r) for r in (9, 5, 1)]
    assert 1.0 < eps[0] < eps[1] < eps[2] and math.isinf(m.achieved_epsilon(0))
