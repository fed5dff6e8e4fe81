"""Partial AUC, operating points, average precision and calibration of a release
(``AUCResult``): equal to scikit-learn with noise off on every backend tested, privacy
variances that match the noise actually drawn, and refusals where the release cannot give them."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from dpauc_tf.core.calibration import BucketScores
from dpauc_tf.core.counts import bucket_counts_numpy
from dpauc_tf.mechanisms.release import ReleaseSpec
from dpauc_tf.mechanisms.release_summaries import curve_bands, summarize_release
from dpauc_tf.simulation import simulate


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype(np.int64)
    scores = 1.0 / (1.0 + np.exp(-(rng.normal(size=n) + labels - 1.0)))
    return labels, scores


def _direct_ece(labels, scores, num_bins):
    bins = np.clip(np.ceil(scores * num_bins).astype(int) - 1, 0, num_bins - 1)
    return sum(
        (bins == k).mean() * abs(scores[bins == k].mean() - labels[bins == k].mean())
        for k in range(num_bins)
        if (bins == k).any()
    )


def _sample_summary(labels, scores, spec, repeats, **numbers):
    """``repeats`` releases of one test set, summarized with 5 calibration bins for the
    sample target (noise only); ``numbers``: the other summaries asked."""
    grid = spec.count_grid()
    pos, neg = bucket_counts_numpy(labels, scores, grid)
    return summarize_release(
        simulate(spec, pos, neg, repeats=repeats),
        spec.build(1),
        grid,
        calibration_bins=5,
        bucket_scores=BucketScores.of(scores, grid),
        target="sample",
        **numbers,
    )


def _check_noise_free(result, spec, labels, scores):
    grid = spec.count_grid()
    summary = summarize_release(
        result,
        spec.build(result.num_clients),
        grid,
        max_fpr=0.1,
        tpr_at_fpr=0.05,
        fpr_at_tpr=0.8,
        calibration_bins=10,
        bucket_scores=BucketScores.of(scores, grid),
    )
    bucketed = grid.bucketize_numpy(scores)
    assert summary.partial_auc.value[0] == pytest.approx(
        roc_auc_score(labels, bucketed, max_fpr=0.1), abs=1e-9
    )
    assert summary.average_precision.value[0] == pytest.approx(
        average_precision_score(labels, bucketed), abs=1e-9
    )
    assert summary.calibration.ece.value[0] == pytest.approx(
        _direct_ece(labels, scores, 10), abs=1e-6
    )
    predicted = scores > summary.tpr_at_fpr.threshold[0]
    assert summary.tpr_at_fpr.fpr.value[0] <= 0.05
    assert predicted[labels == 1].mean() == pytest.approx(summary.tpr_at_fpr.tpr.value[0])
    predicted = scores > summary.fpr_at_tpr.threshold[0]
    assert predicted[labels == 1].mean() >= 0.8
    assert predicted[labels == 0].mean() == pytest.approx(summary.fpr_at_tpr.fpr.value[0])
    out = summary.to_dict()
    assert {"partial_auc", "tpr_at_fpr", "fpr_at_tpr", "average_precision", "ece"} <= set(out)
    assert len(out["reliability"]) == 10
    return summary


def test_noise_off_simulate_with_clients_equals_scikit_learn():
    labels, scores = _data()
    spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=1001)
    clients = np.arange(labels.size) % 5
    pos, neg = bucket_counts_numpy(labels, scores, spec.count_grid(), clients, 5)
    result = simulate(spec, pos, neg, seed=0)
    _check_noise_free(result, spec, labels, scores)


def test_noise_off_beam_equals_scikit_learn():
    pytest.importorskip("apache_beam")
    from dpauc_tf.beam.pipeline import evaluate_with_beam

    labels, scores = _data(n=1500, seed=1)
    spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=201)
    clients = np.zeros(labels.size, np.int64)
    # the in-process runner: the 2-process one is tests/beam's (its workers import TensorFlow)
    in_process = ["--runner=DirectRunner"]
    result = evaluate_with_beam(scores, labels, clients, 1, spec, beam_options=in_process)
    _check_noise_free(result, spec, labels, scores)


@pytest.mark.parametrize("mechanism", ["histogram", "histogram-public-scores"])
def test_privacy_variance_matches_the_noise_drawn(mechanism):
    """Sample target (noise only): the stated variance of each number against the variance
    over 600 releases of one test set; a halved or doubled noise scale (4x or 1/4 the
    variance) would fail."""
    labels, scores = _data(n=20000, seed=2)
    spec = ReleaseSpec.make(mechanism, epsilon=0.5, num_thresholds=11, seed=3)
    summary = _sample_summary(labels, scores, spec, 600, max_fpr=0.2, average_precision=True)
    for name, number in (
        ("partial AUC", summary.partial_auc),
        ("average precision", summary.average_precision),
    ):
        ratio = np.var(number.value) / np.median(number.privacy_variance)
        assert 0.75 < ratio < 1.33, (name, ratio)
    table = summary.calibration.table
    for k in range(5):  # each bin's rate: the stated variance from its unclipped half-width
        low, high = summary.calibration.rate_low[:, k], summary.calibration.rate_high[:, k]
        inside = (low > 0) & (high < 1)
        stated = np.median(((high - low)[inside] / 2 / 1.959964) ** 2)
        ratio = np.var(table.positive_rate[:, k]) / stated
        assert 0.75 < ratio < 1.33, (k, ratio)


def test_coverage_of_the_sample_target_for_a_fixed_threshold_rate():
    """The recall at a threshold fixed in advance (fpr_at_tpr 0: the lowest cut that keeps
    every positive is data-dependent, so use the reliability bins instead): each bin's
    sample interval covers the exact rate about 95% of the time."""
    labels, scores = _data(n=5000, seed=4)
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=11, seed=5)
    summary = _sample_summary(labels, scores, spec, 400, average_precision=False)
    bins = np.clip(np.ceil(scores * 5).astype(int) - 1, 0, 4)
    exact = np.array([labels[bins == k].mean() for k in range(5)])
    covered = (summary.calibration.rate_low <= exact) & (exact <= summary.calibration.rate_high)
    assert np.all(covered.mean(0) > 0.9), covered.mean(0)


def test_a_near_empty_bins_interval_covers_at_its_level_not_above():
    """A bin of 100 examples with 3 positives, epsilon 1 (the bin's noise spread is about 9
    positives): its sample interval covers the exact rate 94-96.5% of 4,000 releases. Reading
    the projected (non-negative) counts, or clipping the rate before the interval, covered
    98.4%: the projection removes noise the stated variance still counts."""
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.uniform(0.01, 0.19, 100), rng.uniform(0.21, 0.99, 400)])
    labels = np.concatenate([np.arange(100) < 3, rng.random(400) < scores[100:]]).astype(int)
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=51, seed=7)
    summary = _sample_summary(labels, scores, spec, 4000, average_precision=False)
    low, high = summary.calibration.rate_low[:, 0], summary.calibration.rate_high[:, 0]
    coverage = np.mean((low <= 0.03) & (0.03 <= high))
    assert 0.94 <= coverage <= 0.965, coverage
    assert np.all(summary.calibration.table.positive_rate[:, 0] >= 0.0)  # reported: clipped


def test_the_ece_interval_states_the_spread_of_a_calibrated_models_ece():
    """A calibrated model (every bin's gap near 0, inside the noise): the ECE's stated privacy
    variance matches its variance over 1,000 releases of one test set (ratio 0.75-1.33). The
    delta method through ``|gap|`` with ``sign^2 = 1`` stated about twice the spread (ratio
    0.54), and the interval over-covered."""
    rng = np.random.default_rng(1)
    scores = rng.uniform(0.0, 1.0, 3000)
    labels = (rng.random(3000) < scores).astype(int)
    spec = ReleaseSpec.make("histogram", epsilon=0.5, num_thresholds=21, seed=3)
    summary = _sample_summary(labels, scores, spec, 1000, average_precision=False)
    ece = summary.calibration.ece
    ratio = np.var(ece.value) / np.median(ece.privacy_variance)
    assert 0.75 < ratio < 1.33, ratio


def test_a_mechanism_without_a_curve_is_refused():
    labels, scores = _data(n=500)
    spec = ReleaseSpec.make("auc-only", epsilon=1.0, delta=1e-6, seed=0)
    pos, neg = bucket_counts_numpy(labels, scores, spec.count_grid())
    result = simulate(spec, pos, neg)
    with pytest.raises(ValueError, match="releases only the AUC, no curve"):
        summarize_release(result, spec.build(1), spec.count_grid(), max_fpr=0.1)


def test_bins_that_split_the_release_buckets_or_scores_of_another_grid_are_refused():
    labels, scores = _data(n=500)
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=11, seed=0)
    grid = spec.count_grid()
    pos, neg = bucket_counts_numpy(labels, scores, grid)
    result = simulate(spec, pos, neg)
    with pytest.raises(ValueError, match="split the grid's buckets"):
        summarize_release(
            result,
            spec.build(1),
            grid,
            calibration_bins=20,
            bucket_scores=BucketScores.of(scores, grid),
        )
    other = ReleaseSpec.make("none", epsilon=None, num_thresholds=21).count_grid()
    with pytest.raises(ValueError, match="same grid"):
        summarize_release(
            result,
            spec.build(1),
            grid,
            calibration_bins=5,
            bucket_scores=BucketScores.of(scores, other),
        )
    with pytest.raises(ValueError, match="buckets, the grid"):
        summarize_release(result, spec.build(1), other, max_fpr=0.1)


def test_a_misspelt_interval_target_is_refused_not_read_as_population():
    labels, scores = _data(n=300)
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=11, seed=0)
    result = simulate(spec, *bucket_counts_numpy(labels, scores, spec.count_grid()))
    for summarize in (summarize_release, curve_bands):
        with pytest.raises(ValueError, match=r"^target must be one of 'sample', 'population'"):
            summarize(result, spec.build(1), target="Sampel", **_grid_of(summarize, spec))
    narrow = curve_bands(result, spec.build(1), target="SAMPLE")  # any case: the sample's
    wide = curve_bands(result, spec.build(1), target="population")
    assert np.all(narrow.tpr_high - narrow.tpr_low <= wide.tpr_high - wide.tpr_low + 1e-12)


def _grid_of(summarize, spec) -> dict:
    return {"thresholds": spec.count_grid()} if summarize is summarize_release else {}


@pytest.mark.parametrize("bad", [0.0, float("nan"), 1.5])
def test_bad_max_fpr_is_refused(bad):
    labels, scores = _data(n=300)
    spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=11)
    pos, neg = bucket_counts_numpy(labels, scores, spec.count_grid())
    result = simulate(spec, pos, neg)
    with pytest.raises(ValueError, match="max_fpr must be in"):
        summarize_release(result, spec.build(1), spec.count_grid(), max_fpr=bad)


def test_max_fpr_one_under_noise_is_the_auc_up_to_the_projection():
    """``max_fpr=1`` is the whole area: without noise the AUC exactly (tests/core); with
    noise the area of the projected curve, which the AUC's own estimator (of the unprojected
    counts, docs/estimators.md) estimates too: over 20 releases the two differ by a small
    part of the interval (a McClish standardisation applied at F = 1, or a curve of the
    wrong release, would put them apart by far more)."""
    labels, scores = _data(n=2000, seed=3)
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=101, seed=0)
    pos, neg = bucket_counts_numpy(labels, scores, spec.count_grid())
    result = simulate(spec, pos, neg, repeats=20)
    part = summarize_release(result, spec.build(1), spec.count_grid(), max_fpr=1.0).partial_auc
    gap = np.abs(np.asarray(result.aucs) - part.value)
    half_width = (part.high - part.low) / 2
    assert np.all(gap < 0.2 * half_width), (gap.max(), np.median(half_width))
    assert np.all(gap > 0)  # two estimators of one release, not one number copied


def test_one_class_gives_nulls():
    scores = np.linspace(0.01, 0.99, 50)
    labels = np.ones(50, np.int64)
    spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=11)
    grid = spec.count_grid()
    pos, neg = bucket_counts_numpy(labels, scores, grid)
    result = simulate(spec, pos, neg)
    out = summarize_release(
        result,
        spec.build(1),
        grid,
        max_fpr=0.1,
        tpr_at_fpr=0.1,
        calibration_bins=5,
        bucket_scores=BucketScores.of(scores, grid),
    ).to_dict()
    assert out["partial_auc"]["value"] is None and out["partial_auc"]["ci_low"] is None
    assert out["tpr_at_fpr"]["tpr"]["value"] is None
    assert out["ece"]["value"] == pytest.approx(_direct_ece(labels, scores, 5))


def test_average_precision_population_interval_covers_with_random_class_sizes():
    """Test sets drawn from one population vary in their prevalence, and the average
    precision moves with it: an interval whose bootstrap keeps each class's size fixed
    misses that part of its sampling variance (on this weak model, where it dominates, such
    an interval covered 76.5% of these 200 seeded sets; the joint bootstrap on the logit
    scale covers 94%, nominal 95%)."""
    from scipy import stats

    from dpauc_tf.core.curve_summaries import average_precision
    from dpauc_tf.mechanisms.release import finish_release

    spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=21)
    grid = spec.count_grid()
    inner = np.clip(grid.as_array(), 1e-12, 1 - 1e-12)
    edges = np.concatenate([[-np.inf], np.log(inner / (1 - inner)), [np.inf]])
    edges[1], edges[-2] = -np.inf, np.inf  # the grid's end thresholds hold nothing
    p1, p0 = np.diff(stats.norm.cdf(edges, loc=0.1)), np.diff(stats.norm.cdf(edges))
    truth = float(average_precision(0.5 * p1, 0.5 * p0))
    rng = np.random.default_rng(0)
    sets, n = 200, 400
    num_pos = rng.binomial(n, 0.5, size=sets)
    pos = np.stack([rng.multinomial(k, p1) for k in num_pos]).astype(np.float64)
    neg = np.stack([rng.multinomial(n - k, p0) for k in num_pos]).astype(np.float64)
    result = finish_release(spec, {"pos": pos, "neg": neg}, num_examples=float(n))
    summary = summarize_release(result, spec.build(), grid, average_precision=True)
    ap = summary.average_precision
    assert np.all(np.isfinite(ap.low)) and np.all(ap.low <= ap.value)
    assert np.all(ap.value <= ap.high)
    covered = (ap.low <= truth) & (truth <= ap.high)
    assert 0.9 <= covered.mean() <= 0.99, covered.mean()


def _exact_coverage(size: int, rates: np.ndarray, privacy: float = 0.0) -> np.ndarray:
    """The exact coverage of ``rate_interval`` (population target) of a binomial rate over
    ``size`` examples, at each true rate."""
    from scipy import stats

    from dpauc_tf.mechanisms.release_summaries import rate_interval

    hits = np.arange(size + 1)
    ci = rate_interval(hits / size, privacy, float(size), 0.95)
    return np.array(
        [np.sum(stats.binom.pmf(hits, size, p) * ((ci.low <= p) & (p <= ci.high))) for p in rates]
    )


@pytest.mark.parametrize("size", [20, 30, 50])
def test_a_small_bin_rate_interval_covers_exactly(size):
    """Exact binomial coverage over true rates 0.01-0.5 (reliability bins of a few dozen
    examples, rates near 0): Wilson's interval averages 95-95.4%; the normal interval around
    the rate with Agresti and Coull's variance that it replaced averaged 93.6-94.4% (and
    dipped to 86.8% at 20 examples)."""
    coverage = _exact_coverage(size, np.linspace(0.01, 0.5, 50))
    assert 0.945 <= coverage.mean() <= 0.965, coverage.mean()
    assert coverage.min() >= 0.9, coverage.min()


def test_the_rate_interval_adds_the_privacy_variance():
    """A rate over 30 examples with Laplace noise of standard deviation 0.1 (in rate units)
    added: the interval covers the population rate 93.5-97.5% of 20,000 draws at every true
    rate tried; without the privacy term it would cover about 75%."""
    from dpauc_tf.mechanisms.release_summaries import rate_interval

    rng = np.random.default_rng(0)
    size, variance = 30, 0.01
    for p in (0.05, 0.2, 0.5):
        noisy = rng.binomial(size, p, 20000) / size + rng.laplace(0, np.sqrt(variance / 2), 20000)
        rate = np.clip(noisy, 0.0, 1.0)
        ci = rate_interval(rate, variance, float(size), 0.95)
        covered = np.mean((ci.low <= p) & (p <= ci.high))
        assert 0.935 <= covered <= 0.975, (p, covered)
        plain = rate_interval(rate, 0.0, float(size), 0.95)
        assert np.mean((plain.low <= p) & (p <= plain.high)) < 0.85


def test_num_examples_sets_the_sampling_variance_and_bad_ones_are_refused():
    labels, scores = _data(n=1000, seed=7)
    spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=21)
    pos, neg = bucket_counts_numpy(labels, scores, spec.count_grid())
    result = simulate(spec, pos, neg)

    def summary(num_examples):
        return summarize_release(
            result, spec.build(1), spec.count_grid(), num_examples=num_examples, max_fpr=0.5
        )

    own, four = summary(None), summary(4000)
    for name in ("partial_auc", "average_precision"):
        ratio = getattr(own, name).sampling_variance[0] / getattr(four, name).sampling_variance[0]
        assert ratio == pytest.approx(4.0, rel=0.01), (name, ratio)
    for bad in (float("nan"), -1.0):
        with pytest.raises(ValueError, match="num_examples"):
            summary(bad)
