"""``score-noise``: Laplace noise on every prediction score (the DPAUC paper's Table 3 baseline).

Randomized response (``rr``) hides labels but sends the exact scores; the paper's answer to
"then hide the scores" is to add ``Laplace(1 / epsilon)`` to every score and compute the AUC
of the noisy scores with the **exact labels**. Under the mechanism protocol the noise is the
client-side `ScoreNoise.transform` (before counting); the counts of the noisy scores
are then released exactly.

Guarantee, stated honestly:

* **Neighbouring relation**: *score* DP: two test sets are neighbours when they differ only
  in the score of one example (scores in [0, 1]). **Labels are not protected**: they are
  used exactly, so this is *not* label DP, and it is not comparable to the label-DP
  mechanisms' epsilon.
* **Sensitivity**: one score in [0, 1] moves by at most 1: L1 = 1 (the paper's framing).
* **Noise**: ``Laplace(scale = 1 / epsilon)`` independently on every score (floating point).
* **Epsilon**: ``epsilon`` per release of all noisy scores, ``delta = 0``.

The noisy scores are counted on a fixed grid of `RESOLUTION` thresholds evenly spaced
over ``[-L, 1 + L]`` with ``L = TAIL_SCALES / epsilon`` (a score's noise leaves that range
with probability ``exp(-TAIL_SCALES)``, and is then counted in the end bucket, which only
merges the most extreme scores). The grid depends only on epsilon, never on the data.

    >>> m = ScoreNoise(epsilon=2.0, num_thresholds=100)
    >>> m.noise_scale, m.num_thresholds
    (0.5, 10001)
    >>> m.capabilities.protects
    'scores'
"""

from __future__ import annotations

import math
from typing import ClassVar

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.base import CountMechanism
from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.laws import GridRule
from dpauc_tf.noise import samplers
from dpauc_tf.privacy.statement import PrivacyStatement

RESOLUTION = 10_001
TAIL_SCALES = 20.0
SCORE_DP = (
    "score DP: neighbouring test sets differ only in the score (in [0, 1]) of one example; "
    "labels are NOT protected (used exactly)"
)


class ScoreNoise(CountMechanism):
    """Laplace(1 / epsilon) noise on every score; exact labels (see the module docstring).

    Args:
      epsilon: epsilon of one release of all noisy scores (score DP, not label DP).
      num_thresholds: ignored (the noisy scores are counted on their own grid).
      delta: must be unset.
      resolution: number of thresholds of the grid the noisy scores are counted on.

    Examples:
        >>> ScoreNoise(epsilon=4.0, num_thresholds=10).statement().noise
        'Laplace(scale=0.25) on every score'
    """

    name = "score-noise"
    capabilities: ClassVar[Capabilities] = Capabilities(
        protects="scores", transforms_data=True, keras_metric=False, federated=False
    )
    grid_rule: ClassVar[GridRule] = GridRule.DEFAULT_GRID  # noise on scores, not on buckets
    neighbouring = SCORE_DP
    roc_note = "ROC of the noisy scores on their own grid (exact labels)"
    l1_sensitivity = 1.0

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int = RESOLUTION,
        delta: float | None = None,
        resolution: int = RESOLUTION,
    ):
        del num_thresholds  # the caller's grid does not apply to noisy scores
        if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)):
            raise TypeError(f"resolution must be an int, got {resolution!r}")
        super().__init__(epsilon=epsilon, num_thresholds=int(resolution), delta=delta)
        self.resolution = int(resolution)

    @property
    def noise_scale(self) -> float:
        return self.l1_sensitivity / self.epsilon

    @property
    def noise_stddev(self) -> float:
        return math.sqrt(2.0) * self.noise_scale

    def count_thresholds(self, thresholds: Thresholds) -> Thresholds:
        """An even grid over ``[-L, 1 + L]``, ``L = TAIL_SCALES * scale`` (data-independent)."""
        del thresholds
        tail = TAIL_SCALES * self.noise_scale
        return Thresholds.explicit(np.linspace(-tail, 1.0 + tail, self.resolution))

    def transform(self, labels, scores, seed):
        scores = tf.convert_to_tensor(scores)
        dtype = scores.dtype if scores.dtype.is_floating else tf.float64
        scores = tf.cast(scores, dtype)
        return labels, scores + samplers.laplace(tf.shape(scores), self.noise_scale, seed, dtype)

    def _noisy_release(self, pos, neg, seed):
        del seed  # the noise went into the scores before counting
        return {"pos": pos, "neg": neg}

    def to_confusion(self, release):
        return confusion_from_histogram(release["pos"], release["neg"])

    def dp_event(self) -> dp_accounting.DpEvent:
        """One release as a Laplace event (noise multiplier ``scale / L1 = 1 / epsilon``)."""
        return dp_accounting.LaplaceDpEvent(noise_multiplier=self.noise_scale / self.l1_sensitivity)

    def statement(self) -> PrivacyStatement:
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity="L1 = 1 (one score in [0, 1] changes by at most 1)",
            noise=f"Laplace(scale={self.noise_scale:g}) on every score",
            epsilon=self.epsilon,
            delta=0.0,
            sensitivity_value=float(self.l1_sensitivity),
            noise_scale=self.noise_scale,
        )

    def options(self) -> dict:
        return {"resolution": self.resolution}
