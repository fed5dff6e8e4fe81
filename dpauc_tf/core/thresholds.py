"""Threshold grids and the score -> bucket map they define.

A list of ``T`` sorted thresholds ``theta_0 <= ... <= theta_{T-1}`` cuts the score axis into
``T + 1`` buckets. Bucket ``b`` of a score ``s`` is the number of thresholds that ``s`` passes
(``s > theta`` by default, ``s >= theta`` for the paper's reference grid), so an example is
predicted positive at threshold ``j`` exactly when its bucket is ``> j``. Every cumulative count
(TP, FP, TN, FN at every threshold) is then a suffix sum of per-bucket counts; see
:mod:`dpauc_tf.core.curve`.

Three grids are offered:

* ``"tf"`` (default): the list that ``tf.keras.metrics.AUC(num_thresholds=T)`` uses,
  ``[-1e-7, 1/(T-1), ..., (T-2)/(T-1), 1 + 1e-7]`` with ``s > theta``, bucketed with the same
  arithmetic as TensorFlow's fast path, so that noise-free DPAUC equals TensorFlow's AUC.
* ``"reference"``: the grid of the DPAUC paper's reference code: ``T//2`` points evenly in
  [0, 0.2], ``T//4`` in [0.2, 0.5] and the rest in [0.5, 1], ends included (0.2 and 0.5 appear
  twice), with ``s >= theta``.
* an explicit sorted sequence of floats, with ``s > theta``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

GRIDS = ("tf", "reference")


def tf_default_thresholds(num_thresholds: int) -> np.ndarray:
    """TensorFlow's default thresholds for ``tf.keras.metrics.AUC(num_thresholds=T)``.

    >>> tf_default_thresholds(3).tolist()
    [-1e-07, 0.5, 1.0000001]
    """
    _check_num_thresholds(num_thresholds)
    inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return np.array([0.0 - 1e-7, *inner, 1.0 + 1e-7], dtype=np.float64)


def reference_thresholds(num_thresholds: int) -> np.ndarray:
    """The paper's reference-code grid, sorted ascending (``score >= theta`` is positive).

    ``T//2`` points in [0, 0.2], ``T//4`` in [0.2, 0.5], the remaining ``T - T//2 - T//4`` in
    [0.5, 1], each ``np.linspace`` with both ends, so 0.2 and 0.5 appear twice.

    >>> reference_thresholds(8).round(3).tolist()
    [0.0, 0.067, 0.133, 0.2, 0.2, 0.5, 0.5, 1.0]
    """
    _check_num_thresholds(num_thresholds)
    if num_thresholds < 4:
        raise ValueError(f"the reference grid needs num_thresholds >= 4, got {num_thresholds}")
    low = num_thresholds // 2
    mid = num_thresholds // 4
    high = num_thresholds - low - mid
    grid = np.concatenate(
        [np.linspace(0.0, 0.2, low), np.linspace(0.2, 0.5, mid), np.linspace(0.5, 1.0, high)]
    )
    return np.sort(grid)


def _check_num_thresholds(num_thresholds: int) -> None:
    if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, (int, np.integer)):
        raise TypeError(f"num_thresholds must be an int, got {num_thresholds!r}")
    if num_thresholds < 2:
        raise ValueError(f"num_thresholds must be at least 2, got {num_thresholds}")


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """A sorted threshold list and the rule that maps a score to its bucket.

    Attributes:
      values: the thresholds, ascending, as a tuple of floats.
      inclusive: ``True`` when ``score >= theta`` counts as positive, ``False`` for ``>``.
      grid: ``"tf"``, ``"reference"`` or ``"explicit"``.

    Example:

    >>> t = Thresholds.make(num_thresholds=5)
    >>> t.num_buckets
    6
    >>> t.bucketize(tf.constant([0.0, 0.3, 1.0])).numpy().tolist()
    [1, 2, 4]
    """

    values: tuple[float, ...]
    inclusive: bool
    grid: str

    @classmethod
    def make(
        cls,
        num_thresholds: int | None = 200,
        threshold_grid: str | Sequence[float] = "tf",
        thresholds: Sequence[float] | None = None,
    ) -> Thresholds:
        """Builds thresholds from a grid name and size, or from an explicit list."""
        if thresholds is not None:
            return cls.explicit(thresholds)
        if not isinstance(threshold_grid, str):
            return cls.explicit(threshold_grid)
        if threshold_grid == "tf":
            return cls(tuple(tf_default_thresholds(num_thresholds).tolist()), False, "tf")
        if threshold_grid == "reference":
            return cls(tuple(reference_thresholds(num_thresholds).tolist()), True, "reference")
        raise ValueError(
            f"unknown threshold_grid {threshold_grid!r}; use one of {GRIDS} or a sorted list"
        )

    @classmethod
    def explicit(cls, thresholds: Sequence[float]) -> Thresholds:
        """An explicit, ascending list; ``score > theta`` counts as positive."""
        values = np.asarray(thresholds, dtype=np.float64).ravel()
        if values.size < 2:
            raise ValueError(f"need at least 2 thresholds, got {values.size}")
        if not np.all(np.isfinite(values)):
            raise ValueError("thresholds must be finite")
        if np.any(np.diff(values) < 0):
            raise ValueError("thresholds must be sorted ascending")
        return cls(tuple(values.tolist()), False, "explicit")

    @property
    def num_thresholds(self) -> int:
        return len(self.values)

    @property
    def num_buckets(self) -> int:
        return len(self.values) + 1

    def as_array(self) -> np.ndarray:
        return np.asarray(self.values, dtype=np.float64)

    def bucketize(self, scores: tf.Tensor) -> tf.Tensor:
        """Maps scores (any shape, flattened) to int32 bucket ids in ``[0, T]``.

        O(n) for the ``"tf"`` grid (TensorFlow's own arithmetic), O(n log T) otherwise.
        """
        scores = tf.reshape(scores, [-1])
        if self.grid == "tf":
            return tf.cast(self._tf_grid_bucket(scores), tf.int32)
        sorted_values = tf.constant(self.values, dtype=scores.dtype)
        side = "right" if self.inclusive else "left"
        return tf.searchsorted(sorted_values, scores, side=side, out_type=tf.int32)

    def _tf_grid_bucket(self, scores: tf.Tensor) -> tf.Tensor:
        """Float bucket ids on TensorFlow's grid: ``clip(ceil(p (T - 1)), 1, T - 1)``.

        TensorFlow's fast path computes ``max(ceil(clip(p, 0, 1) (T - 1)) - 1, 0)`` over its
        ``T - 1`` buckets in float32; ours is that plus one (our bucket 0, below ``-1e-7``,
        is always empty), which is the same clip in fewer ops.
        """
        inner = float(self.num_thresholds - 1)
        scaled = tf.math.ceil(tf.cast(scores, tf.float32) * inner)
        return tf.clip_by_value(scaled, 1.0, inner)

    def segment_ids(self, scores: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        """int32 ``bucket + (1 - label) (T + 1)``: positives in ``[0, T]``, negatives after.

        One fused float expression on the ``"tf"`` grid (the hot path of ``update_state``).
        """
        scores = tf.reshape(scores, [-1])
        if self.grid == "tf":
            negative = 1.0 - tf.cast(tf.reshape(labels, [-1]), tf.float32)
            return tf.cast(self._tf_grid_bucket(scores) + negative * self.num_buckets, tf.int32)
        negative = 1 - tf.cast(tf.reshape(labels, [-1]), tf.int32)
        return self.bucketize(scores) + negative * self.num_buckets

    def describe(self) -> str:
        rule = ">=" if self.inclusive else ">"
        return f"{self.grid} grid, T={self.num_thresholds}, positive when score {rule} theta"
