"""The score -> bucket map of a threshold grid in NumPy, importable without TensorFlow.

[`BucketRule`][] is the one NumPy bucketing of the library:
[`Thresholds.bucketize_numpy`][dpauc_tf.core.thresholds.Thresholds.bucketize_numpy] (the
streaming reader's counter) calls it, and Spark's executors
([`dpauc_tf.spark.counting`][]) run it on every Arrow batch without paying for TensorFlow's
import. Its arithmetic is TensorFlow's bucket rule bit for bit
(``tests/core/test_counts_numpy.py`` and ``tests/spark/test_counting.py`` check the ids equal
[`Thresholds.bucketize`][dpauc_tf.core.thresholds.Thresholds.bucketize]'s).

Importing this module needs NumPy only.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class BucketRule:
    """The score -> bucket map of a grid, as plain (picklable) data.

    ``grid``, ``values`` and ``inclusive`` are those of a
    [`Thresholds`][dpauc_tf.core.thresholds.Thresholds] ([`from_thresholds`][]).

    Examples:
        >>> rule = BucketRule("tf", (-1e-07, 0.25, 0.5, 0.75, 1.0000001), False)
        >>> rule.ids(np.array([0.0, 0.3, 1.0])).tolist()
        [1, 2, 4]
    """

    grid: str
    values: tuple[float, ...]
    inclusive: bool

    @classmethod
    def from_thresholds(cls, thresholds) -> BucketRule:
        """The rule of a [`Thresholds`][dpauc_tf.core.thresholds.Thresholds]."""
        return cls(thresholds.grid, tuple(thresholds.values), bool(thresholds.inclusive))

    @property
    def num_buckets(self) -> int:
        return len(self.values) + 1

    def ids(self, scores: np.ndarray) -> np.ndarray:
        """int64 bucket ids in ``[0, T]`` of ``scores`` (flattened).

        On the ``"tf"`` grid ``clip(ceil(float32(s) * float32(T - 1)), 1, T - 1)``;
        otherwise a sorted search (``side="left"`` for ``>``, ``"right"`` for ``>=``) in
        float64, or in float32 on the ``"keras"`` grid (TensorFlow compares in float32).
        """
        scores = np.asarray(scores).ravel()
        if self.grid == "tf":
            inner = np.float32(len(self.values) - 1)
            scaled = np.ceil(scores.astype(np.float32) * inner)
            return np.clip(scaled, np.float32(1.0), inner).astype(np.int64)
        values = np.asarray(self.values, np.float64)
        if self.grid == "keras":
            scores, values = scores.astype(np.float32), values.astype(np.float32)
        else:
            scores = scores.astype(np.float64, copy=False)
        side = "right" if self.inclusive else "left"
        return np.searchsorted(values, scores, side=side).astype(np.int64, copy=False)
