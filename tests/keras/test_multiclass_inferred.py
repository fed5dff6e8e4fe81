"""DPMultiClassAUC(num_classes=None): the number of classes inferred at the first update (as
Keras' AUC(multi_label=True) infers num_labels), eagerly, in tf.function and in fit, with
the same values, releases and statement as with num_classes given (Keras 2 and Keras 3; JAX:
test_multiclass_jax.py)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.keras.callbacks import DPAUCBudgetCallback
from dpauc_tf.keras.multiclass import DPMultiClassAUC
from dpauc_tf.privacy.accounting import composed_epsilon
from dpauc_tf.privacy.ledger import PrivacyLedger


def _data(n=900, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, classes))
    labels = rng.integers(0, classes, n)
    logits[np.arange(n), labels] += 1.0
    scores = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    weights = rng.uniform(size=n).astype(np.float32)
    return labels, scores.astype(np.float32), weights


def _fill(metric, labels, scores, weights=None, batch=200, step=None):
    update = step or metric.update_state
    for start in range(0, len(labels), batch):
        rows = slice(start, start + batch)
        update(labels[rows], scores[rows], None if weights is None else weights[rows])


@pytest.mark.parametrize("average", ["macro", "weighted", "micro"])
@pytest.mark.parametrize("one_hot", [False, True])
def test_inferred_equals_given_and_keras_without_num_labels(average, one_hot):
    labels, scores, weights = _data()
    given_labels = np.eye(4, dtype=np.float32)[labels] if one_hot else labels
    given = DPMultiClassAUC(num_classes=4, epsilon=None, num_thresholds=60, average=average)
    inferred = DPMultiClassAUC(epsilon=None, num_thresholds=60, average=average)
    assert inferred.num_classes is None
    _fill(given, given_labels, scores, weights)
    _fill(inferred, given_labels, scores, weights)
    assert inferred.num_classes == 4
    assert float(inferred.result()) == pytest.approx(float(given.result()), abs=1e-12)
    np.testing.assert_array_equal(inferred.counts()[0], given.counts()[0])
    if average == "macro":
        keras = tf.keras.metrics.AUC(num_thresholds=60, multi_label=True)  # num_labels inferred
        _fill(keras, np.eye(4, dtype=np.float32)[labels], scores, weights)
        assert float(inferred.result()) == pytest.approx(float(keras.result()), abs=1e-6)


def test_with_noise_the_release_and_statement_are_those_of_num_classes_given():
    labels, scores, _ = _data(classes=3)
    given = DPMultiClassAUC(num_classes=3, epsilon=0.8, num_thresholds=30, seed=4)
    inferred = DPMultiClassAUC(epsilon=0.8, num_thresholds=30, seed=4)
    early = inferred.privacy_statement()  # before the first update: C not known yet
    stated = given.privacy_statement()
    assert (early.epsilon, early.delta, early.sensitivity) == (
        stated.epsilon,
        stated.delta,
        stated.sensitivity,
    )
    assert "L1 = 4" in early.sensitivity and "C = not known" in early.noise
    assert "C = 2" not in early.noise
    assert composed_epsilon(inferred.dp_event()).best == pytest.approx(0.8)
    with pytest.raises(ValueError, match="only after its first update_state"):
        _ = inferred.one_vs_rest
    _fill(given, labels, scores)
    _fill(inferred, labels, scores)
    assert inferred.privacy_statement() == given.privacy_statement()
    assert inferred.one_vs_rest.num_classes == 3
    assert float(inferred.result()) == float(given.result())  # same seed, same counts
    assert inferred.releases_drawn == 1


def test_another_width_later_and_one_column_are_refused():
    labels, scores, _ = _data(classes=3)
    metric = DPMultiClassAUC(epsilon=1.0, seed=0)
    metric.update_state(labels[:10], scores[:10])
    with pytest.raises(ValueError, match=r"shape \[N, 3\] \(the same C in every batch\)"):
        metric.update_state([0, 1], [[0.25] * 4, [0.25] * 4])
    with pytest.raises(ValueError, match="use DPAUC"):
        DPMultiClassAUC(num_classes=1)
    with pytest.raises(ValueError, match="use DPAUC"):
        DPMultiClassAUC(epsilon=None).update_state([0, 1], [[0.3], [0.6]])
    with pytest.raises(ValueError, match=r"must have shape \[N, C\] with C known"):
        DPMultiClassAUC(epsilon=None).update_state([0, 1], [0.3, 0.6])
    graph_metric = DPMultiClassAUC(epsilon=None)

    @tf.function
    def step(y, p):
        graph_metric.update_state(y, p)

    step(tf.constant(labels[:10]), tf.constant(scores[:10]))
    with pytest.raises(ValueError, match=r"shape \[N, 3\]"):
        step(tf.constant([0, 1]), tf.constant([[0.5, 0.5], [0.5, 0.5]]))


def test_first_update_inside_tf_function_builds_the_state_outside_the_graph():
    labels, scores, weights = _data()
    eager = DPMultiClassAUC(num_classes=4, epsilon=None, num_thresholds=40)
    traced = DPMultiClassAUC(epsilon=None, num_thresholds=40)

    @tf.function
    def step(y, p, w):
        traced.update_state(y, p, w)

    _fill(eager, labels, scores, weights)
    _fill(traced, labels, scores, weights, batch=300, step=step)  # 3 calls; 1 trace
    assert float(traced.result()) == pytest.approx(float(eager.result()), abs=1e-12)
    traced.reset_state()
    assert traced.counts()[0].sum() == 0.0


def _model(classes=3):
    model = tf.keras.Sequential(
        [tf.keras.Input(shape=(5,)), tf.keras.layers.Dense(classes, activation="softmax")]
    )
    return model


def test_fit_with_validation_equals_num_classes_given_and_keras_per_epoch():
    labels, _, _ = _data(n=480, classes=3, seed=3)
    x = np.random.default_rng(2).normal(size=(480, 5)).astype(np.float32)
    x[:, 0] += labels
    one_hot = np.eye(3, dtype=np.float32)[labels]
    tf.keras.utils.set_random_seed(0)
    model = _model()
    model.compile(
        optimizer="adam",
        loss="categorical_crossentropy",
        metrics=[
            tf.keras.metrics.AUC(num_thresholds=30, multi_label=True, name="auc"),
            DPMultiClassAUC(num_classes=3, epsilon=None, num_thresholds=30, name="given"),
            DPMultiClassAUC(epsilon=None, num_thresholds=30, name="inferred"),
        ],
    )
    history = model.fit(
        x, one_hot, epochs=2, batch_size=64, verbose=0, validation_data=(x[:200], one_hot[:200])
    ).history
    for prefix in ("", "val_"):
        assert len(history[prefix + "inferred"]) == 2
        np.testing.assert_allclose(history[prefix + "inferred"], history[prefix + "auc"], atol=1e-6)
        np.testing.assert_allclose(
            history[prefix + "inferred"], history[prefix + "given"], atol=1e-9
        )


def test_fit_with_noise_charges_the_whole_release_before_the_first_update():
    labels, _, _ = _data(n=2000, classes=3, seed=5)
    x = np.random.default_rng(6).normal(size=(2000, 5)).astype(np.float32)
    x[:, 0] += labels
    model = _model()
    metric = DPMultiClassAUC(epsilon=2.0, num_thresholds=10, seed=0)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=[metric])
    ledger = PrivacyLedger(budget=20.0)  # the callback reads the statement at train begin
    history = model.fit(
        x,
        labels,
        epochs=2,
        batch_size=250,
        verbose=0,
        validation_data=(x[:1000], labels[:1000]),
        callbacks=[DPAUCBudgetCallback(ledger)],
    ).history
    assert metric.num_classes == 3
    assert all(
        0.0 <= v <= 1.0 for v in history["dp_multiclass_auc"] + history["val_dp_multiclass_auc"]
    )
    assert ledger.spent("train").basic == pytest.approx(4.0)  # 2 releases x 2.0
    assert ledger.spent("validation").basic == pytest.approx(4.0)


def test_config_round_trip_before_and_after_the_first_update():
    metric = DPMultiClassAUC(epsilon=2.0, num_thresholds=30, average="micro", seed=1)
    config = metric.get_config()
    assert config["num_classes"] is None
    lazy = DPMultiClassAUC.from_config(config)
    assert lazy.get_config() == config and lazy.num_classes is None
    labels, scores, _ = _data(classes=5)
    metric.update_state(labels, scores)
    after = metric.get_config()
    assert after["num_classes"] == 5 and {**after, "num_classes": None} == config
    rebuilt = DPMultiClassAUC.from_config(after)  # the state exists at construction
    assert rebuilt.get_config() == after and rebuilt.counts()[0].shape == (5, 31)


def test_a_saved_model_reloads_with_the_inferred_classes(tmp_path):
    labels, _, _ = _data(n=300, classes=3, seed=7)
    x = np.random.default_rng(8).normal(size=(300, 5)).astype(np.float32)
    x[:, 0] += labels
    model = _model()
    model.compile(
        optimizer="adam",
        loss="sparse_categorical_crossentropy",
        metrics=[DPMultiClassAUC(epsilon=None, num_thresholds=20, name="mc")],
    )
    model.fit(x, labels, epochs=1, verbose=0)
    before = model.evaluate(x, labels, verbose=0, return_dict=True)["mc"]
    model.save(tmp_path / "model.keras")
    loaded = tf.keras.models.load_model(tmp_path / "model.keras")
    after = loaded.evaluate(x, labels, verbose=0, return_dict=True)["mc"]
    assert after == pytest.approx(before, abs=1e-6)
