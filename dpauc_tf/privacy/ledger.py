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
dpauc_tf.privacy.ledger.BudgetExceededError: release refused: data set 'test' would spend epsilon 1.5 > budget 1 (delta=0)

The ledger's state can be kept in a JSON file (``path=``). Every release takes an exclusive
lock on ``PATH.lock``, re-reads the file (so several processes can share one ledger), checks
the budget and rewrites the file atomically (temporary file, ``fsync``, ``os.replace``, then
``fsync`` of the directory): a budget survives a restart, and a crash never leaves a
half-written file. The budget and delta are stored in the file; a ledger cannot be reopened
with a larger budget or a different delta.

Discrete (integer) noise: dp-accounting has no discrete-Laplace event, and the continuous
Laplace event's PLD/RDP figures understate the delta of discrete noise. Releases with
discrete noise (``record_release`` detects them) are therefore composed by the basic sum of
their pure epsilons only, which is exact for pure DP.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import tempfile
import time
from pathlib import Path

import dp_accounting

from dpauc_tf.privacy.accounting import EpsilonSpent, composed_epsilon


class BudgetExceededError(RuntimeError):
    """Raised when a release would take a data set past its privacy budget."""


class DiscreteLaplaceEvent:
    """A pure-DP release with discrete Laplace noise: epsilon ``1 / noise_multiplier``.

    Composed by the basic sum only (see the module docstring).
    """

    def __init__(self, noise_multiplier: float):
        self.noise_multiplier = float(noise_multiplier)

    @property
    def epsilon(self) -> float:
        return 1.0 / self.noise_multiplier

    def __eq__(self, other):
        return isinstance(other, DiscreteLaplaceEvent) and other.noise_multiplier == (
            self.noise_multiplier
        )

    def __hash__(self):
        return hash(("discrete-laplace", self.noise_multiplier))


def release_event(mechanism) -> dp_accounting.DpEvent | DiscreteLaplaceEvent:
    """The ledger event of one release of ``mechanism`` (discrete noise detected)."""
    event = mechanism.dp_event()
    discrete = getattr(mechanism, "noise", None) == "discrete" or getattr(
        mechanism, "integer_release", False
    )
    if discrete and isinstance(event, dp_accounting.LaplaceDpEvent):
        return DiscreteLaplaceEvent(event.noise_multiplier)
    return event


def event_to_dict(event: dp_accounting.DpEvent) -> dict:
    if isinstance(event, dp_accounting.LaplaceDpEvent):
        return {"kind": "laplace", "noise_multiplier": event.noise_multiplier}
    if isinstance(event, DiscreteLaplaceEvent):
        return {"kind": "discrete-laplace", "noise_multiplier": event.noise_multiplier}
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return {"kind": "gaussian", "noise_multiplier": event.noise_multiplier}
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        return {"kind": "non-private"}
    raise TypeError(f"the ledger cannot store {type(event).__name__}")


def event_from_dict(entry: dict) -> dp_accounting.DpEvent:
    kind = entry["kind"]
    if kind == "laplace":
        return dp_accounting.LaplaceDpEvent(noise_multiplier=entry["noise_multiplier"])
    if kind == "discrete-laplace":
        return DiscreteLaplaceEvent(noise_multiplier=entry["noise_multiplier"])
    if kind == "gaussian":
        return dp_accounting.GaussianDpEvent(noise_multiplier=entry["noise_multiplier"])
    if kind == "non-private":
        return dp_accounting.NonPrivateDpEvent()
    raise ValueError(f"unknown event kind {kind!r} in ledger")


def _grouped_events(entries: list[dict], extra) -> list[dp_accounting.DpEvent]:
    """Identical releases become one self-composed event (faster, same accounting)."""
    groups: dict[tuple, int] = {}
    for entry in entries:
        key = tuple(sorted(event_to_dict(event_from_dict(entry)).items()))
        groups[key] = groups.get(key, 0) + 1
    if extra is not None:
        key = tuple(sorted(event_to_dict(extra).items()))
        groups[key] = groups.get(key, 0) + 1
    events = []
    for key, count in groups.items():
        event = event_from_dict(dict(key))
        if isinstance(event, DiscreteLaplaceEvent):
            events.extend([event] * count)  # summed, never handed to an accountant
        else:
            events.append(event if count == 1 else dp_accounting.SelfComposedDpEvent(event, count))
    return events


class PrivacyLedger:
    """Records releases per data set, composes them, and enforces an epsilon budget.

    Args:
      budget: the largest total epsilon any one data set may reach (``None``: no limit,
        the ledger only records).
      delta: the delta at which composed epsilons are reported (0 for pure DP; Gaussian
        releases need ``delta > 0``).
      path: optional JSON file that holds the ledger across restarts.

    A data set's spend is the smallest valid figure of
    :func:`dpauc_tf.privacy.accounting.composed_epsilon` over its releases (basic composition for
    pure DP; PLD for ``delta > 0``). Non-private releases count as infinite epsilon.
    """

    def __init__(self, budget: float | None = None, delta: float = 0.0, path: str | None = None):
        if budget is not None and not (budget > 0 and math.isfinite(budget)):
            raise ValueError(f"budget must be finite and > 0, got {budget}")
        if not 0.0 <= delta < 1.0:
            raise ValueError(f"delta must be in [0, 1), got {delta}")
        self.budget = budget
        self.delta = delta
        self.path = Path(path) if path is not None else None
        self.entries: list[dict] = []
        if self.path is not None:
            for stale in self.path.parent.glob(self.path.name + "*.tmp"):
                stale.unlink(missing_ok=True)  # left by a write that was killed
            state = self._read_state()
            if state is not None:
                stored_budget, stored_delta = state.get("budget"), state.get("delta", 0.0)
                if stored_budget is not None and (budget is None or budget > stored_budget):
                    if budget is not None:
                        raise ValueError(
                            f"the ledger at {self.path} has budget {stored_budget:g}; "
                            f"it cannot be reopened with the larger budget {budget:g}"
                        )
                    self.budget = stored_budget
                if stored_delta != delta:
                    if delta != 0.0:
                        raise ValueError(
                            f"the ledger at {self.path} accounts at delta {stored_delta:g}, "
                            f"not {delta:g}"
                        )
                    self.delta = stored_delta
                self.entries = list(state.get("entries", []))

    def _read_state(self) -> dict | None:
        if self.path is None or not self.path.exists():
            return None
        return json.loads(self.path.read_text())

    @contextlib.contextmanager
    def _locked(self):
        """Exclusive lock across processes, with the entries re-read from disk."""
        if self.path is None:
            yield
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(str(self.path) + ".lock", "a+") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                state = self._read_state()
                if state is not None:
                    self.entries = list(state.get("entries", []))
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    # -- queries --------------------------------------------------------------------------
    def datasets(self) -> list[str]:
        return sorted({e["dataset"] for e in self.entries})

    def releases(self, dataset: str) -> int:
        return sum(1 for e in self.entries if e["dataset"] == dataset)

    def spent(self, dataset: str, extra: dp_accounting.DpEvent | None = None) -> EpsilonSpent:
        """Composed epsilon of a data set's releases (plus ``extra``, if given)."""
        entries = [e for e in self.entries if e["dataset"] == dataset]
        events = _grouped_events(entries, extra)
        if not events:
            return EpsilonSpent(0.0, None, None, self.delta, 0)
        count = len(entries) + (extra is not None)
        if any(isinstance(e, dp_accounting.NonPrivateDpEvent) for e in events):
            return EpsilonSpent(math.inf, None, None, self.delta, count)
        discrete = 0.0
        accountable = []
        for event in events:
            inner = event.event if isinstance(event, dp_accounting.SelfComposedDpEvent) else event
            if isinstance(inner, DiscreteLaplaceEvent):
                times = event.count if inner is not event else 1
                discrete += inner.epsilon * times
            else:
                accountable.append(event)
        if not accountable:
            return EpsilonSpent(discrete, None, None, self.delta, count)
        if len(accountable) == 1:
            event = accountable[0]
        else:
            event = dp_accounting.ComposedDpEvent(accountable)
        spent = composed_epsilon(event, 1, self.delta)
        return EpsilonSpent(
            spent.basic + discrete,
            None if spent.pld is None else spent.pld + discrete,
            None if spent.rdp is None else spent.rdp + discrete,
            self.delta,
            count,
        )

    def remaining(self, dataset: str) -> float:
        if self.budget is None:
            return math.inf
        return max(self.budget - self.spent(dataset).best, 0.0)

    # -- recording ------------------------------------------------------------------------
    def check(self, event: dp_accounting.DpEvent, dataset: str = "default") -> float:
        """Raises :class:`BudgetExceededError` if ``event`` would exceed the budget."""
        total = self.spent(dataset, extra=event).best
        if self.budget is not None and total > self.budget * (1 + 1e-12):
            raise BudgetExceededError(
                f"release refused: data set {dataset!r} would spend epsilon {total:.6g} > "
                f"budget {self.budget:g} (delta={self.delta:g})"
            )
        return total

    def record(
        self, event: dp_accounting.DpEvent, dataset: str = "default", description: str = ""
    ) -> None:
        """Records one release after checking the budget (nothing is recorded if refused)."""
        with self._locked():
            self.check(event, dataset)
            self.entries.append(
                {
                    "dataset": dataset,
                    "description": description,
                    "time": time.time(),
                    **event_to_dict(event),
                }
            )
            self.save()

    def record_release(self, mechanism, dataset: str = "default", description: str = "") -> None:
        """Records one release of a :class:`~dpauc_tf.mechanisms.CountMechanism`."""
        self.record(release_event(mechanism), dataset, description)

    def save(self) -> None:
        """Writes the ledger atomically to ``path`` (no-op without a path)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        state = {"budget": self.budget, "delta": self.delta, "entries": self.entries}
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as handle:
                json.dump(state, handle, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def summary(self) -> str:
        lines = []
        for dataset in self.datasets():
            spent = self.spent(dataset)
            budget = "" if self.budget is None else f" of budget {self.budget:g}"
            lines.append(
                f"{dataset}: {spent.count} releases, epsilon {spent.best:.4g}{budget} "
                f"(basic {spent.basic:.4g}, delta {self.delta:g})"
            )
        return "\n".join(lines) or "no releases"
