"""The audit's statistics: Clopper-Pearson bounds, the epsilon an event shows, the audit's
power, and the choice of the event on the selection half ([`dpauc_tf.analysis.audit`][]).

    >>> per_audit_confidence(0.95, 10)
    0.995
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize, stats

_NUM_CANDIDATE_THRESHOLDS = 400


def per_audit_confidence(family_confidence: float, family_size: int) -> float:
    """Bonferroni: the confidence each of ``family_size`` bounds needs so that all hold at once
    with ``family_confidence``.

        >>> per_audit_confidence(0.95, 10)
        0.995
    """
    if isinstance(family_size, bool) or not isinstance(family_size, int) or family_size < 1:
        raise ValueError(f"family_size must be an int >= 1, got {family_size!r}")
    if not 0.5 < family_confidence < 1.0:
        raise ValueError(f"confidence must be in (0.5, 1), got {family_confidence}")
    return 1.0 - (1.0 - family_confidence) / family_size


def clopper_pearson_lower(successes: np.ndarray, trials: int, alpha: float) -> np.ndarray:
    """One-sided ``1 - alpha`` Clopper-Pearson lower bound on a binomial proportion."""
    k = np.asarray(successes, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bound = stats.beta.ppf(alpha, k, trials - k + 1)
    return np.where(k <= 0, 0.0, bound)


def clopper_pearson_upper(successes: np.ndarray, trials: int, alpha: float) -> np.ndarray:
    """One-sided ``1 - alpha`` Clopper-Pearson upper bound on a binomial proportion."""
    k = np.asarray(successes, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bound = stats.beta.ppf(1.0 - alpha, k + 1, trials - k)
    return np.where(k >= trials, 1.0, bound)


def epsilon_from_counts(
    count_a: np.ndarray, count_b: np.ndarray, trials: int, delta: float, alpha: float
) -> np.ndarray:
    """``log((p_A_lower - delta) / p_B_upper)``; ``-inf`` where ``p_A_lower <= delta``."""
    lower = clopper_pearson_lower(count_a, trials, alpha)
    upper = clopper_pearson_upper(count_b, trials, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.log((lower - delta) / upper)
    return np.where(lower > delta, eps, -np.inf)


def detectable_multiple(
    count_a: int, count_b: int, trials: int, delta: float, alpha: float, claimed: float
) -> float:
    """The audit's power at the observed rates: the smallest privacy-loss multiple it would see.

    Model: a bug that multiplies the mechanism's privacy loss by ``k`` (noise scale divided
    by ``k``, or sensitivity multiplied by ``k``) multiplies the event's log-likelihood
    ratio ``l = log((p_A - delta) / p_B)`` by ``k``, with ``p_B`` unchanged. That is exact
    for a Laplace-type tail event beyond the shift, and first-order for small losses
    (Gaussian noise, composed coordinates, where the best event also moves further out, so
    the figure is conservative). Returns the smallest ``k`` at which the Clopper-Pearson
    bound computed at the *expected* counts, ``n p_B`` and ``n (delta + p_B e^(k l))``,
    exceeds ``claimed``: a bug of that size is then caught about half of the time, a larger
    one more often. ``inf`` when ``l <= 0`` or no ``k`` reaches the claim before
    ``p_A = 1``; ``nan`` when ``count_b == 0`` (no rate to scale).

        >>> k = detectable_multiple(2_718, 1_000, 100_000, 0.0, 0.025, claimed=1.0)
        >>> 1.0 < k < 1.2
        True
    """
    p_a, p_b = count_a / trials, count_b / trials
    if count_b <= 0:
        return math.nan
    if p_a <= delta or math.log((p_a - delta) / p_b) <= 0:
        return math.inf
    log_ratio = math.log((p_a - delta) / p_b)
    upper_b = float(clopper_pearson_upper(count_b, trials, alpha))

    def excess(k: float) -> float:
        rate_a = min(1.0, delta + p_b * math.exp(k * log_ratio))
        lower = float(clopper_pearson_lower(trials * rate_a, trials, alpha))
        if lower <= delta:
            return -1.0  # nothing shown yet; only the sign matters to the root finder
        return math.log((lower - delta) / upper_b) - claimed

    k_max = math.log((1.0 - delta) / p_b) / log_ratio
    if excess(k_max) <= 0:
        return math.inf
    if excess(0.0) > 0:
        return 0.0
    return float(optimize.brentq(excess, 0.0, k_max, xtol=1e-6))


@dataclasses.dataclass(frozen=True)
class _Event:
    statistic: str
    upper: bool  # {S >= c} (favours D') or {S <= c} (favours D)
    threshold: float

    def count(self, values: np.ndarray) -> int:
        hits = values >= self.threshold if self.upper else values <= self.threshold
        return int(np.count_nonzero(hits))

    def describe(self) -> str:
        op, favoured = (">=", "D'") if self.upper else ("<=", "D")
        return f"{self.statistic} statistic {op} {self.threshold:.6g} (favours {favoured})"


def _select_event(stats_d, stats_prime, delta: float, alpha: float) -> _Event:
    """The event with the largest lower bound on the selection half.

    ``alpha`` here is deliberately smaller than the evaluation's: among hundreds of
    candidate events, a rare one whose frequency ratio looks large by luck would otherwise
    win (the winner's curse) and then evaluate poorly on the other half.
    """
    best, best_eps = None, -np.inf
    for name in stats_d:
        values_d = np.sort(stats_d[name])
        values_prime = np.sort(stats_prime[name])
        n = values_d.size
        pooled = np.concatenate([values_d, values_prime])
        levels = np.concatenate(
            [
                np.linspace(0.0, 1.0, _NUM_CANDIDATE_THRESHOLDS),
                np.geomspace(1e-6, 0.05, 60),
                1.0 - np.geomspace(1e-6, 0.05, 60),
            ]
        )
        candidates = np.unique(np.quantile(pooled, np.clip(levels, 0, 1), method="nearest"))
        # {S >= c}: favours D' (A = D', B = D)
        ge_prime = n - np.searchsorted(values_prime, candidates, side="left")
        ge_d = n - np.searchsorted(values_d, candidates, side="left")
        # {S <= c}: favours D (A = D, B = D')
        le_d = np.searchsorted(values_d, candidates, side="right")
        le_prime = np.searchsorted(values_prime, candidates, side="right")
        for upper, count_a, count_b in ((True, ge_prime, ge_d), (False, le_d, le_prime)):
            eps = epsilon_from_counts(count_a, count_b, n, delta, alpha)
            i = int(np.argmax(eps))
            if eps[i] > best_eps:
                best_eps, best = eps[i], _Event(name, upper, float(candidates[i]))
    if best is None:  # every candidate event has p_A_lower <= delta
        best = _Event("linear", True, float(np.median(stats_prime["linear"])))
    return best
