"""``fit(..., class_weight=...)`` with DPAUC in ``weighted_metrics`` (issue 30): Keras passes
``class_weight[label]`` as the sample weights of ``weighted_metrics``, so a weight moves with
the label. ``rank-sum`` (the default) and the other mechanisms that release label-free totals
refuse them in every mode (eagerly, ``tf.function``, XLA), in Keras 2 and 3; ``metrics=``
(no weights) and ``mechanism="histogram"`` (weights within its L1) are what to use instead,
and their releases hold nothing exact that differs between neighbouring label sets."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import DPAUC, DPMultiClassAUC
from dpauc_tf.keras.checks import KERAS_MAJOR

CLASS_WEIGHT = {0: 1.0, 1: 0.5}
MODES = ["eager", "function", "xla"]


def _data(flip: bool = False, n: int = 64):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype("float32")
    y = (x[:, 0] + rng.normal(size=n) > 0).astype("float32")
    if flip:  # the neighbouring label set: one example's label differs
        y[0] = 1.0 - y[0]
    return x, y


def _model(mode: str, **compile_options):
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(1, activation="sigmoid")]
    )
    model.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=0.0),
        loss="binary_crossentropy",
        run_eagerly=mode == "eager",
        jit_compile=mode == "xla",
        **compile_options,
    )
    return model


def _fit(model, flip=False, **options):
    x, y = _data(flip)
    return model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False, **options)


@pytest.mark.parametrize("mode", MODES)
def test_default_dpauc_refuses_class_weight_in_weighted_metrics(mode):
    """Before: rank-sum released total W and sensitivity D that differ between neighbours
    (2 (n - W) is the number of positives). Now: a refusal naming class_weight (eagerly and
    in tf.function at the batch; under XLA, which drops assertions, the counts are NaN and
    the epoch-end release refuses them), never a release."""
    metric = DPAUC(epsilon=1.0, seed=1)
    model = _model(mode, weighted_metrics=[metric])
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="class_weight"):
        _fit(model, class_weight=CLASS_WEIGHT)
    assert metric.releases_drawn == 0
    assert getattr(metric, "_last_release_counts", None) is None


@pytest.mark.parametrize("mode", MODES)
def test_class_weight_with_metrics_or_histogram_releases_nothing_exact_of_the_labels(mode):
    """``metrics=`` gets no weights (checked: Keras 2 and 3 pass None); ``histogram`` in
    ``weighted_metrics`` takes them within L1 = 2. Across neighbouring label sets the
    rank-sum release's total and sensitivity are identical, and the histogram's exact counts
    move by at most 2."""
    released, counts = [], []
    for flip in (False, True):
        plain = DPAUC(epsilon=1.0, seed=1, name="plain")
        weighted = DPAUC(epsilon=1.0, seed=1, mechanism="histogram", name="hist")
        model = _model(mode, metrics=[plain], weighted_metrics=[weighted])
        _fit(model, flip, class_weight=CLASS_WEIGHT)
        release = plain._last_release_counts
        released.append({key: float(np.asarray(release[key])) for key in ("total", "sensitivity")})
        counts.append(np.stack(weighted.counts()))
    assert released[0] == released[1]
    assert released[0]["total"] == 64.0  # every example counted once, with weight 1
    moved = np.abs(counts[0] - counts[1]).sum()
    assert 0 < moved <= 2.0
    assert counts[0].sum() != 64.0  # histogram did see the class weights


@pytest.mark.parametrize("mode", MODES)
def test_multiclass_refuses_class_weight(mode):
    """One-vs-rest: a class change would move a class weight in every class (L1 grows with
    C beyond the stated 4): refused in one line naming class_weight (under XLA, which drops
    assertions, the counts and so every released value are NaN)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(48, 3)).astype("float32")
    y = rng.integers(0, 3, 48).astype("int32")
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [tf.keras.Input(shape=(3,)), tf.keras.layers.Dense(3, activation="softmax")]
    )
    metric = DPMultiClassAUC(num_classes=3, epsilon=1.0, seed=1)
    model.compile(
        optimizer=tf.keras.optimizers.SGD(learning_rate=0.0),
        loss="sparse_categorical_crossentropy",
        weighted_metrics=[metric],
        run_eagerly=mode == "eager",
        jit_compile=mode == "xla",
    )
    weights = {0: 1.0, 1: 0.5, 2: 1.0}
    if mode == "xla":  # assertions dropped: the counts are NaN, and so is every value
        history = model.fit(x, y, batch_size=16, epochs=1, verbose=0, class_weight=weights)
        assert np.isnan(history.history[metric.name]).all()
        assert np.isnan(metric.counts()[0]).all()
        return
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match="class_weight"):
        model.fit(x, y, batch_size=16, epochs=1, verbose=0, class_weight=weights)
    assert metric.releases_drawn == 0


def test_keras_major_is_known():
    assert KERAS_MAJOR in (2, 3)


JAX_SCRIPT = """
import os, sys, json
os.environ["KERAS_BACKEND"] = "jax"
import keras, numpy as np
from dpauc_tf import DPAUC
out = {}
for mode in ("jit", "eager"):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("float32")
    y = (x[:, 0] > 0).astype("float32")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")])
    metric = DPAUC(epsilon=1.0, seed=1)
    model.compile(keras.optimizers.SGD(0.0), "binary_crossentropy", weighted_metrics=[metric],
                  jit_compile=mode == "jit", run_eagerly=mode == "eager")
    try:
        model.fit(x, y, batch_size=16, epochs=1, verbose=0, class_weight={0: 1.0, 1: 0.5})
        out[mode] = "no error"
    except ValueError as error:
        out[mode] = str(error)
    out[mode + "_releases"] = metric.releases_drawn
print(json.dumps(out))
"""


def test_jax_backend_refuses_class_weight():
    """Keras 3's JAX backend: eagerly the batch's one-line refusal; jitted (no assertions)
    the counts are NaN and the epoch-end release refuses them, naming class_weight."""
    import importlib.util
    import json
    import os
    import subprocess
    import sys

    if KERAS_MAJOR < 3 or importlib.util.find_spec("jax") is None:
        pytest.skip("the JAX backend needs Keras 3 and jax")
    done = subprocess.run(
        [sys.executable, "-c", JAX_SCRIPT],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for mode in ("jit", "eager"):
        assert "class_weight" in out[mode] and "\n" not in out[mode], out
        assert out[mode + "_releases"] == 0
    assert "NaN" in out["jit"]


@pytest.mark.parametrize("weight", [2.0, 0.5, 0.0])
def test_multiclass_weight_refusal_names_class_weight(weight):
    """``DPMultiClassAUC`` has no ``max_weight``; a weight of 2 was told to use
    ``DPAUC(max_weight=...)`` (issue 35). The unit-weight rule comes first and names
    ``class_weight``, eagerly and inside ``tf.function``."""
    metric = DPMultiClassAUC(num_classes=3, epsilon=1.0, seed=0)
    labels = np.array([0, 1, 2, 1])
    scores = np.full((4, 3), 1 / 3, np.float32)
    weights = np.array([1.0, weight, 1.0, 1.0], np.float32)
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)) as refused:
        metric.update_state(labels, scores, sample_weight=weights)
    assert "class_weight" in str(refused.value) and "DPAUC(max_weight" not in str(refused.value)

    @tf.function
    def step(w):
        metric.update_state(labels, scores, sample_weight=w)

    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)) as refused:
        step(tf.constant(weights))
    assert "class_weight" in str(refused.value) and "DPAUC(max_weight" not in str(refused.value)
