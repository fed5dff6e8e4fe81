"""Score sets shaped like the DPAUC paper's Criteo test set, for experiments without the data.

The paper evaluates a Wide & Deep model on 458,407 test examples (117,317 positives) after
epochs 0, 1 and 2, with AUCs 0.7494, 0.7665 and 0.7702. [`paper_score_set`][] builds a score
set with exactly those sizes and (to about 1e-5) those AUCs from a **binormal model on the
logit scale**:

``logit(score) = a + d * label + z``, ``z ~ N(0, 1)`` independently per example,

so that the population AUC is ``Phi(d / sqrt(2))``. Everything is deterministic given
``seed``: the positions of the positives (a fixed random permutation) and ``z`` are drawn
once per epoch from ``numpy.random.default_rng([seed, epoch])``; then

* ``d`` (the separation) is solved so that the *sample* AUC (scikit-learn) equals the target:
  a few secant steps from ``sqrt(2) Phi^-1(AUC)``;
* ``a`` (the offset) is solved by bisection so that the mean score equals the positive rate
  (0.256), as for a calibrated click-through model: scores are skewed towards 0.

Scores are ``sigmoid(logit)`` as float64 in (0, 1).

    >>> s = binormal_score_set(2000, 500, target_auc=0.75, seed=0)
    >>> s.num_examples, s.num_positives, round(s.auc, 4)
    (2000, 500, 0.75)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import special, stats

from dpauc_tf.experiments.ground_truth import exact_auc
from dpauc_tf.io.scores import ScoreSet

NUM_EXAMPLES = 458_407
NUM_POSITIVES = 117_317
TARGET_AUCS = {0: 0.7494, 1: 0.7665, 2: 0.7702}


@dataclasses.dataclass(frozen=True)
class SyntheticScoreSet(ScoreSet):
    """A [`ScoreSet`][] plus the binormal parameters and the achieved AUC."""

    separation: float = 0.0
    offset: float = 0.0
    auc: float = 0.0


def _solve_separation(labels, z, target_auc, tolerance=1e-6, max_steps=20) -> float:
    def gap(d):
        return exact_auc(labels, d * labels + z) - target_auc

    d0 = math.sqrt(2.0) * float(stats.norm.ppf(target_auc))
    d1 = d0 * 1.01 + 1e-3
    g0, g1 = gap(d0), gap(d1)
    for _ in range(max_steps):
        if abs(g1) < tolerance or g1 == g0:
            break
        d0, d1, g0 = d1, d1 - g1 * (d1 - d0) / (g1 - g0), g1
        g1 = gap(d1)
    return d1


def _solve_offset(logit_without_offset, target_mean, tolerance=1e-9) -> float:
    low, high = -30.0, 30.0
    while high - low > tolerance:
        mid = (low + high) / 2
        if special.expit(logit_without_offset + mid).mean() > target_mean:
            high = mid
        else:
            low = mid
    return (low + high) / 2


def binormal_score_set(
    num_examples: int, num_positives: int, target_auc: float, seed: int | list[int] = 0
) -> SyntheticScoreSet:
    """A deterministic binormal score set with the given size, positives and sample AUC."""
    if not 0 < num_positives < num_examples:
        raise ValueError("need 0 < num_positives < num_examples")
    if not 0.5 < target_auc < 1.0:
        raise ValueError(f"target_auc must be in (0.5, 1), got {target_auc}")
    rng = np.random.default_rng(seed)
    labels = np.zeros(num_examples, dtype=np.int8)
    labels[rng.permutation(num_examples)[:num_positives]] = 1
    z = rng.standard_normal(num_examples)
    separation = _solve_separation(labels, z, target_auc)
    logit = separation * labels + z
    offset = _solve_offset(logit, num_positives / num_examples)
    scores = special.expit(logit + offset)
    return SyntheticScoreSet(
        labels=labels,
        scores=scores,
        clients=None,
        separation=float(separation),
        offset=float(offset),
        auc=exact_auc(labels, scores),
    )


def paper_score_set(epoch: int, seed: int = 0) -> SyntheticScoreSet:
    """The synthetic stand-in for the paper's test scores after ``epoch`` (0, 1 or 2)."""
    if epoch not in TARGET_AUCS:
        raise ValueError(f"the paper reports epochs {sorted(TARGET_AUCS)}, got {epoch}")
    return binormal_score_set(NUM_EXAMPLES, NUM_POSITIVES, TARGET_AUCS[epoch], seed=[seed, epoch])


def paper_score_sets(seed: int = 0) -> dict[int, SyntheticScoreSet]:
    """``{epoch: score set}`` for epochs 0, 1, 2."""
    return {epoch: paper_score_set(epoch, seed) for epoch in TARGET_AUCS}
