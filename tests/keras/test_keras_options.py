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
        DPAUC(curve="ROCK")
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
    """Per-batch values are NaN (nothing released yet for these counts); every release is
    an eager, counted one."""
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
    # Nothing of another data set or epoch per batch (issue 23: from the 2nd epoch the
    # training column showed the previous epoch's validation release): NaN, not released yet.
    assert len(per_batch) == 3 * 8 and all(math.isnan(value) for _, value in per_batch)


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


def _in_mode(mode, fn):
    if mode == "eager":
        return fn

    @tf.function(jit_compile=mode == "jit")
    def step(*args):
        fn(*args)

    return step


@pytest.mark.parametrize("mode", ["eager", "graph", "jit"])
@pytest.mark.parametrize("label_weights", [None, [0.2, 0.0, 1.0]])
def test_multi_label_takes_one_weight_per_example_and_label(mode, label_weights):
    """``(N, num_labels)`` sample weights, as tf.keras.metrics.AUC takes them (issue 21: a raw
    broadcast error); ``(N,)`` and ``(N, 1)`` weights stay one weight per example."""
    y, p, _ = _data(labels=3)
    w = np.random.default_rng(5).random(y.shape).astype(np.float32)
    options = {"num_thresholds": 33, "multi_label": True, "num_labels": 3}
    for weights in (w, w[:, :1], w[:, 0]):
        ours = DPAUC(epsilon=None, label_weights=label_weights, **options)
        _in_mode(mode, ours.update_state)(y, p, weights)
        expected = _tf_auc(y, p, weights, label_weights=label_weights, **options)
        assert float(ours.result()) == pytest.approx(expected, abs=1e-6)


def test_multi_label_weights_keep_the_bound_the_guarantee_covers():
    y, p, _ = _data(n=200, labels=3)
    w = np.full(y.shape, 0.5, np.float32)
    noisy = DPAUC(
        epsilon=1.0, num_thresholds=10, multi_label=True, num_labels=3, seed=0,
        mechanism="histogram",  # the default (rank-sum) takes weights of 1 only
    )  # fmt: skip
    noisy.update_state(y, p, w)  # fractions in [0, 1]: fine for histogram's Laplace noise
    assert float(tf.reduce_sum(noisy.positives)) == pytest.approx(0.5 * y.sum())
    assert 0.0 <= float(noisy.result()) <= 1.0
    refused = (ValueError, tf.errors.InvalidArgumentError)  # the TensorFlow path asserts in ops
    with pytest.raises(refused, match=r"in \[0, 1\]"):
        noisy.update_state(y, p, 2 * w + 0.5)
    secure = DPAUC(epsilon=1.0, multi_label=True, num_labels=3, mechanism="secure-histogram")
    with pytest.raises(refused, match="0 or 1"):
        secure.update_state(y, p, w)
    secure.update_state(y, p, np.ones_like(w))
    with pytest.raises(ValueError, match=r"\[N\], \[N, 1\] or \[N, 3\]") as refused:
        secure.update_state(y, p, np.ones((200, 2), np.float32))
    assert "\n" not in str(refused.value)
    with pytest.raises(ValueError, match=r"\[N, 3\] for 200 examples"):
        secure.update_state(y, p, np.ones(3, np.float32))


@pytest.mark.parametrize("mode", ["eager", "graph", "jit"])
def test_one_value_per_example_with_unit_dimensions_is_taken(mode):
    """``(N, 1, 1)`` predictions (a model whose output keeps unit dimensions) are one value
    per example, as in tf.keras.metrics.AUC (issue 21: refused as several values)."""
    y, p, w = _data()
    expected = _tf_auc(y[:, 0], p[:, 0], w, num_thresholds=57)
    for shape in ((-1, 1, 1), (-1, 1, 1, 1)):
        exact = DPAUC(epsilon=None, num_thresholds=57)
        _in_mode(mode, exact.update_state)(y.reshape(shape), p.reshape(shape), w.reshape(shape))
        assert float(exact.result()) == pytest.approx(expected, abs=1e-6)
        mixed = DPAUC(epsilon=None, num_thresholds=57)
        _in_mode(mode, mixed.update_state)(y[:, 0], p.reshape(shape), w)
        assert float(mixed.result()) == pytest.approx(expected, abs=1e-6)
    noisy = DPAUC(epsilon=1.0, num_thresholds=57, seed=0)
    _in_mode(mode, noisy.update_state)(y.reshape(-1, 1, 1), p.reshape(-1, 1, 1))
    assert 0.0 <= float(noisy.result()) <= 1.0
    assert float(tf.reduce_sum(noisy.positives)) == float(y.sum())  # each example once


@pytest.mark.parametrize("shape", [(3, 2), (3, 2, 1), (3, 1, 2)])
def test_several_values_per_example_stay_refused_with_noise_on(shape):
    noisy = DPAUC(epsilon=1.0)
    labels = np.zeros(shape, np.float32)
    with pytest.raises(ValueError, match="more than one value per example"):
        noisy.update_state(labels, np.full(shape, 0.5, np.float32))


def test_unit_dimension_outputs_fit_and_evaluate():
    tf.keras.utils.set_random_seed(0)
    y, p, _ = _data(n=512)
    x = np.stack([p[:, 0], y[:, 0]], axis=1)
    model = tf.keras.Sequential(
        [
            tf.keras.Input((2,)),
            tf.keras.layers.Dense(1, activation="sigmoid"),
            tf.keras.layers.Reshape((1, 1)),
        ]
    )
    auc = tf.keras.metrics.AUC(num_thresholds=40, name="auc")
    model.compile(
        "adam",
        "binary_crossentropy",
        metrics=[auc, DPAUC(epsilon=None, num_thresholds=40, name="exact")],
    )
    model.fit(x, y.reshape(-1, 1, 1), epochs=1, batch_size=128, verbose=0)
    result = model.evaluate(x, y.reshape(-1, 1, 1), verbose=0, return_dict=True)
    assert result["exact"] == pytest.approx(result["auc"], abs=1e-6)
