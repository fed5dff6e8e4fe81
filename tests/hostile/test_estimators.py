"""Hostile tests of the AUC estimators: they must converge to TensorFlow's AUC on any data.

The layouts are the ones that broke the reference code's "clip, sort by FPR, trapezoid":
point masses, buckets that hold one class (ROC points that share an FPR), everything in one
bucket, scores exactly on thresholds. Mechanisms are read from the registry, never listed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.curve import auc_from_histogram, confusion_from_histogram
from dpauc_tf.core.postprocessing import mann_whitney_auc
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.keras.metric import DPAUC
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.randomized_response import RandomizedResponse, flip_probability
from dpauc_tf.mechanisms.registry import list_mechanisms, mechanism_class

CURVE_MECHANISMS = list_mechanisms(private=True, transforms_data=False, releases="curve")
NUM_THRESHOLDS = 100
HUGE_EPSILON = 1e6


def _layout(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Labels and scores of one adversarial layout."""
    rng = np.random.default_rng(7)
    if name == "point-masses":  # the example: exact AUC 0.75
        labels = np.r_[np.zeros(3000), np.zeros(1000), np.ones(500)]
        scores = np.r_[np.full(3000, 0.1), np.full(1000, 0.9), np.full(500, 0.5)]
    elif name == "one-class-buckets":  # alternating pure buckets, many shared FPRs / TPRs
        scores = rng.integers(0, 20, 2000) / 20 + 0.025
        labels = (np.floor(scores * 20) % 2 == 0).astype(float)
    elif name == "one-bucket":  # every score in one bucket: AUC 1/2
        labels = rng.integers(0, 2, 300).astype(float)
        scores = np.full(300, 0.4321)
    elif name == "on-thresholds":  # scores exactly on grid points, 0 and 1
        scores = rng.integers(0, NUM_THRESHOLDS, 1000) / (NUM_THRESHOLDS - 1)
        labels = (rng.random(1000) < scores).astype(float)
    elif name == "one-pair":
        labels, scores = np.array([1.0, 0.0]), np.array([0.3, 0.7])
    else:
        raise ValueError(name)
    return labels, scores


LAYOUTS = ["point-masses", "one-class-buckets", "one-bucket", "on-thresholds", "one-pair"]


def _tf_auc(labels, scores, **kwargs) -> float:
    metric = tf.keras.metrics.AUC(**kwargs)
    metric.update_state(labels, scores)
    return float(metric.result())


def _mechanism(name: str, epsilon: float, **options):
    delta = 1e-5 if mechanism_class(name).requires_delta else None
    mechanism = get_mechanism(
        name, epsilon=epsilon, num_thresholds=NUM_THRESHOLDS, delta=delta, **options
    )
    mechanism.noise_stddev  # noqa: B018 (calibrated on first use: paper-gaussian overflowed here)
    return mechanism


def test_the_registry_gives_every_curve_mechanism():
    assert {"histogram", "paper", "secure-histogram", "rr"} <= set(CURVE_MECHANISMS)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", CURVE_MECHANISMS)
def test_default_estimate_converges_to_tensorflows_auc(name, layout):
    labels, scores = _layout(layout)
    thresholds = Thresholds.make(NUM_THRESHOLDS)
    pos, neg = bucket_counts(labels, scores, thresholds, dtype=tf.float64)
    truth = _tf_auc(labels, scores, num_thresholds=NUM_THRESHOLDS)
    assert float(auc_from_histogram(pos, neg)) == pytest.approx(truth, abs=1e-6)
    mechanism = _mechanism(name, HUGE_EPSILON)
    release = mechanism.aggregate().release(pos, neg, seed=3, repeats=20)
    aucs = mechanism.aggregate().estimate_auc(release).numpy()
    # Laplace noise at 1e6 is ~1e-6; the analytic Gaussian's std only falls like
    # 1/sqrt(epsilon) (0.01 for paper-gaussian at 1e6), which moves the AUC of one pair of
    # examples by about that much: the tolerance grows with the noise per example.
    smallest_class = min(labels.sum(), (1 - labels).sum())
    np.testing.assert_allclose(aucs, truth, atol=2e-3 + 2 * mechanism.noise_stddev / smallest_class)


def test_reference_rule_is_kept_as_an_option_and_is_not_consistent():
    labels, scores = _layout("point-masses")
    pos, neg = bucket_counts(labels, scores, Thresholds.make(NUM_THRESHOLDS), dtype=tf.float64)
    for name in ("histogram", "paper"):
        reference = _mechanism(name, 1e4, estimator="reference")
        assert reference.options()["estimator"] == "reference" and "reference" in repr(reference)
        aucs = reference.estimate_auc(reference.release(pos, neg, seed=1, repeats=40)).numpy()
        assert aucs.min() < 0.5 and aucs.max() > 0.8  # points with equal FPR in random order
        default = _mechanism(name, 1e4)
        aucs = default.estimate_auc(default.release(pos, neg, seed=1, repeats=40)).numpy()
        np.testing.assert_allclose(aucs, 0.75, atol=1e-3)
    with pytest.raises(ValueError, match="estimator"):
        _mechanism("histogram", 1.0, estimator="sorted")


@pytest.mark.parametrize("name", CURVE_MECHANISMS)
def test_one_class_or_no_data_is_nan_not_a_number_that_looks_like_an_estimate(name):
    thresholds = Thresholds.make(NUM_THRESHOLDS)
    for labels in (np.zeros(50), np.ones(50), np.ones(1)):
        scores = np.linspace(0, 1, labels.size)
        pos, neg = bucket_counts(labels, scores, thresholds, dtype=tf.float64)
        exact = get_mechanism(name, epsilon=None, num_thresholds=NUM_THRESHOLDS)
        assert math.isnan(float(exact.estimate_auc({"pos": pos, "neg": neg})))
        mechanism = _mechanism(name, HUGE_EPSILON).aggregate()
        aucs = mechanism.estimate_auc(mechanism.release(pos, neg, seed=5, repeats=50)).numpy()
        # NaN wherever the release's estimated P or N is not positive; otherwise in [0, 1].
        assert np.all(np.isnan(aucs) | ((aucs >= 0) & (aucs <= 1)))
        if mechanism.capabilities.integer_counts:  # integer noise is 0 at this epsilon
            assert np.all(np.isnan(aucs)), aucs
    pos, neg = tf.zeros(NUM_THRESHOLDS + 1, tf.float64), tf.zeros(NUM_THRESHOLDS + 1, tf.float64)
    assert math.isnan(float(mann_whitney_auc(confusion_from_histogram(pos, neg))))


def test_mann_whitney_nan_rule_follows_the_estimated_totals():
    pos = tf.constant([[0.0, 3.0, -4.0], [0.0, 0.5, 0.0], [1.0, 2.0, 3.0]], tf.float64)
    neg = tf.constant([[1.0, 1.0, 1.0], [0.0, 0.25, 0.0], [-1.0, -2.0, 0.5]], tf.float64)
    aucs = mann_whitney_auc(confusion_from_histogram(pos, neg)).numpy()
    # P^ = -1 (undefined); P^ = 0.5, N^ = 0.25 (fractional weights: defined, a tie = 1/2);
    # N^ = -2.5 (undefined)
    assert math.isnan(aucs[0]) and aucs[1] == 0.5 and math.isnan(aucs[2])


@pytest.mark.parametrize(
    "name", list_mechanisms(private=True, transforms_data=False, xla=True, releases="curve")
)
def test_estimate_and_curve_run_eagerly_in_tf_function_and_under_xla(name):
    labels, scores = _layout("one-class-buckets")
    pos, neg = bucket_counts(labels, scores, Thresholds.make(NUM_THRESHOLDS), dtype=tf.float64)
    mechanism = _mechanism(name, 0.5).aggregate()
    release = mechanism.release(pos, neg, seed=11, repeats=3)
    eager = mechanism.estimate_auc(release).numpy()
    graph = tf.function(mechanism.estimate_auc)(release).numpy()
    xla = tf.function(mechanism.estimate_auc, jit_compile=True)(release).numpy()
    np.testing.assert_allclose(graph, eager, rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(xla, eager, rtol=1e-9, equal_nan=True)
    curve_eager = mechanism.to_confusion(release)
    curve_xla = tf.function(mechanism.to_confusion, jit_compile=True)(release)
    for a, b in zip(curve_eager, curve_xla, strict=True):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-7, atol=1e-6)
    # the displayed curve is monotone: TP and FP never increase with the threshold
    for counts in (curve_eager.tp.numpy(), curve_eager.fp.numpy()):
        assert np.all(np.diff(counts, axis=-1) <= 1e-9)


def test_keras_metric_result_is_consistent_under_xla():
    labels, scores = _layout("point-masses")
    metric = DPAUC(epsilon=1e4, num_thresholds=NUM_THRESHOLDS, seed=0)
    metric.update_state(labels, scores)
    released = float(metric.result())  # eager: one release
    assert released == pytest.approx(0.75, abs=1e-3)
    # Under XLA (a compiled Keras step) result() shows that release and draws no new one.
    shown = tf.function(metric.result, jit_compile=True)
    assert [float(shown()) for _ in range(3)] == [pytest.approx(released)] * 3
    assert metric.releases_drawn == 1
    # The release itself compiles under XLA and is consistent there too.
    mechanism, pos, neg = metric.mechanism, metric.positives, metric.negatives

    @tf.function(jit_compile=True)
    def release(seed):
        return mechanism.estimate_auc(mechanism.release(pos, neg, seed=seed))

    values = np.array([float(release(tf.constant([s, 0], tf.int64))) for s in range(10)])
    np.testing.assert_allclose(values, 0.75, atol=1e-3)


# -- explicit thresholds: the same AUC as tf.keras.metrics.AUC(thresholds=...) ----------------
def _threshold_lists():
    rng = np.random.default_rng(123)
    lists = [
        [0.3, 0.5, 0.7],
        [0.5, 0.5, 0.5],
        [0.7, 0.3, 0.5],
        [0.5],
        [0.0],
        [1.0],
        [0.25, 0.5, 0.75],  # evenly spaced with 0 and 1: TensorFlow's fast path
        [0.75, 0.25, 0.5],
        [0.0, 1.0],
        [-0.5, 0.2, 1.5],
        [-1.0],
        [2.0],
        [0.1, 0.1, 0.9, 0.9],
    ]
    for _ in range(40):
        size = int(rng.integers(1, 12))
        values = rng.random(size) * 1.4 - 0.2
        if rng.random() < 0.4:
            values = np.round(values, 1)  # duplicates and values that scores hit exactly
        lists.append(values.tolist())
    return lists


def _scores_for_threshold_tests():
    rng = np.random.default_rng(99)
    scores = np.r_[rng.random(400), np.round(rng.random(200), 1), [0.0, 1.0, 0.5, 0.5]]
    labels = (rng.random(scores.size) < 0.3 + 0.4 * scores).astype(np.float32)
    return labels, scores.astype(np.float32)


@pytest.mark.parametrize("values", _threshold_lists(), ids=str)
def test_explicit_thresholds_match_tensorflow(values):
    labels, scores = _scores_for_threshold_tests()
    expected = _tf_auc(labels, scores, thresholds=list(values))
    metric = DPAUC(epsilon=None, thresholds=values)
    metric.update_state(labels, scores)
    assert float(metric.result()) == pytest.approx(expected, abs=1e-6)
    # the same through a weighted batch split in two
    weights = np.linspace(0, 1, labels.size).astype(np.float32)
    tf_metric = tf.keras.metrics.AUC(thresholds=list(values))
    tf_metric.update_state(labels, scores, sample_weight=weights)
    metric.reset_state()
    metric.update_state(labels[:300], scores[:300], sample_weight=weights[:300])
    metric.update_state(labels[300:], scores[300:], sample_weight=weights[300:])
    assert float(metric.result()) == pytest.approx(float(tf_metric.result()), abs=1e-6)


def test_explicit_thresholds_add_tensorflows_end_points_and_keep_duplicates():
    t = Thresholds.make(thresholds=[0.5, 0.3, 0.3, 1.2])
    assert t.values == (-1e-7, 0.3, 0.3, 0.5, 1.2, 1.0 + 1e-7) and t.grid == "keras"
    assert Thresholds.make(thresholds=[0.75, 0.25, 0.5]) == Thresholds.make(5)
    with pytest.raises(ValueError, match="finite"):
        Thresholds.make(thresholds=[0.2, math.nan])


# -- randomized response: NaN where the debiasing is undefined, never a silent 0 ----------------
def _rr_rule(release, epsilon):
    pos = tf.reduce_sum(release["pos"], axis=-1).numpy()
    neg = tf.reduce_sum(release["neg"], axis=-1).numpy()
    p = flip_probability(epsilon)
    n = pos + neg
    with np.errstate(invalid="ignore", divide="ignore"):
        pi = (pos * (1 - p) - neg * p) / (1 - 2 * p) / n
    # defined: the debiased fraction of positives is strictly inside (0, 1) and the flipped
    # labels hold both classes (the flipped AUC exists)
    return (n > 0) & (pi > 0) & (pi < 1) & (pos > 0) & (neg > 0)


@pytest.mark.parametrize(
    "labels, scores",
    [
        (np.r_[np.ones(10), np.zeros(30)], np.r_[np.linspace(0.5, 1, 10), np.linspace(0, 0.6, 30)]),
        (np.array([1.0]), np.array([0.7])),
        (np.zeros(40), np.linspace(0, 1, 40)),
    ],
    ids=["small", "one-row", "one-class"],
)
@pytest.mark.parametrize("epsilon", [0.05, 1.0])
def test_rr_is_nan_exactly_where_the_debiasing_is_undefined(labels, scores, epsilon):
    pos, neg = bucket_counts(labels, scores, Thresholds.make(20), dtype=tf.float64)
    mechanism = RandomizedResponse(epsilon=epsilon, num_thresholds=20)
    release = mechanism.release(pos, neg, seed=17, repeats=400)
    aucs = mechanism.estimate_auc(release).numpy()
    defined = _rr_rule(release, epsilon)
    assert np.all(np.isnan(aucs[~defined]))
    assert np.all((aucs[defined] >= 0) & (aucs[defined] <= 1))
    if labels.size == 1:
        assert not defined.any()  # one row: the flipped labels are always one class
    elif labels.size == 40 and labels.max() == 1 and epsilon == 0.05:
        assert 0 < defined.mean() < 1  # both cases occur: the test can see either


def test_rr_survives_huge_epsilon_and_is_exact_there():
    labels, scores = _layout("point-masses")
    pos, neg = bucket_counts(labels, scores, Thresholds.make(NUM_THRESHOLDS), dtype=tf.float64)
    mechanism = RandomizedResponse(epsilon=1e6, num_thresholds=NUM_THRESHOLDS)
    assert mechanism.flip_probability == 0.0
    aucs = mechanism.estimate_auc(mechanism.release(pos, neg, seed=0, repeats=3)).numpy()
    np.testing.assert_allclose(aucs, 0.75, atol=1e-12)


def test_paper_table_rows_use_the_reference_estimator_and_project_rows_the_default():
    from dpauc_tf.experiments.tables import Setting, TableRunner
    from dpauc_tf.io.scores import ScoreSet
    from dpauc_tf.simulation import simulate

    labels, scores = _layout("point-masses")
    runner = TableRunner({0: ScoreSet.checked(labels, scores)}, repeats=30, seed=0)
    for name, estimator in (("paper", "reference"), ("histogram", "mann-whitney")):
        setting = Setting(5, name, 1e4, NUM_THRESHOLDS, clients=1, threshold_grid="tf")
        row = runner.run_setting(0, setting, seed=4)
        pos, neg = runner.histograms(0, setting)
        mechanism = _mechanism(name, 1e4, estimator=estimator)
        expected = simulate(mechanism, pos, neg, seed=4, repeats=30)
        np.testing.assert_allclose(row.aucs, expected.aucs)
    assert np.ptp(runner.run_setting(0, Setting(5, "paper", 1e4, 100, clients=1), 4).aucs) > 0.2
