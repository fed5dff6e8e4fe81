"""The declared type of every mechanism option, and how a value given as text or a number is
parsed and checked (`dpauc_tf.mechanisms.registry.parse_options` applies them).

    >>> OPTION_TYPES["public_scores"].kind
    'bool'
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

from dpauc_tf.core.vocabulary import Vocabulary
from dpauc_tf.mechanisms.class_split import MAX_FRACTION, MIN_FRACTION
from dpauc_tf.mechanisms.estimators import AUCEstimator
from dpauc_tf.mechanisms.laws import NoiseKind

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


class OptionKind(Vocabulary):
    """The kinds of a mechanism option's value (`OptionType`'s ``kind``; what each accepts is
    said there).

    Examples:
        >>> OptionKind("choice")
        <OptionKind.CHOICE: 'choice'>
    """

    BOOL = "bool"
    INT = "int"
    FLOAT = "float"
    CHOICE = "choice"
    BUDGET = "budget"
    TEXT = "text"
    ANY = "any"


@dataclasses.dataclass(frozen=True)
class OptionType:
    """The declared type of a mechanism option: how a value is parsed and checked.

    `get_mechanism` parses every option by its type before the constructor sees it,
    so text from the command line (``--mechanism-option public_scores=no``) and typed
    Python values go through the same checks, and a value that does not parse is refused
    with one line naming the option and what it accepts (a string is never truthy).

    ``kind``: ``"bool"`` (``True``/``False``, ``0``/``1``, or the text ``true/false``,
    ``yes/no``, ``on/off``, ``1/0``, any case), ``"int"`` and ``"float"`` (numbers or their
    text, finite, within ``[minimum, maximum]``), ``"choice"`` (one of ``choices``),
    ``"budget"`` (a choice or a list of positive numbers), ``"text"`` (any string) or
    ``"any"`` (passed as given; only for options whose type cannot be declared).

        >>> BOOL.parse("public_scores", "no")
        False
        >>> FRACTION.parse("positive_rate", "0.25")
        0.25
        >>> BOOL.parse("public_scores", "False ")
        False
    """

    kind: str  # an OptionKind value
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", OptionKind(self.kind).value)

    def accepted(self) -> str:
        """What the option accepts, for error messages."""
        if self.kind == "bool":
            return "true or false (also yes/no, on/off, 1/0)"
        if self.kind == "choice":
            return "one of " + ", ".join(map(repr, self.choices))
        if self.kind == "budget":
            return (
                " or ".join(map(repr, self.choices)) + " or a list of positive level weights "
                "(root first)"
            )
        if self.kind == "text":
            return "a string"
        if self.kind == "any":
            return "any value"
        what = "an integer" if self.kind == "int" else "a finite number"
        if self.minimum is not None and self.maximum is not None:
            what += f" in [{_show(self.minimum)}, {_show(self.maximum)}]"
        elif self.minimum is not None:
            what += f" >= {_show(self.minimum)}"
        return what + (f" ({self.note})" if self.note else "")

    def parse(self, option: str, value: Any) -> Any:
        """``value`` as the option's type; ``ValueError`` naming the option otherwise."""
        parsed = _parse_option(self, value)
        if parsed is _INVALID:
            raise OptionValueError(f"option {option} must be {self.accepted()}, got {value!r}")
        return parsed


_INVALID = object()


class OptionValueError(ValueError, TypeError):
    """A mechanism option's value that its declared type does not accept: a ``ValueError``
    (what the command line and most callers catch) and, since the value may be of the wrong
    type, also a ``TypeError`` (what the constructors raise for one)."""


def _show(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def _is_bool(value: Any) -> bool:
    kind = type(value)
    return isinstance(value, bool) or (kind.__module__ == "numpy" and "bool" in kind.__name__)


def _number(value: Any, integer: bool) -> Any:
    """An int or float from a number or its text; ``_INVALID`` otherwise (never a bool)."""
    if _is_bool(value):
        return _INVALID
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                return _INVALID
    if integer and hasattr(value, "__index__"):  # int, numpy integer
        return int(value.__index__())
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return _INVALID
    if not math.isfinite(number):
        return _INVALID
    if integer:
        return int(number) if number.is_integer() else _INVALID
    return number


def _parse_option(kind: OptionType, value: Any) -> Any:
    if kind.kind == "any":
        return value
    if kind.kind == "text":
        return value if isinstance(value, str) else _INVALID
    if kind.kind == "bool":
        if _is_bool(value):
            return bool(value)
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str):
            text = value.strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
        return _INVALID
    if kind.kind == "choice":
        text = value.strip() if isinstance(value, str) else None
        return text if text in kind.choices else _INVALID
    if kind.kind == "budget":
        if isinstance(value, str):
            text = value.strip()
            if text in kind.choices:
                return text
            try:
                value = json.loads(text)
            except ValueError:
                return _INVALID
        if _number(value, integer=False) is not _INVALID:
            value = [value]  # one weight: the constructor says how many levels it needs
        if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
            return _INVALID
        weights = [_number(v, integer=False) for v in value]
        if not weights or any(w is _INVALID or w <= 0 for w in weights):
            return _INVALID
        return tuple(weights)
    number = _number(value, integer=kind.kind == "int")
    if number is _INVALID:
        return _INVALID
    if kind.minimum is not None and number < kind.minimum:
        return _INVALID
    if kind.maximum is not None and number > kind.maximum:
        return _INVALID
    return number


BOOL = OptionType("bool")
FRACTION = OptionType(
    "float",
    minimum=MIN_FRACTION,
    maximum=MAX_FRACTION,
    note="outside it one class would get less than a millionth of the budget",
)

# Every option of the built-in mechanisms, by name (the same name means the same thing in
# every mechanism). A mechanism registered from outside may declare its own
# (register_mechanism(options=...)); an undeclared one is typed by its default.
OPTION_TYPES: dict[str, OptionType] = {
    "public_scores": BOOL,
    "noise": OptionType("choice", NoiseKind.values()),
    "estimator": OptionType("choice", tuple(estimator.value for estimator in AUCEstimator)),
    "family": OptionType("choice", ("discrete-laplace", "skellam")),
    "positive_share": FRACTION,
    "positive_rate": FRACTION,
    "count_share": OptionType("float", minimum=MIN_FRACTION, maximum=MAX_FRACTION),
    "branching": OptionType("int", minimum=2),
    "budget": OptionType("budget", ("auc", "uniform")),
    "num_clients": OptionType(
        "int", minimum=1, note="shares; get_mechanism(num_clients=...), not mechanism_options"
    ),
    "resolution": OptionType(
        "int", minimum=2, maximum=2**22 + 1, note="buckets of the mechanism's own grid"
    ),
}

# What sets each of these at every entry point: never a mechanism option.
RESERVED_OPTIONS: dict[str, str] = {
    "epsilon": "epsilon=",
    "delta": "delta=",
    "num_thresholds": "num_thresholds= (or threshold_grid=)",
}


def frozen_options(options: Mapping[str, Any] | None) -> tuple[tuple[str, Any], ...]:
    """A mechanism's options as sorted, hashable ``(name, value)`` pairs (lists and arrays,
    e.g. a tree's budget per level, as tuples): the one normalisation of every spec
    ([`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec], binary or one-vs-rest, and the per-class budget).

        >>> frozen_options({"budget": [1, 2, 3], "branching": 4})
        (('branching', 4), ('budget', (1, 2, 3)))
    """
    return tuple(sorted((str(key), _frozen(value)) for key, value in (options or {}).items()))


def _frozen(value: Any) -> Any:
    """An option value as a hashable one (lists, e.g. a tree's budget per level, as tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(part) for part in value)
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # NumPy arrays and scalars
        return _frozen(value.tolist())
    return value
