"""Partial AUC, operating points, average precision and calibration from bucket counts equal
scikit-learn's (and a direct ECE) on exact counts; hostile input is refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

from dpauc_tf.core import calibration, curve_summaries
from dpauc_tf.core.counts import bucket_counts_numpy
from dpauc_tf.core.thresholds import Thresholds


def _data(n=3000, seed=0, shift=1.0, positives=0.3):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < positives).astype(np.int64)
    scores = 1.0 / (1.0 + np.exp(-(rng.normal(size=n) + shift * labels - 1.0)))
    return labels, scores


def _counts(labels, scores, grid):
    pos, neg = bucket_counts_numpy(labels, scores, grid)
    return pos[0].astype(np.float64), neg[0].astype(np.float64)


@pytest.mark.parametrize("max_fpr", [0.01, 0.1, 0.37, 1.0])
@pytest.mark.parametrize("num_thresholds", [11, 201, 10001])
def test_partial_auc_equals_scikit_learn_on_bucketed_scores_and_is_within_the_grid_bound(
    max_fpr, num_thresholds
):
    labels, scores = _data()
    grid = Thresholds.make(num_thresholds)
    pos, neg = _counts(labels, scores, grid)
    ours = float(curve_summaries.partial_auc(pos, neg, max_fpr))
    bucketed = grid.bucketize_numpy(scores)  # ties inside a bucket, as the release has them
    assert ours == pytest.approx(roc_auc_score(labels, bucketed, max_fpr=max_fpr), abs=1e-12)
    bound = float(curve_summaries.partial_auc_grid_bound(pos, neg, max_fpr))
    raw = roc_auc_score(labels, scores, max_fpr=max_fpr)
    assert abs(ours - raw) <= bound + 1e-12
    if num_thresholds == 10001:  # a fine grid: the bound is small
        assert bound < 2e-4


@pytest.mark.parametrize("num_thresholds", [11, 201, 10001])
def test_average_precision_equals_scikit_learn(num_thresholds):
    labels, scores = _data(seed=1)
    grid = Thresholds.make(num_thresholds)
    pos, neg = _counts(labels, scores, grid)
    ours = float(curve_summaries.average_precision(pos, neg))
    bucketed = grid.bucketize_numpy(scores)
    assert ours == pytest.approx(average_precision_score(labels, bucketed), abs=1e-12)
    if num_thresholds == 10001:
        assert ours == pytest.approx(average_precision_score(labels, scores), abs=2e-3)


@pytest.mark.parametrize("rate", [0.0, 0.013, 0.1, 0.5, 1.0])
def test_operating_points_equal_the_roc_curve_of_scikit_learn(rate):
    labels, scores = _data(seed=2)
    grid = Thresholds.make(201)
    pos, neg = _counts(labels, scores, grid)
    bucketed = grid.bucketize_numpy(scores)
    fpr, tpr, _cut_at = roc_curve(labels, bucketed, drop_intermediate=False)
    values = grid.as_array()
    point = curve_summaries.tpr_at_fpr(pos, neg, values, rate)
    best = np.max(tpr[fpr <= rate])
    assert float(point.tpr) == pytest.approx(best, abs=1e-12)
    assert float(point.fpr) <= rate + 1e-12
    # the threshold achieves the rates on the raw scores: score > threshold is positive
    predicted = scores > float(point.threshold)
    assert predicted[labels == 1].mean() == pytest.approx(float(point.tpr), abs=1e-12)
    assert predicted[labels == 0].mean() == pytest.approx(float(point.fpr), abs=1e-12)
    point = curve_summaries.fpr_at_tpr(pos, neg, values, rate)
    assert float(point.fpr) == pytest.approx(np.min(fpr[tpr >= rate]), abs=1e-12)
    predicted = scores > float(point.threshold)
    assert predicted[labels == 1].mean() >= rate - 1e-12
    assert predicted[labels == 0].mean() == pytest.approx(float(point.fpr), abs=1e-12)


def _direct_ece(labels, scores, num_bins):
    """The reference: bins (k/B, (k+1)/B] (0 in the first), by the definition."""
    bins = np.clip(np.ceil(scores * num_bins).astype(int) - 1, 0, num_bins - 1)
    total = 0.0
    for k in range(num_bins):
        inside = bins == k
        if inside.any():
            total += inside.mean() * abs(scores[inside].mean() - labels[inside].mean())
    return total


@pytest.mark.parametrize("num_thresholds", [11, 201, 1001])
def test_ece_equals_the_direct_computation_with_ten_bins(num_thresholds):
    labels, scores = _data(seed=3, n=5000)
    grid = Thresholds.make(num_thresholds)
    pos, _ = _counts(labels, scores, grid)
    bins = calibration.calibration_bins(grid, 10)
    table = calibration.reliability(pos, calibration.BucketScores.of(scores, grid), bins, 10)
    assert float(table.ece[0]) == pytest.approx(_direct_ece(labels, scores, 10), abs=1e-6)
    assert table.counts.sum() == labels.size


def test_empty_bins_are_null_and_do_not_count():
    grid = Thresholds.make(11)
    scores = np.array([0.05, 0.06, 0.95, 0.97])
    labels = np.array([0, 1, 1, 1])
    pos, _ = _counts(labels, scores, grid)
    table = calibration.reliability(
        pos, calibration.BucketScores.of(scores, grid), calibration.calibration_bins(grid, 5), 5
    )
    assert np.isnan(table.mean_score[0, 1:4]).all() and np.isnan(table.positive_rate[0, 1:4]).all()
    assert float(table.ece[0]) == pytest.approx(_direct_ece(labels, scores, 5), abs=1e-12)


@pytest.mark.parametrize("num_bins", [3, 7, 20, 11])
def test_bins_that_split_buckets_are_refused(num_bins):
    grid = Thresholds.make(11)  # ten buckets of width 0.1 over [0, 1]
    with pytest.raises(ValueError, match="split the grid's buckets"):
        calibration.calibration_bins(grid, num_bins)


@pytest.mark.parametrize("num_thresholds", [11, 201, 1001])
def test_every_accepted_bin_holds_exactly_its_scores_and_the_rest_are_refused(num_thresholds):
    """A number from the release is of a bin only where the bin is a union of buckets: for
    every B from 1 to 59, either the bins are refused (one line) or each score's bucket
    maps to the bin the score falls in directly (ceil(s B) - 1, 0 in the first), scores
    next to the edges included. A mapping that reused a release across a split bucket
    fails. (A score exactly on an edge follows the grid's own comparison, in its float
    values, as the release's buckets do.)"""
    grid = Thresholds.make(num_thresholds)
    rng = np.random.default_rng(num_thresholds)
    edges = np.arange(0, 61) / 60  # every edge k / B for B dividing 60, and 0 and 1
    near = np.clip(np.concatenate([edges - 1e-6, edges + 1e-6]), 0.0, 1.0)
    scores = np.concatenate([rng.uniform(size=4000), near, [0.0, 1.0]])
    for num_bins in range(1, 60):
        fits = (num_thresholds - 1) % num_bins == 0
        if not fits:
            with pytest.raises(ValueError, match="split the grid's buckets") as error:
                calibration.calibration_bins(grid, num_bins)
            assert "\n" not in str(error.value)
            continue
        bins = calibration.calibration_bins(grid, num_bins)
        direct = np.clip(np.ceil(scores * num_bins).astype(int) - 1, 0, num_bins - 1)
        assert np.array_equal(bins[grid.bucketize_numpy(scores)], direct), num_bins


@pytest.mark.parametrize("num_bins", [10**6, 10**7, 10**12])
def test_more_bins_than_buckets_is_refused_at_once(num_bins):
    """B larger than the grid: refused in one line before any array of B edges is made
    (10^8 bins took minutes)."""
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError) as error:
        calibration.calibration_bins(Thresholds.make(201), num_bins)
    assert "\n" not in str(error.value) and time.perf_counter() - start < 1.0


@pytest.mark.parametrize("num_bins", [1, 2, 5, 10])
def test_bins_that_are_unions_of_buckets_are_accepted(num_bins):
    bins = calibration.calibration_bins(Thresholds.make(11), num_bins)
    assert bins.min() == 0 and bins.max() == num_bins - 1 and np.all(np.diff(bins) >= 0)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10", None])
def test_bad_numbers_of_bins_are_refused(bad):
    with pytest.raises(ValueError, match="calibration bins must be an int"):
        calibration.calibration_bins(Thresholds.make(11), bad)


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, float("nan"), float("inf"), True, "0.1"])
def test_bad_max_fpr_is_refused_in_one_line(bad):
    pos, neg = np.array([0.0, 1.0, 2.0]), np.array([0.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="max_fpr must be") as info:
        curve_summaries.partial_auc(pos, neg, bad)
    assert "\n" not in str(info.value)


def test_one_class_gives_nan_not_a_number_that_looks_valid():
    pos, neg = np.array([0.0, 3.0, 2.0]), np.zeros(3)
    assert np.isnan(curve_summaries.partial_auc(pos, neg, 0.1))
    assert np.isnan(curve_summaries.partial_auc(neg, pos, 0.1))
    assert np.isnan(curve_summaries.average_precision(neg, pos))
    point = curve_summaries.tpr_at_fpr(pos, neg, np.array([0.3, 0.6]), 0.1)
    assert np.isnan(point.tpr) and np.isnan(point.threshold) and int(point.cut) == -1


def test_max_fpr_one_is_the_auc_and_a_grid_mismatch_is_refused():
    labels, scores = _data(seed=4)
    grid = Thresholds.make(101)
    pos, neg = _counts(labels, scores, grid)
    assert float(curve_summaries.partial_auc(pos, neg, 1.0)) == pytest.approx(
        roc_auc_score(labels, grid.bucketize_numpy(scores)), abs=1e-12
    )
    with pytest.raises(ValueError, match="buckets but the grid has"):
        curve_summaries.tpr_at_fpr(pos, neg, grid.as_array()[:-1], 0.1)


def test_repeats_axis_broadcasts():
    labels, scores = _data(seed=5)
    grid = Thresholds.make(51)
    pos, neg = _counts(labels, scores, grid)
    stacked_pos, stacked_neg = np.stack([pos, pos[::-1]]), np.stack([neg, neg[::-1]])
    values = curve_summaries.partial_auc(stacked_pos, stacked_neg, 0.2)
    assert values.shape == (2,)
    assert values[0] == pytest.approx(float(curve_summaries.partial_auc(pos, neg, 0.2)))
    assert values[1] == pytest.approx(float(curve_summaries.partial_auc(pos[::-1], neg[::-1], 0.2)))
