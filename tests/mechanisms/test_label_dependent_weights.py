"""Label-dependent sample weights (Keras' ``class_weight``; issue 30): by brute force over
every neighbouring label vector of tiny data sets, each private mechanism either refuses the
weights in one line naming ``class_weight``, or releases nothing exact that moves with the
label and stays within its stated sensitivity. The same for one-vs-rest multi-class (L1 = 4
whatever ``C``), the floating-point totals (weights 1, 2^-53, 2^-53 in one bucket), and the
rank-sum texts (its summary's noise law, its statement when ``D = 0``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import DPAUC, DPMultiClassAUC
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms import get_mechanism, list_mechanisms
from dpauc_tf.mechanisms.multiclass import one_vs_rest_counts
from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass
from dpauc_tf.mechanisms.registry import mechanism_spec

SCORES = np.array([0.1, 0.4, 0.4, 0.8, 0.95], np.float32)  # a tie: two examples share a bucket
CLASS_WEIGHTS = ({0: 1.0, 1: 0.5}, {0: 1.0, 1: 0.0}, {0: 0.25, 1: 1.0})
SMALL = {"rank-sum": {"resolution": 11}, "auc-only": {"resolution": 11}}


def _private_cases():
    """Every noisy Keras-metric mechanism (with the options that change what it releases)."""
    cases = []
    for name in list_mechanisms(private=True, keras_metric=True):
        delta = 1e-6 if name in ("paper-gaussian", "auc-only") else None
        cases.append((name, delta, dict(SMALL.get(name, {}))))
    cases.append(("tree-histogram", None, {"public_scores": True}))
    return cases


def _metric(name, delta, options):
    return DPAUC(
        epsilon=1.0,
        num_thresholds=5,
        mechanism=name,
        delta=delta,
        mechanism_options=options or None,
        seed=0,
    )


def _labels():
    return [np.array(bits, np.float32) for bits in itertools.product((0, 1), repeat=len(SCORES))]


def _exact_parts(metric, pos, neg) -> dict[str, np.ndarray]:
    """What a release publishes without noise: every key, and every sum of two keys of one
    shape (``rr``'s ``pos + neg``), whose value is the same under two seeds."""
    draws = [metric.mechanism.release(pos, neg, seed=seed) for seed in (1, 2)]
    parts = {}
    keys = sorted(draws[0])
    candidates = [(key,) for key in keys] + list(itertools.combinations(keys, 2))
    for combo in candidates:
        values = []
        for draw in draws:
            arrays = [np.asarray(draw[key], np.float64) for key in combo]
            if any(a.shape != arrays[0].shape for a in arrays):
                break
            values.append(sum(arrays))
        if len(values) == 2 and np.array_equal(values[0], values[1], equal_nan=True):
            parts["+".join(combo)] = values[0]
    return parts


@pytest.mark.parametrize("class_weight", CLASS_WEIGHTS, ids=str)
@pytest.mark.parametrize("name,delta,options", _private_cases(), ids=lambda v: str(v))
def test_label_dependent_weights_are_refused_or_reveal_nothing(name, delta, options, class_weight):
    """For every pair of neighbouring label vectors: refused in one line naming class_weight,
    or the exact parts of the release are the same and the counts move by at most L1 = 2."""
    metric = _metric(name, delta, options)
    released = {}
    for labels in _labels():
        weights = np.array([class_weight[int(y)] for y in labels], np.float32)
        metric.reset_state()
        try:
            metric.update_state(labels, SCORES, sample_weight=weights)
        except ValueError as error:  # refused in one line
            assert "\n" not in str(error) and "class_weight" in str(error)
            assert metric.mechanism.capabilities.unit_weights
            return
        except tf.errors.InvalidArgumentError as error:  # integer noise refuses a fraction
            assert metric.mechanism.capabilities.integer_counts, error.message
            assert "integer noise" in error.message
            return
        pos, neg = metric.counts()
        released[tuple(labels)] = (pos, neg, _exact_parts(metric, pos, neg))
    for labels, (pos, neg, parts) in released.items():
        for i in range(len(labels)):
            other = list(labels)
            other[i] = 1.0 - other[i]
            pos2, neg2, parts2 = released[tuple(other)]
            assert np.abs(pos - pos2).sum() + np.abs(neg - neg2).sum() <= 2.0
            assert parts.keys() == parts2.keys()
            for key in parts:
                np.testing.assert_array_equal(parts[key], parts2[key], err_msg=key)
    assert not getattr(metric.mechanism.capabilities, "unit_weights", False), "took weights != 1"


@pytest.mark.parametrize(
    "name,options",
    [
        ("rank-sum", {}),
        ("auc-only", {}),
        ("histogram-public-scores", {}),
        ("tree-histogram", {"public_scores": True}),
        ("rr", {}),
    ],
)
def test_mechanisms_releasing_label_free_totals_refuse_weights_other_than_1(name, options):
    """Eagerly a one-line ValueError naming class_weight; in a graph the assertion; the
    mechanism's release refuses fractional counts too (any path that skipped the counting's
    check); weight 0 is refused as well (class_weight {1: 0} makes the totals count negatives)."""
    delta = 1e-6 if name == "auc-only" else None
    metric = _metric(name, delta, options)
    for weights in ([1.0, 0.5, 1.0], [1.0, 0.0, 1.0]):
        with pytest.raises(ValueError, match="class_weight") as raised:
            metric.update_state([0, 1, 1], [0.2, 0.6, 0.9], sample_weight=weights)
        assert "\n" not in str(raised.value)
    metric.update_state([0, 1, 1], [0.2, 0.6, 0.9], sample_weight=[1.0, 1.0, 1.0])  # taken

    @tf.function
    def step(weights):
        metric.update_state(tf.constant([0.0, 1.0]), tf.constant([0.2, 0.7]), weights)

    with pytest.raises(tf.errors.InvalidArgumentError, match="class_weight"):
        step(tf.constant([1.0, 0.5]))
    grid = metric.mechanism.count_thresholds(metric._thresholds).num_buckets
    fraction = np.zeros(grid)
    fraction[1] = 0.5
    with pytest.raises(ValueError, match="class_weight"):
        metric.mechanism.release(fraction, np.ones(grid), seed=0)
    with pytest.raises(ValueError, match="max_weight must be 1"):
        DPAUC(epsilon=1.0, mechanism=name, delta=delta, max_weight=2.0, mechanism_options=options)
    assert metric.mechanism.capabilities.unit_weights


def test_histogram_takes_label_dependent_weights_within_its_l1():
    """The mechanism to use instead: class_weight {0: 1, 1: 0.5} moves 1.5 <= 2."""
    metric = _metric("histogram", None, {})
    assert mechanism_spec("histogram").capabilities.weights == "[0, max_weight]"
    metric.update_state([0, 1], [0.2, 0.7], sample_weight=[1.0, 0.5])
    assert float(np.sum(metric.counts())) == 1.5


def test_float_totals_are_refused_not_rounded_per_class():
    """Weights 1, 2^-53, 2^-53 in one bucket: pos + neg rounded per class made rank-sum's D
    differ in its last bit between neighbours; such weights are now refused (counting and
    release), and with weights of 1 every count is a whole number, exact in float64."""
    tiny = 2.0**-53
    metric = _metric("rank-sum", None, {})
    labels_a, labels_b = [1, 0, 0, 0], [1, 1, 0, 0]
    scores = [0.45, 0.45, 0.45, 0.9]
    weights = [1.0, tiny, tiny, 1.0]
    for labels in (labels_a, labels_b):
        with pytest.raises(ValueError, match="class_weight"):
            metric.update_state(labels, scores, sample_weight=weights)
    rank_sum = get_mechanism("rank-sum", epsilon=1.0, num_thresholds=3, resolution=3)
    pos = np.array([0.0, 0.0, 1.0, 0.0])
    neg = np.array([0.0, 0.0, 2 * tiny, 1.0])
    with pytest.raises(ValueError, match="needs integer counts"):
        rank_sum.release(pos, neg, seed=0)


def test_one_vs_rest_refuses_weights_other_than_1():
    """A class change moves a class-dependent weight in every class: with class_weight over
    C = 10 classes the exact counts' L1 is 2 (w(a) + w(a')) + (C - 2) |w(a) - w(a')|, far
    above the stated 4; every noisy one-vs-rest release refuses such weights."""
    classes = 10
    class_weight = np.linspace(0.1, 1.0, classes)
    rng = np.random.default_rng(0)
    scores = rng.dirichlet(np.ones(classes), size=6)
    grid = Thresholds.make(5)
    labels = rng.integers(0, classes, 6)
    other = labels.copy()
    other[0] = (labels[0] + 5) % classes
    pos, neg = one_vs_rest_counts(labels, scores, grid, sample_weight=class_weight[labels])
    pos2, neg2 = one_vs_rest_counts(other, scores, grid, sample_weight=class_weight[other])
    assert np.abs(pos - pos2).sum() + np.abs(neg - neg2).sum() > 4.0  # why it must refuse
    pos, neg = one_vs_rest_counts(
        labels, scores, grid, sample_weight=np.ones(6), unit_weights=True
    )  # weights of 1 are taken
    assert pos.sum() == 6
    with pytest.raises(ValueError, match="class_weight"):
        one_vs_rest_counts(
            labels, scores, grid, sample_weight=class_weight[labels], unit_weights=True
        )
    for mechanism in ("histogram", "histogram-public-scores", "secure-histogram"):
        metric = DPMultiClassAUC(num_classes=classes, epsilon=1.0, mechanism=mechanism, seed=0)
        with pytest.raises(ValueError, match="class_weight") as raised:
            metric.update_state(labels, scores, sample_weight=class_weight[labels])
        assert "\n" not in str(raised.value)
        metric.update_state(labels, scores)  # no weights: taken
        with pytest.raises(ValueError, match="class_weight"):
            evaluate_multiclass(
                labels,
                scores,
                epsilon=1.0,
                mechanism=mechanism,
                num_thresholds=5,
                sample_weight=class_weight[labels],
                seed=0,
            )
    exact = DPMultiClassAUC(num_classes=classes, epsilon=None)  # no noise: any weights
    exact.update_state(labels, scores, sample_weight=class_weight[labels])


def test_rank_sum_texts_state_its_noise_law_and_the_budget_when_d_is_0():
    summary = mechanism_spec("rank-sum").summary
    assert "D/((1-c) eps)" in summary and "n/(2 eps)" not in summary
    statement = get_mechanism("rank-sum", epsilon=1.0, num_thresholds=3).statement()
    assert "D = 0" in statement.noise and "spends only 0.25" in statement.noise
    # D = 0 (every score tied): the rank sum is released exactly as 0, only P is noisy
    rank_sum = get_mechanism("rank-sum", epsilon=1.0, num_thresholds=3, resolution=3)
    release = rank_sum.release([0.0, 2.0, 0.0, 0.0], [0.0, 3.0, 0.0, 0.0], seed=0, repeats=3)
    assert np.all(release["sensitivity"].numpy() == 0.0)
    assert np.all(release["rank_sum"].numpy() == 0.0)
