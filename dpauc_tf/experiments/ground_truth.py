"""Noise-free reference AUCs of a score set: scikit-learn's exact AUC and TensorFlow's.

``tf_auc`` is computed as :func:`dpauc_tf.core.curve.auc_from_histogram` of the counts on the
``"tf"`` threshold grid: NOTES.md records (and ``tests/core`` checks) that this reproduces
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
