"""Floating-point noise samplers (stateless TensorFlow ops: eager, graphs and XLA).

Every sampler takes an explicit ``seed``, an int64 ``[2]`` tensor from
[`dpauc_tf.noise.seeds.make_seed`][].

Floating-point noise and Mironov's attack. Laplace noise computed as ``b (E1 - E2)`` with
``E = -log1p(-U)`` is the textbook sampler. Mironov (2012, "On significance of the least
significant bits for differential privacy") showed that such samplers, evaluated in floating
point, do not produce every double with the intended probability: the set of outputs that
``count + noise`` can take depends on ``count``, so the exact bits of a single release can
reveal which of two neighbouring counts produced it. A second, smaller gap: ``U`` has a
finite number of values, so ``|noise| <= b * (-log(2^-53))`` (about ``36.7 b`` in float64,
``15.9 b`` in float32): two neighbouring counts then have supports that differ at the far
tails, and the pure epsilon guarantee holds only up to a delta of about the tail mass beyond
that bound (``exp(-36.7) / 2``, below ``1e-16``, for float64; ``exp(-15.9) / 2``, about
``6e-8``, for float32 noise). The samplers here (``laplace``, ``gaussian`` and the float
``discrete_laplace``) are fast, graph- and XLA-compatible and fine for experiments, but
they are **not** hardened. The hardened choice for a central release is exact integer
noise on integer counts: [`dpauc_tf.noise.exact`][] samples discrete Laplace and discrete
Gaussian noise with integer arithmetic only (Canonne, Kamath & Steinke 2020); the histogram
mechanisms use it with ``noise="discrete"``.

    >>> from dpauc_tf.noise.seeds import make_seed
    >>> laplace([3], 2.0, make_seed(0)).shape.as_list()
    [3]
"""

from __future__ import annotations

import tensorflow as tf


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
    `dpauc_tf.noise.exact.discrete_laplace_variance`. Values are integers stored in
    ``dtype``.
    """
    exponentials = _standard_exponential(tf.concat([[2], shape], 0), seed, tf.float64)
    geometric = tf.floor(tf.cast(scale, tf.float64) * exponentials)
    return tf.cast(geometric[0] - geometric[1], dtype)
