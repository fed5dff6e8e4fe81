"""``DPAUCBudgetCallback``: charges every published DPAUC value to a privacy ledger.

>>> from dpauc_tf.privacy.ledger import PrivacyLedger
>>> callback = DPAUCBudgetCallback(PrivacyLedger(budget=3.0))
>>> callback.train_dataset
'train'
"""

from __future__ import annotations

import sys

import tensorflow as tf

from dpauc_tf.privacy.ledger import BudgetExceededError, PrivacyLedger


def _fit_running(model) -> bool:
    """Whether ``model.fit`` is on the call stack (validation inside fit calls the same
    test hooks as ``model.evaluate``). Asked at every evaluation, so a fit that ended in an
    exception (no ``on_train_end``) leaves nothing behind."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "fit" and frame.f_locals.get("self") is model:
            return True
        frame = frame.f_back
    return False


def _dpauc_metrics(model) -> list:
    from dpauc_tf.keras.metric import DPAUC

    found, stack = [], list(getattr(model, "metrics", []))
    while stack:
        metric = stack.pop(0)
        if isinstance(metric, DPAUC):
            found.append(metric)
        stack.extend(getattr(metric, "metrics", []) or [])
        # Keras 2's compiled-metrics container keeps the user's metrics here:
        stack.extend(getattr(metric, "_user_metrics", []) or [])
    unique = []
    for metric in found:
        if all(metric is not m for m in unique):
            unique.append(metric)
    return unique


class DPAUCBudgetCallback(tf.keras.callbacks.Callback):
    """Records every published DPAUC value in a :class:`PrivacyLedger`.

    Published values are the epoch-end training value (data set ``train_dataset``), the
    epoch-end validation value (``validation_dataset``) and the value that
    ``model.evaluate`` returns (``evaluation_dataset``). If a release would exceed the
    ledger's budget, its value is removed from the logs before History or TensorBoard see it
    and :class:`BudgetExceededError` stops the run.

    Example:

    ```python
    ledger = PrivacyLedger(budget=3.0, path="privacy_ledger.json")
    model.fit(x, y, epochs=10, verbose=2, validation_data=(xv, yv),
              callbacks=[DPAUCBudgetCallback(ledger)])
    print(ledger.summary())
    ```
    """

    def __init__(
        self,
        ledger: PrivacyLedger,
        train_dataset: str = "train",
        validation_dataset: str = "validation",
        evaluation_dataset: str = "evaluation",
    ):
        super().__init__()
        self.ledger = ledger
        self.train_dataset = train_dataset
        self.validation_dataset = validation_dataset
        self.evaluation_dataset = evaluation_dataset
        self._charge_evaluation = False

    def _charge(self, logs, prefix: str, dataset: str, description: str) -> None:
        if logs is None:
            return
        for metric in _dpauc_metrics(self.model):
            key = prefix + metric.name
            if key not in logs or (metric.epsilon is None and self.ledger.budget is None):
                continue
            try:
                self.ledger.record_release(metric.mechanism, dataset, f"{description} {key}")
            except BudgetExceededError:
                logs.pop(key, None)
                raise

    def on_epoch_end(self, epoch, logs=None):
        self._charge(logs, "", self.train_dataset, f"epoch {epoch}")
        self._charge(logs, "val_", self.validation_dataset, f"epoch {epoch}")

    def on_test_begin(self, logs=None):
        # Validation inside fit() is charged at epoch end; model.evaluate here.
        self._charge_evaluation = not _fit_running(self.model)

    def on_test_end(self, logs=None):
        if self._charge_evaluation:
            self._charge_evaluation = False
            self._charge(logs, "", self.evaluation_dataset, "evaluate")
