"""Checks of DPAUC on Keras 3's JAX backend, run in one process (KERAS_BACKEND=jax must be set
before Keras is imported): ``tests/keras/test_jax_backend.py`` runs this script and asserts on
the JSON it prints. Run by hand: ``KERAS_BACKEND=jax python tests/keras/jax_backend_checks.py``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import jax
import keras
import numpy as np
import tensorflow as tf

from dpauc_tf import DPAUC, DPAUCBudgetCallback, PrivacyLedger
from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.keras.callbacks import _dpauc_metrics
from dpauc_tf.mechanisms import private_auc

START = time.perf_counter()
OUT: dict = {"backend": keras.backend.backend(), "x64": bool(jax.config.read("jax_enable_x64"))}


def data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x[:, 0] + rng.normal(size=n) > 0.5).astype("float32")
    w = rng.uniform(size=n).astype("float32")
    return x, y, w


def keras_auc(y, p, w=None, **options):
    metric = keras.metrics.AUC(**options)
    metric.update_state(y, p, sample_weight=w)
    return float(metric.result())


def dpauc(y, p, w=None, **options):
    metric = DPAUC(epsilon=None, **options)
    metric.update_state(y, p, sample_weight=w)
    return float(metric.result())


def check_fit_and_evaluate(jit_compile: bool) -> dict:
    x, y, w = data(2000 if jit_compile else 512)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation="sigmoid")])
    noisy = DPAUC(epsilon=1.0, num_thresholds=100, seed=0, name="noisy")
    exact = DPAUC(epsilon=None, num_thresholds=100, name="exact")
    model.compile(
        "adam",
        "binary_crossentropy",
        metrics=[keras.metrics.AUC(num_thresholds=100, name="auc"), exact, noisy],
        jit_compile=jit_compile,
    )
    per_batch, epoch_values = [], []

    class Spy(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            row = {k: float(logs[k]) for k in ("noisy", "exact", "auc")}
            per_batch.append({"epoch": len(epoch_values), **row})

        def on_epoch_end(self, epoch, logs=None):
            epoch_values.append(float(logs["noisy"]))

    ledger = PrivacyLedger()  # no budget: the noise-free metric may publish
    history = model.fit(
        x,
        y,
        sample_weight=w,
        epochs=2 if jit_compile else 1,
        batch_size=256,
        verbose=0,
        validation_data=(x, y, w),
        callbacks=[Spy(), DPAUCBudgetCallback(ledger)],
    )
    released_after_fit = noisy.releases_drawn
    result = model.evaluate(x, y, sample_weight=w, verbose=0, return_dict=True)
    out = {
        "history": {k: [float(v) for v in vals] for k, vals in history.history.items()},
        "per_batch": per_batch,
        "epoch_values": epoch_values,
        "releases_after_fit": released_after_fit,
        "releases_after_evaluate": noisy.releases_drawn,
        "released_value": noisy.released_value,
        "ledger_entries": len(ledger.entries),
        "evaluate": {k: float(v) for k, v in result.items()},
    }
    if jit_compile:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.keras")
            model.save(path)
            reloaded = keras.models.load_model(path)
            result = reloaded.evaluate(x, y, sample_weight=w, verbose=0, return_dict=True)
            metric = next(m for m in _dpauc_metrics(reloaded) if m.name == "noisy")
            out["reload"] = {
                "evaluate": {k: float(v) for k, v in result.items()},
                "type": type(metric).__name__,
                "same_config": metric.get_config() == noisy.get_config(),
            }
    return out


def check_options() -> list:
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, (3000, 3)).astype("float32")
    p = (1 / (1 + np.exp(-(rng.normal(size=(3000, 3)) + 1.2 * y)))).astype("float32")
    w = rng.random(3000).astype("float32")
    logits = np.log(p) - np.log1p(-p)
    # one number of thresholds (57) where possible: JAX compiles each op once per shape
    cases = [
        ({"num_thresholds": 57, "curve": c, "summation_method": s}, p[:, 0])
        for c in ("ROC", "PR")
        for s in ("interpolation", "minoring", "majoring")
    ]
    cases.append(({"thresholds": [0.05, 0.5, 0.51, 0.9]}, p[:, 0]))
    cases.append(({"num_thresholds": 57, "from_logits": True}, logits[:, 0]))
    for label_weights in (None, [0.2, 0.0, 1.0]):
        options = {"multi_label": True, "num_labels": 3, "label_weights": label_weights}
        cases.append(({"num_thresholds": 57, **options}, p))
    cases = [(options, scores, w, None) for options, scores in cases]
    # issue 21: one weight per example and label; one value per example with unit dimensions
    multi = {"num_thresholds": 57, "multi_label": True, "num_labels": 3}
    per_label = rng.random((3000, 3)).astype("float32")
    cases.append((multi, p, per_label, None))
    cases.append((multi, p, per_label[:, :1], None))
    cases.append(({"num_thresholds": 57}, p[:, :1, None], w[:, None, None], y[:, :1, None]))
    rows = []
    for options, scores, weights, labels in cases:
        if labels is None:
            labels = y if options.get("multi_label") else y[:, 0]
        rows.append(
            {
                "options": repr(options),
                "keras": keras_auc(labels, scores, weights, **options),
                "dpauc": dpauc(labels, scores, weights, **options),
            }
        )
    return rows


def check_buckets_equal_tensorflow() -> list:
    """The keras.ops buckets equal TensorFlow's on scores at and next to every threshold."""
    rows = []
    grids = [
        ("tf", {"num_thresholds": 7}),
        ("reference", {"num_thresholds": 12, "threshold_grid": "reference"}),
        ("keras", {"thresholds": [0.05, 0.1, 0.3, 0.31]}),
    ]
    for name, options in grids:
        grid = Thresholds.make(
            options.get("num_thresholds", 200),
            options.get("threshold_grid", "tf"),
            options.get("thresholds"),
        )
        inner = np.clip(np.asarray(grid.values, np.float32), 0, 1)
        if name == "tf":
            inner = (np.arange(7, dtype=np.float32) / np.float32(6)).astype(np.float32)
        near = np.concatenate(
            [
                inner,
                np.nextafter(inner, np.float32(2)),
                np.nextafter(inner, np.float32(-1)),
                [0.0, 1.0],
                np.random.default_rng(2).random(500).astype(np.float32),
            ]
        )
        scores = np.clip(near, 0, 1).astype(np.float32)
        labels = (np.arange(scores.size) % 2).astype(np.float32)
        metric = DPAUC(epsilon=None, **options)
        metric.update_state(labels, scores)
        pos, neg = metric.counts()
        tf_pos, tf_neg = bucket_counts(labels, scores, grid)
        rows.append(
            {
                "grid": name,
                "equal": bool(
                    np.array_equal(pos, tf_pos.numpy()) and np.array_equal(neg, tf_neg.numpy())
                ),
            }
        )
    return rows


def check_wide_counts() -> dict:
    """Counts past 2^24 stay exact, eagerly and inside jax.jit (float32 halves)."""
    batch = 2**22
    ones, high = np.ones(batch, np.float32), np.full(batch, 0.9, np.float32)
    out = {}
    jitted = DPAUC(epsilon=None, num_thresholds=3)
    update = jax.jit(jitted.stateless_update_state)
    state = [v.value for v in jitted.variables]
    for _ in range(4):
        state = update(state, ones, high)
    # past 2^24 inside jit (float32 alone: 2^24 + 3 -> 2^24 + 4), then eagerly (2^24 + 7 -> + 8)
    state = update(state, np.ones(3, np.float32), np.full(3, 0.9, np.float32))
    state = update(state, np.zeros(7, np.float32), np.full(7, 0.1, np.float32))
    for variable, value in zip(jitted.variables, state, strict=True):
        variable.assign(value)
    jitted.update_state(np.ones(4, np.float32), np.full(4, 0.9, np.float32))
    pos, neg = jitted.counts()
    out["counts"] = [float(pos.sum()), float(neg.sum())]
    out["result"] = float(jitted.result())
    out["expected"] = [4 * batch + 7, 7]
    return out


def check_noise_and_seed() -> dict:
    _, y, _ = data(n=20000)
    scores = (1 / (1 + np.exp(-np.random.default_rng(5).normal(size=20000) - y))).astype("float32")
    values = []
    for _ in range(2):
        metric = DPAUC(epsilon=1.0, num_thresholds=100, seed=3)
        metric.update_state(y, scores)
        values.append(float(metric.result()))
    first_release = metric.released_value
    second = float(metric.result())
    # the same release from the library's mechanism on the same counts and seed
    pos, neg = metric.counts()
    generator = tf.random.Generator.from_seed(3, alg="philox")
    release = metric.mechanism.release(
        tf.constant(pos), tf.constant(neg), seed=generator.make_seeds(1)[:, 0]
    )
    library = float(metric.mechanism.estimate_auc(release))
    exact = dpauc(y, scores, num_thresholds=100)
    spread_metric = DPAUC(epsilon=1.0, num_thresholds=100, seed=11)
    spread_metric.update_state(y, scores)
    spread = [float(spread_metric.result()) for _ in range(60)]
    repeats = private_auc(
        metric.mechanism, tf.constant(pos), tf.constant(neg), seed=1, repeats=300
    ).aucs
    return {
        "values": values,
        "first_release": first_release,
        "library_std": float(np.std(repeats)),
        "second": second,
        "library": library,
        "exact": exact,
        "releases": metric.releases_drawn,
        "spread_distinct": len(set(np.round(spread, 9))),
        "spread_mean": float(np.mean(spread)),
        "spread_std": float(np.std(spread)),
    }


def check_bad_input() -> dict:
    out = {}
    for name, (y, p, w) in {
        "label": ([0.0, 2.0], [0.1, 0.2], None),
        "score": ([0.0, 1.0], [0.1, 1.5], None),
        "nan": ([0.0, 1.0], [0.1, float("nan")], None),
        "weight": ([0.0, 1.0], [0.1, 0.2], [1.0, 3.0]),
        "unit_weight": ([0.0, 1.0], [0.1, 0.2], [1.0, 3.0]),  # the default: weights of 1
        "one_hot": ([[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [0.4, 0.6]], None),
        "two_by_one": ([[[1.0], [0.0]]], [[[0.5], [0.5]]], None),
    }.items():
        # the range rule on histogram, which takes weights in [0, 1]; the rest on the default
        mechanism = "histogram" if name == "weight" else None
        metric = DPAUC(epsilon=1.0, num_thresholds=10, mechanism=mechanism)
        try:
            metric.update_state(np.asarray(y, "float32"), np.asarray(p, "float32"), w)
            out[name] = "no error"
        except ValueError as error:
            out[name] = str(error)
    metric = DPAUC(epsilon=1.0, num_thresholds=10, multi_label=True, num_labels=2)
    try:  # weights of neither one per example nor one per example and label
        metric.update_state(np.ones((2, 2), "float32"), np.ones((2, 2), "float32"), np.ones((2, 3)))
        out["label_weights"] = "no error"
    except ValueError as error:
        out["label_weights"] = str(error)
    metric = DPAUC(epsilon=None, num_thresholds=10)
    update = jax.jit(metric.stateless_update_state)
    state = update(
        [v.value for v in metric.variables],
        np.asarray([0.0, 1.0], "float32"),
        np.asarray([0.1, 1.5], "float32"),
    )
    for variable, value in zip(metric.variables, state, strict=True):
        variable.assign(value)
    out["jit_result"] = float(metric.result())
    return out


def check_refusal() -> dict:
    """A release refused by the budget callback reaches no one (``refusal_scenario.py``)."""
    import refusal_scenario  # next to this script

    out = {}
    for mode in ("jit", "run_eagerly"):
        with tempfile.TemporaryDirectory() as tmp:
            run = refusal_scenario.run(keras, mode, tmp)
        out[mode] = {
            "refused": run["refused"],
            "problems": refusal_scenario.problems(run),
            "csv_rows": len(run["csv"]),
        }
    return out


def main() -> None:
    checks = {
        "fit_jit": lambda: check_fit_and_evaluate(jit_compile=True),
        "fit_no_jit": lambda: check_fit_and_evaluate(jit_compile=False),
        "options": check_options,
        "buckets": check_buckets_equal_tensorflow,
        "wide": check_wide_counts,
        "noise": check_noise_and_seed,
        "bad": check_bad_input,
        "refusal": check_refusal,
    }
    for name, check in checks.items():
        began = time.perf_counter()
        try:
            OUT[name] = check()
            OUT[name + "_seconds"] = time.perf_counter() - began
        except Exception:  # reported, so that one failure does not hide the others
            OUT[name] = {"error": traceback.format_exc()[-3000:]}
    OUT["seconds"] = time.perf_counter() - START
    print(json.dumps(OUT))


if __name__ == "__main__":
    sys.exit(main())
