"""Seeds and noise samplers (stateless TensorFlow ops, usable eagerly, in graphs and in XLA).

Every sampler takes an explicit ``seed``: an int64 tensor of shape ``[2]`` for TensorFlow's
stateless RNG (Philox). :func:`make_seed` turns the user-facing ``seed`` argument into one:

* ``seed=None`` draws 126 bits from the operating system (``secrets``): fresh entropy on every
  call. This is the only mode to use for real releases.
* an integer seed makes results reproducible. It is for experiments and tests only: anyone who
  knows the seed can subtract the noise.

Floating-point noise and Mironov's attack. Laplace noise computed as ``b (E1 - E2)`` with
``E = -log1p(-U)`` is the textbook sampler. Mironov (2012, "On significance of the least
significant bits for differential privacy") showed that such samplers, evaluated in floating
point, do not produce every double with the intended probability: the set of outputs that
``count + noise`` can take depends on ``count``, so the exact bits of a single release can
reveal which of two neighbouring counts produced it, and the epsilon guarantee fails. The
samplers in this module (``laplace``, ``gaussian``, and ``discrete_laplace`` /
``polya_difference``, which round or mix floating-point draws) are fast, graph- and
XLA-compatible and fine for experiments, but they are **not** hardened against that attack.
The hardened choice for a central release is exact integer noise on integer counts:
:mod:`dpauc_tf.exact_noise` samples discrete Laplace and discrete Gaussian noise with integer
arithmetic only (Canonne, Kamath & Steinke 2020); the histogram mechanisms use it with
``noise="discrete"``.
"""

from __future__ import annotations

import secrets

import numpy as np
import tensorflow as tf

_MAX_INT64 = 2**63 - 1


def make_seed(seed: int | tf.Tensor | np.ndarray | None = None) -> tf.Tensor:
    """Returns a ``[2]`` int64 seed: OS entropy for ``None``, ``[seed, 0]`` for an int.

    >>> make_seed(7).numpy().tolist()
    [7, 0]
    """
    if seed is None:
        return tf.constant([secrets.randbits(63), secrets.randbits(63)], dtype=tf.int64)
    if isinstance(seed, bool):
        raise TypeError("seed must be an int, None or a [2] tensor, not a bool")
    if isinstance(seed, (int, np.integer)):
        if seed < 0:
            raise ValueError(f"seed must be non-negative, got {seed}")
        return tf.constant([int(seed) % _MAX_INT64, 0], dtype=tf.int64)
    seed = tf.cast(tf.convert_to_tensor(seed), tf.int64)
    seed.shape.assert_is_compatible_with([2])
    return seed


def split_seed(seed: tf.Tensor, num: int) -> tf.Tensor:
    """``num`` independent ``[2]`` seeds derived from one (shape ``[num, 2]``)."""
    return tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), num=num)


def _standard_exponential(shape, seed, dtype):
    u = tf.random.stateless_uniform(shape, seed=seed, dtype=dtype)
    return -tf.math.log1p(-u)  # u in [0, 1): finite


def laplace(shape, scale, seed: tf.Tensor, dtype: tf.DType = tf.float64) -> tf.Tensor:
    """Laplace(0, scale) noise: density ``exp(-|x| / scale) / (2 scale)``, variance ``2 scale^2``."""
    exponentials = _standard_exponential(tf.concat([[2], shape], 0), seed, dtype)
    return tf.cast(scale, dtype) * (exponentials[0] - exponentials[1])


def gaussian(shape, stddev, seed: tf.Tensor, dtype: tf.DType = tf.float64) -> tf.Tensor:
    """Gaussian(0, stddev^2) noise."""
    return tf.cast(stddev, dtype) * tf.random.stateless_normal(shape, seed=seed, dtype=dtype)


def discrete_laplace(shape, scale, seed: tf.Tensor, dtype: tf.DType = tf.float64) -> tf.Tensor:
    """Discrete Laplace (two-sided geometric) noise, ``P(k) ~ exp(-|k| / scale)`` on the integers.

    The difference of two geometric variates ``floor(scale * E)``, ``E ~ Exp(1)``; variance
    ``2 q / (1 - q)^2`` with ``q = exp(-1 / scale)``. Values are integers stored in ``dtype``.
    """
    exponentials = _standard_exponential(tf.concat([[2], shape], 0), seed, tf.float64)
    geometric = tf.floor(tf.cast(scale, tf.float64) * exponentials)
    return tf.cast(geometric[0] - geometric[1], dtype)


def discrete_laplace_variance(scale: float) -> float:
    """Variance of :func:`discrete_laplace` with the given scale."""
    q = float(np.exp(-1.0 / scale))
    return 2.0 * q / (1.0 - q) ** 2


def polya_difference(
    shape, scale, num_shares: int, seed: tf.Tensor, dtype: tf.DType = tf.float64
) -> tf.Tensor:
    """One client's share of discrete Laplace noise (Goryczka et al. 2013).

    ``X - Y`` with ``X, Y ~ NegativeBinomial(r = 1 / num_shares, p = exp(-1 / scale))`` (Polya),
    sampled as a Gamma-Poisson mixture. The sum of ``num_shares`` independent shares is exactly
    one :func:`discrete_laplace` draw with the same ``scale``.
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
