"""Summaries of a ROC / precision-recall curve given by bucket counts: partial AUC, operating
points and average precision.

Every function takes per-bucket counts ``pos, neg [..., T + 1]`` (bucket ``b`` above bucket
``b - 1``, as in [`dpauc_tf.core.curve`][]; non-negative, e.g. the monotone projection of a
release) and broadcasts over leading axes (a repeats axis). The curve's points are the
``T + 2`` cuts "buckets ``>= k`` are predicted positive", ``k = T + 1, ..., 0``: examples
inside one bucket are ties, which is what scikit-learn does with tied scores, so on exact
counts each number equals scikit-learn's on the bucketed scores (and differs from its value
on the raw scores by at most the grid's error, `partial_auc_grid_bound`).

* [`partial_auc`][]: ``roc_auc_score(y, s, max_fpr=F)``, McClish's standardisation
  ``(1 + (A_F - F^2 / 2) / (F - F^2 / 2)) / 2`` of the area ``A_F`` over ``[0, F]``
  (the curve interpolated linearly at ``F``); ``F = 1`` is the AUC.
* [`tpr_at_fpr`][] / [`fpr_at_tpr`][]: the operating point on the grid: the largest
  recall among the thresholds whose false-positive rate is at most ``F`` (the smallest
  false-positive rate among those whose recall is at least ``t``), with its threshold.
* [`average_precision`][]: ``average_precision_score``, the step sum
  ``sum_k (R_k - R_{k-1}) P_k`` over the cuts (not the interpolated PR AUC of Keras).

Undefined values (no positive, or no negative where the number needs one) are NaN.

Examples:
    >>> import numpy as np
    >>> pos, neg = np.array([0., 0., 1., 2.]), np.array([0., 2., 1., 0.])
    >>> round(float(partial_auc(pos, neg, 1.0)), 4), round(float(average_precision(pos, neg)), 4)
    (0.9444, 0.9167)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np


def check_rate(value: float, name: str, *, allow_zero: bool = False) -> float:
    """A rate in ``(0, 1]`` (``[0, 1]`` with ``allow_zero``); NaN, infinities, booleans and
    strings are refused with a one-line ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
    value = float(value)
    low_ok = value >= 0.0 if allow_zero else value > 0.0
    if not math.isfinite(value) or not low_ok or value > 1.0:
        interval = "[0, 1]" if allow_zero else "(0, 1]"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return value


def cut_counts(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """True and false positives ``[..., T + 2]`` of the cuts from the top: entry ``i``
    predicts the ``i`` highest buckets positive (``0``: none, ``T + 1``: all)."""
    pos = np.asarray(pos, np.float64)
    neg = np.asarray(neg, np.float64)
    zero = np.zeros((*pos.shape[:-1], 1))
    tp = np.concatenate([zero, np.cumsum(pos[..., ::-1], -1)], -1)
    fp = np.concatenate([zero, np.cumsum(neg[..., ::-1], -1)], -1)
    return tp, fp


def roc_points(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``fpr, tpr [..., T + 2]`` from (0, 0) to (1, 1) (NaN rows where a class is empty)."""
    tp, fp = cut_counts(pos, neg)
    with np.errstate(invalid="ignore", divide="ignore"):
        num_pos, num_neg = tp[..., -1:], fp[..., -1:]
        tpr = np.where(num_pos > 0, tp / np.where(num_pos > 0, num_pos, 1.0), np.nan)
        fpr = np.where(num_neg > 0, fp / np.where(num_neg > 0, num_neg, 1.0), np.nan)
    return fpr, tpr


def _area_up_to(fpr: np.ndarray, tpr: np.ndarray, max_fpr: float) -> np.ndarray:
    """The area under the piecewise-linear curve over ``fpr`` in ``[0, max_fpr]``."""
    x0, x1 = fpr[..., :-1], fpr[..., 1:]
    y0, y1 = tpr[..., :-1], tpr[..., 1:]
    xa, xb = np.minimum(x0, max_fpr), np.minimum(x1, max_fpr)
    width = x1 - x0
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(width != 0, (y1 - y0) / np.where(width != 0, width, 1.0), 0.0)
    ya, yb = y0 + slope * (xa - x0), y0 + slope * (xb - x0)
    return np.sum((xb - xa) * (ya + yb) / 2.0, -1)


def partial_auc(pos: np.ndarray, neg: np.ndarray, max_fpr: float) -> np.ndarray:
    """scikit-learn's standardised partial AUC (``roc_auc_score(max_fpr=...)``) ``[...]``.

    ``max_fpr`` in ``(0, 1]`` (1: the AUC, as scikit-learn returns it); NaN where a class
    is empty. Examples:

        >>> pos, neg = np.array([0., 1., 3.]), np.array([0., 3., 1.])
        >>> round(float(partial_auc(pos, neg, 0.25)), 4)
        0.6429
    """
    max_fpr = check_rate(max_fpr, "max_fpr")
    fpr, tpr = roc_points(pos, neg)
    area = _area_up_to(fpr, tpr, max_fpr)
    if max_fpr == 1.0:
        return area
    min_area, max_area = 0.5 * max_fpr**2, max_fpr
    return 0.5 * (1.0 + (area - min_area) / (max_area - min_area))


def partial_auc_grid_bound(pos: np.ndarray, neg: np.ndarray, max_fpr: float) -> np.ndarray:
    """How far [`partial_auc`][] of bucketed counts may lie from the value on the raw
    scores: inside a bucket the raw curve may run anywhere (monotone) in the box that the
    bucket's segment spans, so the area moves by at most half of that box,
    ``width_b (pos_b / P) / 2``, and by at most the whole part of the box below ``F`` for
    the segment that crosses ``F``; summed, times McClish's scale ``1 / (2 (F - F^2 / 2))``
    (1 for ``F = 1``)."""
    max_fpr = check_rate(max_fpr, "max_fpr")
    fpr, tpr = roc_points(pos, neg)
    x0, x1 = np.minimum(fpr[..., :-1], max_fpr), np.minimum(fpr[..., 1:], max_fpr)
    crossing = fpr[..., 1:] > max_fpr
    share = np.where(crossing, 1.0, 0.5)
    half_boxes = np.sum(share * (x1 - x0) * (tpr[..., 1:] - tpr[..., :-1]), -1)
    if max_fpr == 1.0:
        return half_boxes
    return half_boxes / (2.0 * (max_fpr - 0.5 * max_fpr**2))


@dataclasses.dataclass(frozen=True)
class OperatingPoint:
    """The operating point chosen on a grid, per repeat ``[...]``.

    Attributes:
      cut: how many of the highest buckets are predicted positive (``-1`` where undefined).
      threshold: the grid's threshold of that cut (a score above it, or at least it on an
        inclusive grid, is predicted positive; ``-inf``: everything, ``+inf``: nothing;
        NaN where undefined).
      tpr: the recall at that threshold.
      fpr: the false-positive rate at that threshold.

    Examples:
        >>> point = tpr_at_fpr(np.array([[0., 1., 3.]]), np.array([[0., 3., 1.]]),
        ...                    np.array([0.5, 0.75]), 0.25)
        >>> float(point.tpr[0]), float(point.fpr[0]), float(point.threshold[0])
        (0.75, 0.25, 0.75)
    """

    cut: np.ndarray
    threshold: np.ndarray
    tpr: np.ndarray
    fpr: np.ndarray


def _cut_thresholds(thresholds: np.ndarray) -> np.ndarray:
    """The threshold of every cut ``i`` (``i`` highest buckets positive), ``[T + 2]``."""
    values = np.asarray(thresholds, np.float64)
    return np.concatenate([[np.inf], values[::-1], [-np.inf]])


def _chosen(score: np.ndarray, allowed: np.ndarray, fpr, tpr, thresholds) -> OperatingPoint:
    """The allowed cut with the highest ``score`` (ties: the fewest buckets positive)."""
    masked = np.where(allowed, score, -np.inf)
    cut = np.argmax(masked, -1)
    defined = np.any(allowed, -1) & np.all(np.isfinite(tpr) & np.isfinite(fpr), -1)
    pick = np.expand_dims(cut, -1)
    chosen_tpr = np.take_along_axis(tpr, pick, -1)[..., 0]
    chosen_fpr = np.take_along_axis(fpr, pick, -1)[..., 0]
    threshold = _cut_thresholds(thresholds)[cut]
    return OperatingPoint(
        cut=np.where(defined, cut, -1),
        threshold=np.where(defined, threshold, np.nan),
        tpr=np.where(defined, chosen_tpr, np.nan),
        fpr=np.where(defined, chosen_fpr, np.nan),
    )


def _check_grid(pos: np.ndarray, thresholds: np.ndarray) -> None:
    if np.shape(pos)[-1] != np.size(thresholds) + 1:
        raise ValueError(
            f"counts have {np.shape(pos)[-1]} buckets but the grid has {np.size(thresholds)} "
            "thresholds (need thresholds + 1 buckets)"
        )


def tpr_at_fpr(
    pos: np.ndarray, neg: np.ndarray, thresholds: np.ndarray, max_fpr: float
) -> OperatingPoint:
    """The highest recall among the grid's thresholds whose false-positive rate is at most
    ``max_fpr`` (in ``[0, 1]``), and that threshold."""
    max_fpr = check_rate(max_fpr, "fpr", allow_zero=True)
    _check_grid(pos, thresholds)
    fpr, tpr = roc_points(pos, neg)
    return _chosen(tpr - 1e-12 * fpr, fpr <= max_fpr + 1e-12, fpr, tpr, thresholds)


def fpr_at_tpr(
    pos: np.ndarray, neg: np.ndarray, thresholds: np.ndarray, min_tpr: float
) -> OperatingPoint:
    """The lowest false-positive rate among the grid's thresholds whose recall is at least
    ``min_tpr`` (in ``[0, 1]``), and that threshold."""
    min_tpr = check_rate(min_tpr, "tpr", allow_zero=True)
    _check_grid(pos, thresholds)
    fpr, tpr = roc_points(pos, neg)
    return _chosen(-fpr + 1e-12 * tpr, tpr >= min_tpr - 1e-12, fpr, tpr, thresholds)


def average_precision(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """scikit-learn's ``average_precision_score`` ``[...]``: ``sum_k (pos_k / P) TP_k /
    (TP_k + FP_k)`` over the buckets from the top (``TP_k``, ``FP_k`` counted down to and
    including bucket ``k``); NaN without positives."""
    pos = np.asarray(pos, np.float64)
    tp, fp = cut_counts(pos, neg)
    tp, fp = tp[..., 1:], fp[..., 1:]
    gained = pos[..., ::-1]
    predicted = tp + fp
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(predicted > 0, tp / np.where(predicted > 0, predicted, 1.0), 0.0)
        num_pos = tp[..., -1]
        total = np.sum(gained * precision, -1)
        return np.where(num_pos > 0, total / np.where(num_pos > 0, num_pos, 1.0), np.nan)
