"""Privacy accounting with the ``dp-accounting`` library.

Each mechanism describes one release as a ``dp_accounting.DpEvent``; this module turns events
into epsilons: for one release, and for ``n`` releases composed, both by basic composition
(the sum, exact for pure-DP Laplace releases) and by a tighter accountant (PLD; RDP as a
cross-check) where ``delta > 0``.

>>> import dp_accounting
>>> event = dp_accounting.LaplaceDpEvent(noise_multiplier=100.0)   # epsilon 0.01 each
>>> spent = composed_epsilon(event, count=100, delta=1e-6)
>>> round(spent.basic, 6), spent.pld < 0.5
(1.0, True)
"""

from __future__ import annotations

import dataclasses
import functools
import math

import dp_accounting
from dp_accounting import pld, rdp

from dpauc_tf.privacy.calibration import smallest_parameter


@dataclasses.dataclass(frozen=True)
class EpsilonSpent:
    """Epsilon of ``count`` composed releases at ``delta``.

    Attributes:
      basic: the sum of per-release epsilons (plus the deltas); always valid.
      pld: the PLD accountant's epsilon at ``delta`` (``None`` for ``delta == 0``).
      rdp: the RDP accountant's epsilon at ``delta`` (``None`` for ``delta == 0``).
      delta: the delta these figures hold for.
      count: number of releases.
    """

    basic: float
    pld: float | None
    rdp: float | None
    delta: float
    count: int

    @property
    def best(self) -> float:
        """The smallest valid figure."""
        return min(x for x in (self.basic, self.pld, self.rdp) if x is not None)


def single_epsilon(event: dp_accounting.DpEvent, delta: float = 0.0) -> float:
    """Epsilon of one release described by ``event``."""
    return composed_epsilon(event, 1, delta).best


def pure_epsilon(event: dp_accounting.DpEvent) -> float | None:
    """Epsilon of a pure-DP event (Laplace, composed Laplace, no-op); ``None`` otherwise."""
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return 0.0
    if isinstance(event, dp_accounting.LaplaceDpEvent):
        return 1.0 / event.noise_multiplier
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = pure_epsilon(event.event)
        return None if inner is None else inner * event.count
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [pure_epsilon(e) for e in event.events]
        return None if any(p is None for p in parts) else sum(parts)
    return None


def composed_epsilon(
    event: dp_accounting.DpEvent, count: int = 1, delta: float = 0.0
) -> EpsilonSpent:
    """Epsilon of ``count`` independent releases of ``event`` at ``delta``.

    Pure-DP events compose by the sum (``basic``); approximate-DP events (Gaussian) have no
    finite pure epsilon, so ``basic`` is then the sum of single-release epsilons at
    ``delta / count`` each.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    if count == 0:
        return EpsilonSpent(0.0, 0.0 if delta > 0 else None, None, delta, 0)
    composed = dp_accounting.SelfComposedDpEvent(event, count) if count > 1 else event
    pure = pure_epsilon(composed)
    if pure is not None:
        basic = pure
    elif delta > 0:
        basic = count * _pld_epsilon(event, 1, delta / count)
    else:
        basic = math.inf
    if delta > 0:
        return EpsilonSpent(
            basic,
            _pld_epsilon(event, count, delta),
            _rdp_epsilon(event, count, delta),
            delta,
            count,
        )
    return EpsilonSpent(basic, None, None, delta, count)


def _accountant_epsilon(make_accountant, event, count, delta):
    accountant = make_accountant()
    accountant.compose(event, count)
    return float(accountant.get_epsilon(delta))


@functools.lru_cache(maxsize=256)
def _cached_epsilon(make_accountant, event, count, delta):
    return _accountant_epsilon(make_accountant, event, count, delta)


def _epsilon(make_accountant, event, count, delta):
    try:
        hash(event)
    except TypeError:  # composed events hold lists
        return _accountant_epsilon(make_accountant, event, count, delta)
    return _cached_epsilon(make_accountant, event, count, delta)


def _pld_epsilon(event, count, delta):
    return _epsilon(pld.PLDAccountant, event, count, delta)


def _rdp_epsilon(event, count, delta):
    return _epsilon(rdp.RdpAccountant, event, count, delta)


def _gaussian_delta(epsilon: float, sigma: float, sensitivity: float) -> float:
    """Exact delta of the Gaussian mechanism (Balle & Wang 2018, Theorem 8)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity

    from scipy.special import log_ndtr, ndtr

    # exp(epsilon) * Phi(-a - b) in log space: exp(epsilon) alone overflows above ~709,
    # while the product never exceeds Phi(a - b) <= 1.
    return float(ndtr(a - b)) - math.exp(epsilon + float(log_ndtr(-a - b)))


@functools.lru_cache(maxsize=256)
def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest Gaussian std giving (epsilon, delta)-DP for L2 ``sensitivity`` (analytic Gaussian).

    >>> round(analytic_gaussian_sigma(1.0, 1e-5), 3)
    3.731
    """
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta}")
    return smallest_parameter(
        lambda sigma: _gaussian_delta(epsilon, sigma, sensitivity), delta, start=sensitivity
    )
