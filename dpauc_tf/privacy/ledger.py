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
project's registered events ([`SkellamDpEvent`][dpauc_tf.privacy.events.SkellamDpEvent]), as JSON
written by `event_to_json`. [`PrivacyLedger.record_release`][]
asks the mechanism for its event (``mechanism.dp_event()``), which describes its noise
exactly (discrete noise as dp-accounting's discrete-Laplace event, Skellam by its own
event). A data set's spend is [`dpauc_tf.privacy.accounting.composed_epsilon`][] of all
its releases: PLD where dp-accounting's PLD accountant supports every event, RDP where the
RDP accountant and the Skellam curve cover them, the basic sum otherwise; the smallest
valid figure is used and `PrivacyLedger.summary` (and ``spent(...).method``) says
which.

**Cost of a release.** Identical releases of a data set are kept as one count, so a figure
is one composition whatever the number of releases. A release is admitted without
recomposing everything when a cheap valid bound (the basic sum, the Renyi bound) or an
earlier exact figure of at least as many releases of each kind already fits the budget
(adding releases never lowers the true epsilon, and every figure bounds it from above);
only near the budget is the exact figure computed. The admitted releases are the ones the
exact figure admits, and [`PrivacyLedger.spent`][] gives the exact figure.

**The file** (``path=``) is the single source of truth, in JSON Lines: a header line
(``{"version": 3, "budget": ..., "delta": ...}``) and one line per release. Every release
takes an exclusive lock on ``PATH.lock``, reads what other processes (or stale
``PrivacyLedger`` objects) appended since this object last looked (the whole file again if
it was replaced or shortened), checks the budget, appends its line with one ``write`` and
``fdatasync`` (``fsync`` where that is missing) and releases the lock. A process killed
while writing can leave a last line without its newline: it was never acknowledged, is not
read, and the next release cuts it off before appending. A budget survives a restart. A
budget can only go down: a ledger opened with a smaller budget lowers the file's by
rewriting it atomically (a temporary file ``.NAME.PID.RANDOM.tmp`` next to it, ``fsync``,
``os.replace``, ``fsync`` of the directory); a larger one is refused, and so is a different
delta. A process removes only its own temporary files; a process killed while rewriting
leaves one behind (hidden, never read). Files of the earlier formats (one JSON object,
versions 1 and 2) are read and rewritten in this format at their first release.

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

from dpauc_tf.privacy.accounting import (
    EpsilonSpent,
    composed_epsilon,
    infinite_reason,
    quick_epsilon,
)
from dpauc_tf.privacy.events import (
    event_from_json,
    event_to_json,
    validate_event,
)
from dpauc_tf.privacy.events import (
    legacy_ledger_event as _legacy_event,
)

FORMAT_VERSION = 3
# Exact figures kept to admit later releases without recomposing (the newest first).
_CERTIFICATES = 16
_TOLERANCE = 1e-12


class BudgetExceededError(RuntimeError):
    """Raised when a release would take a data set past its privacy budget."""


class LedgerFormatError(ValueError):
    """A ledger file that cannot be trusted (malformed, or an entry with invalid values)."""


def _event_key(event: dp_accounting.DpEvent) -> str:
    return json.dumps(event_to_json(event), sort_keys=True)


def _sync_data(fd: int) -> None:
    (getattr(os, "fdatasync", None) or os.fsync)(fd)


class PrivacyLedger:
    """Records releases per data set, composes them, and enforces an epsilon budget.

    Args:
      budget: the largest total epsilon any one data set may reach (``None``: no limit,
        the ledger only records).
      delta: the delta at which composed epsilons are reported (0 for pure DP; Gaussian
        and Skellam releases, and ``auc-only``'s, need ``delta > 0``).
      path: optional file that holds the ledger across restarts and processes.
      durable: ``True`` (default): every release is on the disk (``fdatasync``) before
        [`record`][] returns, so not even a power loss forgets it. ``False`` skips that
        wait (one disk flush per release, milliseconds on a busy disk): a killed process
        still loses nothing, an operating-system crash may lose the last releases.

    Non-private releases count as infinite epsilon. See the module docstring for the file.
    """

    def __init__(
        self,
        budget: float | None = None,
        delta: float = 0.0,
        path: str | None = None,
        *,
        durable: bool = True,
    ):
        self.path = Path(path) if path is not None else None
        self.durable = bool(durable)
        self._checked: set[str] = set()  # keys of events already validated
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
        self._clear()
        # What this object has read of the file: (device, inode, bytes read, last line),
        # or None (nothing read, or a file of an earlier format: rewrite before appending).
        self._file: tuple[int, int, int, bytes] | None = None
        self._certified: list[tuple[dict[str, int], float]] = []
        self._stored_budget: float | None = None  # the file's own budget, as last read
        if self.path is not None and self.path.exists():
            with self._locked(reopened_with=self._requested_budget) as stored:
                if stored != self.budget:
                    self.save()  # a smaller budget lowers the file's

    def _where(self) -> str:
        return f"ledger {self.path}" if self.path is not None else "in-memory ledger"

    def _clear(self) -> None:
        self.entries: list[dict] = []
        self._events: list[dp_accounting.DpEvent] = []
        # data set -> event key -> [event, count], in the order of first appearance
        self._groups: dict[str, dict[str, list]] = {}

    def _add(self, entry: dict, event: dp_accounting.DpEvent, key: str | None = None) -> None:
        self.entries.append(entry)
        self._events.append(event)
        groups = self._groups.setdefault(entry["dataset"], {})
        group = groups.setdefault(_event_key(event) if key is None else key, [event, 0])
        group[1] += 1

    # -- the file -------------------------------------------------------------------------
    def _header(self, raw: Any, where: str) -> tuple[float | None, float]:
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
        return (None if budget is None else float(budget)), float(delta)

    def _parse_entry(self, entry: Any, index: int, memo: dict) -> tuple[dict, Any]:
        at = f"ledger {self.path}: entry {index}"
        try:
            return self._validate_entry(entry, at, memo)
        except ValueError as error:
            message = str(error)
            raise LedgerFormatError(
                message if message.startswith(at) else f"{at}: {message}"
            ) from error

    @staticmethod
    def _validate_entry(entry: Any, at: str, memo: dict | None = None) -> tuple[dict, Any]:
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
            raw = entry["event"]
            text = json.dumps(raw, sort_keys=True) if memo is not None else None
            known = memo.get(text) if memo is not None else None
            if known is None:
                event = event_from_json(raw, f"{at}: event")
                stored = event_to_json(event)
                known = (event, stored, json.dumps(stored, sort_keys=True))
                if memo is not None:
                    memo[text] = known
        elif "kind" in entry:
            event = _legacy_event(entry, at)
            known = (event, event_to_json(event), _event_key(event))
        else:
            raise ValueError(f"{at}: no event")
        event, stored, key = known
        clean = {"dataset": dataset, "description": description, "time": float(stamp)}
        clean["event"] = stored
        return clean, (event, key)

    def _read_all(self, data: bytes, stat: os.stat_result) -> None:
        """Replaces the state with the whole file's."""
        where = f"ledger {self.path}"
        first, newline, rest = data.partition(b"\n")
        try:
            header = json.loads(first) if newline else None
        except ValueError:
            header = None
        memo: dict = {}
        if isinstance(header, dict) and header.get("version") == FORMAT_VERSION:
            budget, delta = self._header(header, where)
            lines = rest.split(b"\n")
            complete, torn = lines[:-1], lines[-1]  # torn: a killed writer's unended line
            parsed = []
            for index, line in enumerate(complete):
                try:
                    raw = json.loads(line)
                except ValueError as error:
                    raise LedgerFormatError(
                        f"{where}: entry {index}: cannot read JSON: {error}"
                    ) from error
                parsed.append(self._parse_entry(raw, index, memo))
            self._adopt(budget, delta)
            self._clear()
            for clean, (event, key) in parsed:
                self._add(clean, event, key)
            read = len(data) - len(torn)
            last = (complete[-1] if complete else first) + b"\n"
            self._file = (stat.st_dev, stat.st_ino, read, last)
            return
        try:  # the earlier formats: one JSON object
            raw = json.loads(data)
        except ValueError as error:
            raise LedgerFormatError(f"{where}: cannot read JSON: {error}") from error
        budget, delta = self._header(raw, where)
        entries = raw.get("entries", [])
        if not isinstance(entries, list):
            raise LedgerFormatError(f"{where}: entries must be a list")
        parsed = [self._parse_entry(entry, i, memo) for i, entry in enumerate(entries)]
        self._adopt(budget, delta)
        self._clear()
        for clean, (event, key) in parsed:
            self._add(clean, event, key)
        self._file = None  # rewritten in the current format before the next release

    def _sync(self) -> bool:
        """Brings the state up to the file (under the lock); ``False`` if there is none."""
        try:
            handle = open(self.path, "rb")
        except FileNotFoundError:
            self._file = None  # the next write recreates it from this object's state
            return False
        except OSError as error:
            raise LedgerFormatError(f"ledger {self.path}: cannot read: {error}") from error
        with handle:
            stat = os.fstat(handle.fileno())
            known = self._file
            if (
                known is not None
                and (stat.st_dev, stat.st_ino) == known[:2]
                and stat.st_size >= known[2]
                and os.pread(handle.fileno(), len(known[3]), known[2] - len(known[3])) == known[3]
            ):
                if stat.st_size > known[2]:
                    handle.seek(known[2])
                    self._read_appended(handle.read(), known)
                return True
            self._read_all(handle.read(), stat)
            return True

    def _read_appended(self, data: bytes, known: tuple[int, int, int, bytes]) -> None:
        lines = data.split(b"\n")
        complete = lines[:-1]
        index = len(self.entries)
        memo: dict = {}
        parsed = []
        for i, line in enumerate(complete):
            try:
                raw = json.loads(line)
            except ValueError as error:
                raise LedgerFormatError(
                    f"ledger {self.path}: entry {index + i}: cannot read JSON: {error}"
                ) from error
            parsed.append(self._parse_entry(raw, index + i, memo))
        for clean, (event, key) in parsed:
            self._add(clean, event, key)
        if complete:
            read = known[2] + sum(len(line) + 1 for line in complete)
            self._file = (known[0], known[1], read, complete[-1] + b"\n")

    def _adopt(self, budget: float | None, delta: float) -> None:
        """The file's budget and delta, the budget only ever lowered by this object's request."""
        self._stored_budget = budget
        budgets = [b for b in (budget, self._requested_budget) if b is not None]
        self.budget = min(budgets) if budgets else None
        if self._requested_delta not in (0.0, delta):
            raise ValueError(
                f"the ledger at {self.path} accounts at delta {delta:g}, "
                f"not {self._requested_delta:g}"
            )
        self.delta = delta

    @contextlib.contextmanager
    def _locked(self, reopened_with: float | None = None):
        """Exclusive lock across processes, with the state brought up to the file's; yields
        the file's own budget (``None``: no budget, or no file)."""
        if self.path is None:
            yield None
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(str(self.path) + ".lock", "a+") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                present = self._sync()
                stored = self._stored_budget if present else None
                if reopened_with is not None and stored is not None and reopened_with > stored:
                    raise ValueError(
                        f"the ledger at {self.path} has budget {stored:g}; "
                        f"it cannot be reopened with the larger budget {reopened_with:g}"
                    )
                yield stored
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def refresh(self) -> None:
        """Re-reads the file (other processes' releases, a lowered budget)."""
        with self._locked():
            pass

    # -- queries --------------------------------------------------------------------------
    def datasets(self) -> list[str]:
        return sorted(self._groups)

    def releases(self, dataset: str) -> int:
        return sum(count for _, count in self._groups.get(dataset, {}).values())

    def events(self, dataset: str) -> list[dp_accounting.DpEvent]:
        """The recorded events of ``dataset``, in order."""
        return [
            ev for e, ev in zip(self.entries, self._events, strict=True) if e["dataset"] == dataset
        ]

    def _counts(
        self, dataset: str, extra: dp_accounting.DpEvent | None, key: str | None = None
    ) -> dict[str, list]:
        """Event key -> [event, count] of ``dataset``'s releases plus ``extra``."""
        groups = {k: list(group) for k, group in self._groups.get(dataset, {}).items()}
        if extra is not None:
            groups.setdefault(_event_key(extra) if key is None else key, [extra, 0])[1] += 1
        return groups

    @staticmethod
    def _total(groups: dict[str, list]) -> dp_accounting.DpEvent:
        parts = [
            event if n == 1 else dp_accounting.SelfComposedDpEvent(event, n)
            for event, n in groups.values()
        ]
        return parts[0] if len(parts) == 1 else dp_accounting.ComposedDpEvent(parts)

    def spent(self, dataset: str, extra: dp_accounting.DpEvent | None = None) -> EpsilonSpent:
        """Composed epsilon of a data set's releases (plus ``extra``, if given)."""
        groups = self._counts(dataset, extra)
        count = sum(n for _, n in groups.values())
        if not count:
            return EpsilonSpent(0.0, None, None, self.delta, 0)
        spent = composed_epsilon(self._total(groups), 1, self.delta)
        return EpsilonSpent(spent.basic, spent.pld, spent.rdp, self.delta, count)

    def remaining(self, dataset: str) -> float:
        if self.budget is None:
            return math.inf
        return max(self.budget - self.spent(dataset).best, 0.0)

    # -- recording ------------------------------------------------------------------------
    def check(self, event: dp_accounting.DpEvent, dataset: str = "default") -> float:
        """Raises [`BudgetExceededError`][] if ``event`` would exceed the budget; returns
        the composed epsilon with it."""
        spent = self.spent(dataset, extra=event)
        total = spent.best
        if self.budget is not None and not total <= self.budget * (1 + _TOLERANCE):
            reason = None
            if math.isinf(total):
                reason = infinite_reason(self._total(self._counts(dataset, event)), self.delta)
            raise BudgetExceededError(
                f"release refused: data set {dataset!r} would spend epsilon {total:.6g} > "
                f"budget {self.budget:g} (delta={self.delta:g}, method {spent.method}; "
                f"{self._where()})" + (f": {reason}" if reason else "")
            )
        return total

    def _covered(self, groups: dict[str, list]) -> bool:
        """Whether an earlier exact figure of at least these releases fits the budget."""
        limit = self.budget * (1 + _TOLERANCE)
        for counts, figure in self._certified:
            if figure <= limit and all(counts.get(k, 0) >= n for k, (_, n) in groups.items()):
                return True
        return False

    def _certify(self, groups: dict[str, list], figure: float) -> None:
        counts = {key: n for key, (_, n) in groups.items()}
        self._certified = [(counts, figure), *self._certified][:_CERTIFICATES]

    def _scaled(self, groups: dict[str, list], factor: float) -> dict[str, list]:
        return {k: [e, max(n, math.ceil(n * factor))] for k, (e, n) in groups.items()}

    def _admit(self, event: dp_accounting.DpEvent, dataset: str, key: str) -> None:
        """Raises [`BudgetExceededError`][] exactly when [`check`][] would (see the
        module docstring), computing the exact figure only when no cheap bound decides."""
        if self.budget is None:
            return
        groups = self._counts(dataset, event, key)
        if self._covered(groups):
            return
        limit = self.budget * (1 + _TOLERANCE)
        if quick_epsilon(self._total(groups), self.delta) <= limit:
            self._look_ahead(groups, limit, exact=False)
            return
        figure = self.check(event, dataset)  # raises when refused
        self._certify(groups, figure)
        self._look_ahead(groups, limit, exact=True, figure=figure)

    def _look_ahead(self, groups, limit: float, exact: bool, figure: float = 0.0) -> None:
        """Certifies more releases of the same mix than ``groups``: by the cheap bound (a
        doubling search), or, near the budget, by one exact figure a little further on."""
        if not exact:
            good, bad = 1.0, None
            factor = 2.0
            while bad is None and factor <= 2.0**20:
                value = quick_epsilon(self._total(self._scaled(groups, factor)), self.delta)
                if value <= limit:
                    good, factor = factor, factor * 2.0
                else:
                    bad = factor
            for _ in range(8 if bad is not None else 0):
                middle = math.sqrt(good * bad)
                value = quick_epsilon(self._total(self._scaled(groups, middle)), self.delta)
                good, bad = (middle, bad) if value <= limit else (good, middle)
            if good > 1.0:
                scaled = self._scaled(groups, good)
                value = quick_epsilon(self._total(scaled), self.delta)
                if value <= limit:
                    self._certify(scaled, value)
            return
        # Exact: one probe at half the relative room left (the figure grows at most linearly).
        room = (limit - figure) / max(figure, 1e-300)
        if room <= 1e-6:
            return
        scaled = self._scaled(groups, 1.0 + min(room / 2.0, 1.0))
        value = composed_epsilon(self._total(scaled), 1, self.delta).best
        if value <= limit:
            self._certify(scaled, value)

    def record(
        self, event: dp_accounting.DpEvent, dataset: str = "default", description: str = ""
    ) -> None:
        """Records one release after checking the budget (nothing is recorded if refused)."""
        if not isinstance(dataset, str) or not isinstance(description, str):
            raise TypeError(f"{self._where()}: dataset and description must be strings")
        try:
            stored = event_to_json(event)
            key = json.dumps(stored, sort_keys=True)
            if key not in self._checked:
                validate_event(event)
                event_from_json(stored)  # storable and readable back
                self._checked.add(key)
        except (TypeError, ValueError) as error:
            raise type(error)(f"{self._where()}: cannot record {event!r}: {error}") from error
        entry = {"dataset": dataset, "description": description, "time": 0.0, "event": stored}
        with self._locked():
            self._admit(event, dataset, key)
            entry["time"] = time.time()
            if self.path is None:
                self._add(entry, event, key)
            elif self._file is None:
                self._add(entry, event, key)
                self.save()  # a new file, or one of an earlier format
            else:
                self._append(entry, event, key)

    def record_release(self, mechanism, dataset: str = "default", description: str = "") -> None:
        """Records one release of a `CountMechanism` (its
        ``dp_event()``)."""
        self.record(mechanism.dp_event(), dataset, description)

    def _append(self, entry: dict, event: dp_accounting.DpEvent, key: str) -> None:
        """Appends one line (under the lock, the state in step with the file)."""
        device, inode, read, _ = self._file
        line = (json.dumps(entry, allow_nan=False) + "\n").encode()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except OSError as error:
            raise OSError(f"{self._where()}: cannot write: {error}") from error
        try:
            if os.fstat(fd).st_size != read:
                os.ftruncate(fd, read)  # a killed writer's unended line: never acknowledged
            written = 0
            try:
                while written < len(line):
                    written += os.write(fd, line[written:])
                if self.durable:
                    _sync_data(fd)
            except BaseException:
                os.ftruncate(fd, read)  # nothing half-written stays
                raise
        except OSError as error:
            raise OSError(f"{self._where()}: cannot write: {error}") from error
        finally:
            os.close(fd)
        self._add(entry, event, key)
        self._file = (device, inode, read + len(line), line)

    def save(self) -> None:
        """Writes the whole ledger atomically to ``path`` (no-op without a path)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        header = {"version": FORMAT_VERSION, "budget": self.budget, "delta": self.delta}
        lines = [json.dumps(header, allow_nan=False)]
        lines += [json.dumps(entry, allow_nan=False) for entry in self.entries]
        data = ("\n".join(lines) + "\n").encode()
        fd, tmp = tempfile.mkstemp(
            dir=self.path.parent, prefix=f".{self.path.name}.{os.getpid()}.", suffix=".tmp"
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
                stat = os.fstat(handle.fileno())
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
        self._file = (stat.st_dev, stat.st_ino, len(data), (lines[-1] + "\n").encode())
        self._stored_budget = self.budget

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
