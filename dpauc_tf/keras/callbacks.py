"""``DPAUCBudgetCallback``: charges every published DPAUC value to a privacy ledger.

Examples:
    >>> from dpauc_tf.privacy.ledger import BudgetExceededError, PrivacyLedger
    >>> callback = DPAUCBudgetCallback(PrivacyLedger(budget=3.0))
    >>> callback.train_dataset
    'train'
"""

from __future__ import annotations

import logging
import sys
import weakref

import dp_accounting
import tensorflow as tf

from dpauc_tf.keras.metric import (
    DPAUC,
    ReleaseWithheld,
    add_release_guard,
    remove_release_guard,
)
from dpauc_tf.privacy.ledger import BudgetExceededError, PrivacyLedger

# Modules whose frames may lie between ``fit`` and the ``evaluate`` it runs for validation.
_KERAS_MODULES = ("keras", "tf_keras", "tensorflow")


def _model_frames(model, start) -> list:
    """The frames of ``model.fit`` and ``model.evaluate`` on the call stack from ``start``
    outwards, innermost first. Asked at every release, so a call that ended in an exception
    (no ``on_train_end``) leaves nothing behind."""
    found, frame = [], start
    while frame is not None:
        if frame.f_code.co_name in ("fit", "evaluate") and frame.f_locals.get("self") is model:
            found.append(frame)
        frame = frame.f_back
    return found


def _is_validation(evaluate_frame, fit_frame) -> bool:
    """Whether this ``evaluate`` is ``fit``'s own validation: Keras called it, with no
    frame of other code (a user's callback) in between."""
    frame = evaluate_frame.f_back
    while frame is not None and frame is not fit_frame:
        module = frame.f_globals.get("__name__", "")
        if module.split(".", 1)[0] not in _KERAS_MODULES:
            return False
        frame = frame.f_back
    return frame is fit_frame


def _site(model, start) -> tuple[str, object, object] | None:
    """Where a release of ``model``'s metrics is drawn: ``(kind, frame, fit_frame)`` with
    kind ``"train"`` (fit's epoch-end training value), ``"validation"`` (fit's validation) or
    ``"evaluate"`` (a ``model.evaluate``, outside fit or run inside it by other code), the
    frame of that fit or evaluate, and the frame of the running fit (or None); None when
    neither runs."""
    frames = _model_frames(model, start)
    if not frames:
        return None
    fits = [frame for frame in frames if frame.f_code.co_name == "fit"]
    fit = fits[0] if fits else None
    inner = frames[0]
    if inner is fit:
        return "train", fit, fit
    if fit is not None and frames[1] is fit and _is_validation(inner, fit):
        return "validation", fit, fit
    return "evaluate", inner, fit


def _on_stack(target) -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame is target:
            return True
        frame = frame.f_back
    return False


# The callbacks serving a model.evaluate (each keeps the frames it serves).
_SERVING: weakref.WeakSet = weakref.WeakSet()


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


_LOG = logging.getLogger("dpauc_tf.keras")


class DPAUCBudgetCallback(tf.keras.callbacks.Callback):
    """Charges every DPAUC release drawn during ``fit`` and ``evaluate`` to a ledger, before
    it is drawn, to the data set it reads, and refuses those past the budget.

    A DPAUC release happens when Keras computes the values it publishes (see
    [`dpauc_tf.keras.metric`][]): the epoch-end training value (data set
    ``train_dataset``), the epoch-end validation value (``validation_dataset``) and the value
    that a ``model.evaluate`` given this callback returns (``evaluation_dataset``); a metric
    built with ``release_on_train=False`` draws no training release, so nothing is charged to
    ``train_dataset``. Each data set's releases compose on the ledger against its own budget
    (README, "What fit shows and what it spends"). While its model's ``fit`` or
    ``evaluate`` runs, the callback is a release guard of the metric
    (`dpauc_tf.keras.metric.add_release_guard`): each release of the model's DPAUC
    metrics asks it first, and it records ``DPAUC.dp_event()`` on the ledger before any noise
    is drawn.

    **Each release is charged to the data it reads.** A ``model.evaluate`` that other code
    runs while ``fit`` runs (a callback that logs a test metric each epoch) reads other
    data than ``fit``: it is charged to the ``evaluation_dataset`` of the
    ``DPAUCBudgetCallback`` passed to that ``evaluate``
    (``model.evaluate(x_test, y_test, callbacks=[DPAUCBudgetCallback(ledger,
    evaluation_dataset="test")])``), and refused (``BudgetExceededError``, one line saying
    so) if none is passed: it is never booked to ``train`` or ``validation``.

    **Past the budget.** A release that would exceed the budget is never drawn. During
    ``fit`` (its training and validation values, and an ``evaluate`` run inside it) the
    value is withheld (NaN: "not released"), training stops the Keras way
    (``model.stop_training = True``: the epoch ends, ``fit`` returns its History) and one
    warning line says why (logger ``dpauc_tf.keras``; the refusal is kept in
    ``refusal``). ``fit`` is refused
    before its first epoch ([`BudgetExceededError`][], nothing trained) when the ledger has
    no room for one epoch's releases of a data set it charges (``train_dataset`` when a
    metric releases on training data, ``validation_dataset`` when ``fit`` has validation
    data). A standalone ``evaluate`` past the budget raises ``BudgetExceededError`` from the
    metric's ``result()``: no callback, History, progress bar, CSV or TensorBoard file and no
    later step sees a value for it. A noise-free ``DPAUC(epsilon=None)`` under a ledger with
    a budget is refused when ``fit`` or ``evaluate`` begins (its value is exact in every
    step: a non-private release). Releases drawn outside ``fit``/``evaluate`` (a
    ``result()`` call in your own code) are yours to record:
    ``ledger.record(metric.dp_event(), ...)``.

    Example:

    ```python
    ledger = PrivacyLedger(budget=3.0, path="privacy_ledger.json")
    budget = DPAUCBudgetCallback(ledger)
    history = model.fit(x, y, epochs=10, verbose=2, validation_data=(xv, yv),
                        callbacks=[budget])
    if budget.refusal is not None:  # training stopped early: the budget ran out
        print(budget.refusal)
    model.evaluate(x_test, y_test,
                   callbacks=[DPAUCBudgetCallback(ledger, evaluation_dataset="test")])
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
        self.refusal: BudgetExceededError | None = None
        self._epoch = 0
        self._fit = None  # the frame of the fit this callback serves
        self._evaluates: list = []  # the frames of the evaluate calls it serves

    # -- the guard ----------------------------------------------------------------------
    def _check_metrics(self, dataset: str) -> None:
        """Refuses, before the first step, what no budget can admit (noise-free metrics
        under a budget, a delta past the ledger's)."""
        if self.ledger.budget is None:
            return
        for metric in _dpauc_metrics(self.model):
            if metric.epsilon is None:
                self._record(metric, dp_accounting.NonPrivateDpEvent(), dataset, "start")
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

    def _refuse_exhausted(self, fit) -> None:
        """Refuses ``fit`` before its first epoch when a data set it charges has no room
        left for one epoch's releases."""
        if self.ledger.budget is None or fit is None:
            return
        metrics = [m for m in _dpauc_metrics(self.model) if m.epsilon is not None]
        locals_ = fit.f_locals
        validates = locals_.get("validation_data") is not None or bool(
            locals_.get("validation_split")
        )
        planned: dict[str, list] = {}
        for metric in metrics:
            if metric.release_on_train:
                planned.setdefault(self.train_dataset, []).append(metric.dp_event())
            if validates:
                planned.setdefault(self.validation_dataset, []).append(metric.dp_event())
        for dataset, events in planned.items():
            event = events[0] if len(events) == 1 else dp_accounting.ComposedDpEvent(events)
            try:
                self.ledger.check(event, dataset)
            except BudgetExceededError as refused:
                raise BudgetExceededError(
                    f"fit refused before its first epoch (nothing trained): data set "
                    f"{dataset!r} has no room left for one epoch's DPAUC releases: {refused}"
                ) from None

    def _start(self) -> None:
        _SERVING.add(self)
        add_release_guard(self._guard)

    def _end_if_idle(self) -> None:
        """Stops guarding once no fit or evaluate this callback serves is running."""
        if self._fit is not None and not _on_stack(self._fit):
            self._fit = None
        self._evaluates = [frame for frame in self._evaluates if _on_stack(frame)]
        if self._fit is None and not self._evaluates:
            remove_release_guard(self._guard)
            _SERVING.discard(self)

    def _guard(self, metric) -> None:
        """Asked by ``metric`` before each release: records it, withholds it or raises."""
        self._end_if_idle()  # the fit/evaluate it served may be over (it may have raised)
        if self._fit is None and not self._evaluates:
            return
        site = _site(self.model, sys._getframe(1))
        if site is None or all(metric is not known for known in _dpauc_metrics(self.model)):
            return  # another model's metric, or no run of this model
        kind, frame, fit = site
        if kind == "evaluate":
            if all(frame is not served for served in self._evaluates):
                if any(any(frame is f for f in c._evaluates) for c in list(_SERVING)):
                    return  # another DPAUCBudgetCallback serves (charges) it
                raise BudgetExceededError(
                    f"release refused: DPAUC metric {metric.name!r} would be drawn by a "
                    "model.evaluate run inside fit (by a callback?) that names no data set; "
                    "pass it callbacks=[DPAUCBudgetCallback(ledger, evaluation_dataset="
                    "'<the data it reads>')] so that its releases are charged to that data"
                )
            dataset, description = self.evaluation_dataset, "evaluate"
            if fit is not None:
                description = "evaluate inside fit"
        elif fit is not self._fit:
            return  # a fit this callback does not serve
        elif kind == "train":
            dataset, description = self.train_dataset, f"epoch {self._epoch}"
        else:
            dataset, description = self.validation_dataset, f"epoch {self._epoch} validation"
        if metric.epsilon is not None:
            event = metric.dp_event()
        elif self.ledger.budget is not None:
            event = dp_accounting.NonPrivateDpEvent()
        else:
            return
        try:
            self._record(metric, event, dataset, description)
        except BudgetExceededError as refused:
            if fit is None:
                raise
            self._stop(refused)
            raise ReleaseWithheld(str(refused)) from refused

    def _stop(self, refused: BudgetExceededError) -> None:
        """Withholds the value and stops training after this epoch (one warning line)."""
        self.model.stop_training = True
        if self.refusal is None:
            self.refusal = refused
            _LOG.warning(
                "DPAUCBudgetCallback: training stops after this epoch (the refused value is "
                "NaN, not released; the History so far is kept): %s",
                refused,
            )

    def _record(self, metric, event, dataset: str, description: str) -> None:
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
        site = _site(self.model, sys._getframe(1))
        self._fit = site[2] if site is not None else None
        self._epoch = 0
        self.refusal = None
        self._start()
        self._check_metrics(self.train_dataset)
        self._refuse_exhausted(self._fit)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_test_begin(self, logs=None):
        site = _site(self.model, sys._getframe(1))
        if site is None:
            return
        kind, frame, fit = site
        if kind == "validation":
            if fit is self._fit:
                self._check_metrics(self.validation_dataset)
            return
        self._evaluates.append(frame)
        self._start()
        self._check_metrics(self.evaluation_dataset)

    def on_test_end(self, logs=None):
        site = _site(self.model, sys._getframe(1))
        if site is not None and site[0] == "evaluate":
            self._evaluates = [served for served in self._evaluates if served is not site[1]]
        self._end_if_idle()

    def on_train_end(self, logs=None):
        self._fit = None
        self._end_if_idle()
