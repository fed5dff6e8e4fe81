"""DPMultiClassAUC: Keras parity with noise off, the same numbers as the release path, the noise
actually drawn, fit/evaluate, config round trip and the refusals (Keras 2 and Keras 3)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from dpauc_tf.keras.multiclass import DPMultiClassAUC
from dpauc_tf.mechanisms.laws import Average
from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass
from dpauc_tf.privacy.accounting import composed_epsilon


def _data(n=1500, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, classes))
    labels = rng.integers(0, classes, n)
    logits[np.arange(n), labels] += 1.0
    scores = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return labels, scores.astype(np.float32), logits.astype(np.float32)


def _fill(metric, labels, scores, weights=None, batch=256):
    for start in range(0, len(labels), batch):
        rows = slice(start, start + batch)
        metric.update_state(labels[rows], scores[rows], None if weights is None else weights[rows])
    return float(metric.result())


@pytest.mark.parametrize("num_thresholds", [3, 50, 200])
@pytest.mark.parametrize("weighted", [False, True])
def test_macro_equals_keras_multi_label_auc_on_one_hot(num_thresholds, weighted):
    labels, scores, _ = _data()
    one_hot = np.eye(4, dtype=np.float32)[labels]
    weights = (
        np.random.default_rng(1).uniform(size=len(labels)).astype(np.float32) if weighted else None
    )
    keras = tf.keras.metrics.AUC(num_thresholds=num_thresholds, multi_label=True, num_labels=4)
    expected = _fill(keras, one_hot, scores, weights)
    for given in (one_hot, labels):
        ours = DPMultiClassAUC(num_classes=4, epsilon=None, num_thresholds=num_thresholds)
        assert abs(_fill(ours, given, scores, weights) - expected) < 1e-6


@pytest.mark.parametrize("average", Average.values())
def test_every_average_is_the_release_paths(average):
    labels, scores, logits = _data(n=800, classes=3)
    expected = evaluate_multiclass(
        labels, scores.astype(np.float64), epsilon=None, num_thresholds=100, average=average
    ).auc
    metric = DPMultiClassAUC(num_classes=3, epsilon=None, num_thresholds=100, average=average)
    assert abs(_fill(metric, labels, scores) - expected) < 1e-6
    from_logits = DPMultiClassAUC(
        num_classes=3, epsilon=None, num_thresholds=100, average=average, from_logits=True
    )
    assert abs(_fill(from_logits, labels, logits) - expected) < 1e-5


def test_the_noise_drawn_is_laplace_of_scale_four_over_epsilon():
    labels, scores, _ = _data(n=300, classes=3)
    metric = DPMultiClassAUC(num_classes=3, epsilon=0.5, num_thresholds=5, seed=0)
    metric.update_state(labels, scores)
    pos, neg = metric.counts()
    assert pos.shape == (3, 6)
    release = metric.mechanism.release(pos, neg, seed=5, repeats=4000)
    noise = np.concatenate(
        [(np.asarray(release["pos"]) - pos).ravel(), (np.asarray(release["neg"]) - neg).ravel()]
    )
    assert stats.kstest(noise, stats.laplace(scale=8.0).cdf).pvalue > 1e-3
    for wrong in (4.0, 16.0):
        assert stats.kstest(noise, stats.laplace(scale=wrong).cdf).pvalue < 1e-10
    statement = metric.privacy_statement()
    assert statement.epsilon == pytest.approx(0.5) and "L1 = 4" in statement.sensitivity
    assert composed_epsilon(metric.dp_event()).best == pytest.approx(0.5)
    value = float(metric.result())
    assert 0.5 < value < 1.0 and metric.releases_drawn == 1


def test_fit_and_evaluate_charge_the_whole_release_to_the_budget_callback():
    from dpauc_tf.keras.callbacks import DPAUCBudgetCallback
    from dpauc_tf.privacy.ledger import BudgetExceededError, PrivacyLedger

    labels, _, _ = _data(n=512, classes=3)
    features = np.random.default_rng(2).normal(size=(512, 5)).astype(np.float32)
    features[:, 0] += labels
    model = tf.keras.Sequential(
        [tf.keras.Input(shape=(5,)), tf.keras.layers.Dense(3, activation="softmax")]
    )
    model.compile(
        optimizer="adam",
        loss="sparse_categorical_crossentropy",
        metrics=[DPMultiClassAUC(num_classes=3, epsilon=0.5, num_thresholds=20, seed=0)],
    )
    ledger = PrivacyLedger()
    callback = DPAUCBudgetCallback(ledger)
    history = model.fit(features, labels, epochs=2, batch_size=64, verbose=0, callbacks=[callback])
    values = history.history["dp_multiclass_auc"]
    assert len(values) == 2 and all(0.0 <= v <= 1.0 for v in values)
    assert ledger.releases("train") == 2
    assert ledger.spent("train").basic == pytest.approx(1.0)  # 2 releases x epsilon 0.5
    out = model.evaluate(features, labels, verbose=0, return_dict=True, callbacks=[callback])
    assert 0.0 <= out["dp_multiclass_auc"] <= 1.0
    assert ledger.spent("evaluation").basic == pytest.approx(0.5)
    tight = PrivacyLedger(budget=0.4)  # less than one release of all classes
    with pytest.raises(BudgetExceededError):
        model.evaluate(features, labels, verbose=0, callbacks=[DPAUCBudgetCallback(tight)])


def test_config_round_trip():
    metric = DPMultiClassAUC(
        num_classes=5,
        average="weighted",
        epsilon=2.0,
        num_thresholds=30,
        mechanism="histogram-public-scores",
        seed=3,
    )
    config = metric.get_config()
    assert config["num_classes"] == 5 and config["average"] == "weighted"
    assert config["epsilon"] == 2.0 and config["mechanism"] == "histogram-public-scores"
    again = DPMultiClassAUC.from_config(config)
    assert again.get_config() == config
    assert again.mechanism.noise_scale == pytest.approx(1.0)  # 2 / epsilon


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ([[1, 1, 0], [0, 1, 0]], "exactly one 1"),
        ([0, 3], "class ids must be integers"),
        ([0.5, 1], "class ids must be integers"),
    ],
)
def test_bad_labels_are_refused_eagerly_and_in_graphs(labels, message):
    scores = np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]], np.float32)
    metric = DPMultiClassAUC(num_classes=3, epsilon=None)
    with pytest.raises(ValueError, match=message):
        metric.update_state(labels, scores)

    @tf.function
    def graph(y_true, y_pred):
        metric.update_state(y_true, y_pred)

    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        graph(tf.constant(labels, tf.float32), tf.constant(scores))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="must be >= 2"):
        DPMultiClassAUC(num_classes=0)
    with pytest.raises(ValueError, match="average must be one of"):
        DPMultiClassAUC(num_classes=3, average="samples")
    with pytest.raises(ValueError, match="cannot release one-vs-rest counts"):
        DPMultiClassAUC(num_classes=3, mechanism="rr")
    metric = DPMultiClassAUC(num_classes=3, epsilon=None)
    with pytest.raises(ValueError, match=r"predictions must have shape \[N, 3\]"):
        metric.update_state([0, 1], [[0.5, 0.5], [0.5, 0.5]])
