"""Calibration from bucket counts: equal-width bins made of whole buckets, the reliability
table and the expected calibration error (ECE).

Bins are ``B`` equal-width score intervals over ``[0, 1]``, with the grid's comparison
(for ``score > theta`` grids, bin ``k`` is ``(k / B, (k + 1) / B]`` and bin 0 also holds
0; for ``score >= theta`` grids, ``[k / B, (k + 1) / B)`` and the last also holds 1). A
bin must be a **union of the grid's buckets**: every inner edge ``k / B`` must be one of
the grid's thresholds, or the bins would split a bucket and the release's counts would not
tell the bin's positives ([`calibration_bins`][] refuses that, so a number never silently
reuses a release it cannot come from).

Per bin: the number of examples ``m``, the mean score ``s`` (both label-free: from the
scores alone) and the positive rate ``r = pos / m`` (``pos`` from the release). The ECE is
``sum_k (m_k / n) |s_k - r_k|`` over non-empty bins.

Examples:
    >>> import numpy as np
    >>> from dpauc_tf.core.thresholds import Thresholds
    >>> grid = Thresholds.make(num_thresholds=5)               # buckets of width 1/4
    >>> bins = calibration_bins(grid, 2)
    >>> bins.tolist()
    [0, 0, 0, 1, 1, 1]
    >>> scores = BucketScores.of(np.array([0.1, 0.2, 0.7, 0.9]), grid)
    >>> table = reliability(np.array([0., 0., 1., 0., 1., 0.]), scores, bins, 2)
    >>> table.mean_score.round(6).tolist(), table.positive_rate.tolist()
    ([[0.15, 0.8]], [[0.5, 0.5]])
    >>> round(float(table.ece[0]), 6)  # (2/4) |0.15 - 0.5| + (2/4) |0.8 - 0.5|
    0.325
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpauc_tf.core.thresholds import Thresholds

EDGE_TOLERANCE = 1e-9  # an inner bin edge within this of a threshold is that threshold
# A bin holds at least one bucket, and grids stop at 10^6 thresholds (the command line's
# limit): more bins than that is refused before any array of that size is made.
MAX_NUM_BINS = 10**6


def check_num_bins(num_bins: int) -> int:
    """An int in ``[1, MAX_NUM_BINS]`` (booleans, floats and strings are refused, one line)."""
    if isinstance(num_bins, bool) or not isinstance(num_bins, (int, np.integer)) or num_bins < 1:
        raise ValueError(f"the number of calibration bins must be an int >= 1, got {num_bins!r}")
    if num_bins > MAX_NUM_BINS:
        raise ValueError(
            f"{num_bins} calibration bins is more than {MAX_NUM_BINS:,}: a bin holds at least "
            "one bucket of the grid"
        )
    return int(num_bins)


def calibration_bins(thresholds: Thresholds, num_bins: int) -> np.ndarray:
    """The bin ``[T + 1]`` of every bucket of ``thresholds``; ``ValueError`` (one line) when
    an inner edge ``k / num_bins`` is not a threshold (the bins would split a bucket)."""
    num_bins = check_num_bins(num_bins)
    values = thresholds.as_array()
    inner = np.sort(values[(values > EDGE_TOLERANCE) & (values < 1.0 - EDGE_TOLERANCE)])
    if num_bins > inner.size + 1:
        raise ValueError(
            f"{num_bins} equal-width calibration bins split the grid's buckets (more bins "
            f"than its {inner.size + 1} buckets over [0, 1]; a bin is a union of buckets)"
        )
    edges = np.arange(1, num_bins) / num_bins
    nearest = np.clip(np.searchsorted(inner, edges), 1, max(inner.size, 1)) - 1
    gap = np.full(edges.shape, np.inf)
    if inner.size:
        for shift in (0, 1):  # the threshold just below and just above every edge
            at = np.clip(nearest + shift, 0, inner.size - 1)
            gap = np.minimum(gap, np.abs(inner[at] - edges))
    missing = edges[gap > EDGE_TOLERANCE].tolist()
    if missing:
        raise ValueError(
            f"{num_bins} equal-width calibration bins split the grid's buckets (no threshold "
            f"at {missing[0]:g}{' and others' if len(missing) > 1 else ''}): use a number of "
            f"bins that divides the grid's {np.sum((values > 0) & (values < 1)) + 1} "
            "buckets over [0, 1], or a grid with a threshold at every bin edge"
        )
    # bucket b holds the scores between thresholds b - 1 and b: it lies above every edge
    # at or below threshold b - 1
    lower = np.concatenate([[-np.inf], values])
    return np.sum(edges[None, :] <= lower[:, None] + EDGE_TOLERANCE, axis=1).astype(np.int64)


@dataclasses.dataclass(frozen=True)
class BucketScores:
    """Label-free per-bucket statistics of the scores: the number of examples and the sum
    of their scores ``[T + 1]`` (no label and no weight enters: they are public wherever
    the scores are, as under label DP).

    Examples:
        >>> grid = Thresholds.make(num_thresholds=3)
        >>> BucketScores.of(np.array([0.2, 0.4, 0.9]), grid).counts.tolist()
        [0.0, 2.0, 1.0, 0.0]
    """

    counts: np.ndarray
    score_sums: np.ndarray

    @classmethod
    def of(cls, scores: np.ndarray, thresholds: Thresholds) -> BucketScores:
        """Counts the scores (in [0, 1], already validated) on ``thresholds``."""
        scores = np.asarray(scores, np.float64).ravel()
        buckets = thresholds.bucketize_numpy(scores)
        size = thresholds.num_buckets
        return cls(
            counts=np.bincount(buckets, minlength=size).astype(np.float64),
            score_sums=np.bincount(buckets, weights=scores, minlength=size),
        )

    def __add__(self, other: BucketScores) -> BucketScores:
        return BucketScores(self.counts + other.counts, self.score_sums + other.score_sums)


@dataclasses.dataclass(frozen=True)
class ReliabilityTable:
    """Per bin (last axis ``[..., B]``): examples, mean score, positive rate; and the ECE.

    Attributes:
      counts: examples per bin (label-free).
      mean_score: the bin's mean score (NaN for an empty bin; label-free).
      positive_rate: the bin's positive rate from the release, clipped to [0, 1] (NaN for
        an empty bin).
      ece: ``sum_k (m_k / n) |mean_score_k - positive_rate_k|`` over non-empty bins ``[...]``.
    """

    counts: np.ndarray
    mean_score: np.ndarray
    positive_rate: np.ndarray
    ece: np.ndarray

    @property
    def shares(self) -> np.ndarray:
        """The share ``m_k / n`` of the examples in every bin."""
        total = np.sum(self.counts, -1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.counts / total


def bin_sums(values: np.ndarray, bins: np.ndarray, num_bins: int) -> np.ndarray:
    """``values [..., T + 1]`` summed per bin ``[..., num_bins]``."""
    values = np.asarray(values, np.float64)
    onehot = np.zeros((bins.size, num_bins))
    onehot[np.arange(bins.size), bins] = 1.0
    return values @ onehot


def reliability(
    pos: np.ndarray, scores: BucketScores, bins: np.ndarray, num_bins: int
) -> ReliabilityTable:
    """The reliability table of positives per bucket ``pos [..., T + 1]`` (e.g. the
    projection of a release) and the label-free ``scores`` of the same buckets."""
    pos = np.atleast_2d(np.asarray(pos, np.float64))
    if pos.shape[-1] != scores.counts.size or bins.size != scores.counts.size:
        raise ValueError(
            f"counts have {pos.shape[-1]} buckets, the scores {scores.counts.size} and the "
            f"bins {bins.size}: they must come from the same grid"
        )
    counts = bin_sums(scores.counts, bins, num_bins)
    sums = bin_sums(scores.score_sums, bins, num_bins)
    positives = bin_sums(pos, bins, num_bins)
    occupied = counts > 0
    safe = np.where(occupied, counts, 1.0)
    mean_score = np.where(occupied, sums / safe, np.nan)
    rate = np.where(occupied, np.clip(positives / safe, 0.0, 1.0), np.nan)
    total = counts.sum()
    share = counts / total if total > 0 else np.zeros_like(counts)
    gap = np.where(occupied, np.abs(mean_score - rate), 0.0)
    ece = np.sum(share * gap, -1) if total > 0 else np.full(pos.shape[:-1], np.nan)
    return ReliabilityTable(
        counts=np.broadcast_to(counts, rate.shape).copy(),
        mean_score=np.broadcast_to(mean_score, rate.shape).copy(),
        positive_rate=rate,
        ece=ece,
    )
