"""Counts -> cumulative confusion counts -> ROC points -> AUC (trapezoid rule).

All functions are TensorFlow ops that work eagerly, in graphs and under XLA, and broadcast
over any leading axes (for example a leading "repeat" axis of noisy releases).

Conventions (see [`dpauc_tf.core.thresholds`][]): with ``T`` thresholds and ``T + 1`` buckets, an
example in bucket ``b`` is predicted positive at threshold ``j`` when ``b > j``, so
``TP[j] = sum_{b > j} pos[b]`` and ``FN[j] = P - TP[j]`` with ``P = sum_b pos[b]``.

`roc_from_confusion` and `auc_from_roc` are the DPAUC reference code's rule: the
four aggregates are clipped at 0, ``TPR = TP / (TP + FN)`` and ``FPR = FP / (FP + TN)`` (0
where a denominator is 0, as in TensorFlow), the points are sorted by FPR (then TPR, which
reproduces TensorFlow's order on noise-free counts), and the area is the trapezoid sum. No
(0, 0) or (1, 1) point is added: TensorFlow's grid already produces them from its end
thresholds. On exact counts this is TensorFlow's AUC ([`auc_from_histogram`][]). On noisy
counts it is **not** a consistent estimator: points that share an FPR (buckets that hold
only positives) land in the order of their noise, so it is kept only to reproduce the paper
(``estimator="reference"``); the default estimate of every mechanism is
[`dpauc_tf.core.postprocessing.mann_whitney_auc`][].
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf


class Confusion(NamedTuple):
    """Cumulative counts at every threshold, each of shape ``[..., T]``."""

    tp: tf.Tensor
    fp: tf.Tensor
    tn: tf.Tensor
    fn: tf.Tensor


class RocCurve(NamedTuple):
    """ROC points sorted by increasing FPR, each of shape ``[..., T]``."""

    fpr: tf.Tensor
    tpr: tf.Tensor


def suffix_sums(bucket_values: tf.Tensor) -> tf.Tensor:
    """``out[..., j] = sum_{b > j} x[..., b]`` for ``j`` in ``[0, T)``, from ``[..., T + 1]``."""
    return tf.cumsum(bucket_values, axis=-1, reverse=True, exclusive=True)[..., :-1]


def confusion_from_histogram(pos: tf.Tensor, neg: tf.Tensor) -> Confusion:
    """Cumulative TP/FP/TN/FN from per-bucket counts ``[..., T + 1]`` (no clipping)."""
    tp = suffix_sums(pos)
    fp = suffix_sums(neg)
    num_pos = tf.reduce_sum(pos, axis=-1, keepdims=True)
    num_neg = tf.reduce_sum(neg, axis=-1, keepdims=True)
    return Confusion(tp=tp, fp=fp, tn=num_neg - fp, fn=num_pos - tp)


def roc_from_confusion(confusion: Confusion, *, clip: bool = True) -> RocCurve:
    """ROC points, clipped at 0 and sorted by (FPR, TPR)."""
    tp, fp, tn, fn = confusion
    if clip:
        tp, fp, tn, fn = (tf.maximum(c, tf.zeros_like(c)) for c in (tp, fp, tn, fn))
    tpr = tf.math.divide_no_nan(tp, tp + fn)
    fpr = tf.math.divide_no_nan(fp, fp + tn)
    # Lexicographic sort by (fpr, tpr): a stable sort by tpr, then a stable sort by fpr.
    batch_dims = len(tpr.shape) - 1
    order = tf.argsort(tpr, axis=-1, stable=True)
    fpr = tf.gather(fpr, order, axis=-1, batch_dims=batch_dims)
    tpr = tf.gather(tpr, order, axis=-1, batch_dims=batch_dims)
    order = tf.argsort(fpr, axis=-1, stable=True)
    fpr = tf.gather(fpr, order, axis=-1, batch_dims=batch_dims)
    tpr = tf.gather(tpr, order, axis=-1, batch_dims=batch_dims)
    return RocCurve(fpr=fpr, tpr=tpr)


def auc_from_roc(roc: RocCurve) -> tf.Tensor:
    """Trapezoid area under sorted ROC points; shape ``[...]``."""
    dx = roc.fpr[..., 1:] - roc.fpr[..., :-1]
    mean_y = (roc.tpr[..., 1:] + roc.tpr[..., :-1]) / 2
    return tf.reduce_sum(dx * mean_y, axis=-1)


def auc_from_confusion(confusion: Confusion, *, clip: bool = True) -> tf.Tensor:
    """AUC from cumulative counts (clip, ROC, sort, trapezoid)."""
    return auc_from_roc(roc_from_confusion(confusion, clip=clip))


def auc_from_histogram(pos: tf.Tensor, neg: tf.Tensor) -> tf.Tensor:
    """AUC of noise-free bucket counts; equals ``tf.keras.metrics.AUC`` on the same grid.

    Examples:
        >>> pos, neg = tf.constant([0.0, 0.0, 1.0, 2.0]), tf.constant([0.0, 2.0, 1.0, 0.0])
        >>> round(float(auc_from_histogram(pos, neg)), 4)  # (6 + 2 + 0.5) / 9, ties count 1/2
        0.9444
    """
    return auc_from_confusion(confusion_from_histogram(pos, neg))
