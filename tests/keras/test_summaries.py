"""The Keras metrics' summaries of their last release (issue 33): ``DPAUC.summaries()``
(partial AUC, operating points, average precision) and ``DPECE.release_interval()`` (the
ECE's interval) and ``DPECE.summaries()``.

With noise off each number equals scikit-learn's on the bucketed scores, with the counts
taken eagerly, inside ``tf.function`` and through ``model.evaluate``; with noise they are of
the release ``result()`` drew (no new release, no guard asked, the same numbers on every
call); the ECE's stated privacy variance matches the noise drawn over many releases;
hostile calls get a right number, a null or a one-line error."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from sklearn.metrics import average_precision_score, roc_auc_score

from dpauc_tf import DPAUC, DPECE
from dpauc_tf.core.calibration import BucketScores
from dpauc_tf.core.curve_summaries import partial_auc_grid_bound
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.keras.metric import add_release_guard, remove_release_guard
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.release import finish_release
from dpauc_tf.mechanisms.release_summaries import summarize_release

T = 101


def _data(n: int = 2000, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype("float32")
    scores = (1.0 / (1.0 + np.exp(-rng.normal(labels - 0.5, 1.0)))).astype("float32")
    return labels, scores


def _one_line(error) -> str:
    text = str(error.value)
    assert "\n" not in text, text
    return text


def _check_equals_scikit_learn(summary: dict, labels, scores) -> None:
    grid = Thresholds.make(T)
    bucketed = grid.bucketize_numpy(np.asarray(scores, np.float64))
    part = summary["partial_auc"]
    assert part["value"] == pytest.approx(roc_auc_score(labels, bucketed, max_fpr=0.1), abs=1e-9)
    pos = np.bincount(bucketed, labels, grid.num_buckets)
    neg = np.bincount(bucketed, 1.0 - labels, grid.num_buckets)
    bound = float(partial_auc_grid_bound(pos, neg, 0.1))
    assert abs(part["value"] - roc_auc_score(labels, scores, max_fpr=0.1)) <= bound + 1e-12
    assert summary["average_precision"]["value"] == pytest.approx(
        average_precision_score(labels, bucketed), abs=1e-9
    )
    point = summary["tpr_at_fpr"]
    predicted = scores > point["threshold"]
    assert point["tpr"]["value"] == pytest.approx(predicted[labels == 1].mean())
    assert point["fpr"]["value"] == pytest.approx(predicted[labels == 0].mean())
    assert point["fpr"]["value"] <= 0.05
    for number in (part, summary["average_precision"], point["tpr"]):
        assert number["ci_low"] <= number["value"] <= number["ci_high"]
    assert "NOT private" in summary["privacy"]


def test_noise_off_equals_scikit_learn_eagerly():
    labels, scores = _data()
    metric = DPAUC(epsilon=None, num_thresholds=T)
    for start in range(0, labels.size, 500):
        metric.update_state(labels[start : start + 500], scores[start : start + 500])
    _check_equals_scikit_learn(metric.summaries(max_fpr=0.1, tpr_at_fpr=0.05), labels, scores)


def test_noise_off_equals_scikit_learn_after_a_tf_function():
    labels, scores = _data(seed=1)
    metric = DPAUC(epsilon=None, num_thresholds=T)

    @tf.function
    def step(y, s):
        metric.update_state(y, s)
        return metric.result()

    for start in range(0, labels.size, 500):
        step(labels[start : start + 500], scores[start : start + 500])
    _check_equals_scikit_learn(metric.summaries(max_fpr=0.1, tpr_at_fpr=0.05), labels, scores)

    @tf.function
    def inside():
        return metric.summaries(max_fpr=0.1)

    with pytest.raises(ValueError, match="eagerly"):
        inside()


def _identity_model(metric):
    model = tf.keras.Sequential([tf.keras.Input(shape=(1,)), tf.keras.layers.Activation("linear")])
    model.compile(loss="binary_crossentropy", metrics=[metric])
    return model


def test_noise_off_equals_scikit_learn_through_evaluate():
    labels, scores = _data(seed=2)
    metric = DPAUC(epsilon=None, num_thresholds=T)
    _identity_model(metric).evaluate(scores[:, None], labels, batch_size=256, verbose=0)
    _check_equals_scikit_learn(metric.summaries(max_fpr=0.1, tpr_at_fpr=0.05), labels, scores)


def test_with_noise_the_summaries_are_of_the_release_result_drew():
    """No new release, no guard asked, the same numbers on every call; the partial AUC at
    max_fpr 1 is the released AUC (a fresh release would move it by its noise, ~0.01)."""
    labels, scores = _data(seed=3)
    metric = DPAUC(epsilon=1.0, num_thresholds=T, mechanism="histogram", seed=0)
    result = _identity_model(metric).evaluate(
        scores[:, None], labels, batch_size=256, verbose=0, return_dict=True
    )
    drawn = metric.releases_drawn
    asked = []
    add_release_guard(asked.append)
    try:
        first = metric.summaries(max_fpr=1.0, tpr_at_fpr=0.1)
        second = metric.summaries(max_fpr=1.0, tpr_at_fpr=0.1)
    finally:
        remove_release_guard(asked.append)
    assert first == second and asked == [] and metric.releases_drawn == drawn
    assert first["partial_auc"]["value"] == pytest.approx(result["dp_auc"], abs=1e-3)
    assert first["partial_auc"]["privacy_std"] > 0
    assert "no extra epsilon" in first["privacy"] and "epsilon 1" in first["privacy"]
    metric.result()  # a new release: new numbers
    assert metric.summaries(max_fpr=1.0)["partial_auc"] != first["partial_auc"]


def test_a_mechanism_without_a_curve_is_refused_naming_the_one_to_pass():
    labels, scores = _data(n=200)
    metric = DPAUC(epsilon=1.0, num_thresholds=T, seed=0)  # the default: rank-sum
    metric.update_state(labels, scores)
    metric.result()
    with pytest.raises(ValueError) as error:
        metric.summaries(max_fpr=0.1)
    assert "rank-sum" in _one_line(error) and "mechanism='histogram'" in _one_line(error)


def test_before_a_release_and_after_reset_it_is_refused():
    labels, scores = _data(n=200)
    metric = DPAUC(epsilon=1.0, num_thresholds=T, mechanism="histogram", seed=0)
    metric.update_state(labels, scores)
    with pytest.raises(ValueError) as error:
        metric.summaries()
    assert "result()" in _one_line(error)
    metric.result()
    metric.summaries()
    metric.reset_state()
    with pytest.raises(ValueError, match=r"call result\(\)"):
        metric.summaries()
    assert metric.releases_drawn == 1


@pytest.mark.parametrize("bad", [0.0, float("nan"), 1.5, "0.1", True])
def test_a_bad_max_fpr_is_refused_in_one_line(bad):
    labels, scores = _data(n=200)
    metric = DPAUC(epsilon=None, num_thresholds=T)
    metric.update_state(labels, scores)
    with pytest.raises(ValueError) as error:
        metric.summaries(max_fpr=bad)
    assert "max_fpr" in _one_line(error)


def test_one_class_gives_nulls_and_multi_label_is_refused():
    labels, scores = _data(n=200)
    metric = DPAUC(epsilon=None, num_thresholds=T)
    metric.update_state(np.ones_like(labels), scores)
    out = metric.summaries(max_fpr=0.1, tpr_at_fpr=0.1)
    assert out["partial_auc"]["value"] is None and out["partial_auc"]["ci_low"] is None
    assert out["tpr_at_fpr"]["tpr"]["value"] is None
    assert out["average_precision"]["value"] == 1.0  # every cut's precision is 1
    many = DPAUC(epsilon=None, num_thresholds=T, multi_label=True, num_labels=2)
    many.update_state(np.stack([labels, labels], 1), np.stack([scores, scores], 1))
    with pytest.raises(ValueError) as error:
        many.summaries()
    assert "multi_label" in _one_line(error)


# -- DPECE ------------------------------------------------------------------------------------
def test_dpece_interval_is_the_command_line_law_without_noise():
    """The same numbers as ``summarize_release`` of the exact counts with the scores' label-free
    statistics (what ``dpauc evaluate --calibration-bins`` computes), and they cover."""
    labels, scores = _data(n=3000, seed=4)
    metric = DPECE(epsilon=None, num_bins=10)
    metric.update_state(labels, scores)
    value = float(metric.result())
    ci = metric.release_interval(0.95)
    grid = Thresholds.make(11)
    bucketed = grid.bucketize_numpy(np.asarray(scores, np.float64))
    counts = {
        "pos": np.bincount(bucketed, labels, grid.num_buckets)[None],
        "neg": np.bincount(bucketed, 1.0 - labels, grid.num_buckets)[None],
    }
    none = get_mechanism("none", epsilon=None, num_thresholds=11)
    result = finish_release(None, counts, num_examples=None, mechanism=none)
    want = summarize_release(
        result,
        none,
        grid,
        average_precision=False,
        calibration_bins=10,
        bucket_scores=BucketScores.of(scores, grid),
    ).calibration.ece
    assert ci.value[0] == pytest.approx(value, abs=1e-6)
    for got, expected in ((ci.low, want.low), (ci.high, want.high), (ci.value, want.value)):
        assert got[0] == pytest.approx(expected[0], rel=1e-6)
    assert ci.low[0] < value < ci.high[0] and ci.sampling_variance[0] > 0
    out = metric.summaries(max_fpr=0.1)
    assert out["ece"]["ci_low"] == pytest.approx(ci.low[0], rel=1e-6)
    assert len(out["reliability"]) == 10 and "partial_auc" in out


def test_dpece_interval_states_the_noise_drawn():
    """Sample target (noise only): the stated variance of the ECE against its variance over
    150 releases of one test set; a halved or doubled noise scale (1/4 or 4 times the
    variance) fails."""
    labels, scores = _data(n=20000, seed=5)
    scores = np.random.default_rng(5).uniform(size=labels.size).astype("float32")
    labels = (np.random.default_rng(6).uniform(size=labels.size) < scores**2).astype("float32")
    metric = DPECE(epsilon=1.0, num_bins=5, seed=0)
    metric.update_state(labels, scores)
    values, stated = [], []
    for i in range(150):
        values.append(float(metric.result()))
        if i % 30 == 0:
            ci = metric.release_interval(0.95, target="sample")
            assert ci.value[0] == pytest.approx(values[-1], abs=1e-6)
            stated.append(ci.privacy_variance[0])
    ratio = np.var(values) / np.median(stated)
    assert 0.6 < ratio < 1.6, ratio
    assert metric.releases_drawn == 150


def test_dpece_interval_before_a_release_is_refused():
    labels, scores = _data(n=100)
    metric = DPECE(epsilon=1.0, num_bins=10, seed=0)
    metric.update_state(labels, scores)
    with pytest.raises(ValueError) as error:
        metric.release_interval()
    assert "result()" in _one_line(error)
    assert metric.releases_drawn == 0


def test_dpece_empty_bins_are_null_and_one_class_has_an_interval():
    labels, scores = _data(n=400, seed=7)
    metric = DPECE(epsilon=None, num_bins=10)
    metric.update_state(np.ones_like(labels), scores * 0.5)  # nothing above 0.5, one class
    out = metric.summaries(max_fpr=0.1)
    empty = [b for b in out["reliability"] if b["count"] == 0]
    assert len(empty) >= 5
    assert all(b["positive_rate"] is None and b["ci_low"] is None for b in empty)
    assert out["partial_auc"]["value"] is None  # no negative
    ci = metric.release_interval()
    assert ci.low[0] <= float(metric.result()) <= ci.high[0]
