"""``paper`` and ``paper-gaussian``: the DPAUC paper's release of the 4T cumulative counts.

Examples:
    >>> PaperLaplace(epsilon=1.0, num_thresholds=100).statement().epsilon
    0.5
"""

from __future__ import annotations

import math
from typing import ClassVar

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.curve import Confusion, confusion_from_histogram
from dpauc_tf.core.postprocessing import consistent_confusion
from dpauc_tf.mechanisms.base import CountMechanism, summed_laplace_counts
from dpauc_tf.mechanisms.laws import IntervalLaw
from dpauc_tf.noise import samplers
from dpauc_tf.noise.seeds import split_seed
from dpauc_tf.privacy.accounting import analytic_gaussian_sigma
from dpauc_tf.privacy.statement import PrivacyStatement


class PaperLaplace(CountMechanism):
    """DPAUC_Lap exactly as published (Sun et al. 2023).

    Released: the ``4T`` cumulative counts TP, FP, TN, FN at every threshold.
    Noise: independent ``Laplace(1 / eps')`` on each, ``eps' = epsilon / (4T)``.
    Sensitivity: each count changes by at most 1; the paper charges all ``4T`` (L1 = 4T,
    claimed epsilon ``4T eps' = epsilon``). A label flip changes exactly two counts per
    threshold (TP and FP, or FN and TN), so the true L1 sensitivity is ``2T`` and the same
    noise gives ``epsilon / 2``; that tight figure is what [`dp_event`][] accounts.
    Neighbours: label DP.

    Estimate: by default [`dpauc_tf.core.postprocessing.mann_whitney_auc`][] of the 4T
    counts (least-squares totals, then the trapezoid in threshold order: consistent);
    ``estimator="reference"`` is the reference code's clip-sort-trapezoid, for reproducing
    the paper's tables. The curve ([`to_confusion`][]) is
    [`consistent_confusion`][] (one P and N, monotone).

    Examples:
        >>> PaperLaplace(epsilon=1.0, num_thresholds=100).noise_scale
        400.0
    """

    name = "paper"
    interval_law: ClassVar[IntervalLaw] = IntervalLaw.DELTA_METHOD

    @property
    def noise_scale(self) -> float:
        return 4.0 * self.num_thresholds / self.epsilon

    @property
    def noise_stddev(self) -> float:
        return math.sqrt(2.0) * self.noise_scale

    def _exact_confusion(self, pos, neg) -> Confusion:
        return confusion_from_histogram(pos, neg)

    def _noisy_release(self, pos, neg, seed):
        exact = self._exact_confusion(pos, neg)
        shape = tf.shape(exact.tp)
        seeds = split_seed(seed, 4)
        return {
            key: value + samplers.laplace(shape, self.noise_scale, seeds[i], value.dtype)
            for i, (key, value) in enumerate(exact._asdict().items())
        }

    def noise_variances(self, release):
        """Independent noise of one variance on each of the 4T released counts."""
        variance = np.asarray(self.noise_stddev**2)
        return {key: variance for key in ("tp", "fp", "tn", "fn")}

    def sums_client_noise(self) -> bool:
        """Laplace noise: the sum of ``K`` clients' noise is ``b (G1 - G2)``."""
        return True

    def summed_client_release(self, pos, neg, num_clients, seed, repeats):
        """The exact cumulative counts of the summed histograms plus one draw of ``K``
        clients' summed Laplace noise each (seeds split four ways, as `_noisy_release`)."""
        pos = tf.reduce_sum(pos, axis=0, keepdims=True)
        neg = tf.reduce_sum(neg, axis=0, keepdims=True)
        exact = confusion_from_histogram(pos, neg)
        seeds = split_seed(seed, 4)
        return {
            key: summed_laplace_counts(value, self.noise_scale, num_clients, seeds[i], repeats)
            for i, (key, value) in enumerate(exact._asdict().items())
        }

    def released_confusion(self, release):
        """The 4T noisy cumulative counts as released."""
        return Confusion(release["tp"], release["fp"], release["tn"], release["fn"])

    def to_confusion(self, release):
        """One P and one N, monotone counts ([`consistent_confusion`][]), for the curve."""
        return consistent_confusion(self.released_confusion(release))

    def dp_event(self):
        """A flip moves ``2T`` of the ``4T`` counts by one unit each (TP/FP or FN/TN at every
        threshold): exactly the composition of ``2T`` unit-sensitivity Laplace events. Its
        pure epsilon is ``2T / scale = epsilon / 2``; by PLD it is far smaller (the paper's
        epsilon 1 at ``T = 100``: about 0.13 at delta 1e-6)."""
        unit = dp_accounting.LaplaceDpEvent(noise_multiplier=self.noise_scale)
        return dp_accounting.SelfComposedDpEvent(unit, 2 * self.num_thresholds)

    def statement(self):
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity=f"L1 = 2T = {2 * self.num_thresholds} (the paper charges 4T)",
            noise=f"Laplace(scale={self.noise_scale:g}) on each of 4T = "
            f"{4 * self.num_thresholds} cumulative counts",
            epsilon=self.epsilon / 2.0,
            delta=0.0,
            claimed_epsilon=self.epsilon,
            sensitivity_value=float(2 * self.num_thresholds),
            noise_scale=self.noise_scale,
        )


class PaperGaussian(PaperLaplace):
    """The paper's ``4T`` cumulative counts with Gaussian noise, for (epsilon, delta).

    Sensitivity: a label flip changes ``2T`` counts by 1, so L2 = ``sqrt(2T)``.
    Noise: ``N(0, sigma^2)`` on each count, ``sigma`` the smallest std that makes one Gaussian
    release of L2 sensitivity ``sqrt(2T)`` (epsilon, delta)-DP (analytic Gaussian mechanism,
    Balle & Wang 2018; the whole vector is one Gaussian mechanism, so no composition over
    thresholds is needed). Neighbours: label DP.
    """

    name = "paper-gaussian"

    def sums_client_noise(self) -> bool:
        """Drawn client by client."""
        return False

    requires_delta = True

    @property
    def l2_sensitivity(self) -> float:
        return math.sqrt(2.0 * self.num_thresholds)

    @property
    def noise_stddev(self) -> float:
        return analytic_gaussian_sigma(self.epsilon, self.delta, self.l2_sensitivity)

    @property
    def noise_scale(self) -> float:
        return self.noise_stddev

    def _noisy_release(self, pos, neg, seed):
        exact = self._exact_confusion(pos, neg)
        shape = tf.shape(exact.tp)
        seeds = split_seed(seed, 4)
        return {
            key: value + samplers.gaussian(shape, self.noise_stddev, seeds[i], value.dtype)
            for i, (key, value) in enumerate(exact._asdict().items())
        }

    def dp_event(self):
        return dp_accounting.GaussianDpEvent(
            noise_multiplier=self.noise_stddev / self.l2_sensitivity
        )

    def statement(self):
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity=f"L2 = sqrt(2T) = {self.l2_sensitivity:.4g}",
            noise=f"Gaussian(sigma={self.noise_stddev:.4g}) on each of 4T = "
            f"{4 * self.num_thresholds} cumulative counts",
            epsilon=self.epsilon,
            delta=self.delta,
            sensitivity_value=self.l2_sensitivity,
            sensitivity_norm="L2",
            noise_scale=self.noise_stddev,
        )
