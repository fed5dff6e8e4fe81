"""The exact noise law of randomized response with few flips (``rr`` at large epsilon).

Where fewer than a few flips are expected (``n p < 3``: epsilon 8 on 1,000 examples expects
0.34) the noise on the AUC is a handful of discrete jumps, most often none, and the normal
law does not hold. The law is known, though: every example flips independently with the
public probability ``p``; a flipped negative in bucket ``b`` adds one to the released
positive count ``r[b]`` (a flipped positive takes one away), which moves the estimate by
``g[b] = dA / dr[b]`` (``-g[b]``). So, to first order,

    A^ - A = sum_b g[b] (F_neg[b] - F_pos[b]) - p sum_b g[b] (neg[b] - pos[b]),

``F_y[b]`` the flips of class ``y`` in bucket ``b`` (binomial), the second sum their mean.
[`flip_error_quantile`][] draws that law (the total flips of a class are binomial, their
buckets drawn in proportion to the class's counts), with ``pos``, ``neg`` the release's
debiased counts, and takes the quantile of ``|A^ - A|``, adding a normal sampling error for
the population target. The draws come from a **fixed seed** (``FLIP_SEED``): the same
release always gives the same interval.

Examples:
    >>> g = np.array([[0.0, 0.01]])
    >>> pos, neg = np.array([[0.0, 50.0]]), np.array([[50.0, 0.0]])
    >>> half = flip_error_quantile(g, pos, neg, 1e-4, np.zeros(1), tail=0.05)
    >>> float(half[0]) < 0.01  # 99 of 100 releases have no flip: no jump needed at 95%
    True
"""

from __future__ import annotations

import numpy as np

FLIP_DRAWS = 4000
FLIP_SEED = 0  # fixed: the interval of a release is reproducible


def _class_jumps(rng, gradient, counts, p, draws) -> np.ndarray:
    """The sum ``[draws]`` of ``gradient[b]`` over the flipped examples of one class."""
    total = float(max(np.sum(counts), 0.0))
    flips = rng.binomial(round(total), p, size=draws)
    most = int(flips.max(initial=0))
    if most == 0 or total <= 0:
        return np.zeros(draws)
    cdf = np.cumsum(counts) / total
    buckets = np.searchsorted(cdf, rng.random((draws, most)) * cdf[-1], side="right")
    jumps = gradient[np.minimum(buckets, gradient.size - 1)]
    return np.sum(np.where(np.arange(most) < flips[:, None], jumps, 0.0), -1)


def flip_error_quantile(
    gradient: np.ndarray,
    pos: np.ndarray,
    neg: np.ndarray,
    p: float,
    sampling: np.ndarray,
    *,
    tail: float,
    draws: int = FLIP_DRAWS,
    seed: int = FLIP_SEED,
) -> np.ndarray:
    """The ``1 - tail`` quantile ``[R]`` of ``|A^ - A|`` under the flips' law (module
    docstring), plus ``N(0, sampling)`` (the population target; 0 for the sample target).

    Args:
      gradient: ``dA / dr[b]`` of every release ``[R, B]`` (``r`` the released positives).
      pos: the release's (debiased, non-negative) positive counts ``[R, B]``.
      neg: its negative counts ``[R, B]``.
      p: the flip probability.
      sampling: the sampling variance to add ``[R]``.
      tail: ``1 - confidence``.
      draws: draws of the law per release.
      seed: the draws' seed.
    """
    rng = np.random.default_rng(seed)
    gradient, pos, neg = (np.atleast_2d(np.asarray(a, np.float64)) for a in (gradient, pos, neg))
    sampling = np.broadcast_to(np.asarray(sampling, np.float64), gradient.shape[:1])
    out = np.full(gradient.shape[0], np.nan)
    normal = rng.standard_normal(draws)
    for row in range(gradient.shape[0]):
        g = np.nan_to_num(gradient[row])
        mean = p * float(np.sum(g * (neg[row] - pos[row])))
        error = _class_jumps(rng, g, neg[row], p, draws) - _class_jumps(rng, g, pos[row], p, draws)
        error = error - mean + np.sqrt(max(float(sampling[row]), 0.0)) * normal
        out[row] = np.quantile(np.abs(error), 1.0 - tail, method="higher")
    return out
