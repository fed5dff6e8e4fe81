"""``estimator="mann-whitney-smooth"``: reachable from the registry and the Keras metric,
post-processing only (the release and the guarantee are those of the default), unbiased
under noise with the spread its linearised variance predicts."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.analysis.tree_design import mechanism_auc_variance
from dpauc_tf.core.adaptive_thresholds import quantile_thresholds
from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.core.postprocessing import mann_whitney_auc
from dpauc_tf.mechanisms import get_mechanism

SMOOTH = {"estimator": "mann-whitney-smooth"}
T = 15


def _smooth_counts(scale=40.0):
    """Integer counts with a rising positive and a falling negative density (16 buckets)."""
    x = np.linspace(0.05, 0.95, T + 1)
    pos = np.round(scale * 10 * x**2)
    neg = np.round(scale * 30 * (1 - x) ** 1.5)
    return tf.constant(pos, tf.float64), tf.constant(neg, tf.float64)


def _smooth_auc(pos, neg):
    return float(mann_whitney_auc(confusion_from_histogram(pos, neg), within_bucket="linear"))


CURVE_MECHANISMS = [
    ("histogram", {}),
    ("histogram-public-scores", {}),
    ("secure-histogram", {"num_clients": 3}),
    ("tree-histogram", {"positive_rate": 0.25, "budget": "uniform"}),
    ("secure-tree-histogram", {"num_clients": 3, "positive_rate": 0.25}),
    ("paper", {}),
    ("rr", {}),
]


@pytest.mark.parametrize("name, options", CURVE_MECHANISMS)
def test_every_curve_mechanism_takes_it_and_converges_to_the_smooth_auc(name, options):
    pos, neg = _smooth_counts()
    mechanism = get_mechanism(name, epsilon=1e7, num_thresholds=T, **options, **SMOOTH)
    assert mechanism.options()["estimator"] == "mann-whitney-smooth"
    assert "mann-whitney-smooth" in repr(mechanism)
    aggregate = mechanism.aggregate()
    assert aggregate.estimator == "mann-whitney-smooth"
    aucs = aggregate.estimate_auc(aggregate.release(pos, neg, seed=1, repeats=3)).numpy()
    np.testing.assert_allclose(aucs, _smooth_auc(pos, neg), atol=1e-4)
    default = get_mechanism(name, epsilon=1e7, num_thresholds=T, **options)
    assert "estimator" not in default.options()


@pytest.mark.parametrize(
    "name, options",
    [
        ("secure-tree-histogram", {"num_clients": 4, "positive_rate": 0.25, "budget": "uniform"}),
        ("secure-tree-histogram", {"num_clients": 4, "delta": 1e-6, "positive_rate": 0.25}),
        ("histogram", {"positive_share": 0.7}),
    ],
)
def test_release_and_guarantee_are_those_of_the_default(name, options):
    # Post-processing: the same seed gives the same release, the same event and statement.
    pos, neg = _smooth_counts()
    default = get_mechanism(name, epsilon=1.0, num_thresholds=T, **options)
    smooth = get_mechanism(name, epsilon=1.0, num_thresholds=T, **options, **SMOOTH)
    first = default.release(pos, neg, seed=7, repeats=5)
    second = smooth.release(pos, neg, seed=7, repeats=5)
    assert sorted(first) == sorted(second)
    for key in first:
        np.testing.assert_array_equal(first[key].numpy(), second[key].numpy())
    assert repr(default.dp_event()) == repr(smooth.dp_event())
    assert default.statement() == smooth.statement()
    estimates = smooth.estimate_auc(second).numpy()
    assert np.all(np.isfinite(estimates))


def test_bad_estimators_are_refused():
    with pytest.raises(ValueError, match="least-squares leaves"):
        get_mechanism("tree-histogram", epsilon=1.0, num_thresholds=T, estimator="reference")
    with pytest.raises(ValueError, match="estimator"):
        get_mechanism("secure-tree-histogram", epsilon=1.0, num_thresholds=T, estimator="smooth")


def test_smooth_tree_estimate_is_unbiased_with_the_predicted_spread():
    # Bilinear in the two classes' leaves, whose noises are independent: unbiased at any
    # noise level; the spread is the linearised variance of the smooth estimator.
    pos, neg = _smooth_counts(scale=4.0)
    mechanism = get_mechanism(
        "secure-tree-histogram",
        epsilon=0.5,
        num_thresholds=T,
        num_clients=1,
        positive_rate=0.3,
        **SMOOTH,
    )
    aucs = mechanism.estimate_auc(mechanism.release(pos, neg, seed=11, repeats=4000)).numpy()
    aucs = aucs[np.isfinite(aucs)]
    assert aucs.size > 3990
    truth = _smooth_auc(pos, neg)
    predicted = math.sqrt(mechanism_auc_variance(pos.numpy(), neg.numpy(), mechanism))
    assert abs(aucs.mean() - truth) < 4 * aucs.std() / math.sqrt(aucs.size)
    assert 0.9 < aucs.std() / predicted < 1.15


def test_keras_metric_passes_the_estimator_through():
    from dpauc_tf.keras.metric import DPAUC

    options = {"estimator": "mann-whitney-smooth", "positive_rate": 0.25, "budget": "uniform"}
    metric = DPAUC(
        epsilon=1e6, mechanism="tree-histogram", num_thresholds=T, mechanism_options=options, seed=3
    )
    assert metric.mechanism.estimator == "mann-whitney-smooth"
    rng = np.random.default_rng(0)
    labels = (rng.random(400) < 0.3).astype(np.float32)
    scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.15), 0, 1).astype(np.float32)
    metric.update_state(labels, scores)
    result = float(metric.result())
    assert 0.5 < result < 1.0
    again = DPAUC.from_config(metric.get_config())
    assert again.mechanism.estimator == "mann-whitney-smooth"
    # the documented configuration: 61 inner quantiles, Keras adds both ends (T = 63)
    grid = quantile_thresholds(scores, 63)[1:-1].tolist()
    secure = DPAUC(
        epsilon=1.0,
        thresholds=grid,
        mechanism="secure-tree-histogram",
        mechanism_options={"num_clients": 1000, **options},
    )
    assert secure.mechanism.num_thresholds == 63 and secure.mechanism.layout.num_leaves == 64
    assert secure.mechanism.estimator == "mann-whitney-smooth"
