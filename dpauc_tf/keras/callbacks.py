"""``DPAUCBudgetCallback``: charges every published DPAUC value to a privacy ledger.

Examples:
    >>> from dpauc_tf.privacy.ledger import BudgetExceededError, PrivacyLedger
    >>> callback = DPAUCBudgetCallback(PrivacyLedger(budget=3.0))
    >>> callback.train_dataset
    'train'
"""

from __future__ import annotations

import sys

import dp_accounting
import tensorflow as tf

from dpauc_tf.keras.metric import DPAUC, add_release_guard, remove_release_guard
from dpauc_tf.privacy.ledger import BudgetExceededError, PrivacyLedger


def _running_frame(model, names=("fit", "evaluate")):
    """The frame of the outermost ``model.fit`` (or ``model.evaluate``) on this thread's call
    stack, or None. Asked at every release, so a call that ended in an exception (no
    ``on_train_end``) leaves nothing behind. Validation inside ``fit`` calls the same test
    hooks as ``model.evaluate``: ``fit`` is looked for first."""
    for name in names:
        found, frame = None, sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_name == name and frame.f_locals.get("self") is model:
                found = frame
            frame = frame.f_back
        if found is not None:
            return found
    return None


def _on_stack(target) -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame is target:
            return True
        frame = frame.f_back
    return False


def _dpauc_metrics(model) -> list:
    found, stack = [], list(getattr(model, "metrics", []))
    # Keras 2 builds its metrics container at the first step: before it, only the
    # container's copy of what compile() was given knows the metrics.
    container = getattr(model, "compiled_metrics", None)
    for attribute in ("_user_metrics", "_user_weighted_metrics"):
        stack.extend(tf.nest.flatten(getattr(container, attribute, None) or []))
    while stack:
        metric = stack.pop(0)
        if isinstance(metric, DPAUC):
            found.append(metric)
        if not isinstance(metric, tf.keras.metrics.Metric):
            continue  # a metric named by a string in compile()
        stack.extend(getattr(metric, "metrics", []) or [])
        # Keras 2's compiled-metrics container keeps the user's metrics here:
        stack.extend(getattr(metric, "_user_metrics", []) or [])
    unique = []
    for metric in found:
        if all(metric is not m for m in unique):
            unique.append(metric)
    return unique


class DPAUCBudgetCallback(tf.keras.callbacks.Callback):
    """Charges every DPAUC release drawn during ``fit`` and ``evaluate`` to a ledger, before
    it is drawn, and refuses those past the budget.

    A DPAUC release happens when Keras computes the values it publishes (see
    [`dpauc_tf.keras.metric`][]): the epoch-end training value (data set
    ``train_dataset``), the epoch-end validation value (``validation_dataset``) and the value
    that ``model.evaluate`` returns (``evaluation_dataset``); a metric built with
    ``release_on_train=False`` draws no training release, so nothing is charged to
    ``train_dataset``. Each data set's releases compose on the ledger against its own budget
    (README, "What fit shows and what it spends"). While its model's ``fit`` or
    ``evaluate`` runs, the callback is a release guard of the metric
    ([`dpauc_tf.keras.metric.add_release_guard`][]): each release of the model's DPAUC
    metrics asks it first, and it records ``DPAUC.dp_event()`` on the ledger before any noise
    is drawn. A release that would exceed the budget is never drawn:
    [`BudgetExceededError`][] is raised from the metric's ``result()`` and stops the run,
    so no callback (wherever it is in the list), no History, progress bar, CSV or TensorBoard
    file and no later step sees a value for it. A noise-free ``DPAUC(epsilon=None)`` under a
    ledger with a budget is refused when ``fit`` or ``evaluate`` begins (its value is exact in
    every step: a non-private release). Releases drawn outside ``fit``/``evaluate`` (a
    ``result()`` call in your own code) are yours to record:
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
        self._epoch = 0
        self._phase = (train_dataset, "epoch 0")
        self._call = None  # the frame of the fit/evaluate this callback serves

    # -- the guard ----------------------------------------------------------------------
    def _begin(self, dataset: str, description: str) -> None:
        self._phase = (dataset, description)
        if self._call is None or not _on_stack(self._call):
            self._call = _running_frame(self.model)
        add_release_guard(self._guard)
        if self.ledger.budget is None:
            return
        for metric in _dpauc_metrics(self.model):
            if metric.epsilon is None:
                self._record(metric, dp_accounting.NonPrivateDpEvent())
                continue
            delta = metric.privacy_statement().delta
            if delta > self.ledger.delta:  # no release fits: refuse before the first step
                raise BudgetExceededError(
                    f"release refused: DPAUC metric {metric.name!r} (mechanism "
                    f"{metric.mechanism.name!r}) releases with delta {delta:g} each, more than "
                    f"the ledger's delta {self.ledger.delta:g} for all its releases of data set "
                    f"{dataset!r}: epsilon would be infinite from the first release. Create the "
                    "ledger with a delta that covers the releases' deltas (e.g. "
                    f"PrivacyLedger(budget=..., delta={max(1e-5, 100 * delta):g})), or give "
                    "DPAUC no delta (pure epsilon)."
                )

    def _end(self) -> None:
        remove_release_guard(self._guard)
        self._call = None

    def _guard(self, metric) -> None:
        """Asked by ``metric`` before each release: records it, or raises."""
        if self._call is None or not _on_stack(self._call):
            self._end()  # the fit/evaluate it served is over (it may have raised)
            return
        if all(metric is not known for known in _dpauc_metrics(self.model)):
            return  # another model's metric
        if metric.epsilon is not None:
            self._record(metric, metric.dp_event())
        elif self.ledger.budget is not None:
            self._record(metric, dp_accounting.NonPrivateDpEvent())

    def _record(self, metric, event) -> None:
        dataset, description = self._phase
        try:
            self.ledger.record(event, dataset, f"{description} {metric.name}")
        except BudgetExceededError as refused:
            delta = metric.privacy_statement().delta if metric.epsilon is not None else 0.0
            if delta <= 0:
                raise
            raise BudgetExceededError(
                f"{refused} DPAUC metric {metric.name!r} releases with delta {delta:g} each: "
                f"the deltas of data set {dataset!r}'s releases must fit in the ledger's delta "
                f"{self.ledger.delta:g} (past it epsilon is infinite). Give the ledger a larger "
                "delta, or DPAUC no delta (pure epsilon)."
            ) from refused

    # -- Keras hooks --------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._call = None
        self._begin(self.train_dataset, "epoch 0")

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        self._phase = (self.train_dataset, f"epoch {epoch}")

    def on_test_begin(self, logs=None):
        if _running_frame(self.model, ("fit",)) is not None:
            self._begin(self.validation_dataset, f"epoch {self._epoch} validation")
        else:
            self._call = None
            self._begin(self.evaluation_dataset, "evaluate")

    def on_test_end(self, logs=None):
        if _running_frame(self.model, ("fit",)) is not None:
            self._phase = (self.train_dataset, f"epoch {self._epoch}")
        else:
            self._end()

    def on_train_end(self, logs=None):
        self._end()
