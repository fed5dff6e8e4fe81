"""A release refused by ``DPAUCBudgetCallback`` must reach no one: the scenarios of
``tests/keras/test_budget_refusal.py`` (TensorFlow backend, Keras 2 and 3) and of
``jax_backend_checks.py`` (JAX backend), written once for any ``keras`` module.

Every value the metric draws is recorded (its ``release`` is wrapped); a value is published
when it reaches a callback, History, a CSV file or stdout. During ``fit`` a refusal withholds
the value (NaN, "not released") and stops training; ``evaluate`` raises. The checks: the ledger charged every
value drawn under the budget callback (none drawn and then refused: a refused value is the
last one drawn), and every published value is a charged one, one drawn later by the user's
own runs, or NaN (before the first release).
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import re

import numpy as np

from dpauc_tf import DPAUC, BudgetExceededError, DPAUCBudgetCallback, PrivacyLedger

EPSILON = 0.25
BUDGET = 0.5  # two releases per data set


def _model(keras, mode: str):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")])
    metric = DPAUC(epsilon=EPSILON, num_thresholds=50, seed=0, name="dp_auc")
    options = {"jit_compile": True} if mode == "jit" else {}
    if mode == "run_eagerly":
        options = {"run_eagerly": True}
    model.compile("adam", "binary_crossentropy", metrics=[metric], **options)
    drawn: list[float] = []
    release = metric.release

    def recorded():
        value = release()
        drawn.append(float(np.asarray(value)))
        return value

    object.__setattr__(metric, "release", recorded)
    return model, metric, drawn


def _data(n=512):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype("float32")
    return x, (x[:, 0] + rng.normal(size=n) > 0).astype("float32")


def _spy(keras, seen: list, where: str):
    """Records every ``dp_auc`` value (any key ending in it) passed to any hook."""

    def hook(name):
        def record(*args, **kwargs):
            logs = kwargs.get("logs", args[-1] if args else None) or {}
            for key, value in logs.items():
                if key.endswith("dp_auc"):
                    seen.append((where, name, key, float(np.asarray(value))))

        return record

    names = [
        "on_epoch_end",
        "on_train_batch_end",
        "on_test_batch_end",
        "on_test_end",
        "on_train_end",
    ]
    return keras.callbacks.LambdaCallback(**{name: hook(name) for name in names})


def run(keras, mode: str, tmp_dir: str) -> dict:
    """Three refusals (training value, validation value, evaluate's value), each followed by a
    fit and an evaluate that show per-batch values; returns what was drawn, charged and seen."""
    x, y = _data()
    seen: list = []
    out: dict = {"refused": [], "csv": []}
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        for case in ("train", "validation", "evaluation"):
            model, metric, drawn = _model(keras, mode)
            ledger = PrivacyLedger(budget=BUDGET)
            if case != "train":  # one release of that data set already spent
                ledger.record(metric.dp_event(), case, "earlier")
            csv_path = os.path.join(tmp_dir, f"{mode}-{case}.csv")
            budget = DPAUCBudgetCallback(ledger)
            callbacks = [
                keras.callbacks.CSVLogger(csv_path),
                _spy(keras, seen, "before"),
                budget,
                _spy(keras, seen, "after"),
            ]
            try:
                if case == "evaluation":
                    model.evaluate(x, y, batch_size=128, verbose=2, callbacks=callbacks[1:])
                    model.evaluate(x, y, batch_size=128, verbose=2, callbacks=callbacks[1:])
                else:
                    validation = (x, y) if case == "validation" else None
                    model.fit(
                        x,
                        y,
                        epochs=4,
                        batch_size=128,
                        verbose=2,
                        validation_data=validation,
                        callbacks=callbacks,
                    )
                    if budget.refusal is not None:  # fit stops; its value is withheld (NaN)
                        out["refused"].append(case)
                        out[f"{case}_message"] = str(budget.refusal)
            except BudgetExceededError as error:
                out["refused"].append(case)
                out[f"{case}_message"] = str(error)
            charged = sum(ledger.releases(d) for d in ("train", "validation", "evaluation"))
            out[f"{case}_drawn"] = list(drawn)
            out[f"{case}_charged"] = charged - (case != "train")
            out[f"{case}_history"] = [
                float(v)
                for key, values in getattr(getattr(model, "history", None), "history", {}).items()
                if key.endswith("dp_auc")
                for v in values
            ]
            if os.path.exists(csv_path):
                with open(csv_path) as handle:
                    for row in csv.DictReader(handle):
                        for key, value in row.items():
                            if key.endswith("dp_auc") and value not in ("", "NA"):
                                out["csv"].append(float(value))
            # Later runs show the last release in every step (no budget callback: their own
            # final values are the user's to record, and are drawn, so recorded above).
            model.fit(
                x, y, epochs=1, batch_size=128, verbose=1, callbacks=[_spy(keras, seen, "next")]
            )
            model.evaluate(x, y, batch_size=128, verbose=1, callbacks=[_spy(keras, seen, "next")])
            out[f"{case}_drawn_all"] = list(drawn)
    out["seen"] = seen
    out["stdout"] = stdout.getvalue()
    return out


def problems(out: dict) -> list[str]:
    """What a refused release leaked (empty when nothing did)."""
    found, drawn = [], []
    for case in ("train", "validation", "evaluation"):  # the values drawn and charged
        charged, refusal_run = out[f"{case}_charged"], out[f"{case}_drawn"]
        later = out[f"{case}_drawn_all"][len(refusal_run) :]  # drawn by later runs
        drawn += refusal_run[:charged] + later
    for case in ("train", "validation", "evaluation"):
        if case not in out["refused"]:
            found.append(f"{case}: the budget refused nothing")
        if len(out[f"{case}_drawn"]) != out[f"{case}_charged"]:
            found.append(
                f"{case}: {len(out[f'{case}_drawn'])} values drawn, {out[f'{case}_charged']} charged"
            )
        for value in out[f"{case}_history"]:
            if not (math.isnan(value) or _among(value, drawn)):
                found.append(f"{case}: History holds an uncharged value {value}")
    for value in out["csv"]:
        if not (math.isnan(value) or _among(value, drawn)):
            found.append(f"CSVLogger wrote an uncharged value {value}")
    for where, hook, key, value in out["seen"]:
        if not (math.isnan(value) or _among(value, drawn)):
            found.append(f"{where} callback's {hook} saw an uncharged {key} {value}")
    printed = re.findall(r"dp_auc: ([-+0-9.e]+|nan)", out["stdout"])
    if not printed:
        found.append("the progress bar printed no dp_auc value")
    for text in printed:
        if not (text == "nan" or _among(float(text), drawn, 1e-4)):
            found.append(f"the progress bar printed an uncharged value: dp_auc: {text}")
    return found


def _among(value: float, drawn: list, tolerance: float = 1e-6) -> bool:
    return any(abs(value - d) <= tolerance for d in drawn)
