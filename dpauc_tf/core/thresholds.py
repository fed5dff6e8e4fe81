"""Threshold grids and the score -> bucket map they define.

A list of ``T`` sorted thresholds ``theta_0 <= ... <= theta_{T-1}`` cuts the score axis into
``T + 1`` buckets. Bucket ``b`` of a score ``s`` is the number of thresholds that ``s`` passes
(``s > theta`` by default, ``s >= theta`` for the paper's reference grid), so an example is
predicted positive at threshold ``j`` exactly when its bucket is ``> j``. Every cumulative count
(TP, FP, TN, FN at every threshold) is then a suffix sum of per-bucket counts; see
[`dpauc_tf.core.curve`][].

Three grids are offered:

* ``"tf"`` (default): the list that ``tf.keras.metrics.AUC(num_thresholds=T)`` uses,
  ``[-1e-7, 1/(T-1), ..., (T-2)/(T-1), 1 + 1e-7]`` with ``s > theta``, bucketed with the same
  arithmetic as TensorFlow's fast path, so that noise-free DPAUC equals TensorFlow's AUC.
* ``"reference"``: the grid of the DPAUC paper's reference code: ``T//2`` points evenly in
  [0, 0.2], ``T//4`` in [0.2, 0.5] and the rest in [0.5, 1], ends included (0.2 and 0.5 appear
  twice), with ``s >= theta``.
* an explicit list, as ``tf.keras.metrics.AUC(thresholds=...)`` takes it
  ([`Thresholds.from_keras`][]): see there for what TensorFlow does with it.

[`Thresholds.explicit`][] is the raw building block (exactly the given sorted list, no end
points added) for grids the library builds itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from dpauc_tf.core.bucket_rule import BucketRule
from dpauc_tf.core.vocabulary import ThresholdGrid

# ``keras.backend.epsilon()``: the margin of TensorFlow's end thresholds below 0 and above 1.
KERAS_EPSILON = 1e-7


def tf_default_thresholds(num_thresholds: int) -> np.ndarray:
    """TensorFlow's default thresholds for ``tf.keras.metrics.AUC(num_thresholds=T)``.

    Examples:
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

    Examples:
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


def _keras_evenly_distributed(values: np.ndarray) -> bool:
    """``keras.metrics_utils.is_evenly_distributed_thresholds``, the same arithmetic."""
    n = values.size
    if n < 3:
        return False
    even = np.arange(n, dtype=np.float32) / (n - 1)
    return bool(np.allclose(values, even, atol=KERAS_EPSILON))


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
      grid: ``"tf"``, ``"reference"``, ``"keras"`` (an explicit list as TensorFlow takes
        it, [`from_keras`][]) or ``"explicit"`` (a raw list, [`explicit`][]).

    Example:

    Examples:
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
        """Builds thresholds from a grid name and size, or from an explicit list.

        An explicit list (``thresholds`` or a non-string ``threshold_grid``) is taken as
        ``tf.keras.metrics.AUC(thresholds=...)`` takes it ([`from_keras`][]), so that
        noise-free results equal TensorFlow's; ``num_thresholds`` is then ignored.
        """
        if thresholds is not None:
            return cls.from_keras(thresholds)
        if not isinstance(threshold_grid, str):
            return cls.from_keras(threshold_grid)
        if ThresholdGrid(threshold_grid) is ThresholdGrid.TF:
            return cls(tuple(tf_default_thresholds(num_thresholds).tolist()), False, "tf")
        return cls(tuple(reference_thresholds(num_thresholds).tolist()), True, "reference")

    @classmethod
    def from_keras(cls, thresholds: Sequence[float]) -> Thresholds:
        """An explicit list exactly as ``tf.keras.metrics.AUC(thresholds=...)`` uses it.

        What TensorFlow does (the same in Keras 2.14 and Keras 3): it **sorts** the list,
        keeps **duplicates** (they add ROC points of zero width), does **not** check that the
        values lie in [0, 1], and adds two end thresholds, ``-1e-7`` and ``1 + 1e-7``
        (``keras.backend.epsilon()``), so its ``num_thresholds`` is ``len(thresholds) + 2``
        and the curve always runs from (1, 1) to (0, 0). If ``[0] + sorted + [1]`` is evenly
        spaced (``np.allclose`` with ``atol=1e-7`` against ``arange(n) / (n - 1)`` in
        float32), TensorFlow takes its fast path, which clips scores to [0, 1] and ignores
        the exact values: that is the ``"tf"`` grid with ``len(thresholds) + 2``
        thresholds, and this returns it. Otherwise every score is compared with every
        threshold, ``score > theta`` in float32, which is what [`bucketize`][] does for
        this ``"keras"`` grid. An empty list gives just the two end thresholds (the
        curve from (1, 1) to (0, 0)).

        Refused (``ValueError``) where TensorFlow would give a meaningless curve: NaN or
        infinite thresholds. Scores are checked to lie in [0, 1] when counted
        ([`dpauc_tf.core.counts`][]), so values outside [0, 1] only add empty buckets.

        Examples:
            >>> Thresholds.from_keras([0.7, 0.3, 0.3]).values
            (-1e-07, 0.3, 0.3, 0.7, 1.0000001)
            >>> Thresholds.from_keras([0.5]).grid  # [0, 0.5, 1] is evenly spaced: the fast path
            'tf'
        """
        values = np.asarray(thresholds, dtype=np.float64).ravel()
        if not np.all(np.isfinite(values)):
            raise ValueError("thresholds must be finite")
        values = np.sort(values)
        if _keras_evenly_distributed(np.concatenate([[0.0], values, [1.0]])):
            return cls.make(num_thresholds=values.size + 2)
        ends = np.concatenate([[0.0 - KERAS_EPSILON], values, [1.0 + KERAS_EPSILON]])
        return cls(tuple(ends.tolist()), False, "keras")

    @classmethod
    def explicit(cls, thresholds: Sequence[float]) -> Thresholds:
        """Exactly this ascending list (no end points added); ``score > theta`` is positive.

        The raw building block for grids the library builds itself (for example the
        score-noise grid). To match ``tf.keras.metrics.AUC(thresholds=...)`` use
        [`from_keras`][] (what [`make`][] does with an explicit list).
        """
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
        if self.grid == "keras":  # TensorFlow compares in float32 (its variables' dtype)
            scores = tf.cast(scores, tf.float32)
        sorted_values = tf.constant(self.values, dtype=scores.dtype)
        side = "right" if self.inclusive else "left"
        return tf.searchsorted(sorted_values, scores, side=side, out_type=tf.int32)

    def bucketize_numpy(self, scores: np.ndarray) -> np.ndarray:
        """[`bucketize`][] in NumPy (int64 bucket ids), the same rule bit for bit.

        For streaming many examples without a TensorFlow op per chunk: the one NumPy
        bucketing, `dpauc_tf.core.bucket_rule.BucketRule` (which Spark's
        executors run without TensorFlow). The arithmetic is [`bucketize`][]'s: on the
        ``"tf"`` grid ``clip(ceil(float32(s) * float32(T - 1)), 1, T - 1)``; otherwise a sorted search (``side="left"`` for ``>``, ``"right"`` for
        ``>=``) in float64, or in float32 on the ``"keras"`` grid
        (``tests/core/test_counts_numpy.py`` checks the ids equal [`bucketize`][]'s).

        Examples:
            >>> Thresholds.make(num_thresholds=5).bucketize_numpy(np.array([0.0, 0.3, 1.0])).tolist()
            [1, 2, 4]
        """
        return BucketRule.from_thresholds(self).ids(scores)

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

    def float32_values(self) -> np.ndarray:
        """The thresholds as float32 numbers that bucket float32 scores as [`bucketize`][].

        For the ``"keras"`` grid that is TensorFlow's own rounding (to nearest: it compares
        in float32). Otherwise the comparison is exact: ``s >= theta`` holds for a float32
        ``s`` exactly when ``s >=`` the smallest float32 ``>= theta``, and ``s > theta``
        exactly when ``s >`` the largest float32 ``<= theta``.

        Examples:
            >>> Thresholds.make(4, "reference").float32_values().dtype
            dtype('float32')
        """
        values = self.as_array()
        nearest = values.astype(np.float32)
        if self.grid == "keras":
            return nearest
        if self.inclusive:
            above = np.nextafter(nearest, np.float32(np.inf))
            return np.where(nearest.astype(np.float64) < values, above, nearest)
        below = np.nextafter(nearest, np.float32(-np.inf))
        return np.where(nearest.astype(np.float64) > values, below, nearest)

    def segment_ids_with(self, ops, scores, labels):
        """[`segment_ids`][] for float32 scores, written with ``ops``, ``keras.ops`` (or a
        namespace with its ``reshape``, ``cast``, ``ceil``, ``clip``, ``searchsorted`` and
        ``convert_to_tensor``), for Keras 3's backends other than TensorFlow. The same
        buckets as [`segment_ids`][] (``tests/core/test_thresholds_ops.py``).
        """
        scores = ops.reshape(ops.cast(scores, "float32"), [-1])
        negative = 1 - ops.cast(ops.reshape(labels, [-1]), "int32")
        if self.grid == "tf":  # the arithmetic of _tf_grid_bucket
            inner = float(self.num_thresholds - 1)
            bucket = ops.clip(ops.ceil(scores * inner), 1.0, inner)
        else:
            side = "right" if self.inclusive else "left"
            values = ops.convert_to_tensor(self.float32_values())
            bucket = ops.searchsorted(values, scores, side=side)
        return ops.cast(bucket, "int32") + negative * self.num_buckets

    def describe(self) -> str:
        rule = ">=" if self.inclusive else ">"
        return f"{self.grid} grid, T={self.num_thresholds}, positive when score {rule} theta"
