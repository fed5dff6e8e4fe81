"""The area under a curve of cumulative counts, with Keras' ``AUC`` options.

``tf.keras.metrics.AUC`` offers ``curve="ROC"``, ``"PR"`` (and ``"PRGAIN"`` in Keras 3) and
``summation_method="interpolation"``, ``"minoring"`` or ``"majoring"``. [`keras_auc`][]
computes the same area from a [`Confusion`][] (cumulative counts at
ascending thresholds, ``[..., T]``), with the same arithmetic, so that on noise-free counts
it equals Keras' metric; on a noisy release it is post-processing (no privacy cost).

* ROC: ``x = FPR``, ``y = TPR``; PR: ``x = recall``, ``y = precision``.
* interpolation: trapezoids (for PR, the Davis & Goadrich interpolation Keras uses);
  minoring / majoring: the lower / upper of the two heights of every step.

Examples:
    >>> import tensorflow as tf
    >>> from dpauc_tf.core.curve import confusion_from_histogram
    >>> c = confusion_from_histogram(tf.constant([0., 0., 1., 2.]), tf.constant([0., 2., 1., 0.]))
    >>> round(float(keras_auc(c, "ROC", "interpolation")), 4)
    0.9444
    >>> round(float(keras_auc(c, "ROC", "minoring")), 4)
    0.8889
"""

from __future__ import annotations

import tensorflow as tf

from dpauc_tf.core.curve import Confusion
from dpauc_tf.core.vocabulary import Curve, SummationMethod


def _gains(tp, fp, tn, fn):
    """Keras 3's precision-recall-gain coordinates (``curve="PRGAIN"``)."""
    scaling = tf.math.divide_no_nan(tp + fn, tn + fp)
    recall_gain = 1.0 - scaling * tf.math.divide_no_nan(fn, tp)
    precision_gain = 1.0 - scaling * tf.math.divide_no_nan(fp, tp)
    no_tp = tf.equal(tp, 0.0)
    recall_gain = tf.maximum(tf.where(no_tp, tf.zeros_like(recall_gain), recall_gain), 0.0)
    precision_gain = tf.where(no_tp, tf.ones_like(precision_gain), precision_gain)
    return recall_gain, precision_gain


def _interpolated_pr_auc(tp, fp, fn) -> tf.Tensor:
    """Keras' ``AUC.interpolate_pr_auc`` along the last axis."""
    dtp = tp[..., :-1] - tp[..., 1:]
    p = tp + fp
    dp = p[..., :-1] - p[..., 1:]
    slope = tf.math.divide_no_nan(dtp, tf.maximum(dp, 0))
    intercept = tp[..., 1:] - slope * p[..., 1:]
    both_positive = tf.logical_and(p[..., :-1] > 0, p[..., 1:] > 0)
    safe_ratio = tf.where(
        both_positive,
        tf.math.divide_no_nan(p[..., :-1], tf.maximum(p[..., 1:], 0)),
        tf.ones_like(p[..., 1:]),
    )
    increments = tf.math.divide_no_nan(
        slope * (dtp + intercept * tf.math.log(safe_ratio)),
        tf.maximum(tp[..., 1:] + fn[..., 1:], 0),
    )
    return tf.reduce_sum(increments, axis=-1)


def keras_auc(
    confusion: Confusion, curve: str = "ROC", summation_method: str = "interpolation"
) -> tf.Tensor:
    """Area under the ROC or PR curve of cumulative counts, as ``tf.keras.metrics.AUC``."""
    curve, summation_method = Curve(curve), SummationMethod(summation_method)
    tp, fp, tn, fn = confusion
    if curve == "PR" and summation_method == "interpolation":
        return _interpolated_pr_auc(tp, fp, fn)
    recall = tf.math.divide_no_nan(tp, tp + fn)
    if curve == "ROC":
        x, y = tf.math.divide_no_nan(fp, fp + tn), recall
    elif curve == "PRGAIN":
        x, y = _gains(tp, fp, tn, fn)
    else:
        x, y = recall, tf.math.divide_no_nan(tp, tp + fp)
    if summation_method == "interpolation":
        heights = (y[..., :-1] + y[..., 1:]) / 2.0
    elif summation_method == "minoring":
        heights = tf.minimum(y[..., :-1], y[..., 1:])
    else:
        heights = tf.maximum(y[..., :-1], y[..., 1:])
    return tf.reduce_sum((x[..., :-1] - x[..., 1:]) * heights, axis=-1)
