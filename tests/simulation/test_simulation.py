"""Vectorised repeats (all clients, all repeats in one call) vs one-at-a-time releases."""

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.curve import auc_from_histogram
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.randomized_response import debias_auc, flip_probability
from dpauc_tf.simulation import (
    client_histograms,
    simulate,
)

T = 20
K = 4
R = 400


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 3000)
    scores = 1 / (1 + np.exp(-(rng.normal(size=3000) + labels)))
    clients = rng.integers(0, K, 3000)
    return labels, scores, clients


def _one_at_a_time(mechanism, pos, neg, repeats):
    aucs = []
    for r in range(repeats):
        releases = [mechanism.release(pos[k], neg[k], seed=10_000 + r * K + k) for k in range(K)]
        total = {key: sum(rel[key] for rel in releases) for key in releases[0]}
        aucs.append(float(mechanism.estimate_auc(total)))
    return np.asarray(aucs)


def _same_distribution(a, b):
    # Std ratio within 15 % (a halved or doubled noise scale gives ~0.5 or ~2), means within
    # 3 standard errors, and a two-sample KS test.
    ratio = np.std(a) / np.std(b)
    assert 0.85 < ratio < 1 / 0.85, ratio
    se = np.sqrt(np.var(a) / a.size + np.var(b) / b.size)
    assert abs(np.mean(a) - np.mean(b)) < 3.5 * se
    assert stats.ks_2samp(a, b).pvalue > 1e-3


def test_client_histograms_add_up_to_pooled_counts(data):
    labels, scores, clients = data
    grid = Thresholds.make(T)
    pos, neg = client_histograms(labels, scores, grid, clients, K)
    assert pos.shape == (K, T + 1)
    pooled_pos, pooled_neg = bucket_counts(labels, scores, grid)
    np.testing.assert_allclose(pos.sum(0), pooled_pos.numpy())
    np.testing.assert_allclose(neg.sum(0), pooled_neg.numpy())
    first = clients == 0
    np.testing.assert_allclose(pos[0], bucket_counts(labels[first], scores[first], grid)[0].numpy())


@pytest.mark.parametrize("name", ["histogram", "paper"])
def test_vectorised_repeats_match_one_at_a_time(data, name):
    labels, scores, clients = data
    epsilon = 2.0 if name == "histogram" else 200.0
    mechanism = get_mechanism(name, epsilon=epsilon, num_thresholds=T)
    pos, neg = client_histograms(labels, scores, Thresholds.make(T), clients, K)
    vectorised = simulate(mechanism, pos, neg, seed=3, repeats=R).aucs
    assert vectorised.shape == (R,)
    _same_distribution(vectorised, _one_at_a_time(mechanism, pos, neg, R))


def test_vectorised_repeats_detect_a_wrong_noise_scale(data):
    labels, scores, clients = data
    pos, neg = client_histograms(labels, scores, Thresholds.make(T), clients, K)
    half_noise = get_mechanism("histogram", epsilon=4.0, num_thresholds=T)
    reference = _one_at_a_time(
        get_mechanism("histogram", epsilon=2.0, num_thresholds=T), pos, neg, R
    )
    with pytest.raises(AssertionError):
        _same_distribution(simulate(half_noise, pos, neg, seed=3, repeats=R).aucs, reference)


def test_secure_histogram_aggregate_matches_summed_client_shares(data):
    labels, scores, clients = data
    mechanism = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=T, num_clients=K)
    pos, neg = client_histograms(labels, scores, Thresholds.make(T), clients, K)
    _same_distribution(
        simulate(mechanism, pos, neg, seed=5, repeats=R).aucs,
        _one_at_a_time(mechanism, pos, neg, R),
    )


def test_randomized_response_counts_match_per_example_flips(data):
    labels, scores, clients = data
    epsilon = 1.0
    grid = Thresholds.make(T)
    pos, neg = client_histograms(labels, scores, grid, clients, K)
    mechanism = get_mechanism("rr", epsilon=epsilon, num_thresholds=T)
    vectorised = simulate(mechanism, pos, neg, seed=7, repeats=R).aucs
    one_by_one = []
    rng = np.random.default_rng(50_000)
    p = flip_probability(epsilon)
    for _ in range(R):
        flips = rng.random(labels.size) < p
        flipped = np.where(flips, 1 - labels, labels).astype(np.float64)
        fpos, fneg = bucket_counts(flipped, scores, grid)
        one_by_one.append(
            float(
                debias_auc(
                    auc_from_histogram(fpos, fneg),
                    tf.reduce_sum(fpos),
                    tf.reduce_sum(fneg),
                    epsilon,
                )
            )
        )
    _same_distribution(vectorised, np.asarray(one_by_one))


def test_simulation_is_reproducible_and_checks_shapes(data):
    labels, scores, clients = data
    mechanism = get_mechanism("histogram", epsilon=1.0, num_thresholds=T)
    pos, neg = client_histograms(labels, scores, Thresholds.make(T), clients, K)
    a = simulate(mechanism, pos, neg, seed=11, repeats=7)
    b = simulate(mechanism, pos, neg, seed=11, repeats=7)
    np.testing.assert_array_equal(a.aucs, b.aucs)
    assert a.fpr.shape == (7, T)
    with pytest.raises(ValueError, match="buckets"):
        simulate(get_mechanism("histogram", epsilon=1.0, num_thresholds=T + 1), pos, neg, repeats=2)
