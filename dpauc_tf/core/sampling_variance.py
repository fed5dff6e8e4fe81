"""The sampling variance of an AUC from (possibly noisy) bucket counts: DeLong, Hanley-McNeil.

Pure NumPy, vectorised over leading axes (``[..., T + 1]`` counts, as every histogram of the
package: bucket ``b`` holds higher scores than bucket ``b - 1``; ties inside a bucket count
1/2, as [`dpauc_tf.core.postprocessing.mann_whitney_auc`][]).

**DeLong's structural components** (DeLong, DeLong & Clarke-Pearson 1988) of binned data: a
positive in bucket ``b`` has ``V10[b] = (N_below[b] + neg[b] / 2) / N`` (the share of
negatives it outranks), a negative in bucket ``b`` has ``V01[b] = (P_above[b] + pos[b] / 2)
/ P``. The Mann-Whitney AUC is ``A = sum_b pos[b] V10[b] / P = sum_b neg[b] V01[b] / N`` and
its sampling variance (test sets of ``P`` positives and ``N`` negatives drawn from the
population) is estimated by ``S10 / P + S01 / N`` with
``S10 = sum_b pos[b] (V10[b] - A)^2 / (P - 1)``, ``S01 = sum_b neg[b] (V01[b] - A)^2 / (N - 1)``.

The same components give the AUC's gradient in the counts
(``dA / dpos[b] = (V10[b] - A) / P``, ``dA / dneg[b] = (V01[b] - A) / N``), which is how the
privacy noise of a released histogram enters the AUC ([`dpauc_tf.mechanisms.intervals`][]).

Examples:
    >>> pos, neg = np.array([0., 1., 2., 3.]), np.array([3., 2., 1., 0.])
    >>> round(float(mann_whitney_from_counts(pos, neg)), 4)
    0.9167
    >>> round(float(delong_variance(pos, neg)), 5)
    0.00556
"""

from __future__ import annotations

import numpy as np


def _counts(pos, neg) -> tuple[np.ndarray, np.ndarray]:
    pos, neg = np.asarray(pos, np.float64), np.asarray(neg, np.float64)
    if pos.shape != neg.shape or pos.ndim < 1:
        raise ValueError(
            f"pos and neg must be bucket counts of one shape, got {pos.shape}, {neg.shape}"
        )
    return pos, neg


def delong_components(pos, neg) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """DeLong's structural components per bucket and the AUC, from bucket counts.

    Args:
      pos: positive counts per bucket ``[..., T + 1]`` (any non-negative numbers; noisy
        counts should be projected first, e.g. by
        [`dpauc_tf.core.postprocessing.monotone_confusion`][]).
      neg: negative counts per bucket, the same shape.

    Returns:
      ``(v10, v01, auc)``: ``v10[..., b]`` the share of negatives a positive in bucket ``b``
      outranks (ties 1/2), ``v01[..., b]`` the share of positives above a negative in bucket
      ``b``, and the Mann-Whitney AUC ``[...]`` (NaN where a class is empty).

    Examples:
        >>> v10, v01, auc = delong_components(np.array([0., 1., 1.]), np.array([1., 1., 0.]))
        >>> v10.tolist(), v01.tolist(), float(auc)
        ([0.25, 0.75, 1.0], [1.0, 0.75, 0.25], 0.875)
    """
    pos, neg = _counts(pos, neg)
    num_pos = pos.sum(-1, keepdims=True)
    num_neg = neg.sum(-1, keepdims=True)
    below_neg = np.cumsum(neg, -1) - neg  # negatives in lower buckets
    above_pos = np.cumsum(pos[..., ::-1], -1)[..., ::-1] - pos  # positives in higher buckets
    with np.errstate(invalid="ignore", divide="ignore"):
        v10 = (below_neg + neg / 2.0) / num_neg
        v01 = (above_pos + pos / 2.0) / num_pos
        auc = (pos * v10).sum(-1) / num_pos[..., 0]
    defined = (num_pos[..., 0] > 0) & (num_neg[..., 0] > 0)
    return v10, v01, np.where(defined, auc, np.nan)


def mann_whitney_from_counts(pos, neg) -> np.ndarray:
    """The Mann-Whitney AUC ``[...]`` of bucket counts (ties 1/2; NaN where a class is empty)."""
    return delong_components(pos, neg)[2]


def delong_variance(pos, neg) -> np.ndarray:
    """DeLong's estimate ``S10 / P + S01 / N`` of the AUC's sampling variance ``[...]``.

    What the AUC of a test set with these class counts varies by across test sets drawn from
    the same population (the module docstring). NaN where a class has fewer than 2 examples.

    Args:
      pos: positive counts per bucket ``[..., T + 1]`` (non-negative).
      neg: negative counts per bucket, the same shape.
    """
    pos, neg = _counts(pos, neg)
    v10, v01, auc = delong_components(pos, neg)
    num_pos, num_neg = pos.sum(-1), neg.sum(-1)
    a = auc[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        s10 = (pos * (v10 - a) ** 2).sum(-1) / (num_pos - 1.0)
        s01 = (neg * (v01 - a) ** 2).sum(-1) / (num_neg - 1.0)
        variance = s10 / num_pos + s01 / num_neg
    return np.where((num_pos > 1) & (num_neg > 1), variance, np.nan)


def count_noise_variance(pos, neg, var_pos, var_neg) -> np.ndarray:
    """First-order variance ``[...]`` of the Mann-Whitney AUC when independent noise of
    variance ``var_pos`` (``var_neg``) is added to every positive (negative) bucket count:
    ``sum_b var_pos[b] (V10[b] - A)^2 / P^2 + var_neg[b] (V01[b] - A)^2 / N^2``.

    The noise acts like ``var_pos`` extra positives in every bucket: compare
    [`delong_variance`][].

    Examples:
        >>> pos, neg = np.array([0., 10., 10.]), np.array([10., 10., 0.])
        >>> round(float(count_noise_variance(pos, neg, 8., 8.)), 6)
        0.016875
    """
    pos, neg = _counts(pos, neg)
    v10, v01, auc = delong_components(pos, neg)
    num_pos, num_neg = pos.sum(-1), neg.sum(-1)
    a = auc[..., None]
    terms = np.asarray(var_pos) * (v10 - a) ** 2 / (num_pos**2)[..., None]
    terms = terms + np.asarray(var_neg) * (v01 - a) ** 2 / (num_neg**2)[..., None]
    return terms.sum(-1)


def hanley_mcneil_variance(auc, num_pos, num_neg) -> np.ndarray:
    """Hanley & McNeil's (1982) sampling variance of an AUC from the AUC and the class sizes.

    ``[A (1 - A) + (P - 1)(Q1 - A^2) + (N - 1)(Q2 - A^2)] / (P N)`` with ``Q1 = A / (2 - A)``,
    ``Q2 = 2 A^2 / (1 + A)`` (exponential score model). For releases that carry no counts
    (``auc-only``); NaN where ``P`` or ``N`` is below 1.

    Examples:
        >>> round(float(hanley_mcneil_variance(0.75, 300, 700)), 7)
        0.0003218
    """
    a = np.asarray(auc, np.float64)
    p, n = np.asarray(num_pos, np.float64), np.asarray(num_neg, np.float64)
    q1, q2 = a / (2.0 - a), 2.0 * a**2 / (1.0 + a)
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = (a * (1 - a) + (p - 1) * (q1 - a**2) + (n - 1) * (q2 - a**2)) / (p * n)
    return np.where((p >= 1) & (n >= 1), variance, np.nan)
