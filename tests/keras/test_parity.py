"""Noise off is a drop-in: ``DPAUC(epsilon=None)`` takes what ``tf.keras.metrics.AUC``
takes, in the installed Keras (2 or 3, TensorFlow backend), and returns its values to 1e-6
(``parity_cases.py`` lists the cases; ``test_parity_jax.py`` runs them on JAX)."""

from __future__ import annotations

import pytest
import tensorflow as tf

from dpauc_tf import DPAUC
from dpauc_tf.keras.metric import KERAS_MAJOR
from tests.keras import parity_cases

PRGAIN = hasattr(getattr(tf.keras.metrics.AUC(), "curve", None), "name") and "PRGAIN" in str(
    list(type(tf.keras.metrics.AUC().curve))
)
CASES = parity_cases.cases(PRGAIN)


@pytest.fixture(scope="module")
def values() -> dict:
    return parity_cases.run(tf.keras.metrics.AUC, DPAUC, PRGAIN)


@pytest.mark.parametrize("name", sorted(CASES))
def test_equals_keras_auc_with_noise_off(values, name):
    result = values[name]
    assert not isinstance(result, dict), result["error"]
    theirs, ours = result
    assert ours == pytest.approx(theirs, abs=1e-6, nan_ok=True)


def test_prgain_is_tested_where_keras_has_it():
    if KERAS_MAJOR >= 3:
        assert PRGAIN and "PRGAIN_interpolation" in CASES


@pytest.mark.parametrize("argument", ["curve", "summation_method", "num_thresholds"])
def test_invalid_arguments_raise_value_error_naming_them(argument):
    kind, message = parity_cases.errors(DPAUC)[argument]
    assert kind == "ValueError" and f"`{argument}`" in message
    with pytest.raises(ValueError):  # as Keras does
        tf.keras.metrics.AUC(
            **{argument: {"curve": "ROCK", "summation_method": "x"}.get(argument, 1)}
        )


def test_noise_off_in_fit_equals_keras_auc_per_epoch():
    """Weighted fit with validation: every History value equals Keras' AUC's."""
    import numpy as np

    rng = np.random.default_rng(3)
    x = rng.normal(size=(256, 3)).astype("float32")
    y = (x[:, :1] + rng.normal(size=(256, 1)) > 0).astype("float32")
    w = rng.choice(np.array([0.0, 1.5, 37.0], "float32"), 256)
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1, "sigmoid")])
    model.compile(
        "sgd",
        "binary_crossentropy",
        weighted_metrics=[tf.keras.metrics.AUC(name="auc"), DPAUC(epsilon=None, name="dp")],
    )
    history = model.fit(
        x, y, sample_weight=w, batch_size=64, epochs=2, verbose=0, validation_data=(x, y, w)
    ).history
    assert history["dp"] == pytest.approx(history["auc"], abs=1e-6)
    assert history["val_dp"] == pytest.approx(history["val_auc"], abs=1e-6)
