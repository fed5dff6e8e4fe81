"""One calibration routine: the smallest noise parameter that meets a privacy target.

Every mechanism whose noise is calibrated numerically (the analytic Gaussian's sigma, the
Skellam parameters of the flat and the tree histograms, the per-evaluation epsilon of a
composed budget) states its cost as a monotone function of one parameter and calls
[`smallest_parameter`][]. It brackets the target on a log scale and then uses Brent's
method (``scipy.optimize.brentq``, as ``dp_accounting.mechanism_calibration`` does) to a
relative tolerance, returning the end of the bracket on the private side, so the
parameter returned always meets the target.

    >>> round(smallest_parameter(lambda x: 1.0 / x, target=0.25), 6)  # 1/x <= 0.25 from x = 4
    4.0
    >>> round(largest_parameter(lambda x: 2.0 * x, target=1.0), 6)  # 2x <= 1 up to x = 0.5
    0.5
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scipy import optimize

RELATIVE_TOLERANCE = 1e-9


def _bracket_search(cost, target, start, grow):
    low = high = start
    if cost(start) > target:  # parameter too small (or too large): move towards privacy
        while cost(high) > target:
            low, high = high, high * grow
            if not math.isfinite(high) or high > 1e300 or high < 1e-300:
                raise ValueError(f"no parameter meets the privacy target {target:g}")
    else:
        while cost(low) <= target:
            high, low = low, low / grow
            if low < 1e-300 or low > 1e300:
                return high
    return low, high


def smallest_parameter(
    cost: Callable[[float], float],
    target: float,
    *,
    start: float = 1.0,
    relative_tolerance: float = RELATIVE_TOLERANCE,
) -> float:
    """Smallest ``x > 0`` with ``cost(x) <= target``, for ``cost`` non-increasing in ``x``.

    Noise parameters (a scale, sigma, mu): more noise costs less privacy.
    """
    bracket = _bracket_search(cost, target, start, 2.0)
    if not isinstance(bracket, tuple):
        return bracket
    low, high = bracket
    if high / low > 1.0 + relative_tolerance:
        root = optimize.brentq(
            lambda log_x: cost(math.exp(log_x)) - target,
            math.log(low),
            math.log(high),
            xtol=relative_tolerance / 4,
        )
        candidate = math.exp(root)
        # Brent's root may sit a hair on the wrong side: step outwards until it is private.
        while cost(candidate) > target:
            candidate *= 1.0 + relative_tolerance
        return min(candidate, high)
    return high


def largest_parameter(
    cost: Callable[[float], float],
    target: float,
    *,
    start: float = 1.0,
    relative_tolerance: float = RELATIVE_TOLERANCE,
) -> float:
    """Largest ``x > 0`` with ``cost(x) <= target``, for ``cost`` non-decreasing in ``x``.

    Budget parameters (a per-release epsilon): a larger one costs more.
    """
    return 1.0 / smallest_parameter(
        lambda inverse: cost(1.0 / inverse),
        target,
        start=1.0 / start,
        relative_tolerance=relative_tolerance,
    )
