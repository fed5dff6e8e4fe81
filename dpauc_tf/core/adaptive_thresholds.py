"""Thresholds that fit the scores: fine grids and quantile-placed thresholds.

Coarse or badly placed thresholds bias the AUC: examples that share a bucket count as ties
(1/2), which pulls the AUC towards 0.5. Click-through scores crowd near 0, so an even grid
of 100 thresholds puts most buckets where no score falls and few where the scores are.
Two remedies, both explicit threshold lists for [`dpauc_tf.core.thresholds.Thresholds.explicit`][]
(and for ``DPAUC(thresholds=...)``):

* `fine_grid`: many evenly spaced thresholds (e.g. 1,023, i.e. 1,024 buckets, a
  complete 4-ary tree). It does not look at the data, so it is free under **every**
  neighbouring relation (label DP and example-level DP alike). Pair it with a tree mechanism
  ([`dpauc_tf.mechanisms.tree`][]), whose error barely grows with the number of buckets.
* [`quantile_thresholds`][]: thresholds at the quantiles of the scores, so every bucket
  holds about the same number of examples. **Privacy**: the list is a function of the scores
  only. Under **label DP** (neighbours differ in one label; scores identical) it therefore
  costs no epsilon at all, but it *publishes score quantiles*, which label DP never
  protected. Under **example-level DP** (add/remove one example) it is *not* private: the
  quantiles would have to be estimated with a DP quantile mechanism and charged to the
  budget; this module does not do that, so use `fine_grid` there.

Both lists start at ``-1e-7`` and end at ``1 + 1e-7`` (as TensorFlow's grid): the first and
last buckets are then empty and the ROC curve runs from (1, 1) to (0, 0); without them the
curve misses its end segments (an AUC error of about 1 / T).

The discretisation bias of each grid on the paper-sized synthetic score set is recorded in
``docs/tree_histograms.md`` with the command that measures it.

Examples:
    >>> import numpy as np
    >>> scores = np.random.default_rng(0).beta(0.5, 5.0, size=10_000)
    >>> t = quantile_thresholds(scores, 5)
    >>> float(t[0]), float(t[-1]), len(t)
    (-1e-07, 1.0000001, 5)
    >>> Thresholds.explicit(t).num_buckets
    6
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.curve import auc_from_histogram
from dpauc_tf.core.thresholds import Thresholds

LOW_END = -1e-7
HIGH_END = 1.0 + 1e-7


def _check_count(num_thresholds: int) -> int:
    if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, (int, np.integer)):
        raise TypeError(f"num_thresholds must be an int, got {num_thresholds!r}")
    if num_thresholds < 3:
        raise ValueError(
            f"need at least 3 thresholds (two ends and one inside), got {num_thresholds}"
        )
    return int(num_thresholds)


def fine_grid(num_thresholds: int = 1023) -> np.ndarray:
    """Evenly spaced thresholds ``[-1e-7, 1/(T-1), ..., (T-2)/(T-1), 1 + 1e-7]``.

    The same list as TensorFlow's ``AUC(num_thresholds=T)``; data-independent, so free under
    every neighbouring relation.

    Examples:
        >>> fine_grid(5).tolist()
        [-1e-07, 0.25, 0.5, 0.75, 1.0000001]
    """
    num_thresholds = _check_count(num_thresholds)
    inner = np.arange(1, num_thresholds - 1, dtype=np.float64) / (num_thresholds - 1)
    return np.concatenate([[LOW_END], inner, [HIGH_END]])


def quantile_thresholds(scores, num_thresholds: int = 1023) -> np.ndarray:
    """Thresholds at the score quantiles ``i / (T - 1)``, ``i = 1 .. T - 2``, plus both ends.

    Free under label DP (a function of the scores only) but it reveals score quantiles; not
    private under example-level DP (see the module docstring).

    Args:
      scores: the scores in [0, 1] that will be bucketed (any shape).
      num_thresholds: ``T`` (``T + 1`` buckets, about ``n / (T - 1)`` examples each).

    Returns:
      An ascending float64 array of length ``T`` (repeated values are possible where many
      scores are equal; ``Thresholds.explicit`` accepts them).
    """
    num_thresholds = _check_count(num_thresholds)
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if scores.size == 0:
        raise ValueError("quantile_thresholds needs at least one score")
    if not np.all(np.isfinite(scores)) or scores.min() < 0.0 or scores.max() > 1.0:
        raise ValueError("scores must be finite and in [0, 1]")
    levels = np.arange(1, num_thresholds - 1, dtype=np.float64) / (num_thresholds - 1)
    inner = np.quantile(scores, levels)
    return np.concatenate([[LOW_END], inner, [HIGH_END]])


def discretisation_bias(labels, scores, thresholds) -> float:
    """Bucketed AUC on ``thresholds`` minus the exact AUC (ties 1/2), without noise.

    Examples:
        >>> import numpy as np
        >>> rng = np.random.default_rng(1)
        >>> labels = rng.integers(0, 2, 5000); scores = rng.beta(1 + labels, 4.0)
        >>> abs(discretisation_bias(labels, scores, quantile_thresholds(scores, 255))) < 1e-4
        True
    """
    labels = np.asarray(labels, dtype=np.float64).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if isinstance(thresholds, Thresholds):
        grid = thresholds
    else:
        grid = Thresholds.explicit(thresholds)
    pos, neg = bucket_counts(labels, scores, grid, dtype=tf.float64)
    bucketed = float(auc_from_histogram(pos, neg))
    return bucketed - exact_auc(labels, scores)


def exact_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Mann-Whitney AUC of the raw scores, ties counting 1/2 (O(n log n))."""
    labels = np.asarray(labels, dtype=np.float64).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    order = np.argsort(scores, kind="mergesort")
    sorted_scores = scores[order]
    # average ranks with ties
    ranks = np.empty(scores.size, dtype=np.float64)
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    average = first + (counts - 1) / 2.0 + 1.0
    ranks[order] = np.repeat(average, counts)
    num_pos = labels.sum()
    num_neg = labels.size - num_pos
    if num_pos == 0 or num_neg == 0:
        raise ValueError("need both positive and negative examples")
    return float((ranks[labels == 1].sum() - num_pos * (num_pos + 1) / 2) / (num_pos * num_neg))
