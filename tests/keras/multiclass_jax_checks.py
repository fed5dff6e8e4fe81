"""Checks of DPMultiClassAUC on Keras 3's JAX backend, in one process (KERAS_BACKEND=jax must
be set before Keras is imported): ``tests/keras/test_multiclass_jax.py`` runs this script and
asserts on the JSON it prints."""

from __future__ import annotations

import json
import os
import traceback

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np

from dpauc_tf.keras.multiclass import DPMultiClassAUC

OUT: dict = {"backend": keras.backend.backend()}


def data(n=1200, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = rng.integers(0, classes, n)
    x[:, 0] += y
    return x, y, np.eye(classes, dtype="float32")[y]


def check(name):
    def wrap(fn):
        try:
            OUT[name] = fn()
        except Exception as error:  # reported, asserted on by the test
            OUT[name] = {
                "error": f"{type(error).__name__}: {error}",
                "trace": traceback.format_exc()[-2000:],
            }
        return fn

    return wrap


@check("eager")
def _eager():
    rng = np.random.default_rng(1)
    scores = rng.dirichlet(np.ones(4), size=900).astype("float32")
    labels = rng.integers(0, 4, 900)
    one_hot = np.eye(4, dtype="float32")[labels]
    ref = keras.metrics.AUC(num_thresholds=50, multi_label=True, num_labels=4)
    ours = DPMultiClassAUC(num_classes=4, epsilon=None, num_thresholds=50)
    ids = DPMultiClassAUC(num_classes=4, epsilon=None, num_thresholds=50)
    for start in range(0, 900, 300):
        rows = slice(start, start + 300)
        ref.update_state(one_hot[rows], scores[rows])
        ours.update_state(one_hot[rows], scores[rows])
        ids.update_state(labels[rows], scores[rows])
    try:
        ours.update_state([0, 7], scores[:2])
        refused = None
    except ValueError as error:
        refused = str(error)
    return {
        "keras": float(ref.result()),
        "one_hot": float(ours.result()),
        "ids": float(ids.result()),
        "refused": refused,
    }


def fit(jit: bool):
    x, _, one_hot = data()
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3, activation="softmax")])
    model.compile(
        optimizer="adam",
        loss="categorical_crossentropy",
        jit_compile=jit,
        metrics=[
            keras.metrics.AUC(num_thresholds=30, multi_label=True, num_labels=3, name="auc"),
            DPMultiClassAUC(num_classes=3, epsilon=None, num_thresholds=30, name="mc"),
            DPMultiClassAUC(num_classes=3, epsilon=1.0, num_thresholds=30, seed=0, name="noisy"),
        ],
    )
    history = model.fit(
        x, one_hot, epochs=2, batch_size=100, verbose=0, validation_data=(x, one_hot)
    )
    return {key: [float(v) for v in values] for key, values in history.history.items()}


@check("fit_jit")
def _fit_jit():
    return fit(True)


@check("fit_no_jit")
def _fit_no_jit():
    return fit(False)


@check("inferred_eager")
def _inferred_eager():
    """num_classes=None: C from the first batch, the same values and release as given."""
    rng = np.random.default_rng(2)
    scores = rng.dirichlet(np.ones(4), size=600).astype("float32")
    labels = rng.integers(0, 4, 600)
    given = DPMultiClassAUC(num_classes=4, epsilon=None, num_thresholds=40)
    inferred = DPMultiClassAUC(epsilon=None, num_thresholds=40)
    noisy_given = DPMultiClassAUC(num_classes=4, epsilon=1.0, num_thresholds=40, seed=3)
    noisy = DPMultiClassAUC(epsilon=1.0, num_thresholds=40, seed=3)
    early = noisy.privacy_statement()
    for metric in (given, inferred, noisy_given, noisy):
        for start in range(0, 600, 200):
            metric.update_state(labels[start : start + 200], scores[start : start + 200])
    try:
        inferred.update_state([0, 1], scores[:2, :3])
        refused = None
    except ValueError as error:
        refused = str(error)
    return {
        "given": float(given.result()),
        "inferred": float(inferred.result()),
        "noisy_given": float(noisy_given.result()),
        "noisy": float(noisy.result()),
        "num_classes": noisy.num_classes,
        "early_epsilon": early.epsilon,
        "early_noise": early.noise,
        "refused": refused,
        "config_classes": inferred.get_config()["num_classes"],
    }


def fit_inferred(jit: bool):
    x, _, one_hot = data()
    model = keras.Sequential([keras.Input(shape=(4,)), keras.layers.Dense(3, activation="softmax")])
    model.compile(
        optimizer="adam",
        loss="categorical_crossentropy",
        jit_compile=jit,
        metrics=[
            keras.metrics.AUC(num_thresholds=30, multi_label=True, name="auc"),
            DPMultiClassAUC(epsilon=None, num_thresholds=30, name="mc"),
            DPMultiClassAUC(epsilon=1.0, num_thresholds=30, seed=0, name="noisy"),
        ],
    )
    history = model.fit(
        x, one_hot, epochs=2, batch_size=100, verbose=0, validation_data=(x, one_hot)
    )
    return {key: [float(v) for v in values] for key, values in history.history.items()}


@check("fit_inferred_jit")
def _fit_inferred_jit():
    return fit_inferred(True)


@check("fit_inferred_no_jit")
def _fit_inferred_no_jit():
    return fit_inferred(False)


print(json.dumps(OUT))
