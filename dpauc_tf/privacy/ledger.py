"""A privacy ledger that composes releases per data set and refuses to exceed a budget.

>>> import dp_accounting
>>> ledger = PrivacyLedger(budget=1.0)
>>> ledger.record(dp_accounting.LaplaceDpEvent(noise_multiplier=2.0), dataset="test")
>>> ledger.spent("test").basic
0.5
>>> ledger.record(dp_accounting.LaplaceDpEvent(noise_multiplier=1.0), dataset="test")
... # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
...
dpauc_tf.privacy.ledger.BudgetExceededError: release refused: data set 'test' would spend epsilon 1.5 > budget 1 (delta=0, method basic; in-memory ledger)

**What it stores.** Any ``dp_accounting.DpEvent`` (nested compositions included) and the
project's registered events (:class:`~dpauc_tf.privacy.events.SkellamDpEvent`), as JSON
written by :func:`~dpauc_tf.privacy.events.event_to_json`. :meth:`PrivacyLedger.record_release`
asks the mechanism for its event (``mechanism.dp_event()``), which describes its noise
exactly (discrete noise as dp-accounting's discrete-Laplace event, Skellam by its Renyi
curve). A data set's spend is :func:`dpauc_tf.privacy.accounting.composed_epsilon` of all
its releases: PLD where dp-accounting's PLD accountant supports every event, RDP where the
RDP accountant and the Skellam curve cover them, the basic sum otherwise; the smallest
valid figure is used and :meth:`PrivacyLedger.summary` (and ``spent(...).method``) says
which.

**The file** (``path=``) is the single source of truth. Every release takes an exclusive
lock on ``PATH.lock``, re-reads the file (entries, budget and delta, so several processes
and stale ``PrivacyLedger`` objects share one ledger), checks the budget and rewrites the
file atomically (a temporary file ``.NAME.PID.RANDOM.tmp`` next to it, ``fsync``,
``os.replace``, ``fsync`` of the directory): a budget survives a restart, and a crash never
leaves a half-written file. A budget can only go down: a ledger opened with a smaller
budget lowers the file's; a larger one is refused, and so is a different delta. A process
removes only its own temporary files; a process killed while writing leaves one behind
(hidden, never read).

**Reading** validates every entry: events are rebuilt only from ``dp_accounting`` classes
and registered project events, and negative, zero or NaN noise parameters (which would
cancel other releases' spend) are refused. Every error names the file (and the entry).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import numbers
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import dp_accounting

from dpauc_tf.privacy.accounting import EpsilonSpent, composed_epsilon
from dpauc_tf.privacy.events import (
    discrete_laplace_event,
    event_from_json,
    event_to_json,
    validate_event,
)

FORMAT_VERSION = 2


class BudgetExceededError(RuntimeError):
    """Raised when a release would take a data set past its privacy budget."""


class LedgerFormatError(ValueError):
    """A ledger file that cannot be trusted (malformed, or an entry with invalid values)."""


def _legacy_event(entry: dict, where: str) -> dp_accounting.DpEvent:
    """Events of the version-1 format (``{"kind": ..., "noise_multiplier": ...}``)."""
    kind = entry.get("kind")
    if kind == "non-private":
        return dp_accounting.NonPrivateDpEvent()
    multiplier = entry.get("noise_multiplier")
    if isinstance(multiplier, bool) or not isinstance(multiplier, numbers.Real):
        raise ValueError(f"{where}: noise_multiplier must be a number, got {multiplier!r}")
    if not (math.isfinite(multiplier) and multiplier > 0):
        raise ValueError(f"{where}: noise_multiplier must be finite and > 0, got {multiplier!r}")
    if kind == "laplace":
        return dp_accounting.LaplaceDpEvent(noise_multiplier=float(multiplier))
    if kind == "gaussian":
        return dp_accounting.GaussianDpEvent(noise_multiplier=float(multiplier))
    if kind == "discrete-laplace":
        # Stored as pure epsilon 1 / noise_multiplier without its sensitivity: one
        # sensitivity-1 discrete-Laplace release of that epsilon has the privacy loss of
        # randomized response, the worst case of every mechanism with that pure epsilon.
        return discrete_laplace_event(float(multiplier), 1)
    raise ValueError(f"{where}: unknown event kind {kind!r}")


class PrivacyLedger:
    """Records releases per data set, composes them, and enforces an epsilon budget.

    Args:
      budget: the largest total epsilon any one data set may reach (``None``: no limit,
        the ledger only records).
      delta: the delta at which composed epsilons are reported (0 for pure DP; Gaussian
        and Skellam releases need ``delta > 0``).
      path: optional JSON file that holds the ledger across restarts and processes.

    Non-private releases count as infinite epsilon. See the module docstring for the file.
    """

    def __init__(self, budget: float | None = None, delta: float = 0.0, path: str | None = None):
        self.path = Path(path) if path is not None else None
        if budget is not None and not (
            isinstance(budget, numbers.Real) and budget > 0 and math.isfinite(budget)
        ):
            raise ValueError(f"{self._where()}: budget must be finite and > 0, got {budget}")
        if not (isinstance(delta, numbers.Real) and 0.0 <= delta < 1.0):
            raise ValueError(f"{self._where()}: delta must be in [0, 1), got {delta}")
        self._requested_budget = None if budget is None else float(budget)
        self._requested_delta = float(delta)
        self.budget = self._requested_budget
        self.delta = self._requested_delta
        self.entries: list[dict] = []
        self._events: list[dp_accounting.DpEvent] = []
        if self.path is not None and self.path.exists():
            if budget is not None:
                stored = self._read_state()
                stored_budget = None if stored is None else stored["budget"]
                if stored_budget is not None and budget > stored_budget:
                    raise ValueError(
                        f"the ledger at {self.path} has budget {stored_budget:g}; "
                        f"it cannot be reopened with the larger budget {budget:g}"
                    )
            with self._locked() as state:
                if state is not None and state["budget"] != self.budget:
                    self.save()  # a smaller budget lowers the file's

    def _where(self) -> str:
        return f"ledger {self.path}" if self.path is not None else "in-memory ledger"

    # -- the file -------------------------------------------------------------------------
    def _read_state(self) -> dict | None:
        """The validated contents of the file (``None`` if there is none)."""
        if self.path is None or not self.path.exists():
            return None
        try:
            raw = json.loads(self.path.read_text())
        except (OSError, ValueError) as error:
            raise LedgerFormatError(f"ledger {self.path}: cannot read JSON: {error}") from error
        return self._validate_state(raw)

    def _validate_state(self, raw: Any) -> dict:
        where = f"ledger {self.path}"
        if not isinstance(raw, dict):
            raise LedgerFormatError(f"{where}: the file must hold a JSON object")
        budget, delta = raw.get("budget"), raw.get("delta", 0.0)
        if budget is not None and (
            isinstance(budget, bool)
            or not isinstance(budget, numbers.Real)
            or not (math.isfinite(budget) and budget > 0)
        ):
            raise LedgerFormatError(
                f"{where}: budget must be null or finite and > 0, got {budget!r}"
            )
        if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0 <= delta < 1:
            raise LedgerFormatError(f"{where}: delta must be in [0, 1), got {delta!r}")
        entries = raw.get("entries", [])
        if not isinstance(entries, list):
            raise LedgerFormatError(f"{where}: entries must be a list")
        clean, events = [], []
        for index, entry in enumerate(entries):
            at = f"{where}: entry {index}"
            try:
                clean_entry, event = self._validate_entry(entry, at)
            except ValueError as error:
                message = str(error)
                raise LedgerFormatError(
                    message if message.startswith(at) else f"{at}: {message}"
                ) from error
            clean.append(clean_entry)
            events.append(event)
        return {
            "budget": None if budget is None else float(budget),
            "delta": float(delta),
            "entries": clean,
            "events": events,
        }

    @staticmethod
    def _validate_entry(entry: Any, at: str) -> tuple[dict, dp_accounting.DpEvent]:
        if not isinstance(entry, dict):
            raise ValueError(f"{at}: must be a JSON object, got {type(entry).__name__}")
        dataset = entry.get("dataset")
        if not isinstance(dataset, str):
            raise ValueError(f"{at}: dataset must be a string, got {dataset!r}")
        description = entry.get("description", "")
        if not isinstance(description, str):
            raise ValueError(f"{at}: description must be a string, got {description!r}")
        stamp = entry.get("time", 0.0)
        if isinstance(stamp, bool) or not isinstance(stamp, numbers.Real):
            raise ValueError(f"{at}: time must be a number, got {stamp!r}")
        if "event" in entry:
            event = event_from_json(entry["event"], f"{at}: event")
        elif "kind" in entry:
            event = _legacy_event(entry, at)
        else:
            raise ValueError(f"{at}: no event")
        clean = {
            "dataset": dataset,
            "description": description,
            "time": float(stamp),
            "event": event_to_json(event),
        }
        return clean, event

    def _adopt(self, state: dict) -> None:
        """The file's state, with the budget only ever lowered by this object's request."""
        self.entries, self._events = state["entries"], state["events"]
        budgets = [b for b in (state["budget"], self._requested_budget) if b is not None]
        self.budget = min(budgets) if budgets else None
        stored_delta = state["delta"]
        if self._requested_delta not in (0.0, stored_delta):
            raise ValueError(
                f"the ledger at {self.path} accounts at delta {stored_delta:g}, "
                f"not {self._requested_delta:g}"
            )
        self.delta = stored_delta

    @contextlib.contextmanager
    def _locked(self):
        """Exclusive lock across processes, with the whole state re-read from the file."""
        if self.path is None:
            yield None
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(str(self.path) + ".lock", "a+") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                state = self._read_state()
                if state is not None:
                    self._adopt(state)
                yield state
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def refresh(self) -> None:
        """Re-reads the file (other processes' releases, a lowered budget)."""
        with self._locked():
            pass

    # -- queries --------------------------------------------------------------------------
    def datasets(self) -> list[str]:
        return sorted({e["dataset"] for e in self.entries})

    def releases(self, dataset: str) -> int:
        return sum(1 for e in self.entries if e["dataset"] == dataset)

    def events(self, dataset: str) -> list[dp_accounting.DpEvent]:
        """The recorded events of ``dataset``, in order."""
        return [
            ev for e, ev in zip(self.entries, self._events, strict=True) if e["dataset"] == dataset
        ]

    def spent(self, dataset: str, extra: dp_accounting.DpEvent | None = None) -> EpsilonSpent:
        """Composed epsilon of a data set's releases (plus ``extra``, if given)."""
        events = self.events(dataset) + ([] if extra is None else [extra])
        if not events:
            return EpsilonSpent(0.0, None, None, self.delta, 0)
        groups: dict[str, list] = {}  # identical releases -> one self-composed event
        for event in events:
            key = json.dumps(event_to_json(event), sort_keys=True)
            groups.setdefault(key, [event, 0])[1] += 1
        parts = [
            event if n == 1 else dp_accounting.SelfComposedDpEvent(event, n)
            for event, n in groups.values()
        ]
        total = parts[0] if len(parts) == 1 else dp_accounting.ComposedDpEvent(parts)
        spent = composed_epsilon(total, 1, self.delta)
        return EpsilonSpent(spent.basic, spent.pld, spent.rdp, self.delta, len(events))

    def remaining(self, dataset: str) -> float:
        if self.budget is None:
            return math.inf
        return max(self.budget - self.spent(dataset).best, 0.0)

    # -- recording ------------------------------------------------------------------------
    def check(self, event: dp_accounting.DpEvent, dataset: str = "default") -> float:
        """Raises :class:`BudgetExceededError` if ``event`` would exceed the budget."""
        spent = self.spent(dataset, extra=event)
        total = spent.best
        if self.budget is not None and not total <= self.budget * (1 + 1e-12):
            raise BudgetExceededError(
                f"release refused: data set {dataset!r} would spend epsilon {total:.6g} > "
                f"budget {self.budget:g} (delta={self.delta:g}, method {spent.method}; "
                f"{self._where()})"
            )
        return total

    def record(
        self, event: dp_accounting.DpEvent, dataset: str = "default", description: str = ""
    ) -> None:
        """Records one release after checking the budget (nothing is recorded if refused)."""
        if not isinstance(dataset, str) or not isinstance(description, str):
            raise TypeError(f"{self._where()}: dataset and description must be strings")
        try:
            validate_event(event)
            stored = event_to_json(event)
            event_from_json(stored)  # storable and readable back
        except (TypeError, ValueError) as error:
            raise type(error)(f"{self._where()}: cannot record {event!r}: {error}") from error
        with self._locked():
            self.check(event, dataset)
            entry = {
                "dataset": dataset,
                "description": description,
                "time": time.time(),
                "event": stored,
            }
            self.entries = [*self.entries, entry]
            self._events = [*self._events, event]
            self.save()

    def record_release(self, mechanism, dataset: str = "default", description: str = "") -> None:
        """Records one release of a :class:`~dpauc_tf.mechanisms.CountMechanism` (its
        ``dp_event()``)."""
        self.record(mechanism.dp_event(), dataset, description)

    def save(self) -> None:
        """Writes the ledger atomically to ``path`` (no-op without a path)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        state = {
            "version": FORMAT_VERSION,
            "budget": self.budget,
            "delta": self.delta,
            "entries": self.entries,
        }
        fd, tmp = tempfile.mkstemp(
            dir=self.path.parent, prefix=f".{self.path.name}.{os.getpid()}.", suffix=".tmp"
        )
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(state, handle, indent=1, allow_nan=False)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except BaseException as error:
            if os.path.exists(tmp):
                os.unlink(tmp)  # our own temporary file only
            if isinstance(error, OSError):
                raise OSError(f"{self._where()}: cannot write: {error}") from error
            raise

    def summary(self) -> str:
        lines = []
        for dataset in self.datasets():
            spent = self.spent(dataset)
            budget = "" if self.budget is None else f" of budget {self.budget:g}"
            lines.append(
                f"{dataset}: {spent.count} releases, epsilon {spent.best:.4g}{budget} "
                f"(method {spent.method}; basic {spent.basic:.4g}, delta {self.delta:g})"
            )
        return "\n".join(lines) or "no releases"
