"""``rank-sum`` over K clients without secure aggregation: every client adds its own noise,
so the release carries K draws of the stated noise. Its interval must count all K (the
rank-sum law kept one Laplace draw whatever K, and covered far below its level)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpauc_tf.mechanisms.intervals import privacy_variance
from dpauc_tf.mechanisms.rank_sum import laplace_sum_half_width
from dpauc_tf.mechanisms.release import ReleaseSpec, with_interval
from dpauc_tf.simulation import simulate


def _client_counts(spec, num_examples, positives, num_clients, seed):
    rng = np.random.default_rng(seed)
    labels = np.zeros(num_examples, np.int64)
    labels[rng.choice(num_examples, positives, replace=False)] = 1
    scores = np.clip(rng.normal(0.45 + 0.15 * labels, 0.2), 0.0, 1.0)
    buckets = spec.count_grid().bucketize_numpy(scores)
    clients = rng.integers(0, num_clients, num_examples)
    size = spec.build().num_buckets
    pos = np.zeros((num_clients, size))
    neg = np.zeros((num_clients, size))
    np.add.at(pos, (clients, buckets), labels)
    np.add.at(neg, (clients, buckets), 1 - labels)
    return pos, neg, labels, scores


def _sample_auc(labels, scores):
    from sklearn.metrics import roc_auc_score

    return roc_auc_score(labels, scores)


@pytest.mark.parametrize("num_clients", [1, 16])
def test_interval_counts_every_clients_noise(num_clients):
    spec = ReleaseSpec.make("rank-sum", epsilon=0.2, seed=5)
    pos, neg, labels, scores = _client_counts(spec, 1500, 600, num_clients, seed=1)
    result = simulate(spec, pos, neg, repeats=400)
    mechanism = spec.build(num_clients)
    finished = with_interval(result, mechanism, confidence=0.9, ci_target="sample")
    truth = _sample_auc(labels, scores)
    low, high = finished.interval.low, finished.interval.high
    covered = np.mean((low <= truth) & (truth <= high))
    # 400 releases at 90%: a binomial 99.9% band is about [0.84, 0.95]
    assert 0.84 <= covered <= 0.96, covered
    # the stated noise variance is K times one client's: what the releases show
    stated = np.median(privacy_variance(mechanism, result.noisy_counts, num_clients))
    spread = np.var(result.aucs)
    assert 0.75 < spread / stated < 1.33, (spread, stated)
    if num_clients > 1:  # the law of one draw would claim K times too little
        one = np.median(privacy_variance(mechanism, result.noisy_counts, 1))
        assert spread / one > 0.75 * num_clients


def test_box_counts_every_clients_noise():
    """Few positives: the conservative box, with the tails of a sum of K Laplace draws."""
    spec = ReleaseSpec.make("rank-sum", epsilon=1.0, seed=9)
    pos, neg, labels, scores = _client_counts(spec, 400, 12, 16, seed=3)
    result = simulate(spec, pos, neg, repeats=300)
    finished = with_interval(result, spec.build(16), confidence=0.9, ci_target="sample")
    truth = _sample_auc(labels, scores)
    defined = np.isfinite(finished.interval.low)
    covered = (finished.interval.low <= truth) & (truth <= finished.interval.high)
    assert np.mean(covered[defined]) >= 0.9


@pytest.mark.parametrize("copies", [2, 10, 100])
def test_laplace_sum_half_width_is_the_tail_of_the_sum(copies):
    """The half width is the two-sided quantile of a sum of K Laplace(1) (simulated)."""
    rng = np.random.default_rng(copies)
    size = 200_000
    draws = np.abs(rng.laplace(0.0, 1.0, size=(size, copies)).sum(1))
    for tail in (0.1, 0.01):
        beyond = np.mean(draws > laplace_sum_half_width(copies, tail))
        assert abs(beyond - tail) < 5 * math.sqrt(tail * (1 - tail) / size), (tail, beyond)
    assert laplace_sum_half_width(1, 0.05) == pytest.approx(math.log(20))
