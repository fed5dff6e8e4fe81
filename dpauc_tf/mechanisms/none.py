"""``none``: the exact counts, for ground truth and tests. Not private.

Examples:
    >>> NoNoise(None, 3).statement().epsilon
    inf
"""

from __future__ import annotations

import math
from typing import ClassVar

import dp_accounting
import numpy as np

from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.mechanisms.base import CountMechanism
from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.laws import GridRule, IntervalLaw
from dpauc_tf.privacy.statement import PrivacyStatement


class NoNoise(CountMechanism):
    """No noise at all: the exact counts. **Not private**; for ground truth and tests."""

    name = "none"
    capabilities: ClassVar[Capabilities] = Capabilities(protects="nothing", fed_eval=True)
    grid_rule: ClassVar[GridRule] = GridRule.DEFAULT_GRID  # no noise at all
    interval_law: ClassVar[IntervalLaw] = IntervalLaw.DELTA_METHOD  # of zero noise
    adds_noise = False

    def __init__(self, epsilon: float | None = None, num_thresholds: int = 200, delta=None):
        del delta  # nothing is private: a delta means nothing here
        super().__init__(epsilon, num_thresholds)

    @property
    def noise_stddev(self) -> float:
        return 0.0

    def _noisy_release(self, pos, neg, seed):
        return {"pos": pos, "neg": neg}

    def to_confusion(self, release):
        return confusion_from_histogram(release["pos"], release["neg"])

    def noise_variances(self, release):
        """No noise: zero variance on the exact counts."""
        return {"pos": np.zeros(()), "neg": np.zeros(())}

    def dp_event(self):
        return dp_accounting.NonPrivateDpEvent()

    def statement(self):
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring="-",
            sensitivity="-",
            noise="none: NOT differentially private",
            epsilon=math.inf,
            delta=0.0,
        )
