"""``score-noise``: Laplace noise on every prediction score (the DPAUC paper's Table 3 baseline).

Randomized response (``rr``) hides labels but sends the exact scores; the paper's answer to
"then hide the scores" is to add ``Laplace(1 / epsilon)`` to every score and compute the AUC
of the noisy scores with the **exact labels**. This mechanism works on scores, not on bucket
counts, so it is not a :class:`dpauc_tf.mechanisms.CountMechanism` (``get_mechanism`` does
not build it); the command line and the experiments know it by :data:`NAME`.

Guarantee, stated honestly:

* **Neighbouring relation**: *score* DP: two test sets are neighbours when they differ only
  in the score of one example (scores in [0, 1]). **Labels are not protected**: they are
  used exactly, so this is *not* label DP, and it is not comparable to the label-DP
  mechanisms' epsilon.
* **Sensitivity**: one score in [0, 1] moves by at most 1: L1 = 1 (the paper's framing).
* **Noise**: ``Laplace(scale = 1 / epsilon)`` independently on every score (floating point).
* **Epsilon**: ``epsilon`` per release of all noisy scores (each example's score is one
  record; the examples' noises are independent, so they compose in parallel), ``delta = 0``.

The AUC of a release is the AUC of the noisy scores with the exact labels. The noisy scores
are mapped monotonically onto [0, 1] (``(x - min) / (max - min)``, post-processing) and
bucketed on TensorFlow's grid with :data:`RESOLUTION` thresholds by
:func:`dpauc_tf.counts.bucket_counts`; the area then comes from :mod:`dpauc_tf.curve`. With
10,001 thresholds this is within about 1e-4 of the exact rank (Mann-Whitney) AUC.

>>> m = ScoreNoise(epsilon=2.0)
>>> m.noise_scale
0.5
>>> out = m.evaluate([0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8], seed=0, repeats=3)
>>> out.aucs.shape
(3,)
"""

from __future__ import annotations

import dataclasses
import math

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf import noise
from dpauc_tf.accounting import EpsilonSpent, composed_epsilon
from dpauc_tf.counts import bucket_counts
from dpauc_tf.curve import auc_from_roc, confusion_from_histogram, roc_from_confusion
from dpauc_tf.mechanisms import PrivacyStatement, check_epsilon
from dpauc_tf.thresholds import Thresholds

NAME = "score-noise"
RESOLUTION = 10_001
SCORE_DP = (
    "score DP: neighbouring test sets differ only in the score (in [0, 1]) of one example; "
    "labels are NOT protected (used exactly)"
)
# Elements per bucket_counts call (repeats x examples), to bound memory.
_CHUNK_ELEMENTS = 4_000_000


@dataclasses.dataclass(frozen=True)
class ScoreNoiseResult:
    """AUCs ``[R]`` and ROC points ``[R, RESOLUTION]`` of ``R`` releases of noisy scores."""

    aucs: np.ndarray
    fpr: np.ndarray
    tpr: np.ndarray


class ScoreNoise:
    """Laplace(1 / epsilon) noise on every score; exact labels (see the module docstring).

    Args:
      epsilon: epsilon of one release of all noisy scores (score DP, not label DP).
      resolution: number of thresholds used to compute the AUC of the noisy scores.

    >>> ScoreNoise(epsilon=4.0).statement().noise
    'Laplace(scale=0.25) on every score'
    """

    name = NAME
    neighbouring = SCORE_DP
    l1_sensitivity = 1.0

    def __init__(self, epsilon: float, resolution: int = RESOLUTION):
        epsilon = check_epsilon(epsilon)
        if epsilon is None:
            raise ValueError("score-noise needs an epsilon > 0")
        if resolution < 2:
            raise ValueError(f"resolution must be at least 2, got {resolution}")
        self.epsilon = epsilon
        self.delta = 0.0
        self.resolution = int(resolution)

    @property
    def noise_scale(self) -> float:
        return self.l1_sensitivity / self.epsilon

    @property
    def noise_stddev(self) -> float:
        return math.sqrt(2.0) * self.noise_scale

    def noisy_scores(
        self,
        scores,
        seed: int | tf.Tensor | None = None,
        repeats: int = 1,
        dtype: tf.DType = tf.float32,
    ) -> tf.Tensor:
        """``[repeats, n]`` noisy scores: every score plus independent Laplace(1 / epsilon)."""
        scores = tf.reshape(tf.cast(tf.convert_to_tensor(scores), dtype), [-1])
        if repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {repeats}")
        shape = tf.stack([repeats, tf.size(scores)])
        return scores[tf.newaxis, :] + noise.laplace(
            shape, self.noise_scale, noise.make_seed(seed), dtype
        )

    def evaluate(
        self,
        labels,
        scores,
        seed: int | tf.Tensor | None = None,
        repeats: int = 1,
    ) -> ScoreNoiseResult:
        """AUC and ROC of ``repeats`` independent releases of the noisy scores.

        Repeats are processed in chunks (a bounded number of noisy scores at a time), each with
        its own seed split from ``seed``; one pass of :func:`bucket_counts` per chunk counts
        every repeat at once (the repeat index is the group id).
        """
        labels = np.asarray(labels, dtype=np.float32).ravel()
        scores = np.asarray(scores, dtype=np.float32).ravel()
        if labels.size != scores.size or labels.size == 0:
            raise ValueError("labels and scores must be non-empty and of equal length")
        if not np.all((labels == 0) | (labels == 1)):
            raise ValueError("labels must be 0 or 1")
        if not np.all((scores >= 0) & (scores <= 1)):
            raise ValueError("scores must be finite and in [0, 1] (the sensitivity bound)")
        if repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {repeats}")
        grid = Thresholds.make(self.resolution, "tf")
        chunk = max(1, min(repeats, _CHUNK_ELEMENTS // labels.size))
        num_chunks = -(-repeats // chunk)
        seeds = noise.split_seed(noise.make_seed(seed), num_chunks)
        tiled_labels = np.tile(labels, chunk)
        aucs, fprs, tprs = [], [], []
        for i in range(num_chunks):
            size = min(chunk, repeats - i * chunk)
            noisy = self.noisy_scores(scores, seeds[i], size)
            low = tf.reduce_min(noisy, axis=1, keepdims=True)
            high = tf.reduce_max(noisy, axis=1, keepdims=True)
            unit = tf.clip_by_value(tf.math.divide_no_nan(noisy - low, high - low), 0.0, 1.0)
            group = tf.repeat(tf.range(size), labels.size)
            # Inputs were checked above and ``unit`` is in [0, 1] by construction.
            pos, neg = bucket_counts(
                tiled_labels[: size * labels.size],
                tf.reshape(unit, [-1]),
                grid,
                validate=False,
                group_ids=group,
                num_groups=size,
            )
            roc = roc_from_confusion(confusion_from_histogram(pos, neg))
            aucs.append(auc_from_roc(roc).numpy())
            fprs.append(roc.fpr.numpy())
            tprs.append(roc.tpr.numpy())
        return ScoreNoiseResult(
            aucs=np.concatenate(aucs).astype(np.float64),
            fpr=np.concatenate(fprs),
            tpr=np.concatenate(tprs),
        )

    def dp_event(self) -> dp_accounting.DpEvent:
        """One release as a Laplace event (noise multiplier ``scale / L1 = 1 / epsilon``)."""
        return dp_accounting.LaplaceDpEvent(noise_multiplier=self.noise_scale / self.l1_sensitivity)

    def privacy_spent(self, releases: int = 1, delta: float = 0.0) -> EpsilonSpent:
        """Epsilon of ``releases`` releases (score DP), see :func:`composed_epsilon`."""
        return composed_epsilon(self.dp_event(), releases, delta)

    def statement(self) -> PrivacyStatement:
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity="L1 = 1 (one score in [0, 1] changes by at most 1)",
            noise=f"Laplace(scale={self.noise_scale:g}) on every score",
            epsilon=self.epsilon,
            delta=0.0,
        )

    def __repr__(self) -> str:
        return f"ScoreNoise(epsilon={self.epsilon!r}, resolution={self.resolution!r})"
