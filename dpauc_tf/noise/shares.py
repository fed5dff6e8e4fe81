"""Noise shares for secure aggregation: each client adds one, their sum is one draw.

* [`polya_difference`][]: one client's share of discrete Laplace noise (Goryczka et al.
  2013): ``X - Y`` with ``X, Y ~ NegativeBinomial(1 / K, exp(-1 / scale))``; the sum of ``K``
  shares is exactly discrete Laplace with that scale.
* `skellam_share`: ``Poisson(mu) - Poisson(mu)``; Skellam is closed under sums (Agarwal,
  Kairouz & Liu 2021), so ``K`` shares of ``mu / K`` sum to ``Skellam(mu, mu)``.
* `polya_shift_epsilon`: the exact loss of a shift when only a fraction of the Polya
  shares arrive (dropout); `shortfall_unit_epsilon`: that of a unit change.

Examples:
    >>> from dpauc_tf.noise.seeds import make_seed
    >>> share = polya_difference([4], 2.0, 10, make_seed(0))
    >>> bool(tf.reduce_all(share == tf.round(share)))
    True
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from dpauc_tf.noise.seeds import split_seed

FAMILIES = ("discrete-laplace", "skellam")


def polya_difference(
    shape, scale, num_shares: int, seed: tf.Tensor, dtype: tf.DType = tf.float64
) -> tf.Tensor:
    """One client's share of discrete Laplace noise (Goryczka et al. 2013).

    ``X - Y`` with ``X, Y ~ NegativeBinomial(r = 1 / num_shares, p = exp(-1 / scale))`` (Polya),
    sampled as a Gamma-Poisson mixture. The sum of ``num_shares`` independent shares is exactly
    one discrete Laplace draw with the same ``scale``.
    """
    q = float(np.exp(-1.0 / float(scale)))
    gamma_seed, poisson_seed = tf.unstack(split_seed(seed, 2))
    full_shape = tf.concat([[2], shape], 0)
    rates = tf.random.stateless_gamma(
        full_shape,
        seed=gamma_seed,
        alpha=tf.constant(1.0 / num_shares, tf.float64),
        dtype=tf.float64,
    ) * (q / (1.0 - q))
    counts = tf.random.stateless_poisson(full_shape, seed=poisson_seed, lam=rates, dtype=tf.float64)
    return tf.cast(counts[0] - counts[1], dtype)


def skellam_share(shape, mu: float, seed: tf.Tensor, dtype: tf.DType = tf.float64) -> tf.Tensor:
    """``Poisson(mu) - Poisson(mu)`` (integer-valued, in ``dtype``)."""
    counts = tf.random.stateless_poisson(
        tf.concat([[2], shape], 0), seed=seed, lam=tf.constant(mu, tf.float64), dtype=tf.float64
    )
    return tf.cast(counts[0] - counts[1], dtype)


def _log_polya_difference_pmf(scale: float, fraction: float, z: int, upper: bool) -> float:
    """``log P(Z = z)`` for ``Z = X - Y``, ``X, Y ~ NegativeBinomial(fraction, q = e^(-1 /
    scale))`` (the sum of ``fraction`` of the Polya shares of discrete Laplace(``scale``)),
    ``fraction <= 1``: ``sum_y p(z + y) p(y)`` summed in log space until the terms fall
    below ``e^-45`` of the sum; ``upper`` adds the bound of the rest (the terms' ratio is at
    most ``q^2``), so the figure is an upper bound, else a lower bound."""
    from scipy import special

    log_q = -1.0 / float(scale)
    log_norm = fraction * math.log(-math.expm1(log_q))  # log (1 - q)^r
    terms = math.ceil(50.0 / (-2.0 * log_q)) + 10
    chunk = 1 << 20
    total, last = -math.inf, -math.inf
    for start in range(0, terms, chunk):
        y = np.arange(start, min(start + chunk, terms), dtype=np.float64)

        def log_p(n, y=y):
            return special.gammaln(n + fraction) - special.gammaln(n + 1.0) + n * log_q

        log_terms = log_p(z + y) + log_p(y)
        total = float(np.logaddexp(total, special.logsumexp(log_terms)))
        last = float(log_terms[-1])
    if upper:  # the rest: at most last * q^2 / (1 - q^2)
        total = float(np.logaddexp(total, last + 2.0 * log_q - math.log(-math.expm1(2 * log_q))))
    return total + 2.0 * (log_norm - special.gammaln(fraction))


def polya_shift_epsilon(scale: float, shift: int, fraction: float) -> float:
    """The privacy loss of a shift by at most ``shift`` of the sum of ``fraction`` (``m / K
    <= 1``) of the Polya shares of discrete Laplace(``scale``): ``log P(0) - log P(shift)``.

    Exact, not a bound on a bound: the negative binomial of shape ``r <= 1`` is log-convex
    (``p(n + 1) / p(n) = q (n + r) / (n + 1)`` grows with ``n``), so ``P(z) = sum_y p(z + y)
    p(y)`` is log-convex and decreasing on ``z >= 0`` (a sum of log-convex sequences) and
    symmetric; then ``log P(z) - log P(z + k)`` over every ``z`` and ``0 < k <= shift`` is
    largest at ``z = 0, k = shift``. ``P(0)`` is summed with its tail bound, ``P(shift)``
    without, so rounding can only raise the figure.

        >>> round(polya_shift_epsilon(4.0, 3, 1.0), 6)  # all shares: 3 / 4
        0.75
    """
    fraction = float(fraction)
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    if fraction == 1.0:
        return int(shift) / float(scale)
    top = _log_polya_difference_pmf(scale, fraction, 0, upper=True)
    return top - _log_polya_difference_pmf(scale, fraction, int(shift), upper=False)


def shortfall_unit_epsilon(scale: float, fraction: float) -> float:
    """Epsilon per unit of L1 change when only ``fraction`` of the Polya shares arrive:
    ``polya_shift_epsilon````(scale, 1, fraction)`` (at least ``1 / scale``, the
    full-noise value; about ``1 / scale + log(1 / fraction)`` at tiny scales).

    Finite for every finite scale > 0 (the PMF is summed in log space: a scale that makes
    ``exp(-1 / scale)`` underflow gave NaN before); ``inf`` where ``1 / scale`` overflows;
    one-line errors for a scale that is not a positive number or a fraction outside (0, 1].

        >>> round(shortfall_unit_epsilon(0.01, 1.0), 6)
        100.0
        >>> round(shortfall_unit_epsilon(1e-3, 0.5) - 1e3, 4)  # log(1 / 0.5)
        0.6931
    """
    scale, fraction = float(scale), float(fraction)
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"the noise scale must be finite and > 0, got {scale}")
    if not math.isfinite(1.0 / scale):
        return math.inf  # no noise to speak of
    return max(float(polya_shift_epsilon(scale, 1, fraction)), 1.0 / scale)


def check_shares(num_clients: int, family: str) -> int:
    """Validates the share options of a secure mechanism; returns ``num_clients`` as an int."""
    if family not in FAMILIES:
        raise ValueError(f"unknown noise family {family!r}; choose one of {FAMILIES}")
    if isinstance(num_clients, bool) or not isinstance(num_clients, (int, np.integer)):
        raise TypeError(f"num_clients must be an int, got {num_clients!r}")
    if num_clients < 1:
        raise ValueError(f"num_clients must be >= 1, got {num_clients}")
    return int(num_clients)
