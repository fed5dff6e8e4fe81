"""The audit's neighbouring test sets, as bucket counts (see [`dpauc_tf.analysis.audit`][]).

Curve mechanisms are audited on [`worst_case_pair`][] (three examples, the target on a
threshold); mechanisms that release only the AUC on `auc_worst_case_pair` (large
classes, the target above all, so the flip moves the AUC by about ``1 / min(P, N)``).
`pair_for` picks the right one.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.defaults import DEFAULT_AUDIT_NUM_THRESHOLDS
from dpauc_tf.core.thresholds import Thresholds

if TYPE_CHECKING:  # pragma: no cover
    from dpauc_tf.mechanisms.base import CountMechanism


@dataclasses.dataclass(frozen=True)
class NeighbouringPair:
    """Bucket counts of two test sets that differ in the label of one example.

    ``pos, neg``: the target example is positive; ``pos_prime, neg_prime``: it is negative.
    """

    pos: np.ndarray
    neg: np.ndarray
    pos_prime: np.ndarray
    neg_prime: np.ndarray
    bucket: int
    description: str


def worst_case_pair(
    num_thresholds: int = DEFAULT_AUDIT_NUM_THRESHOLDS, flip_weight: float = 1.0
) -> NeighbouringPair:
    """The audit's neighbours: a 3-example test set whose target label is flipped.

    The target example's score is placed on a threshold (for ``T > 2``; with ``T = 2`` every
    score in (0, 1] shares one bucket), next to one positive and one negative example.
    ``flip_weight > 1`` breaks the mechanisms' sensitivity assumption (negative control).

    Examples:
        >>> pair = worst_case_pair(5)
        >>> (pair.pos - pair.pos_prime).tolist(), (pair.neg_prime - pair.neg).tolist()
        ([0.0, 0.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    """
    thresholds = Thresholds.make(num_thresholds)
    values = thresholds.as_array()
    target_score = float(values[num_thresholds // 2]) if num_thresholds > 2 else 0.5
    scores = [target_score, 0.9, 0.1]
    weights = [flip_weight, 1.0, 1.0]
    validate = flip_weight <= 1.0
    return _flipped_pair(
        scores,
        weights,
        thresholds,
        validate,
        lambda bucket: (
            f"3 examples, T={num_thresholds}; the example at score "
            f"{target_score:.4g} (bucket {bucket}, weight {flip_weight:g}) is positive in D, "
            "negative in D'"
        ),
    )


def _flipped_pair(scores, weights, thresholds, validate, describe) -> NeighbouringPair:
    """Counts of three examples (the target, a positive, a negative) with the target
    positive in ``D`` and negative in ``D'``; ``describe(bucket)`` says what the pair is."""

    def counts(target_label: int) -> tuple[np.ndarray, np.ndarray]:
        pos, neg = bucket_counts(
            [target_label, 1, 0],
            scores,
            thresholds,
            sample_weight=weights,
            dtype=tf.float64,
            validate=validate,
        )
        return pos.numpy(), neg.numpy()

    pos, neg = counts(1)
    pos_prime, neg_prime = counts(0)
    bucket = int(np.flatnonzero(pos != pos_prime)[0])
    return NeighbouringPair(pos, neg, pos_prime, neg_prime, bucket, describe(bucket))


AUC_PAIR_MINORITY = 20_000
AUC_PAIR_MAJORITY = 60_000


def auc_worst_case_pair(thresholds: Thresholds, flip_weight: float = 1.0) -> NeighbouringPair:
    """The neighbours for mechanisms that release only the AUC (``auc-only``).

    ``AUC_PAIR_MAJORITY`` positives at score 0.9, ``AUC_PAIR_MINORITY`` negatives at 0.1 and
    the target at 0.95, above all: positive in ``D`` (AUC 1), negative in ``D'`` (AUC
    ``N / (N + w)``), so the flip moves the AUC by ``w / (N + w)``, about the sensitivity
    ``1 / min(P, N)``, and ``min(P, N)`` by ``w``. Counts on the mechanism's grid (the
    multiplicities are weights, so this builds no large arrays).

    Examples:
        >>> pair = auc_worst_case_pair(Thresholds.make(11))
        >>> float(pair.pos.sum()), float(pair.neg_prime.sum())
        (60001.0, 20001.0)
    """
    return _flipped_pair(
        [0.95, 0.9, 0.1],
        [flip_weight, AUC_PAIR_MAJORITY, AUC_PAIR_MINORITY],
        thresholds,
        False,  # multiplicities as weights
        lambda bucket: (
            f"{AUC_PAIR_MAJORITY} positives at 0.9, {AUC_PAIR_MINORITY} negatives "
            f"at 0.1; the example at 0.95 (weight {flip_weight:g}) is positive in D, negative in D'"
        ),
    )


def pair_for(mechanism: CountMechanism, flip_weight: float = 1.0) -> NeighbouringPair:
    """The audit's neighbours for ``mechanism``: its own ``audit_pair(flip_weight)`` when it
    has one (the targets of [`dpauc_tf.analysis.audit_targets`][], whose data are not one
    histogram), [`worst_case_pair`][] for curve releases, [`auc_worst_case_pair`][] for
    AUC-only releases, [`multiclass_worst_case_pair`][] for one-vs-rest (the target at the
    extremes of its columns for the rank sums)."""
    own = getattr(mechanism, "audit_pair", None)
    if own is not None:
        return own(flip_weight)
    if getattr(mechanism, "num_classes", None) is not None:  # one-vs-rest (multi-class)
        return multiclass_worst_case_pair(
            mechanism.num_classes,
            mechanism.num_thresholds,
            flip_weight,
            extreme=mechanism.capabilities.releases == "auc",
        )
    if mechanism.capabilities.releases == "auc":
        grid = mechanism.count_thresholds(Thresholds.make(DEFAULT_AUDIT_NUM_THRESHOLDS))
        return auc_worst_case_pair(grid, flip_weight)
    return worst_case_pair(mechanism.num_thresholds, flip_weight)


def multiclass_worst_case_pair(
    num_classes: int,
    num_thresholds: int = DEFAULT_AUDIT_NUM_THRESHOLDS,
    flip_weight: float = 1.0,
    *,
    extreme: bool = False,
) -> NeighbouringPair:
    """The neighbours of a one-vs-rest release: one example of every class plus the target,
    whose class is 0 in ``D`` and 1 in ``D'`` (its scores fixed, ``s_0`` and ``s_1`` on
    thresholds): four counts move, ``pos/neg[0, b_0]`` and ``pos/neg[1, b_1]``. Counts are
    ``[C, T + 1]``; ``flip_weight > 1`` is the negative control.

    ``extreme``: ``s_0 = 1`` and ``s_1 = 0``, the unique top of column 0 and bottom of column
    1 (on a grid fine enough to part them from the others' ``0.9`` and ``0.1 / (C - 1)``, as
    the rank sums' default resolution), so the target's centred midranks are the largest ``|r_c|`` of both columns (``D_0``
    and ``D_1``) and the pooled range: the worst case of the one-vs-rest rank sums, whose
    flip then moves every statistic by its whole sensitivity (with the middle scores it
    moves the rank sums by a third of it, and a halved noise would go unseen).

    Examples:
        >>> pair = multiclass_worst_case_pair(3, 5)
        >>> int(np.abs(pair.pos - pair.pos_prime).sum() + np.abs(pair.neg - pair.neg_prime).sum())
        4
        >>> pair = multiclass_worst_case_pair(3, 11, extreme=True)
        >>> moved = int(np.flatnonzero(pair.pos[0] != pair.pos_prime[0])[0])
        >>> moved == int(np.flatnonzero(pair.pos[0] + pair.neg[0])[-1])  # the top occupied
        True
    """
    thresholds = Thresholds.make(num_thresholds)
    values = thresholds.as_array()
    if extreme:
        s0, s1 = 1.0, 0.0
    else:
        s0 = float(values[num_thresholds // 2]) if num_thresholds > 2 else 0.5
        s1 = float(values[max(num_thresholds // 4, 1)]) if num_thresholds > 2 else 0.25
    rest = max(1.0 - s0 - s1, 0.0) / max(num_classes - 2, 1)
    target = np.full(num_classes, rest)
    target[:2] = s0, s1
    others = np.full((num_classes, num_classes), 0.1 / max(num_classes - 1, 1))
    np.fill_diagonal(others, 0.9)
    scores = np.vstack([target[None, :], others])
    buckets = thresholds.bucketize_numpy(scores.ravel()).reshape(scores.shape)
    weights = np.concatenate([[flip_weight], np.ones(num_classes)])

    def counts(target_class: int) -> tuple[np.ndarray, np.ndarray]:
        classes = np.concatenate([[target_class], np.arange(num_classes)])
        pos = np.zeros((num_classes, thresholds.num_buckets))
        neg = np.zeros_like(pos)
        for row, label in enumerate(classes):
            for c in range(num_classes):
                target_counts = pos if c == label else neg
                target_counts[c, buckets[row, c]] += weights[row]
        return pos, neg

    pos, neg = counts(0)
    pos_prime, neg_prime = counts(1)
    return NeighbouringPair(
        pos,
        neg,
        pos_prime,
        neg_prime,
        int(buckets[0, 0]),
        f"{num_classes + 1} examples, C={num_classes}, T={num_thresholds}; the example at "
        f"scores ({s0:.4g}, {s1:.4g}, ...) (weight {flip_weight:g}) is of class 0 in D, class "
        "1 in D'",
    )
