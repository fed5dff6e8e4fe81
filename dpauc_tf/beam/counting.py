"""Per-bucket class counts as an Apache Beam ``CombineFn`` (count in parallel, merge by adding).

[`CountBuckets`][] buffers examples and counts them in vectorised batches with the
library's one counting function, [`dpauc_tf.core.counts.bucket_counts`][] (the same
bucket rule, the same validation). Its accumulator, [`BucketCounts`][], holds ``pos``
and ``neg`` as float64 arrays of ``T + 1`` buckets: exact integers up to 2^53 (a float32
counter would stop at 2^24). Merging adds them, so any split of the data over workers and
bundles gives the same integer counts.

An input element is one example or a batch of examples:

* ``(score, label)`` or ``(score, label, weight)`` with scalars;
* the same with 1-D arrays (a batch): far fewer Python calls per example. A ``[n, 1]``
  array is a batch too; a ``[n, C]`` array with ``C > 1`` (one-hot labels, two-class
  scores) is refused: one value per example.

Invalid input (a label other than 0/1, a score outside [0, 1] or NaN, a weight outside
[0, 1], or a fractional weight for an integer-noise mechanism) raises ``ValueError`` with
the library's one-line message; Beam reports it as the pipeline's failure.

    >>> from dpauc_tf.core.thresholds import Thresholds
    >>> fn = CountBuckets(Thresholds.make(3))
    >>> acc = fn.create_accumulator()
    >>> acc = fn.add_input(acc, (0.9, 1))
    >>> acc = fn.add_input(acc, ([0.2, 0.4], [0, 1]))
    >>> out = fn.extract_output(acc)
    >>> out.pos.tolist(), out.neg.tolist()
    ([0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0])
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import apache_beam as beam
import numpy as np

from dpauc_tf.core.thresholds import Thresholds

# Examples buffered before one vectorised bucket_counts call.
FLUSH_SIZE = 65_536


@dataclasses.dataclass
class BucketCounts:
    """The accumulator: float64 per-bucket counts ``pos, neg`` ``[T + 1]`` and the examples
    not yet counted (``pending``: a list of ``(scores, labels, weights)`` arrays).

        >>> counts = BucketCounts.zeros(3)
        >>> counts.pos.tolist(), counts.num_examples
        ([0.0, 0.0, 0.0, 0.0], 0.0)
    """

    pos: np.ndarray
    neg: np.ndarray
    pending: list = dataclasses.field(default_factory=list)
    pending_size: int = 0
    rows: int = 0  # examples counted, whatever their weights

    @classmethod
    def zeros(cls, num_thresholds: int) -> BucketCounts:
        return cls(np.zeros(num_thresholds + 1), np.zeros(num_thresholds + 1))

    @property
    def num_examples(self) -> float:
        """The number of counted examples (rows, not their weights: a weight may depend on
        the label, so the weights' sum may not; issue 30)."""
        return float(self.rows)


def _as_batch(element: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not isinstance(element, (tuple, list)) or len(element) not in (2, 3):
        raise ValueError(
            "dpauc_tf.beam: an example is (score, label) or (score, label, weight) "
            f"(scalars or 1-D arrays), got {type(element).__name__}"
        )
    try:
        scores = _one_value_per_example(element[0], "scores")
        labels = _one_value_per_example(element[1], "labels")
        weights = (
            np.ones_like(scores)
            if len(element) == 2
            else _one_value_per_example(element[2], "weights")
        )
    except (TypeError, ValueError) as error:
        if str(error).startswith("dpauc_tf.beam"):
            raise
        raise ValueError(
            f"dpauc_tf.beam: scores, labels and weights must be numbers ({error})"
        ) from None
    if scores.size != labels.size:
        raise ValueError(f"dpauc_tf.beam: {scores.size} scores but {labels.size} labels")
    if weights.size == 1 and scores.size != 1:
        weights = np.broadcast_to(weights, scores.shape)
    if weights.size != scores.size:
        raise ValueError(f"dpauc_tf.beam: {scores.size} scores but {weights.size} weights")
    return scores, labels, weights


def _one_value_per_example(value: Any, what: str) -> np.ndarray:
    """A scalar or a batch ``[n]`` (``[n, 1, ...]`` unit dimensions are flattened, as Keras
    does); a ``[n, C]`` array (one-hot labels, several outputs) is refused: raveled, every
    example would be counted ``C`` times and one label flip would move the counts by more
    than the stated sensitivity."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim > 1 and any(size != 1 for size in array.shape[1:]):
        raise ValueError(
            f"dpauc_tf.beam: {what} must hold one value per example (a scalar or a 1-D "
            f"batch), got shape {list(array.shape)}; for one-hot labels or two-class "
            "scores pass the positive class's column"
        )
    return array.ravel()


def _one_line(error: Exception) -> str:
    """The library's ``DPAUC: ...`` message out of a TensorFlow assertion error."""
    found = re.search(r"DPAUC: .*?\.(?=[\]\"'\s]|$)", str(getattr(error, "message", error)))
    return found.group(0).strip() if found else str(error).splitlines()[0]


class CountBuckets(beam.CombineFn):
    """A ``CombineFn``: examples -> [`BucketCounts`][] (see the module docstring).

    Args:
      thresholds: the grid whose ``T + 1`` buckets are counted.
      from_logits: the scores are logits, mapped onto [0, 1] by
        [`dpauc_tf.core.logit_scale.logit_scores`][] (no saturated end buckets; NaN refused).
      integer_weights: refuse fractional weights (integer-noise mechanisms).
      flush_size: examples buffered before one vectorised count.
      unit_weights: refuse weights other than 1 (``Capabilities.unit_weights``).

    Examples:
        >>> from dpauc_tf.core.thresholds import Thresholds
        >>> fn = CountBuckets(Thresholds.make(3))
        >>> left = fn.add_input(fn.create_accumulator(), ([0.9, 0.1], [1, 0]))
        >>> right = fn.add_input(fn.create_accumulator(), (0.6, 0))
        >>> fn.extract_output(fn.merge_accumulators([left, right])).neg.tolist()
        [0.0, 1.0, 1.0, 0.0]
    """

    def __init__(
        self,
        thresholds: Thresholds,
        *,
        from_logits: bool = False,
        integer_weights: bool = False,
        flush_size: int = FLUSH_SIZE,
        unit_weights: bool = False,
    ):
        if flush_size < 1:
            raise ValueError(f"flush_size must be >= 1, got {flush_size}")
        self.thresholds = thresholds
        self.from_logits = from_logits
        self.integer_weights = integer_weights
        self.unit_weights = unit_weights
        self.flush_size = int(flush_size)

    def create_accumulator(self) -> BucketCounts:
        return BucketCounts.zeros(self.thresholds.num_thresholds)

    def add_input(self, accumulator: BucketCounts, element: Any) -> BucketCounts:
        batch = _as_batch(element)
        accumulator.pending.append(batch)
        accumulator.pending_size += batch[0].size
        if accumulator.pending_size >= self.flush_size:
            self._flush(accumulator)
        return accumulator

    def _flush(self, accumulator: BucketCounts) -> BucketCounts:
        if not accumulator.pending:
            return accumulator
        import tensorflow as tf

        from dpauc_tf.core.counts import bucket_counts

        scores, labels, weights = (
            np.concatenate(part) for part in zip(*accumulator.pending, strict=True)
        )
        accumulator.pending, accumulator.pending_size = [], 0
        if scores.size == 0:
            return accumulator
        if self.from_logits:  # the one map of logits onto [0, 1] (no saturated end buckets)
            from dpauc_tf.core.counts import LOGIT_MESSAGE
            from dpauc_tf.core.logit_scale import logit_scores

            if np.isnan(np.asarray(scores, np.float64)).any():
                raise ValueError(LOGIT_MESSAGE)
            scores = logit_scores(scores)
        try:
            pos, neg = bucket_counts(
                labels,
                scores,
                self.thresholds,
                sample_weight=weights,
                from_logits=False,
                integer_weights=self.integer_weights,
                unit_weights=self.unit_weights,
                dtype=tf.float64,
            )
        except tf.errors.InvalidArgumentError as error:
            raise ValueError(_one_line(error)) from None
        accumulator.pos = accumulator.pos + pos.numpy()
        accumulator.neg = accumulator.neg + neg.numpy()
        accumulator.rows += int(scores.size)
        return accumulator

    def merge_accumulators(self, accumulators) -> BucketCounts:
        merged = self.create_accumulator()
        for accumulator in accumulators:
            self._flush(accumulator)
            merged.pos = merged.pos + accumulator.pos
            merged.neg = merged.neg + accumulator.neg
            merged.rows += accumulator.rows
        return merged

    def compact(self, accumulator: BucketCounts) -> BucketCounts:
        return self._flush(accumulator)

    def extract_output(self, accumulator: BucketCounts) -> BucketCounts:
        return self._flush(accumulator)
