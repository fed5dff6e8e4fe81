"""The library's closed string vocabularies: their base, a ``str`` Enum that validates where a
value enters, and the core's own (Keras' curves and summation methods, the named threshold
grids).

Each vocabulary is one ``class X(Vocabulary)`` in the module that owns the concept; those the
command line's ``choices=`` read live in pure-Python modules (here, or
``dpauc_tf.mechanisms.laws`` for the mechanisms' and releases') so that ``dpauc --help``
loads no TensorFlow. A member compares equal to (and hashes as) its string value, prints as
it, and ``json.dumps`` writes it, so string callers and JSON output stay the same; the
constructor (or ``from_str``, as Keras' ``metrics_utils.AUCCurve.from_str``) takes a member,
its value in any case, or another Enum's member of the same value (Keras' own), and refuses
anything else with one line that lists the valid values. Dataclass fields keep the plain
value (``Capabilities.releases == "curve"``).

Examples:
    >>> class Colour(Vocabulary):
    ...     RED = "red"
    ...     GREEN = "green"
    >>> Colour("RED") is Colour.RED, Colour.RED == "red", f"{Colour.GREEN}"
    (True, True, 'green')
    >>> Colour.from_str("blue")
    Traceback (most recent call last):
    ...
    ValueError: colour must be one of 'red', 'green', got 'blue'
"""

from __future__ import annotations

import enum
import re


class Vocabulary(str, enum.Enum):
    """A closed set of strings (subclass it with the members; see the module docstring)."""

    @classmethod
    def argument(cls) -> str:
        """The name of the argument the vocabulary fills, for error messages (the class name
        in snake case unless a subclass says otherwise)."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()

    @classmethod
    def from_str(cls, key):
        """The member named by ``key``; ``ValueError`` listing the valid values otherwise."""
        return cls(key)

    @classmethod
    def values(cls) -> tuple[str, ...]:
        """The valid values, in order (e.g. for ``argparse`` ``choices=``)."""
        return tuple(member.value for member in cls)

    @classmethod
    def _missing_(cls, value):
        key = getattr(value, "value", value)  # another Enum's member (Keras' AUCCurve)
        if isinstance(key, str):
            for member in cls:
                if member.value.lower() == key.strip().lower():
                    return member
        choices = ", ".join(map(repr, cls.values()))
        raise ValueError(f"{cls.argument()} must be one of {choices}, got {value!r}")

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    __hash__ = str.__hash__


class Curve(Vocabulary):
    """The curve under which the area is taken, as Keras' ``metrics_utils.AUCCurve`` (a
    ``str``: any case, or Keras' own member, is accepted).

    Examples:
        >>> Curve("prgain"), Curve("ROC") == "ROC"
        (<Curve.PRGAIN: 'PRGAIN'>, True)
    """

    ROC = "ROC"
    PR = "PR"
    PRGAIN = "PRGAIN"

    @classmethod
    def argument(cls) -> str:
        return "`curve`"  # as Keras' AUC names it in its error


class SummationMethod(Vocabulary):
    """How the area is summed, as Keras' ``metrics_utils.AUCSummationMethod``.

    Examples:
        >>> SummationMethod("Minoring")
        <SummationMethod.MINORING: 'minoring'>
    """

    INTERPOLATION = "interpolation"
    MINORING = "minoring"
    MAJORING = "majoring"

    @classmethod
    def argument(cls) -> str:
        return "`summation_method`"


def is_roc_auc(curve: Curve | str, summation_method: SummationMethod | str) -> bool:
    """Whether ``(curve, summation_method)`` asks for the ROC AUC with interpolation: the
    area a rank statistic estimates with no curve released (any other asks for a curve).

    Examples:
        >>> is_roc_auc("ROC", "interpolation"), is_roc_auc("PR", "interpolation")
        (True, False)
    """
    return Curve(curve) is Curve.ROC and SummationMethod(summation_method) is (
        SummationMethod.INTERPOLATION
    )


class ThresholdGrid(Vocabulary):
    """The named grids (``threshold_grid=``): TensorFlow's default and the paper's
    reference grid (`dpauc_tf.core.thresholds`). A built grid's ``Thresholds.grid`` may also read
    ``"keras"`` or ``"explicit"`` (an explicit list).

    Examples:
        >>> ThresholdGrid("reference"), ThresholdGrid.values()
        (<ThresholdGrid.REFERENCE: 'reference'>, ('tf', 'reference'))
    """

    TF = "tf"
    REFERENCE = "reference"
