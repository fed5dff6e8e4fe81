"""``DPAUCBudgetCallback`` charges each release to the data set it reads (issue 30) and stops
``fit`` the Keras way when the budget runs out (issue 34).

The scenario of issue 30: a callback runs ``model.evaluate(test)`` each epoch of ``fit`` (to
log a test metric), the metric draws no training release (``release_on_train=False``), the
budget is 3 releases per data set; then 3 more ``evaluate(test)`` with the budget callback.
Before the fix 6 releases were drawn on the test labels and all admitted, the first 3 booked
to ``train``."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import DPAUC, BudgetExceededError, DPAUCBudgetCallback, PrivacyLedger

keras = tf.keras
EPSILON = 1.0
BUDGET = 3.0  # three releases per data set


def _data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype("float32")
    return x, (x[:, 0] + rng.normal(size=n) > 0).astype("float32")


def _model(**metric_options):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")])
    metric = DPAUC(epsilon=EPSILON, num_thresholds=50, seed=0, name="dp_auc", **metric_options)
    model.compile("adam", "binary_crossentropy", metrics=[metric])
    return model, metric


class _TestLogger(keras.callbacks.Callback):
    """Logs the test AUC after every epoch, as users do (issue 30)."""

    def __init__(self, test, callbacks=None):
        super().__init__()
        self.test, self.callbacks, self.values = test, callbacks, []

    def on_epoch_end(self, epoch, logs=None):
        x, y = self.test
        value = self.model.evaluate(x, y, verbose=0, return_dict=True, callbacks=self.callbacks)
        self.values.append(value["dp_auc"])


def _evaluate_three_times(model, test, callback):
    refused = 0
    for _ in range(3):
        try:
            model.evaluate(*test, verbose=0, callbacks=[callback])
        except BudgetExceededError:
            refused += 1
    return refused


def test_an_evaluate_inside_fit_naming_no_data_set_is_refused_not_booked_to_train():
    """The exact scenario of issue 30 (the nested evaluate is given no callback)."""
    train, test = _data(512, 0), _data(256, 1)
    model, metric = _model(release_on_train=False)
    ledger = PrivacyLedger(budget=BUDGET)
    callback = DPAUCBudgetCallback(ledger)
    with pytest.raises(BudgetExceededError, match="names no data set") as refused:
        model.fit(*train, epochs=3, verbose=0, callbacks=[callback, _TestLogger(test)])
    assert "\n" not in str(refused.value)
    assert "evaluation_dataset=" in str(refused.value)
    refused = _evaluate_three_times(model, test, callback)
    assert ledger.releases("train") == 0 and ledger.releases("validation") == 0
    assert refused == 0 and ledger.releases("evaluation") == 3
    assert metric.releases_drawn == 3  # every release drawn on the test labels is charged


def test_an_evaluate_inside_fit_is_charged_to_the_data_set_its_callback_names():
    train, test = _data(512, 0), _data(256, 1)
    model, metric = _model(release_on_train=False)
    ledger = PrivacyLedger(budget=BUDGET)
    on_test = DPAUCBudgetCallback(ledger, evaluation_dataset="test")
    history = model.fit(
        *train,
        epochs=3,
        verbose=0,
        validation_data=_data(256, 2),
        callbacks=[DPAUCBudgetCallback(ledger), _TestLogger(test, [on_test])],
    )
    assert len(history.history["val_dp_auc"]) == 3
    assert ledger.releases("test") == 3 and ledger.releases("validation") == 3
    assert ledger.releases("train") == 0
    refused = _evaluate_three_times(model, test, on_test)
    assert refused == 3  # the test labels' budget is spent: 3 releases, not 6
    assert metric.releases_drawn == 6 and ledger.releases("test") == 3


def test_the_fit_callback_passed_to_a_nested_evaluate_charges_its_evaluation_data_set():
    train, test = _data(512, 0), _data(256, 1)
    model, metric = _model()  # a training release every epoch too
    ledger = PrivacyLedger(budget=BUDGET)
    callback = DPAUCBudgetCallback(ledger)
    model.fit(*train, epochs=3, verbose=0, callbacks=[callback, _TestLogger(test, [callback])])
    assert ledger.releases("train") == 3 and ledger.releases("evaluation") == 3
    assert _evaluate_three_times(model, test, callback) == 3
    assert metric.releases_drawn == 6


def test_a_budget_that_runs_out_stops_fit_and_keeps_the_history(caplog):
    train = _data(512, 0)
    model, metric = _model()
    ledger = PrivacyLedger(budget=BUDGET)
    callback = DPAUCBudgetCallback(ledger)
    with caplog.at_level(logging.WARNING, logger="dpauc_tf.keras"):
        history = model.fit(*train, epochs=6, verbose=0, callbacks=[callback])
    values = history.history["dp_auc"]
    assert len(values) == 4  # three releases, the fourth epoch's value withheld, then stop
    assert all(math.isfinite(v) for v in values[:3]) and math.isnan(values[3])
    assert ledger.releases("train") == 3 and metric.releases_drawn == 3
    assert isinstance(callback.refusal, BudgetExceededError)
    lines = [r.getMessage() for r in caplog.records if r.name == "dpauc_tf.keras"]
    assert len(lines) == 1 and "training stops" in lines[0] and "\n" not in lines[0]


def test_a_validation_budget_that_runs_out_stops_fit_and_keeps_the_history():
    train = _data(512, 0)
    model, metric = _model(release_on_train=False)
    ledger = PrivacyLedger(budget=BUDGET)
    history = model.fit(
        *train,
        epochs=6,
        verbose=0,
        validation_data=_data(256, 2),
        callbacks=[DPAUCBudgetCallback(ledger)],
    )
    values = history.history["val_dp_auc"]
    assert len(values) == 4 and math.isnan(values[3])
    assert ledger.releases("validation") == 3 and metric.releases_drawn == 3


class _Batches(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.count = 0

    def on_train_batch_end(self, batch, logs=None):
        self.count += 1


@pytest.mark.parametrize("spent", ["train", "validation"])
def test_an_exhausted_ledger_refuses_fit_before_the_first_epoch(spent):
    train = _data(512, 0)
    model, metric = _model()
    ledger = PrivacyLedger(budget=BUDGET)
    for _ in range(3):
        ledger.record(metric.dp_event(), spent, "earlier")
    weights = [w.copy() for w in model.get_weights()]
    batches = _Batches()
    with pytest.raises(BudgetExceededError, match="before its first epoch") as refused:
        model.fit(
            *train,
            epochs=2,
            verbose=0,
            validation_data=_data(256, 2),
            callbacks=[DPAUCBudgetCallback(ledger), batches],
        )
    assert f"data set {spent!r}" in str(refused.value) and "\n" not in str(refused.value)
    assert batches.count == 0 and metric.releases_drawn == 0
    assert all(np.array_equal(a, b) for a, b in zip(weights, model.get_weights(), strict=True))


def test_a_fit_that_releases_nothing_on_a_spent_data_set_is_not_refused():
    """release_on_train=False and no validation data: fit charges nothing, so a spent
    ``train`` budget refuses nothing."""
    model, metric = _model(release_on_train=False)
    ledger = PrivacyLedger(budget=BUDGET)
    for _ in range(3):
        ledger.record(metric.dp_event(), "train", "earlier")
    history = model.fit(
        *_data(512, 0), epochs=2, verbose=0, callbacks=[DPAUCBudgetCallback(ledger)]
    )
    assert len(history.history["loss"]) == 2 and metric.releases_drawn == 0


class _Interrupt(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        raise KeyboardInterrupt


def test_an_interrupted_fit_leaves_no_guard_behind():
    """A fit that ended in an exception (no on_train_end) leaves its callback registered as a
    guard: a later evaluate without the callback is the user's own, not refused."""
    train, test = _data(512, 0), _data(256, 1)
    model, metric = _model()
    ledger = PrivacyLedger(budget=BUDGET)
    with pytest.raises(KeyboardInterrupt):
        model.fit(
            *train, epochs=2, verbose=0, callbacks=[DPAUCBudgetCallback(ledger), _Interrupt()]
        )
    model.evaluate(*test, verbose=0)
    assert metric.releases_drawn == 1 and not ledger.datasets()
