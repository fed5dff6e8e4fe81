"""``histogram`` and ``histogram-public-scores``: noise on the class histograms.

Noise: ``noise="continuous"`` (default) draws floating-point Laplace noise
(:func:`dpauc_tf.noise.samplers.laplace`), which, like every floating-point sampler, is
open to Mironov's (2012) low-order-bit attack. ``noise="discrete"`` is the hardened choice:
exact discrete Laplace noise of the same scale (:mod:`dpauc_tf.noise.exact`, integer
arithmetic only), valid for integer counts (no fractional sample weights; checked). It is
sampled with numpy through ``tf.numpy_function``: eager and ``tf.function``, not XLA.

>>> m = HistogramLaplace(epsilon=1.0, num_thresholds=3)
>>> m.noise_scale
2.0
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.core.postprocessing import monotone_confusion
from dpauc_tf.mechanisms.base import CountMechanism
from dpauc_tf.noise import exact, samplers
from dpauc_tf.noise.seeds import split_seed
from dpauc_tf.privacy.events import discrete_laplace_event
from dpauc_tf.privacy.statement import PrivacyStatement

NOISE_KINDS = ("continuous", "discrete")


class HistogramLaplace(CountMechanism):
    """Laplace noise on the class histograms; the curve is their prefix sums.

    Released: ``pos[b]`` and ``neg[b]`` for all ``T + 1`` buckets.
    Sensitivity: a label flip moves weight ``w <= 1`` from ``pos[b]`` to ``neg[b]``: L1 = 2.
    Noise: ``Laplace(2 / epsilon)`` on each of the ``2 (T + 1)`` counts. Epsilon: ``epsilon``.
    With ``noise="discrete"``: exact discrete Laplace (two-sided geometric) noise
    ``P(k) ~ exp(-|k| epsilon / 2)``, which is epsilon-DP for integer counts (unit weights;
    fractional weights raise). Neighbours: label DP.

    >>> HistogramLaplace(epsilon=0.5, num_thresholds=100).noise_scale
    4.0
    >>> m = HistogramLaplace(epsilon=1.0, num_thresholds=3, noise="discrete")
    >>> r = m.release(tf.constant([0., 5., 3., 0.]), tf.constant([0., 4., 1., 0.]), seed=0)
    >>> bool(tf.reduce_all(r["pos"] == tf.round(r["pos"])))
    True
    """

    name = "histogram"
    l1_sensitivity: ClassVar[float] = 2.0

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int,
        delta: float | None = None,
        noise: str = "continuous",
        estimator: str = "mann-whitney",
    ):
        super().__init__(
            epsilon=epsilon, num_thresholds=num_thresholds, delta=delta, estimator=estimator
        )
        if noise not in NOISE_KINDS:
            raise ValueError(f"noise must be one of {NOISE_KINDS}, got {noise!r}")
        self.noise = noise
        if noise == "discrete":
            from dpauc_tf.mechanisms.registry import capabilities_of

            self._capabilities = dataclasses.replace(
                capabilities_of(type(self)), integer_counts=True, xla=False
            )

    def _laplace(self, counts: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
        """Laplace noise of ``noise_scale`` shaped like ``counts`` (continuous or exact discrete)."""
        if self.noise == "continuous":
            return samplers.laplace(tf.shape(counts), self.noise_scale, seed, counts.dtype)
        message = (
            f"{self.name} with noise='discrete' needs integer counts (unit sample weights); "
            "use noise='continuous' for fractional weights"
        )
        if tf.executing_eagerly():
            values = counts.numpy()
            if not (np.all(np.isfinite(values)) and np.all(values == np.round(values))):
                raise ValueError(message)
            check = []
        else:
            check = [tf.debugging.assert_equal(counts, tf.round(counts), message=message)]
        scale = self.noise_scale

        def sample(seed_values, shape):
            draws = exact.discrete_laplace_sample(scale, tuple(shape), seed=seed_values)
            return draws.astype(np.float64)

        with tf.control_dependencies(check):
            draws = tf.numpy_function(sample, [seed, tf.shape(counts)], tf.float64, stateful=False)
        draws.set_shape(counts.shape)
        return tf.cast(draws, counts.dtype)

    def _noise_description(self) -> str:
        if self.noise == "discrete":
            return f"exact discrete Laplace(scale={self.noise_scale:g}) (integer noise)"
        return f"Laplace(scale={self.noise_scale:g})"

    def options(self) -> dict:
        return {"noise": self.noise, **super().options()}

    @property
    def noise_scale(self) -> float:
        return self.l1_sensitivity / self.epsilon

    @property
    def noise_stddev(self) -> float:
        if self.noise == "discrete":
            return math.sqrt(exact.discrete_laplace_variance(self.noise_scale))
        return math.sqrt(2.0) * self.noise_scale

    def _noisy_release(self, pos, neg, seed):
        seeds = split_seed(seed, 2)
        return {
            "pos": pos + self._laplace(pos, seeds[0]),
            "neg": neg + self._laplace(neg, seeds[1]),
        }

    def _histograms(self, release):
        return release["pos"], release["neg"]

    def released_confusion(self, release):
        """The suffix sums of the noisy histograms (the AUC is estimated from these)."""
        return confusion_from_histogram(*self._histograms(release))

    def to_confusion(self, release):
        """Monotone, consistent cumulative counts (:func:`monotone_confusion`) for the curve."""
        return monotone_confusion(*self._histograms(release))

    def dp_event(self) -> dp_accounting.DpEvent:
        """Continuous noise: a Laplace event with the L1 sensitivity. Discrete noise: the exact
        discrete-Laplace event (a flip moves ``l1_sensitivity`` counts by one each)."""
        if self.noise == "discrete":
            return discrete_laplace_event(self.noise_scale, int(self.l1_sensitivity))
        return dp_accounting.LaplaceDpEvent(noise_multiplier=self.noise_scale / self.l1_sensitivity)

    def statement(self):
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity="L1 = 2 (one unit of weight moves between pos[b] and neg[b])",
            noise=f"{self._noise_description()} on each of 2(T+1) = "
            f"{2 * self.num_buckets} bucket counts",
            epsilon=self.epsilon,
            delta=0.0,
        )


class HistogramPublicScores(HistogramLaplace):
    """Laplace noise on the positive histogram only; bucket totals are released exactly.

    Released: noisy ``pos[b]`` and the exact totals ``n[b] = pos[b] + neg[b]``; the negatives
    follow as ``n[b] - pos[b]``. The totals do not depend on labels, so they cost nothing
    under label DP, **but the score histogram becomes public**: use this only when the
    distribution of scores may be revealed.
    Sensitivity: a label flip changes one ``pos[b]`` by ``w <= 1``: L1 = 1.
    Noise: ``Laplace(1 / epsilon)`` on each of the ``T + 1`` positive counts.
    Neighbours: label DP.
    """

    name = "histogram-public-scores"
    l1_sensitivity: ClassVar[float] = 1.0

    def _noisy_release(self, pos, neg, seed):
        return {"pos": pos + self._laplace(pos, seed), "total": pos + neg}

    def _histograms(self, release):
        return release["pos"], release["total"] - release["pos"]

    def statement(self):
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring + "; the score histogram is released exactly",
            sensitivity="L1 = 1 (one positive count changes by the example's weight)",
            noise=f"{self._noise_description()} on each of T+1 = "
            f"{self.num_buckets} positive bucket counts; bucket totals exact",
            epsilon=self.epsilon,
            delta=0.0,
        )
