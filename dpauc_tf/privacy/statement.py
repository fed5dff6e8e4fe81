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

LABEL_DP = (
    "label DP: neighbouring test sets differ only in the label of one example "
    "(scores and weights in [0, 1] unchanged)"
)


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
    it differs.
    """

    mechanism: str
    neighbouring: str
    sensitivity: str
    noise: str
    epsilon: float
    delta: float
    claimed_epsilon: float | None = None

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
