"""What one release guarantees: the privacy statement and the checks of its parameters.

Examples:
    >>> s = PrivacyStatement("histogram", LABEL_DP, "L1 = 2", "Laplace(2)", 1.0, 0.0)
    >>> str(s).startswith("histogram: (1, 0)-DP")
    True
    >>> check_epsilon(2)
    2.0
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence


def label_dp(max_weight: float = 1.0) -> str:
    """The label-DP neighbouring relation for sample weights in ``[0, max_weight]``.

    Examples:
        >>> label_dp(2.5).endswith("(scores and weights in [0, 2.5] unchanged)")
        True
    """
    return (
        "label DP: neighbouring test sets differ only in the label of one example "
        f"(scores and weights in [0, {max_weight:g}] unchanged)"
    )


LABEL_DP = label_dp(1.0)


def check_epsilon(epsilon: float | None) -> float | None:
    """Validates a total epsilon: ``None`` (no noise) or a finite number > 0."""
    if epsilon is None:
        return None
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        raise TypeError(f"epsilon must be a number or None, got {epsilon!r}")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(
            f"epsilon must be finite and > 0 (or None for no noise, not private), got {epsilon}"
        )
    return float(epsilon)


def check_delta(delta: float | None, *, required: bool) -> float:
    """Validates delta: required and in (0, 1), or unset (``0.0``) for pure-DP mechanisms."""
    if delta is None:
        if required:
            raise ValueError("this mechanism needs delta in (0, 1), e.g. delta=1e-6")
        return 0.0
    if isinstance(delta, bool) or not isinstance(delta, (int, float)):
        raise TypeError(f"delta must be a number, got {delta!r}")
    if required and not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    if not required and delta != 0.0:
        raise ValueError("this mechanism is pure epsilon-DP; leave delta unset")
    return float(delta)


@dataclasses.dataclass(frozen=True)
class PrivacyStatement:
    """What one release of a mechanism guarantees.

    ``epsilon``/``delta`` are the guarantee this library proves and accounts;
    ``claimed_epsilon`` is what the source (e.g. the paper) claims for the same noise, when
    it differs. ``sensitivity`` and ``noise`` are the texts; ``sensitivity_value`` (of the
    norm ``sensitivity_norm``) and ``noise_scale`` are the same figures as numbers, in the
    units of the released counts (``None`` where one number does not describe them, e.g. a
    data-dependent scale): what a decorator such as the weight bound scales, never the text.

    Examples:
        >>> s = PrivacyStatement("histogram", LABEL_DP, "L1 = 2", "Laplace(2)", 1.0, 0.0,
        ...                      sensitivity_value=2.0, noise_scale=2.0)
        >>> s.sensitivity_value * 2.5, s.sensitivity_norm
        (5.0, 'L1')
    """

    mechanism: str
    neighbouring: str
    sensitivity: str
    noise: str
    epsilon: float
    delta: float
    claimed_epsilon: float | None = None
    sensitivity_value: float | None = None
    sensitivity_norm: str = "L1"
    noise_scale: float | None = None

    def __str__(self) -> str:
        claim = (
            f" (the paper claims epsilon={self.claimed_epsilon:g})"
            if self.claimed_epsilon is not None and self.claimed_epsilon != self.epsilon
            else ""
        )
        return (
            f"{self.mechanism}: ({self.epsilon:g}, {self.delta:g})-DP{claim}; "
            f"neighbours: {self.neighbouring}; sensitivity: {self.sensitivity}; "
            f"noise: {self.noise}"
        )


def check_label_free_keys(
    label: str, slicing: Sequence[Sequence[str]], client: str | None, surface: str
) -> None:
    """Refuses the label column as a slice (or client) column: each slice would hold one
    class, and its ``num_examples`` would be an exact class count. The check is by name
    only: testing whether a column's values follow the labels would itself publish
    something about the labels. Slice columns must be chosen without looking at the labels
    (their sizes are then label-free: scores and slice membership are public under label
    DP)."""
    for spec in slicing:
        if label in spec:
            raise ValueError(
                f"{surface}: the slicing spec {tuple(spec)!r} slices on the label column "
                f"{label!r}: each slice's num_examples would be an exact class count"
            )
    if client is not None and client == label:
        raise ValueError(
            f"{surface}: the client column is the label column {label!r}: each client "
            "would hold one class"
        )
