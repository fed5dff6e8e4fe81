"""Noise-free reference AUCs of a score set: scikit-learn's exact AUC and TensorFlow's.

``tf_auc`` is computed as [`dpauc_tf.core.curve.auc_from_histogram`][] of the counts on the
``"tf"`` threshold grid: ``tests/core`` checks that this reproduces
``tf.keras.metrics.AUC(num_thresholds=T)`` to float precision, and it takes one pass over
the data instead of a Keras metric update.

    >>> round(exact_auc([0, 1, 0, 1], [0.1, 0.9, 0.4, 0.3]), 4)
    0.75
    >>> round(tf_auc([0, 1, 0, 1], [0.1, 0.9, 0.4, 0.3], num_thresholds=200), 4)
    0.75
"""

from __future__ import annotations

import numpy as np

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.curve import auc_from_histogram
from dpauc_tf.core.thresholds import Thresholds


def exact_auc(labels, scores) -> float:
    """scikit-learn's ``roc_auc_score`` (ties count one half)."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(np.asarray(labels).ravel(), np.asarray(scores).ravel()))


def tf_auc(labels, scores, num_thresholds: int) -> float:
    """``tf.keras.metrics.AUC(num_thresholds=T)`` of the scores (see the module docstring)."""
    pos, neg = bucket_counts(
        np.asarray(labels, np.float32),
        np.asarray(scores, np.float32),
        Thresholds.make(num_thresholds),
    )
    return float(auc_from_histogram(pos, neg))


def histogram_auc(pos, neg) -> tuple[float, float]:
    """The AUC of ordered bucket counts and the largest possible error against the exact AUC.

    Pairs (positive, negative) in different buckets are ordered by their buckets, so they
    count exactly as in the exact AUC; a pair in the same bucket counts 1/2 here but may
    count anything in [0, 1] exactly. Hence ``|AUC_hist - AUC_exact| <= sum_b P_b N_b /
    (2 P N)``, the returned bound (0 when no bucket holds both classes). NaN, NaN when one
    class is absent.

        >>> histogram_auc([0, 1, 1], [1, 1, 0])  # one pair of four shares bucket 1
        (0.875, 0.125)
    """
    pos = np.asarray(pos, np.int64).ravel()
    neg = np.asarray(neg, np.int64).ravel()
    total_pos, total_neg = int(pos.sum()), int(neg.sum())
    if total_pos == 0 or total_neg == 0:
        return float("nan"), float("nan")
    below = np.cumsum(neg) - neg  # negatives in lower buckets
    pairs = total_pos * total_neg
    if 2 * pairs < 2**63:  # exact in int64
        above, tied = int(pos @ below), int(pos @ neg)
    else:  # float64: relative rounding ~1e-16, far below any bound that matters
        above = float(pos.astype(np.float64) @ below.astype(np.float64))
        tied = float(pos.astype(np.float64) @ neg.astype(np.float64))
    return (2 * above + tied) / (2 * pairs), tied / (2 * pairs)
