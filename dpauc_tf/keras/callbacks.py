"""``DPAUCBudgetCallback``: charges every published DPAUC value to a privacy ledger.

>>> from dpauc_tf.privacy.ledger import PrivacyLedger
>>> callback = DPAUCBudgetCallback(PrivacyLedger(budget=3.0))
>>> callback.train_dataset
'train'
"""

from __future__ import annotations

import sys

import dp_accounting
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
    """Charges every DPAUC release drawn during ``fit`` and ``evaluate`` to a ledger.

    A DPAUC release happens when Keras computes the values it publishes (see
    :mod:`dpauc_tf.keras.metric`): the epoch-end training value (data set
    ``train_dataset``), the epoch-end validation value (``validation_dataset``) and the value
    that ``model.evaluate`` returns (``evaluation_dataset``). The callback charges exactly
    the releases each metric drew (``DPAUC.releases_drawn``), each as ``DPAUC.dp_event()``.
    If a release would exceed the ledger's budget, its value is removed from the logs
    before History or TensorBoard see it and :class:`BudgetExceededError` stops the run.
    A noise-free ``DPAUC(epsilon=None)`` published while the ledger has a budget is charged
    as a non-private release (infinite epsilon), so it is refused. Releases drawn outside
    ``fit``/``evaluate`` (a ``result()`` call in your own code) are yours to record:
    ``ledger.record(metric.dp_event(), ...)``.

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
        self._charged: dict[int, int] = {}
        self._epoch = 0

    def _start_counting(self) -> None:
        """Releases drawn before now are not this callback's to charge."""
        self._charged = {id(m): m.releases_drawn for m in _dpauc_metrics(self.model)}

    def _charge(self, logs, dataset: str, description: str) -> None:
        for metric in _dpauc_metrics(self.model):
            if metric.epsilon is None:
                published = logs is not None and metric.name in logs
                if published and self.ledger.budget is not None:
                    self._record(
                        metric, dp_accounting.NonPrivateDpEvent(), logs, dataset, description
                    )
                continue
            new = metric.releases_drawn - self._charged.get(id(metric), 0)
            for _ in range(max(new, 0)):
                self._record(metric, metric.dp_event(), logs, dataset, description)
            self._charged[id(metric)] = metric.releases_drawn

    def _record(self, metric, event, logs, dataset, description) -> None:
        try:
            self.ledger.record(event, dataset, f"{description} {metric.name}")
        except BudgetExceededError:
            if logs is not None:
                logs.pop(metric.name, None)
            raise

    def on_train_begin(self, logs=None):
        self._start_counting()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_test_begin(self, logs=None):
        if _fit_running(self.model):
            # The epoch's training value was released just before validation starts.
            self._charge(None, self.train_dataset, f"epoch {self._epoch}")
        else:
            self._start_counting()

    def on_test_end(self, logs=None):
        if _fit_running(self.model):
            self._charge(logs, self.validation_dataset, f"epoch {self._epoch} validation")
        else:
            self._charge(logs, self.evaluation_dataset, "evaluate")

    def on_epoch_end(self, epoch, logs=None):
        self._charge(logs, self.train_dataset, f"epoch {epoch}")
