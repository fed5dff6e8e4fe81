"""The within-bucket correction of the Mann-Whitney AUC (``within_bucket="linear"``).

Noise-free counts: exact where the class densities are linear, most of the grid's bias gone
on smooth continuous scores, and on tied scores exactly what the docs say (nothing where the
point masses sit in separated buckets, its own value where they sit in adjacent ones).
Hostile counts: empty buckets, one class, zeros, negative noisy counts, batches, graphs.
"""

import math

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.core.postprocessing import mann_whitney_auc, within_bucket_correction
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.core.tree import auc_gradient

_normal_cdf = np.vectorize(lambda x: 0.5 * math.erfc(-x / math.sqrt(2.0)))


def _auc(pos, neg, within_bucket="half"):
    confusion = confusion_from_histogram(tf.constant(pos, tf.float64), tf.constant(neg, tf.float64))
    return mann_whitney_auc(confusion, within_bucket=within_bucket).numpy()


def _exact_auc(labels, scores):
    """P(S_pos > S_neg) + P(S_pos = S_neg) / 2, by brute force."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    diff = pos[:, None] - neg[None, :]
    return float(np.mean((diff > 0) + 0.5 * (diff == 0)))


@pytest.mark.parametrize("num_buckets", [2, 3, 8, 33])
def test_exact_when_both_densities_are_linear(num_buckets):
    # f_pos(s) = 2 s, f_neg(s) = 2 (1 - s) on [0, 1]: P(S_pos > S_neg) = 5/6 exactly.
    edges = np.linspace(0.0, 1.0, num_buckets + 1)
    pos = 300 * np.diff(edges**2)
    neg = 700 * np.diff(-((1 - edges) ** 2))
    assert _auc(pos, neg) < 5 / 6 - 1e-4  # ties count 1/2: biased low
    assert _auc(pos, neg, "linear") == pytest.approx(5 / 6, abs=1e-12)


@pytest.mark.parametrize("num_buckets", [16, 64])
@pytest.mark.parametrize("grid", ["quantile", "uniform-sigmoid"])
def test_removes_most_of_the_grid_bias_on_smooth_binormal_scores(num_buckets, grid):
    # Expected counts of a binormal population (positives N(1, 1), 1 in 4): no sampling noise.
    rate, shift = 0.25, 1.0
    exact = float(_normal_cdf(shift / math.sqrt(2.0)))
    if grid == "quantile":  # thresholds at the mixture's quantiles
        xs = np.linspace(-7.0, 8.0, 30001)
        mixture = rate * _normal_cdf(xs - shift) + (1 - rate) * _normal_cdf(xs)
        inner = np.interp(np.arange(1, num_buckets) / num_buckets, mixture, xs)
    else:  # equal-width on the sigmoid of the score
        probabilities = np.linspace(0.0, 1.0, num_buckets + 1)[1:-1]
        inner = np.log(probabilities / (1 - probabilities))
    edges = np.concatenate([[-np.inf], inner, [np.inf]])
    pos = 1e5 * rate * np.diff(_normal_cdf(edges - shift))
    neg = 1e5 * (1 - rate) * np.diff(_normal_cdf(edges))
    half_error = abs(_auc(pos, neg) - exact)
    linear_error = abs(_auc(pos, neg, "linear") - exact)
    assert half_error > 2e-5
    assert linear_error < 0.15 * half_error


def test_on_sampled_continuous_scores_it_is_closer_to_the_exact_auc():
    rng = np.random.default_rng(5)
    labels = (rng.random(100_000) < 0.3).astype(np.int64)
    scores = 1 / (1 + np.exp(-(rng.normal(size=labels.size) + 1.2 * labels)))
    ranks = np.argsort(np.argsort(scores)) + 1.0  # continuous: no ties
    num_pos = labels.sum()
    num_neg = labels.size - num_pos
    exact = (ranks[labels == 1].sum() - num_pos * (num_pos + 1) / 2) / (num_pos * num_neg)
    thresholds = Thresholds.explicit(np.quantile(scores, np.arange(1, 16) / 16))
    pos, neg = bucket_counts(labels, scores, thresholds, dtype=tf.float64)
    half_error = abs(_auc(pos, neg) - exact)
    linear_error = abs(_auc(pos, neg, "linear") - exact)
    assert half_error > 5e-4 and linear_error < 0.2 * half_error


def test_tied_scores_in_separated_buckets_are_left_exact():
    # Point masses with empty buckets between them: no pair of adjacent buckets holds two
    # masses, so the correction is 0 and the estimate stays the exact AUC (ties 1/2).
    rng = np.random.default_rng(1)
    scores = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9], size=300)
    labels = (rng.random(300) < scores).astype(np.int64)
    pos, neg = bucket_counts(labels, scores, Thresholds.make(200), dtype=tf.float64)
    exact = _exact_auc(labels, scores)
    assert float(within_bucket_correction(pos, neg)) == 0.0
    assert _auc(pos, neg, "linear") == pytest.approx(exact, abs=1e-12)
    assert _auc(pos, neg) == pytest.approx(exact, abs=1e-12)


def test_tied_scores_in_adjacent_buckets_move_the_estimate_by_the_correction():
    # One point mass per bucket, side by side: the true within-bucket term is 1/2, so the
    # default is exact and the smooth estimate is off by exactly C / (P N) (the docs' caveat).
    rng = np.random.default_rng(2)
    scores = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9], size=300)
    labels = (rng.random(300) < scores).astype(np.int64)
    thresholds = Thresholds.explicit([0.2, 0.4, 0.6, 0.8])
    pos, neg = bucket_counts(labels, scores, thresholds, dtype=tf.float64)
    exact = _exact_auc(labels, scores)
    correction = float(within_bucket_correction(pos, neg)) / float(
        tf.reduce_sum(pos) * tf.reduce_sum(neg)
    )
    assert _auc(pos, neg) == pytest.approx(exact, abs=1e-12)
    assert correction > 1e-3  # a rising likelihood ratio: the correction adds, wrongly here
    assert _auc(pos, neg, "linear") == pytest.approx(exact + correction, abs=1e-12)


def test_hostile_counts_give_finite_values_or_the_documented_nan():
    # empty buckets, zeros, and negative noisy counts: finite, within [0, 1]
    pos = np.array([[0.0, -3.0, 5.0, 0.0, 40.0, -1.0], [2.0, 0.0, 0.0, 0.0, 0.0, 9.0]])
    neg = np.array([[-2.0, 30.0, 0.0, 7.0, -4.0, 0.0], [0.0, 0.0, 5.0, 0.0, 0.0, 0.0]])
    aucs = _auc(pos, neg, "linear")
    assert aucs.shape == (2,) and np.all(np.isfinite(aucs)) and np.all((aucs >= 0) & (aucs <= 1))
    assert np.all(np.isfinite(within_bucket_correction(pos, neg).numpy()))
    # one class, no data, or a non-positive estimated total: NaN, as for the default
    for p, n in ((np.ones(6), np.zeros(6)), (np.zeros(6), np.ones(6)), (np.zeros(6),) * 2):
        assert math.isnan(_auc(p, n, "linear"))
    assert math.isnan(_auc(np.array([3.0, -5.0, 1.0]), np.array([4.0, 4.0, 4.0]), "linear"))
    # fewer than two buckets: nothing to correct
    assert float(within_bucket_correction(tf.constant([4.0]), tf.constant([2.0]))) == 0.0
    with pytest.raises(ValueError, match="within_bucket"):
        _auc(np.ones(4), np.ones(4), "quadratic")


def test_runs_in_float32_in_a_graph_and_under_xla():
    pos = tf.constant([[1.0, 2.0, 3.0, 4.0]] * 3)
    neg = tf.constant([[4.0, 3.0, 2.0, 1.0]] * 3)
    eager = mann_whitney_auc(confusion_from_histogram(pos, neg), within_bucket="linear")

    @tf.function(jit_compile=True)
    def compiled(p, n):
        return mann_whitney_auc(confusion_from_histogram(p, n), within_bucket="linear")

    assert eager.dtype == tf.float32 and eager.shape == (3,)
    np.testing.assert_allclose(compiled(pos, neg).numpy(), eager.numpy(), rtol=1e-6)


def test_linear_gradient_matches_finite_differences():
    rng = np.random.default_rng(4)
    pos = rng.uniform(1, 50, size=10)
    neg = rng.uniform(1, 50, size=10)
    grad_pos, grad_neg = auc_gradient(pos, neg, "linear")
    step = 1e-5
    for b in (0, 4, 9):  # both ends (one-sided slopes) and the middle
        for counts, grad in ((pos, grad_pos), (neg, grad_neg)):
            up, down = counts.copy(), counts.copy()
            up[b] += step
            down[b] -= step
            args_up = (up, neg) if counts is pos else (pos, up)
            args_down = (down, neg) if counts is pos else (pos, down)
            slope = (_auc(*args_up, "linear") - _auc(*args_down, "linear")) / (2 * step)
            assert slope == pytest.approx(grad[b], abs=1e-9)
    with pytest.raises(ValueError, match="within_bucket"):
        auc_gradient(pos, neg, "cubic")
