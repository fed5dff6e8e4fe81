"""``DPAUC(max_weight=W)``: weights in [0, W] with noise W times as large in weighted counts
(issue 23). A distribution test that a halved or doubled scale fails, an audit case (the
declared bound holds; twice the bound is caught), and the refusals."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from dpauc_tf import DPAUC
from dpauc_tf.analysis.audit import run_audit

W, EPSILON = 4.0, 1.0


def _metric(**options):
    options.setdefault("mechanism", "histogram")
    return DPAUC(epsilon=EPSILON, num_thresholds=10, max_weight=W, seed=0, **options)


def test_noise_in_weighted_counts_is_laplace_of_2w_over_epsilon():
    metric = _metric()
    rng = np.random.default_rng(0)
    metric.update_state(
        rng.integers(0, 2, 500), rng.random(500), sample_weight=rng.uniform(0, W, 500)
    )
    pos, neg = metric.counts()
    release = metric.mechanism.release(pos, neg, seed=1, repeats=4000)  # what result() draws
    noise = np.concatenate(
        [(W * release["pos"].numpy() - pos).ravel(), (W * release["neg"].numpy() - neg).ravel()]
    )
    scale = 2.0 * W / EPSILON
    assert stats.kstest(noise, "laplace", args=(0, scale)).pvalue > 1e-3
    for wrong in (scale / 2, scale * 2):  # a halved or doubled scale is detected
        assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6


def test_statement_and_accounting_scale_with_max_weight():
    statement = _metric().privacy_statement()
    assert statement.epsilon == EPSILON  # the guarantee is the declared epsilon
    assert "L1 = 8 in weighted counts" in statement.sensitivity
    assert f"weights in [0, {W:g}]" in statement.neighbouring
    assert "4 times as large" in statement.noise
    assert (
        DPAUC(epsilon=EPSILON, num_thresholds=10, mechanism="histogram").mechanism.noise_scale
        == 2.0
    )
    assert _metric().mechanism.weighted_noise_scale == 2.0 * W
    assert (
        _metric().dp_event()
        == DPAUC(epsilon=EPSILON, num_thresholds=10, mechanism="histogram").dp_event()
    )


def test_audit_holds_at_the_bound_and_catches_twice_the_bound():
    mechanism = _metric().mechanism
    honest = run_audit(mechanism, samples=20_000, seed=0, flip_weight=W)
    assert not honest.violated and honest.epsilon_lower_bound > 0.3
    over = run_audit(mechanism, samples=20_000, seed=0, flip_weight=2 * W)
    assert over.violated  # an example of weight 2W moves twice the declared sensitivity


def test_weights_above_max_weight_are_refused_in_one_line():
    metric = _metric()
    with pytest.raises(ValueError, match=r"\[0, max_weight\] = \[0, 4\].*declare a larger"):
        metric.update_state([0, 1], [0.2, 0.8], sample_weight=[1.0, 4.5])
    with pytest.raises(ValueError, match=r"max_weight=\.\.\."):  # the default bound says how
        DPAUC(epsilon=1.0, mechanism="histogram").update_state(
            [0, 1], [0.2, 0.8], sample_weight=[1.0, 2.0]
        )
    # the default (rank-sum) takes weights of 1 only: its refusal names class_weight
    with pytest.raises(ValueError, match="class_weight"):
        DPAUC(epsilon=1.0).update_state([0, 1], [0.2, 0.8], sample_weight=[1.0, 2.0])

    @tf.function
    def step(y, p, w):  # weights unknown when the graph is built: the graph's assertion
        metric.update_state(y, p, sample_weight=w)

    with pytest.raises(tf.errors.InvalidArgumentError, match="max_weight"):
        step(tf.constant([0.0, 1.0]), tf.constant([0.2, 0.8]), tf.constant([1.0, 9.0]))


def test_integer_noise_mechanisms_keep_refusing_other_bounds_and_fractions():
    with pytest.raises(ValueError, match=r"max_weight must be 1.*'histogram'"):
        DPAUC(epsilon=1.0, mechanism="secure-histogram", max_weight=2)
    secure = DPAUC(epsilon=1.0, mechanism="secure-histogram", num_thresholds=10)
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="0 or"):
        secure.update_state([0, 1], [0.2, 0.8], sample_weight=[1.0, 0.5])
    for bad in (0, -1.0, float("inf"), "2"):
        with pytest.raises(ValueError, match="max_weight"):
            DPAUC(epsilon=1.0, max_weight=bad)


def test_max_weight_round_trips_and_is_ignored_without_noise():
    metric = _metric()
    again = DPAUC.from_config(metric.get_config())
    assert again.max_weight == W and again.privacy_statement() == metric.privacy_statement()
    exact = DPAUC(epsilon=None, max_weight=2.0)
    exact.update_state([0, 1, 1], [0.2, 0.8, 0.4], sample_weight=[37.0, 1.5, 0.0])
    assert float(exact.result()) == 1.0


def _released(max_weight, mechanism="histogram", n=20_000, **options):
    metric = DPAUC(
        epsilon=EPSILON,
        num_thresholds=50,
        mechanism=mechanism,
        max_weight=max_weight,
        seed=0,
        **options,
    )
    rng = np.random.default_rng(0)
    labels = (rng.random(n) < 0.3).astype("float32")
    metric.update_state(labels, 1 / (1 + np.exp(-rng.normal(labels, 1.0))))
    value = float(metric.result())
    return metric, value


def test_the_interval_of_a_weight_bound_widens_with_max_weight():
    """Issue 30: ``max_weight=2`` raised "states no noise law". The noise in weighted counts
    is ``max_weight`` times as large, so the privacy variance is ``max_weight**2`` times
    (the same data, weights 1): an interval that ignored max_weight would keep ratio 1."""
    variances = {}
    for weight in (1.0, 2.0, 4.0):
        metric, value = _released(weight)
        ci = metric.release_interval(0.95, target="sample")
        assert ci.low[0] <= value <= ci.high[0]
        variances[weight] = float(ci.privacy_variance[0])
    assert variances[2.0] / variances[1.0] == pytest.approx(4.0, rel=0.15)
    assert variances[4.0] / variances[1.0] == pytest.approx(16.0, rel=0.15)


def test_the_interval_of_a_weight_bound_covers_at_its_level():
    """400 releases of W = 4: the sample-target interval covers the grid's exact AUC about
    95% of the time (with the noise law of max_weight 1 it would cover about 40%)."""
    from dpauc_tf.core.curve import auc_from_histogram
    from dpauc_tf.mechanisms.intervals import release_interval

    metric, _ = _released(4.0, n=4_000)
    pos, neg = metric.counts()
    truth = float(auc_from_histogram(pos, neg))
    release = metric.mechanism.release(pos, neg, seed=3, repeats=400)
    ci = release_interval(metric.mechanism, release, confidence=0.95, target="sample")
    covered = np.mean((ci.low <= truth) & (truth <= ci.high))
    assert 0.91 <= covered <= 0.99


@pytest.mark.parametrize(
    "mechanism, options",
    # rank-sum and auc-only take weights of 1 only (max_weight 1: refused otherwise)
    [("tree-histogram", {}), ("histogram", {})],
)
def test_every_float_mechanism_gives_an_interval_with_a_weight_bound(mechanism, options):
    metric, value = _released(2.0, mechanism=mechanism, **options)
    ci = metric.release_interval(0.95)
    assert ci.low[0] <= value <= ci.high[0] and ci.high[0] - ci.low[0] < 0.5


def test_the_weight_bound_states_the_sensitivity_the_mechanism_carries():
    """The weighted sensitivity comes from the number the mechanism carries, not from its
    prose: the tree's per-level figure and auc-only's text gave L1 = 4 and L1 = 2e-06."""
    tree = DPAUC(epsilon=1.0, mechanism="tree-histogram", num_thresholds=8, max_weight=2)
    text = tree.privacy_statement().sensitivity
    levels_l1 = tree.mechanism.inner.statement().sensitivity_value  # 2 per level x levels
    assert "L1 = 4 in weighted counts" not in text
    assert text.startswith(f"L1 = {2 * levels_l1:g} in weighted counts")
    assert tree.privacy_statement().sensitivity_value == 2 * levels_l1
    # auc-only and histogram-public-scores release totals as label-free: weights of 1 only
    for name, delta in (("auc-only", 1e-6), ("histogram-public-scores", None)):
        with pytest.raises(ValueError, match="max_weight must be 1"):
            DPAUC(epsilon=1.0, mechanism=name, delta=delta, max_weight=2)
