"""Thresholds that fit the scores: ends, sizes, and discretisation bias."""

import numpy as np
import pytest

from dpauc_tf.core.adaptive_thresholds import (
    discretisation_bias,
    exact_auc,
    fine_grid,
    quantile_thresholds,
)
from dpauc_tf.core.thresholds import Thresholds


def _crowded(n=60_000, seed=0):
    """Scores crowded near 0 (a click-through-like model on the logit scale)."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.1).astype(np.int64)
    scores = 1.0 / (1.0 + np.exp(-(-4.0 + 1.2 * labels + rng.standard_normal(n))))
    return labels, scores


def test_exact_auc_counts_ties_as_half():
    assert exact_auc(np.array([0, 1, 0, 1]), np.array([0.1, 0.4, 0.4, 0.8])) == pytest.approx(
        (1 + 0.5 + 1 + 1) / 4
    )


def test_quantile_thresholds_fill_buckets_evenly_and_include_both_ends():
    _, scores = _crowded()
    values = quantile_thresholds(scores, 101)
    assert values[0] < 0 and values[-1] > 1 and values.size == 101
    grid = Thresholds.explicit(values)
    counts = np.bincount(grid.bucketize(scores).numpy(), minlength=grid.num_buckets)
    assert counts[0] == 0 and counts[-1] == 0
    inner = counts[1:-1]
    assert inner.max() < 1.1 * scores.size / 100 and inner.min() > 0.9 * scores.size / 100


def test_quantile_thresholds_remove_discretisation_bias_where_scores_crowd_near_zero():
    labels, scores = _crowded()
    even = discretisation_bias(labels, scores, Thresholds.make(100))
    quantile = discretisation_bias(labels, scores, quantile_thresholds(scores, 100))
    fine = discretisation_bias(labels, scores, quantile_thresholds(scores, 1023))
    assert abs(even) > 5 * abs(quantile)  # the even grid wastes its buckets
    assert abs(fine) < 1e-4
    assert abs(discretisation_bias(labels, scores, fine_grid(1023))) < abs(even)


def test_fine_grid_is_tensorflows_grid_and_bad_input_raises():
    np.testing.assert_allclose(fine_grid(200), Thresholds.make(200).as_array())
    with pytest.raises(ValueError, match="at least 3"):
        fine_grid(2)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        quantile_thresholds(np.array([0.2, 1.5]), 10)
    with pytest.raises(ValueError, match="at least one"):
        quantile_thresholds(np.array([]), 10)
