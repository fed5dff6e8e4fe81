"""Noise shares for secure aggregation: each client adds one, their sum is one draw.

* [`polya_difference`][]: one client's share of discrete Laplace noise (Goryczka et al.
  2013): ``X - Y`` with ``X, Y ~ NegativeBinomial(1 / K, exp(-1 / scale))``; the sum of ``K``
  shares is exactly discrete Laplace with that scale.
* `skellam_share`: ``Poisson(mu) - Poisson(mu)``; Skellam is closed under sums (Agarwal,
  Kairouz & Liu 2021), so ``K`` shares of ``mu / K`` sum to ``Skellam(mu, mu)``.
* `shortfall_unit_epsilon`: what a unit change costs when fewer shares arrive than they
  were sized for (dropout).

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


def _polya_difference_log_pmf(scale: float, shape_r: float, max_abs: int) -> np.ndarray:
    """log P(Z = z), z in [0, max_abs], Z = X - Y, X, Y ~ NegativeBinomial(r, q = e^(-1/scale))."""
    from scipy import special, stats

    q = math.exp(-1.0 / scale)
    support = math.ceil(60.0 * scale * max(1.0, shape_r)) + max_abs + 100
    k = np.arange(support + 1)
    log_p = stats.nbinom.logpmf(k, shape_r, 1.0 - q)
    out = np.empty(max_abs + 1)
    for z in range(max_abs + 1):
        out[z] = special.logsumexp(log_p[z:] + log_p[: support + 1 - z])
    return out


def shortfall_unit_epsilon(scale: float, fraction: float) -> float:
    """Epsilon per unit of L1 change when only ``fraction`` of the Polya shares arrive.

    The sum of ``fraction * K`` shares sized for ``K`` is a difference of two Polya variates
    of shape ``fraction``; its epsilon for a change of 1 is the largest log ratio of
    neighbouring probabilities (at least ``1 / scale``, the full-noise value).
    """
    log_pmf = _polya_difference_log_pmf(scale, fraction, max_abs=200)
    return max(float(np.max(log_pmf[:-1] - log_pmf[1:])), 1.0 / scale)


def check_shares(num_clients: int, family: str) -> int:
    """Validates the share options of a secure mechanism; returns ``num_clients`` as an int."""
    if family not in FAMILIES:
        raise ValueError(f"unknown noise family {family!r}; choose one of {FAMILIES}")
    if isinstance(num_clients, bool) or not isinstance(num_clients, (int, np.integer)):
        raise TypeError(f"num_clients must be an int, got {num_clients!r}")
    if num_clients < 1:
        raise ValueError(f"num_clients must be >= 1, got {num_clients}")
    return int(num_clients)
