"""Renyi-DP accounting and calibration of Skellam noise (flat and tree histograms).

dp-accounting has no Skellam event, so the Renyi bound of Agarwal, Kairouz & Liu (2021,
Thm. 3.5) is used directly: for ``Skellam(mu, mu)`` noise on a vector whose neighbours
differ by ``L1`` and ``L2^2``,

``eps(alpha) <= alpha L2^2 / (4 mu) + min(((2 alpha - 1) L2^2 + 6 L1) / (16 mu^2), 3 L1 / (4 mu))``,

Renyi divergences add over the levels of a tree and over releases, and
`rdp_to_epsilon` converts to ``(epsilon, delta)`` (Canonne, Kamath & Steinke 2020,
Prop. 12). Calibration uses `dpauc_tf.privacy.calibration.smallest_parameter`.

    >>> mu = skellam_mu(1.0, 1e-6)
    >>> skellam_epsilon(mu, 1e-6) <= 1.0
    True
    >>> mus = skellam_tree_mus(1.0, 1e-6, [0.5, 0.5], 2.0)
    >>> mus[0] == mus[1]
    True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from dpauc_tf.privacy.calibration import smallest_parameter
from dpauc_tf.privacy.pld_reading import upper_epsilon

RDP_ORDERS = tuple(range(2, 1025))
# A label flip moves one unit between pos[b] and neg[b]: L1 = 2, L2^2 = 2 (flat histogram).
HISTOGRAM_L1 = 2.0
HISTOGRAM_L2_SQUARED = 2.0
SKELLAM_PRECISION_POWER = 1.5


def skellam_rdp(alpha: np.ndarray, mu: float, l1: float, l2_squared: float) -> np.ndarray:
    """Renyi-DP of the Skellam(mu, mu) mechanism at integer orders (Agarwal et al. 2021)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    return alpha * l2_squared / (4.0 * mu) + np.minimum(
        ((2.0 * alpha - 1.0) * l2_squared + 6.0 * l1) / (16.0 * mu**2), 3.0 * l1 / (4.0 * mu)
    )


def rdp_to_epsilon(alpha: np.ndarray, rdp: np.ndarray, delta: float) -> float:
    """(epsilon, delta) from an RDP curve (Canonne, Kamath & Steinke 2020, Prop. 12)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    eps = rdp + np.log1p(-1.0 / alpha) - (math.log(delta) + np.log(alpha)) / (alpha - 1.0)
    return float(max(np.min(eps), 0.0))


def skellam_rdp_epsilon(mu: float, delta: float, releases: int = 1) -> float:
    """The Renyi bound's epsilon at ``delta`` of ``releases`` Skellam(mu, mu) histogram
    releases (label DP)."""
    orders = np.asarray(RDP_ORDERS, dtype=np.float64)
    rdp = releases * skellam_rdp(orders, mu, HISTOGRAM_L1, HISTOGRAM_L2_SQUARED)
    return rdp_to_epsilon(orders, rdp, delta)


@functools.lru_cache(maxsize=1024)
def skellam_pld_epsilon(mu: float, delta: float, releases: int = 1) -> float | None:
    """Epsilon at ``delta`` of ``releases`` Skellam(mu, mu) histogram releases from the
    exact pmf's pessimistic PLD ([`skellam_event_pld`][]: losses rounded up, the tail
    counted as infinite loss), read at ``delta (1 - PLD_DELTA_MARGIN)`` past the FFT's
    round-off; ``None`` where it is not built (``delta <= 0``, a support too large)."""
    if not delta > 0:
        return None
    pld = skellam_event_pld([float(mu)], HISTOGRAM_L1, HISTOGRAM_L2_SQUARED)
    if pld is None:
        return None
    if releases > 1:
        pld = pld.self_compose(int(releases))
    try:
        return upper_epsilon(pld, delta)
    except (ValueError, OverflowError):
        return None


def skellam_epsilon(mu: float, delta: float, releases: int = 1) -> float:
    """Epsilon at ``delta`` of ``releases`` Skellam(mu, mu) histogram releases (label DP):
    the smaller of the Renyi bound and the PLD from the exact pmf (both upper bounds; the
    Renyi bound alone stated (1, 1e-6) for a release whose exact epsilon is 0.893, and 8
    for 3.81: ``benchmarks/bench_skellam_slack.py``)."""
    rdp = skellam_rdp_epsilon(mu, delta, releases)
    pld = skellam_pld_epsilon(float(mu), float(delta), int(releases))
    return rdp if pld is None else min(rdp, pld)


@functools.lru_cache(maxsize=256)
def skellam_mu(epsilon: float, delta: float) -> float:
    """Smallest ``mu`` such that one Skellam(mu, mu) histogram release is (eps, delta)-DP
    by [`skellam_epsilon`][] (the tighter of the Renyi and the PLD figures)."""
    start = smallest_parameter(lambda mu: skellam_rdp_epsilon(mu, delta), epsilon)
    return smallest_parameter(lambda mu: skellam_epsilon(mu, delta), epsilon, start=start)


def skellam_precision_shares(level_shares: Sequence[float]) -> np.ndarray:
    """Shares of the Renyi budget (``1 / mu_l``) per level for the Skellam family.

    Laplace shares ``s_l`` give level variances ``~ 1 / s_l^2`` under the constraint
    ``sum eps_l = epsilon``; Gaussian-type noise is constrained by ``sum L2^2 / mu_l``
    (zCDP, the leading Renyi term) instead, and the same weighting of the AUC's variance
    is then optimal with precision ``1 / mu_l ~ s_l^1.5`` (Lagrange: minimise
    ``sum c_l v_l`` under ``sum eps_l = const`` gives ``eps_l ~ c_l^(1/3)``, under
    ``sum 1 / v_l = const`` gives ``1 / v_l ~ c_l^(1/2)``).

        >>> skellam_precision_shares([0.5, 0.5]).tolist()
        [0.5, 0.5]
    """
    weights = np.asarray(level_shares, np.float64) ** SKELLAM_PRECISION_POWER
    return weights / weights.sum()


def skellam_tree_rdp(
    orders: np.ndarray, mus: Sequence[float], l1_per_level: float, releases: int = 1
) -> np.ndarray:
    """Renyi DP of ``releases`` Skellam tree releases: the levels' bounds added up.

    Each level is one Skellam(mu_l, mu_l) release of a vector whose label-flip sensitivity
    is ``L1 = l1_per_level`` and ``L2^2 = l1_per_level`` (unit changes).
    """
    rdp = sum(skellam_rdp(orders, mu, l1_per_level, l1_per_level) for mu in mus)
    return releases * rdp


# The PLD enters a tree's (or the class-split histogram's) calibration only where it is
# cheap: at most this many unit Skellam PLDs composed per release (the class-split flat
# histogram: 2). A tree's PLD of many levels takes seconds, and calibration evaluates it
# dozens of times: trees keep the Renyi bound (their ledger figures still use the PLD).
PLD_CALIBRATION_UNITS = 4


def skellam_tree_epsilon(
    mus: Sequence[float], l1_per_level: float, delta: float, releases: int = 1
) -> float:
    """Epsilon at ``delta`` of ``releases`` Skellam tree releases: the Renyi bound, or the
    smaller of it and the PLD from the exact pmf where that is cheap
    (`PLD_CALIBRATION_UNITS`)."""
    orders = np.asarray(RDP_ORDERS, np.float64)
    rdp = rdp_to_epsilon(orders, skellam_tree_rdp(orders, mus, l1_per_level, releases), delta)
    if len(mus) * l1_per_level > PLD_CALIBRATION_UNITS:
        return rdp
    pld = _tree_pld_epsilon(
        tuple(float(mu) for mu in mus), float(l1_per_level), float(delta), int(releases)
    )
    return rdp if pld is None else min(rdp, pld)


@functools.lru_cache(maxsize=1024)
def _tree_pld_epsilon(mus: tuple, l1: float, delta: float, releases: int) -> float | None:
    if not delta > 0:
        return None
    pld = skellam_event_pld(list(mus), l1, l1)
    if pld is None:
        return None
    if releases > 1:
        pld = pld.self_compose(releases)
    try:
        return upper_epsilon(pld, delta)
    except (ValueError, OverflowError):
        return None


def skellam_tree_mus(
    epsilon: float,
    delta: float,
    precision_shares: Sequence[float],
    l1_per_level: float,
    releases: int = 1,
) -> list[float]:
    """Smallest Skellam parameters ``mu_l = m / precision_l`` (one ``m``) such that
    ``releases`` tree releases are ``(epsilon, delta)``-DP by the Renyi bound."""
    shares = np.asarray(precision_shares, np.float64)

    def renyi(m: float) -> float:
        orders = np.asarray(RDP_ORDERS, np.float64)
        curve = skellam_tree_rdp(orders, m / shares, l1_per_level, releases)
        return rdp_to_epsilon(orders, curve, delta)

    def spent(m: float) -> float:
        return skellam_tree_epsilon(m / shares, l1_per_level, delta, releases)

    start = smallest_parameter(renyi, epsilon)  # the Renyi bound's, then the tighter one
    m = smallest_parameter(spent, epsilon, start=start)
    return [float(m / p) for p in shares]


# -- the exact privacy loss distribution -------------------------------------------------------
TAIL_BOUND = 1e-30  # probability left out of the support, counted as infinite loss
MAX_SUPPORT = 4_000_000  # outcomes; beyond this the PLD is not built (the RDP bound stands)


def _support_half_width(mu: float) -> int | None:
    """``K`` with ``P(|X| > K) <= TAIL_BOUND`` for ``X ~ Skellam(mu, mu)`` (Chernoff:
    ``P(X >= K) <= exp(2 mu (cosh t - 1) - t K)`` at ``sinh t = K / (2 mu)``)."""
    k = max(8.0, 10.0 * math.sqrt(2.0 * mu))
    while k <= MAX_SUPPORT / 2:
        t = math.asinh(k / (2.0 * mu))
        if 2.0 * math.exp(2.0 * mu * (math.cosh(t) - 1.0) - t * k) <= TAIL_BOUND:
            return math.ceil(k)
        k *= 1.5
    return None


@functools.lru_cache(maxsize=128)
def skellam_unit_pld(mu: float, value_discretization_interval: float = 1e-4):
    """Pessimistic privacy loss distribution of ``Skellam(mu, mu)`` noise on one integer count
    that a neighbour moves by one, built from the exact pmf (``P(k) = ive(|k|, 2 mu)``).

    The loss ``log P(k) - log P(k - 1)`` is rounded up to the discretization grid, the mass
    outside ``|k| <= K`` (at most `TAIL_BOUND`, a Chernoff bound) counts as infinite
    loss, so every epsilon read from it is an upper bound. The distribution is symmetric
    (``k -> 1 - k`` swaps the two neighbours). ``None`` when ``mu`` is too large for the
    support to be listed (`MAX_SUPPORT`).
    """
    from dp_accounting.pld import privacy_loss_distribution
    from scipy.special import ive

    half = _support_half_width(float(mu))
    if half is None:
        return None
    k = np.arange(-half, half + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_p = np.log(ive(np.abs(k), 2.0 * mu))
        log_q = np.log(ive(np.abs(k - 1.0), 2.0 * mu))
    p = np.exp(log_p)
    finite = np.isfinite(log_p) & np.isfinite(log_q)
    infinity_mass = float(np.sum(p[np.isfinite(log_p) & ~np.isfinite(log_q)])) + TAIL_BOUND
    loss = (log_p - log_q)[finite]
    slack = 1e-9 * value_discretization_interval
    index = np.ceil((loss + slack) / value_discretization_interval).astype(np.int64)
    values, inverse = np.unique(index, return_inverse=True)
    masses = np.bincount(inverse, weights=p[finite])
    rounded = dict(zip(values.tolist(), masses.tolist(), strict=True))
    return privacy_loss_distribution.PrivacyLossDistribution.create_from_rounded_probability(
        rounded, infinity_mass, value_discretization_interval, pessimistic_estimate=True
    )


def skellam_pld_supported(mus, l1: float, l2_squared: float) -> bool:
    """Whether [`skellam_event_pld`][] builds the PLD of this release."""
    if l1 != l2_squared or l1 != int(l1) or l1 < 1:
        return False
    return all(_support_half_width(float(mu)) is not None for mu in mus)


def skellam_event_pld(mus, l1: float, l2_squared: float, value_discretization_interval=1e-4):
    """PLD of one release with ``Skellam(mu_i, mu_i)`` noise on vectors whose neighbours
    differ by ``l1`` unit changes each (integer ``l1 == l2_squared``: every change is +-1),
    i.e. [`skellam_unit_pld`][] composed ``l1`` times per vector; ``None`` otherwise."""
    if l1 != l2_squared or l1 != int(l1) or l1 < 1:
        return None
    total = None
    for mu in mus:
        unit = skellam_unit_pld(float(mu), value_discretization_interval)
        if unit is None:
            return None
        part = unit.self_compose(int(l1)) if l1 > 1 else unit
        total = part if total is None else total.compose(part)
    return total
