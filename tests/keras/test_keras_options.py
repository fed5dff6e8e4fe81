"""DPAUC speaks Keras: AUC's options equal tf.keras.metrics.AUC with noise off, and the
values Keras shows per batch are not releases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import DPAUC


def _data(n=3000, labels=1, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, (n, labels)).astype(np.float32)
    p = 1 / (1 + np.exp(-(rng.normal(size=(n, labels)) + 1.2 * y)))
    w = rng.random(n).astype(np.float32)
    return y, p.astype(np.float32), w


def _tf_auc(y, p, w=None, **kwargs):
    metric = tf.keras.metrics.AUC(**kwargs)
    metric.update_state(y, p, sample_weight=w)
    return float(metric.result())


@pytest.mark.parametrize("curve", ["ROC", "PR"])
@pytest.mark.parametrize("summation_method", ["interpolation", "minoring", "majoring"])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_curve_and_summation_equals_tf_with_noise_off(curve, summation_method, weighted):
    y, p, w = _data()
    w = w if weighted else None
    options = {"num_thresholds": 57, "curve": curve, "summation_method": summation_method}
    ours = DPAUC(epsilon=None, **options)
    ours.update_state(y[:, 0], p[:, 0], sample_weight=w)
    assert float(ours.result()) == pytest.approx(_tf_auc(y[:, 0], p[:, 0], w, **options), abs=1e-6)


@pytest.mark.parametrize("label_weights", [None, [0.2, 0.0, 1.0]])
def test_multi_label_equals_tf_with_noise_off(label_weights):
    y, p, w = _data(labels=3)
    options = {"num_thresholds": 33, "multi_label": True, "num_labels": 3}
    ours = DPAUC(epsilon=None, label_weights=label_weights, **options)
    ours.update_state(y, p, sample_weight=w)
    expected = _tf_auc(y, p, w, label_weights=label_weights, **options)
    assert float(ours.result()) == pytest.approx(expected, abs=1e-6)


def test_multi_label_costs_one_release_per_label():
    m = DPAUC(epsilon=0.5, multi_label=True, num_labels=4, seed=0)
    assert m.privacy_statement().epsilon == pytest.approx(2.0)
    y, p, _ = _data(labels=4)
    m.update_state(y, p)
    assert 0.5 < float(m.result()) < 1.0
    assert m.dp_event().count == 4


def test_shapes_and_options_are_checked():
    with pytest.raises(ValueError, match="num_labels"):
        DPAUC(multi_label=True)
    with pytest.raises(ValueError, match="label_weights"):
        DPAUC(multi_label=True, num_labels=2, label_weights=[1.0])
    with pytest.raises(ValueError, match="curve"):
        DPAUC(curve="PRGAIN")
    with pytest.raises(ValueError, match="summation_method"):
        DPAUC(summation_method="riemann")
    m = DPAUC(multi_label=True, num_labels=2)
    with pytest.raises(ValueError, match=r"\[N, 2\]"):
        m.update_state(np.zeros((4, 3)), np.zeros((4, 3)))
    one_hot = DPAUC()
    with pytest.raises(ValueError, match="more than one value per example"):
        one_hot.update_state(np.eye(2)[[0, 1, 1]], np.full((3, 2), 0.5))


def test_attributes_like_keras_auc():
    m = DPAUC(num_thresholds=11, epsilon=None)
    keras_auc = tf.keras.metrics.AUC(num_thresholds=11)
    assert m.num_thresholds == 11 and len(m.thresholds) == 11
    assert m.thresholds[1:-1] == pytest.approx(list(keras_auc.thresholds)[1:-1])
    assert DPAUC().num_thresholds == tf.keras.metrics.AUC().num_thresholds


def test_progress_bar_values_are_not_releases():
    """Per-batch values repeat the last release; every release is an eager, counted one."""
    x = np.random.default_rng(0).normal(size=(512, 4)).astype("float32")
    y = (x[:, :1] + 0.3 * np.random.default_rng(1).normal(size=(512, 1)) > 0).astype("float32")
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1, "sigmoid")])
    metric = DPAUC(epsilon=1.0, num_thresholds=20, seed=0)
    model.compile("sgd", "binary_crossentropy", metrics=[metric])
    per_batch = []

    class Spy(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            per_batch.append((len(history_values), float(logs[metric.name])))

    history_values = []

    class Epochs(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            history_values.append(float(logs[metric.name]))

    history = model.fit(
        x,
        y,
        batch_size=64,
        epochs=3,
        verbose=0,
        validation_data=(x, y),
        callbacks=[Spy(), Epochs()],
    )
    # one release per epoch-end training value and one per validation value
    assert metric.releases_drawn == 6
    assert history.history[metric.name] == pytest.approx(history_values)
    for epoch, value in per_batch:
        if epoch == 0:
            assert math.isnan(value)  # nothing released yet
        else:
            # the last release before this epoch's batches: the previous validation value
            assert value == pytest.approx(history.history["val_" + metric.name][epoch - 1])
    assert len({v for e, v in per_batch if e == 1}) == 1  # no churn within an epoch


def test_noise_off_values_are_live_in_graphs():
    m = DPAUC(epsilon=None, num_thresholds=20)
    y, p, _ = _data()
    m.update_state(y[:, 0], p[:, 0])

    @tf.function
    def read():
        return m.result()

    assert float(read()) == pytest.approx(_tf_auc(y[:, 0], p[:, 0], num_thresholds=20), abs=1e-6)


def test_unsupported_keras_backends_are_refused_at_construction(monkeypatch):
    """PyTorch (and Keras' numpy/openvino backends) are refused with one line naming the
    supported ones; JAX is supported (tests/keras/test_jax_backend.py)."""
    from dpauc_tf.keras import metric as metric_module

    if metric_module.KERAS_MAJOR < 3:
        pytest.skip("Keras 2 has one backend")
    import keras

    for backend in ("torch", "numpy", "openvino"):
        monkeypatch.setattr(keras.backend, "backend", lambda backend=backend: backend)
        with pytest.raises(ValueError) as refused:
            DPAUC(epsilon=1.0)
        message = str(refused.value)
        assert f"KERAS_BACKEND='{backend}'" in message and "\n" not in message
        assert "not support" in message and "tensorflow and jax" in message
