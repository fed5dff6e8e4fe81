"""The second-order term of a release's privacy variance (the curvature of the estimator).

The delta method of [`dpauc_tf.mechanisms.intervals.privacy_variance`][] evaluates the
estimator's gradient ``g`` at the **released** (noisy) values ``r = x + e``. With the
second-order expansion ``A(x + e) ~ A(x) + g(x)'e + e'He / 2`` (``H`` the Hessian, noise
covariance ``S``, diagonal):

* the estimate's variance is ``V1 + tr(HSHS) / 2`` (``V1 = g(x)'S g(x)``; the second term is
  exact for the pairs of a positive and a negative count, whatever the noise's law, since the
  two classes' noises are independent);
* the delta method at the noisy point has mean ``V1 + tr(HSHS)``: it counts the curvature
  twice, because ``g(r) = g(x) + He`` carries the noise.

Where the noise is as large as the counts (a tree's leaves at small ``n``, ``paper``'s ``4T``
counts at small ``n``) the curvature term dominates and the plain delta method overstates
the variance (``docs/intervals.md`` measures by how much). The unbiased estimate is therefore
``g(r)'S g(r) - tr(HSHS) / 2``, floored at ``tr(HSHS) / 2`` (the variance is at least the
second-order term).

``tr(HSHS)`` is estimated by Hutchinson's estimator with Rademacher probes ``z``:
``E ||S^1/2 H S^1/2 z||^2`` (one Hessian-vector product per probe, by double
differentiation). The probes are drawn from a **fixed seed** (``CURVATURE_SEED``), so the
same release always gives the same interval. ``H`` has rank of the order of the number of
released entries, which makes a few probes enough.

Examples:
    >>> import tensorflow as tf
    >>> x = {"a": tf.constant([[1.0, 2.0]], tf.float64)}
    >>> trace = curvature_trace(lambda v: v["a"][..., 0] * v["a"][..., 1], x, {"a": 1.0})
    >>> float(trace[0])  # H = [[0, 1], [1, 0]], S = I: tr(HSHS) = 2 whatever the probe
    2.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import tensorflow as tf

CURVATURE_PROBES = 4
CURVATURE_SEED = 0  # fixed: the interval of a release is reproducible


def _finite_sum(raw: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum(tf.where(tf.math.is_finite(raw), raw, tf.zeros_like(raw)))


def curvature_trace(
    estimate: Callable[[dict[str, tf.Tensor]], tf.Tensor],
    point: Mapping[str, tf.Tensor],
    laws: Mapping[str, np.ndarray | float],
    *,
    probes: int = CURVATURE_PROBES,
    seed: int = CURVATURE_SEED,
) -> np.ndarray:
    """Hutchinson's estimate ``[...]`` of ``tr(H S H S)`` of ``estimate`` at ``point``.

    Args:
      estimate: the (unclipped) estimator, from the noisy entries ``{key: [..., E]}`` to
        ``[...]`` (rows independent: the Hessian is block-diagonal across them).
      point: the released entries the noise acts on (float64 tensors ``[..., E]``).
      laws: the noise variance of every entry (broadcastable to the entries).
      probes: the number of Rademacher probes.
      seed: the probes' seed.
    """
    rng = np.random.default_rng(seed)
    keys = list(point)
    values = [point[key] for key in keys]
    scales = [
        np.sqrt(np.broadcast_to(np.asarray(laws[key], np.float64), v.shape))
        for key, v in zip(keys, values, strict=True)
    ]
    total = None
    for _ in range(probes):
        directions = [
            tf.constant(scale * rng.choice([-1.0, 1.0], size=scale.shape)) for scale in scales
        ]
        with tf.GradientTape() as outer:
            outer.watch(values)
            with tf.GradientTape() as inner:
                inner.watch(values)
                objective = _finite_sum(estimate(dict(zip(keys, values, strict=True))))
            grads = inner.gradient(objective, values)
            along = tf.add_n(
                [
                    tf.reduce_sum(g * d)
                    for g, d in zip(grads, directions, strict=True)
                    if g is not None
                ]
            )
        products = outer.gradient(along, values)
        trace = sum(
            np.sum(scale**2 * hv.numpy() ** 2, -1)
            for scale, hv in zip(scales, products, strict=True)
            if hv is not None
        )
        total = trace if total is None else total + trace
    return np.asarray(total, np.float64) / probes
