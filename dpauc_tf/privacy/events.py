"""Privacy events: the project's own ``DpEvent`` (Skellam), validation, and JSON round trips.

A release is described by a ``dp_accounting.DpEvent``. dp-accounting has no Skellam event,
so [`SkellamDpEvent`][] describes one Skellam release (one or several vectors, e.g. the
levels of a tree, each with Skellam(mu, mu) noise); [`dpauc_tf.privacy.accounting`][]
composes it by its Renyi curve (`dpauc_tf.privacy.skellam.skellam_rdp`) and by its
PLD from the pmf (`dpauc_tf.privacy.skellam.skellam_event_pld`).

Events travel as JSON through ``to_named_tuple`` (dp-accounting's own representation):
`event_to_json` and `event_from_json`. Reading accepts only classes of the
``dp_accounting`` package and classes registered with `register_event` (nothing else
is imported), and `validate_event` refuses parameters that would make an accountant
report a negative or undefined epsilon (negative or NaN noise, non-integer counts).

    >>> import dp_accounting
    >>> event = dp_accounting.SelfComposedDpEvent(dp_accounting.LaplaceDpEvent(2.0), 3)
    >>> event_from_json(event_to_json(event)) == event
    True
    >>> event_from_json({"module_name": "os", "class_name": "system"})
    Traceback (most recent call last):
    ...
    ValueError: event: class os.system is neither a dp_accounting event nor a registered project event
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import attr
import dp_accounting
from dp_accounting import dp_event


def _positive_finite(instance, attribute, value) -> None:
    del instance
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{attribute.name} must be a number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be finite and > 0, got {value!r}")


def _positive_finite_tuple(instance, attribute, value) -> None:
    if len(value) == 0:
        raise ValueError(f"{attribute.name} must not be empty")
    for item in value:
        _positive_finite(instance, attribute, item)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class SkellamDpEvent(dp_accounting.DpEvent):
    """One release with Skellam(mu_i, mu_i) noise on each of ``len(mus)`` vectors.

    Each vector (a flat histogram: one; a tree: one per level) changes between neighbours
    by at most ``l1`` in L1 norm and ``l2_squared`` in squared L2 norm; the release's Renyi
    divergence is the sum of the vectors' bounds (Agarwal, Kairouz & Liu 2021, Thm. 3.5).
    """

    mus: tuple = attr.ib(converter=lambda x: tuple(float(v) for v in x))
    l1: float = attr.ib(converter=float)
    l2_squared: float = attr.ib(converter=float)

    @mus.validator
    def _check_mus(self, attribute, value):
        _positive_finite_tuple(self, attribute, value)

    @l1.validator
    def _check_l1(self, attribute, value):
        _positive_finite(self, attribute, value)

    @l2_squared.validator
    def _check_l2(self, attribute, value):
        _positive_finite(self, attribute, value)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class BoundFailureDpEvent(dp_accounting.DpEvent):
    """The ``delta`` of a release whose other events hold except with probability ``delta``.

    A mechanism that calibrates its noise to a noisy *lower bound* of a private quantity
    (``auc-only``: the smaller class count) is (epsilon, delta)-DP with ``epsilon`` the sum
    of its Laplace events and ``delta`` the probability that the bound is wrong
    (propose-test-release style). This event carries that ``delta``: it costs no epsilon
    and uses ``delta`` of the total; [`dpauc_tf.privacy.accounting`][] composes it by
    basic composition only (epsilons and deltas add).
    """

    delta: float = attr.ib(converter=float)

    @delta.validator
    def _check_delta(self, attribute, value):
        if not (math.isfinite(value) and 0.0 < value < 1.0):
            raise ValueError(f"{attribute.name} must be in (0, 1), got {value!r}")


# (module, class name) -> class: the project's events that may be read back from JSON.
_REGISTERED: dict[tuple[str, str], type] = {}


def register_event(cls: type) -> type:
    """Allows [`event_from_json`][] to rebuild ``cls`` (an attrs ``DpEvent`` subclass).

    A project event must be accounted somewhere ([`dpauc_tf.privacy.accounting`][] knows
    [`SkellamDpEvent`][]); an event no accountant knows counts as infinite epsilon.
    """
    if not (isinstance(cls, type) and issubclass(cls, dp_accounting.DpEvent) and attr.has(cls)):
        raise TypeError(f"{cls!r} is not an attrs DpEvent subclass")
    _REGISTERED[(cls.__module__, cls.__name__)] = cls
    return cls


register_event(SkellamDpEvent)
register_event(BoundFailureDpEvent)


def _is_named_event(value: Any) -> bool:
    fields = getattr(value, "_fields", None)
    return isinstance(value, tuple) and fields is not None and "class_name" in fields


def _plain(value: Any) -> Any:
    """JSON-compatible copy of a named-tuple field value."""
    if _is_named_event(value):
        return {name: _plain(getattr(value, name)) for name in value._fields}
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    raise TypeError(f"cannot store a value of type {type(value).__name__} in JSON: {value!r}")


# Classes whose ``to_named_tuple`` has been seen to work (it refuses some attrs layouts).
_NAMED_TUPLE_CHECKED: set[type] = set()


class _Fallback(Exception):
    pass


def _fast_plain(value: Any) -> Any:
    """`_plain` of ``to_named_tuple()``'s value for events, numbers and sequences,
    without building a named-tuple class per call; raises `_Fallback` otherwise."""
    if isinstance(value, dp_accounting.DpEvent):
        cls = type(value)
        if cls not in _NAMED_TUPLE_CHECKED:
            raise _Fallback
        out = {"module_name": cls.__module__, "class_name": cls.__name__}
        for field in attr.fields(cls):
            out[field.name] = _fast_plain(getattr(value, field.name))
        return out
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [_fast_plain(v) for v in value]
    raise _Fallback


def _mark_checked(event: Any) -> None:
    if isinstance(event, dp_accounting.DpEvent):
        _NAMED_TUPLE_CHECKED.add(type(event))
        for field in attr.fields(type(event)):
            value = getattr(event, field.name)
            for item in value if isinstance(value, (list, tuple)) else [value]:
                _mark_checked(item)


def event_to_json(event: dp_accounting.DpEvent) -> dict:
    """A JSON-compatible dict of ``event`` (``module_name``, ``class_name`` and the fields;
    nested events as nested dicts), as ``event.to_named_tuple()`` gives it."""
    if not isinstance(event, dp_accounting.DpEvent):
        raise TypeError(f"expected a dp_accounting.DpEvent, got {type(event).__name__}")
    try:
        return _fast_plain(event)
    except _Fallback:
        plain = _plain(event.to_named_tuple())
        _mark_checked(event)
        return plain


def _event_class(module_name: Any, class_name: Any, where: str) -> type:
    if not isinstance(module_name, str) or not isinstance(class_name, str):
        raise ValueError(f"{where}: module_name and class_name must be strings")
    registered = _REGISTERED.get((module_name, class_name))
    if registered is not None:
        return registered
    if module_name == "dp_accounting" or module_name.startswith("dp_accounting."):
        import importlib

        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as error:
            raise ValueError(f"{where}: no event class {module_name}.{class_name}") from error
        if isinstance(cls, type) and issubclass(cls, dp_accounting.DpEvent) and attr.has(cls):
            return cls
        raise ValueError(f"{where}: {module_name}.{class_name} is not a DpEvent class")
    raise ValueError(
        f"{where}: class {module_name}.{class_name} is neither a dp_accounting event nor a "
        "registered project event"
    )


def _from_plain(value: Any, where: str) -> Any:
    if isinstance(value, dict) and "class_name" in value:
        return event_from_json(value, where)
    if isinstance(value, list):
        return [_from_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def event_from_json(data: Any, where: str = "event") -> dp_accounting.DpEvent:
    """Rebuilds (and validates) an event written by [`event_to_json`][].

    Only ``dp_accounting`` classes and registered project events are rebuilt; ``where``
    names the place in error messages.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{where}: an event must be a JSON object, got {type(data).__name__}")
    cls = _event_class(data.get("module_name"), data.get("class_name"), where)
    names = {field.name for field in attr.fields(cls)}
    given = set(data) - {"module_name", "class_name"}
    if given != names:
        raise ValueError(
            f"{where}: {cls.__name__} has fields {sorted(names)}, the entry has {sorted(given)}"
        )
    values = {name: _from_plain(data[name], f"{where}.{name}") for name in names}
    try:
        event = cls(**values)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: invalid {cls.__name__}: {error}") from error
    validate_event(event, where)
    return event


def _check_number(value: Any, where: str, *, integer: bool = False, low: float = 0.0) -> None:
    if isinstance(value, bool) or not isinstance(
        value, numbers.Integral if integer else numbers.Real
    ):
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{where} must be {kind}, got {value!r}")
    if not (math.isfinite(value) and value >= low):
        raise ValueError(f"{where} must be finite and >= {low:g}, got {value!r}")


def validate_event(event: Any, where: str = "event") -> None:
    """Raises ``ValueError`` (naming ``where`` and the field) if ``event`` has parameters
    that no mechanism produces: negative, zero or NaN noise, negative or fractional counts,
    a randomized-response probability outside (0, 1]."""
    if not isinstance(event, dp_accounting.DpEvent):
        raise ValueError(f"{where} is not a DpEvent: {event!r}")
    if isinstance(event, dp_event.ComposedDpEvent):
        if not isinstance(event.events, (list, tuple)):
            raise ValueError(f"{where}.events must be a list")
        for i, inner in enumerate(event.events):
            validate_event(inner, f"{where}.events[{i}]")
    elif isinstance(event, dp_event.SelfComposedDpEvent):
        _check_number(event.count, f"{where}.count", integer=True)
        validate_event(event.event, f"{where}.event")
    elif isinstance(event, (dp_event.LaplaceDpEvent, dp_event.GaussianDpEvent)):
        _check_number(event.noise_multiplier, f"{where}.noise_multiplier")
        if event.noise_multiplier <= 0:
            raise ValueError(f"{where}.noise_multiplier must be > 0, got {event.noise_multiplier}")
    elif isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        _check_number(event.noise_parameter, f"{where}.noise_parameter")
        if event.noise_parameter <= 0:
            raise ValueError(f"{where}.noise_parameter must be > 0, got {event.noise_parameter}")
        _check_number(event.sensitivity, f"{where}.sensitivity", integer=True, low=1)
    elif isinstance(event, dp_event.RandomizedResponseDpEvent):
        _check_number(event.noise_parameter, f"{where}.noise_parameter")
        if not 0 < event.noise_parameter <= 1:
            raise ValueError(
                f"{where}.noise_parameter must be in (0, 1], got {event.noise_parameter}"
            )
        _check_number(event.num_buckets, f"{where}.num_buckets", integer=True, low=2)
    elif isinstance(event, (SkellamDpEvent, BoundFailureDpEvent)):
        pass  # validated on construction
    else:  # any other event: no negative or undefined number anywhere
        for field in attr.fields(type(event)):
            value = getattr(event, field.name)
            values = value if isinstance(value, (list, tuple)) else [value]
            for i, item in enumerate(values):
                name = f"{where}.{field.name}" + (f"[{i}]" if values is value else "")
                if isinstance(item, dp_accounting.DpEvent):
                    validate_event(item, name)
                elif isinstance(item, numbers.Real) and not isinstance(item, bool):
                    _check_number(item, name)


def discrete_laplace_event(scale: float, unit_changes: int) -> dp_accounting.DpEvent:
    """One release of discrete Laplace noise ``P(k) ~ exp(-|k| / scale)`` on integer counts of
    which a neighbour changes ``unit_changes`` different ones by 1 each.

    The privacy loss is then exactly the sum of ``unit_changes`` independent sensitivity-1
    losses, so the event is that composition (``DiscreteLaplaceDpEvent(1 / scale, 1)``
    composed ``unit_changes`` times); a single count moved by ``unit_changes`` would be a
    valid but looser description. Its pure epsilon is ``unit_changes / scale``.

        >>> discrete_laplace_event(2.0, 1)
        DiscreteLaplaceDpEvent(noise_parameter=0.5, sensitivity=1)
    """
    if isinstance(unit_changes, bool) or int(unit_changes) != unit_changes or unit_changes < 1:
        raise ValueError(f"unit_changes must be an integer >= 1, got {unit_changes!r}")
    event = dp_event.DiscreteLaplaceDpEvent(noise_parameter=1.0 / float(scale), sensitivity=1)
    if unit_changes == 1:
        return event
    return dp_accounting.SelfComposedDpEvent(event, int(unit_changes))


def laplace_event(scale: float, unit_changes: int) -> dp_accounting.DpEvent:
    """One release of continuous Laplace noise of ``scale`` on counts of which a neighbour
    changes ``unit_changes`` different ones by at most 1 each.

    The privacy loss is the sum of ``unit_changes`` independent sensitivity-1 losses, so the
    event is that composition (``LaplaceDpEvent(scale)`` composed ``unit_changes`` times),
    as [`discrete_laplace_event`][] does for discrete noise. One Laplace event with
    sensitivity ``unit_changes`` (a single count moved that far) has the same pure epsilon
    but a looser PLD.

        >>> laplace_event(2.0, 1)
        LaplaceDpEvent(noise_multiplier=2.0)
    """
    if isinstance(unit_changes, bool) or int(unit_changes) != unit_changes or unit_changes < 1:
        raise ValueError(f"unit_changes must be an integer >= 1, got {unit_changes!r}")
    event = dp_accounting.LaplaceDpEvent(noise_multiplier=float(scale))
    if unit_changes == 1:
        return event
    return dp_accounting.SelfComposedDpEvent(event, int(unit_changes))


def class_pair_event(scale_pos: float, scale_neg: float, discrete: bool) -> dp_accounting.DpEvent:
    """One release of a positive and a negative count vector with Laplace noise of scales
    ``scale_pos`` and ``scale_neg`` (continuous, or exact discrete Laplace when
    ``discrete``), of which a label flip moves one count of each by one unit.

    The privacy loss is the sum of the two independent unit losses, so the event is their
    composition; its pure epsilon is ``1 / scale_pos + 1 / scale_neg``.

        >>> event = class_pair_event(1.5, 3.0, discrete=False)
        >>> [e.noise_multiplier for e in event.events]
        [1.5, 3.0]
    """
    if discrete:
        parts = [discrete_laplace_event(scale, 1) for scale in (scale_pos, scale_neg)]
    else:
        parts = [
            dp_accounting.LaplaceDpEvent(noise_multiplier=float(scale))
            for scale in (scale_pos, scale_neg)
        ]
    return dp_accounting.ComposedDpEvent(parts)


def legacy_ledger_event(entry: dict, where: str) -> dp_accounting.DpEvent:
    """Events of the version-1 ledger format (``{"kind": ..., "noise_multiplier": ...}``)."""
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
