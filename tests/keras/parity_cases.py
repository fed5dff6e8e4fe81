"""The parity cases: Keras' documented AUC options and inputs, for ``DPAUC(epsilon=None)``
against ``tf.keras.metrics.AUC`` (``keras.metrics.AUC`` in Keras 3).

Imported by ``test_parity.py`` (in the test's own Keras: Keras 2 or Keras 3 on TensorFlow)
and run as a script by ``test_parity_jax.py`` with ``KERAS_BACKEND=jax`` (prints JSON).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

CURVES = ("ROC", "PR", "PRGAIN")
SUMMATIONS = ("interpolation", "minoring", "majoring")


def _scores(rng, n, labels, shape=()):
    y = (rng.random((n, *shape)) < 0.35).astype("float32")
    p = 1 / (1 + np.exp(-(rng.normal(size=(n, *shape)) + 1.3 * y)))
    return y, p.astype("float32")


def cases(prgain: bool) -> dict:
    """name -> (AUC options, [(y, p, sample_weight), ...] batches, reset after batch k)."""
    rng = np.random.default_rng(7)
    n = 400
    y, p = _scores(rng, n, 1)
    out = {}

    def add(name, options, batches, reset_after=None):
        out[name] = (options, batches, reset_after)

    add("default", {}, [(y, p, None)])
    add(
        "three_batches",
        {"num_thresholds": 50},
        [(y[:100], p[:100], None), (y[100:], p[100:], None)],
    )
    ties = rng.choice(np.array([0.0, 0.25, 0.5, 0.5, 1.0], "float32"), n)
    add("ties_on_thresholds", {"num_thresholds": 5}, [(y, ties, None)])
    add("point_mass", {"num_thresholds": 11}, [(y, np.full(n, 0.3, "float32"), None)])
    add("only_positives", {}, [(np.ones(n, "float32"), p, None)])
    add("only_negatives", {"curve": "PR"}, [(np.zeros(n, "float32"), p, None)])
    weights = rng.choice(np.array([1.5, 2.0, 37.0, 0.0, 1.0], "float32"), n)
    add("weights_1.5_2_37_0", {}, [(y, p, weights)])
    add("weights_column", {}, [(y[:, None], p[:, None], weights[:, None])])
    add("zero_weights", {}, [(y, p, np.zeros(n, "float32"))])
    add("large_weights", {"num_thresholds": 31}, [(y, p, weights * 1e4)])
    add("scalar_weight", {}, [(y, p, np.float32(2.5))])
    add("bool_labels", {}, [(y.astype(bool), p, None)])
    add("int_labels", {}, [(y.astype("int64"), p, None)])
    for curve in CURVES if prgain else CURVES[:2]:
        for summation in SUMMATIONS:
            add(
                f"{curve}_{summation}",
                {"curve": curve, "summation_method": summation, "num_thresholds": 37},
                [(y, p, weights)],
            )
    logits = np.log(p / (1 - p)).astype("float32")
    add("from_logits", {"from_logits": True}, [(y, logits, weights)])
    add("explicit_thresholds", {"thresholds": [0.1, 0.3, 0.35, 0.9]}, [(y, p, weights)])
    add("even_thresholds", {"thresholds": [0.25, 0.5, 0.75]}, [(y, p, None)])
    add("few_thresholds", {"num_thresholds": 3}, [(y, p, None)])
    add("many_thresholds", {"num_thresholds": 1000}, [(y, p, weights)])
    y3, p3 = _scores(rng, n, 3, (3,))
    w3 = rng.random((n, 3)).astype("float32") * 3
    add("multi_label_num_labels", {"multi_label": True, "num_labels": 3}, [(y3, p3, None)])
    add("multi_label_inferred", {"multi_label": True}, [(y3, p3, weights)])
    add(
        "multi_label_label_weights",
        {"multi_label": True, "label_weights": [0.2, 0.0, 1.0]},
        [(y3, p3, w3)],
    )
    add("multi_label_pr", {"multi_label": True, "curve": "PR"}, [(y3, p3, weights[:, None])])
    add("extra_dims_flattened", {}, [(y3, p3, None)])
    add("extra_dims_row_weights", {}, [(y3, p3, weights)])
    add("extra_dims_weights", {"curve": "PR"}, [(y3, p3, w3)])
    add("extra_dims_label_weights", {"label_weights": [0.5, 2.0, 0.0]}, [(y3, p3, weights)])
    y4, p4 = _scores(rng, n, 4, (2, 2))
    add("extra_dims_rank3", {}, [(y4, p4, None)])
    add("unit_dims", {}, [(y[:, None, None], p[:, None, None], None)])
    add("labels_column_preds_flat", {}, [(y[:, None], p, None)])
    add("reset_state", {"num_thresholds": 20}, [(y3[:, 0], p, None), (y, p3[:, 1], weights)], 0)
    return out


def run(keras_auc, dpauc, prgain: bool) -> dict:
    """name -> [Keras' value, DPAUC's value] (or an ``error`` string)."""
    results = {}
    for name, (options, batches, reset_after) in cases(prgain).items():
        try:
            theirs, ours = keras_auc(**options), dpauc(epsilon=None, **options)
            for index, (y, p, w) in enumerate(batches):
                for metric in (theirs, ours):
                    metric.update_state(y, p, sample_weight=w)
                    if index == reset_after:
                        metric.reset_state()
            results[name] = [float(theirs.result()), float(ours.result())]
        except Exception as error:  # reported, so one failure does not hide the others
            results[name] = {"error": f"{type(error).__name__}: {error}"[:500]}
    return results


def errors(dpauc) -> dict:
    """What an invalid argument raises: name -> [type name, message]."""
    out = {}
    for argument, value in (("curve", "ROCK"), ("summation_method", "riemann")):
        out[argument] = _raised(lambda a=argument, v=value: dpauc(epsilon=None, **{a: v}))
    out["num_thresholds"] = _raised(lambda: dpauc(epsilon=None, num_thresholds=1))
    return out


def fit_checks(keras, dpauc) -> dict:
    """In ``fit``: multi-label with the number of labels inferred (noise off) equals Keras'
    AUC per epoch; with noise, per-batch values are NaN and the epoch-end training and
    validation values are their own releases (``[examples counted, value]`` per release)."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(256, 3)).astype("float32")
    y = (x + rng.normal(size=(256, 3)) > 0).astype("float32")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(3, activation="sigmoid")])
    model.compile(
        "sgd",
        "binary_crossentropy",
        metrics=[
            keras.metrics.AUC(multi_label=True, name="auc"),
            dpauc(epsilon=None, multi_label=True, name="dp"),
        ],
    )
    inferred = model.fit(x, y, batch_size=64, epochs=2, verbose=0, validation_data=(x, y)).history
    noisy = dpauc(epsilon=2.0, num_thresholds=20, seed=0)
    drawn, per_batch = [], []
    original = type(noisy).release

    def spying_release(self):
        pos, neg = self.counts()
        value = float(original(self))
        drawn.append([float(pos.sum() + neg.sum()), value])
        return self._output(value)

    type(noisy).release = spying_release
    try:
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")])
        model.compile("sgd", "binary_crossentropy", metrics=[noisy])
        spy = keras.callbacks.LambdaCallback(
            on_train_batch_end=lambda batch, logs: per_batch.append(float(logs["dp_auc"]))
        )
        history = model.fit(
            x,
            y[:, :1],
            batch_size=64,
            epochs=2,
            verbose=0,
            validation_data=(x[:96], y[:96, :1]),
            callbacks=[spy],
        ).history
    finally:
        type(noisy).release = original
    return {
        "inferred": inferred,
        "noisy_history": history,
        "drawn": drawn,
        "per_batch_all_nan": all(v != v for v in per_batch) and len(per_batch) > 0,
    }


def _raised(build) -> list:
    try:
        build()
    except Exception as error:
        return [type(error).__name__, str(error)]
    return ["nothing", ""]


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    from dpauc_tf import DPAUC

    has_prgain = "PRGAIN" in str(list(keras.src.metrics.metrics_utils.AUCCurve))
    report = {
        "backend": keras.backend.backend(),
        "prgain": has_prgain,
        "values": run(keras.metrics.AUC, DPAUC, has_prgain),
        "errors": errors(DPAUC),
        "fit": fit_checks(keras, DPAUC),
    }
    sys.stdout.write(json.dumps(report) + "\n")
