"""``histogram`` and ``histogram-public-scores``: noise on the class histograms.

Noise: ``noise="continuous"`` (default) draws floating-point Laplace noise
([`dpauc_tf.noise.samplers.laplace`][]), which, like every floating-point sampler, is
open to Mironov's (2012) low-order-bit attack. ``noise="discrete"`` is the hardened choice:
exact discrete Laplace noise of the same scale ([`dpauc_tf.noise.exact`][], integer
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
from dpauc_tf.mechanisms.base import CountMechanism, summed_laplace_counts
from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.class_split import EQUAL_SHARE, resolve_positive_share, split_options
from dpauc_tf.mechanisms.laws import IntervalLaw, NoiseKind
from dpauc_tf.noise import exact, samplers
from dpauc_tf.noise.seeds import split_seed
from dpauc_tf.privacy.events import class_pair_event, discrete_laplace_event, laplace_event
from dpauc_tf.privacy.statement import PrivacyStatement


def laplace_variance(scale: float, kind: NoiseKind) -> float:
    """The variance of Laplace noise of ``scale``: ``2 b^2``, or the exact discrete
    Laplace's."""
    return exact.discrete_laplace_variance(scale) if kind.exact else 2.0 * scale**2


class HistogramLaplace(CountMechanism):
    """Laplace noise on the class histograms; the curve is their prefix sums.

    Released: ``pos[b]`` and ``neg[b]`` for all ``T + 1`` buckets.
    Sensitivity: a label flip moves weight ``w <= 1`` from ``pos[b]`` to ``neg[b]``: L1 = 2.
    Noise: ``Laplace(2 / epsilon)`` on each of the ``2 (T + 1)`` counts. Epsilon: ``epsilon``.
    With ``noise="discrete"``: exact discrete Laplace (two-sided geometric) noise
    ``P(k) ~ exp(-|k| epsilon / 2)``, which is epsilon-DP for integer counts (unit weights;
    fractional weights raise). Neighbours: label DP.

    **Unequal split** (``positive_share`` or a public ``positive_rate`` prior;
    `dpauc_tf.mechanisms.class_split`): ``Laplace(1 / (s epsilon))`` on the positive
    counts and ``Laplace(1 / ((1 - s) epsilon))`` on the negative counts, ``s`` the positive
    share (0.5 by default: both ``2 / epsilon``). A flip moves one unit in each: epsilon
    ``s epsilon + (1 - s) epsilon = epsilon`` whatever ``s``.

        >>> HistogramLaplace(epsilon=0.5, num_thresholds=100).noise_scale
        4.0
        >>> HistogramLaplace(epsilon=1.0, num_thresholds=100, positive_share=0.75).class_scales
        (1.3333333333333333, 4.0)
        >>> m = HistogramLaplace(epsilon=1.0, num_thresholds=3, noise="discrete")
        >>> r = m.release(tf.constant([0., 5., 3., 0.]), tf.constant([0., 4., 1., 0.]), seed=0)
        >>> bool(tf.reduce_all(r["pos"] == tf.round(r["pos"])))
        True
    """

    name = "histogram"
    capabilities: ClassVar[Capabilities] = Capabilities(fed_eval=True)
    interval_law: ClassVar[IntervalLaw] = IntervalLaw.DELTA_METHOD
    l1_sensitivity: ClassVar[float] = 2.0

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int,
        delta: float | None = None,
        noise: str = "continuous",
        estimator: str = "mann-whitney",
        positive_share: float | None = None,
        positive_rate: float | None = None,
    ):
        super().__init__(
            epsilon=epsilon, num_thresholds=num_thresholds, delta=delta, estimator=estimator
        )
        if self.l1_sensitivity == 1.0 and (positive_share, positive_rate) != (None, None):
            raise ValueError(f"{self.name} noises the positive counts only: no class split")
        self.positive_rate = positive_rate
        self.positive_share = resolve_positive_share(positive_share, positive_rate, "laplace")
        self.noise_kind = NoiseKind(noise)
        self.noise = self.noise_kind.value
        if self.noise_kind.exact:  # exact integer noise: integer counts, no XLA kernel
            self.capabilities = dataclasses.replace(
                type(self).capabilities, integer_counts=True, xla=False
            )

    def _laplace(self, counts: tf.Tensor, seed: tf.Tensor, scale: float) -> tf.Tensor:
        """Laplace noise of ``scale`` shaped like ``counts`` (continuous or exact discrete)."""
        if not self.noise_kind.exact:
            return samplers.laplace(tf.shape(counts), scale, seed, counts.dtype)

        def sample(seed_values, shape):
            draws = exact.discrete_laplace_sample(scale, tuple(shape), seed=seed_values)
            return draws.astype(np.float64)

        # release() has refused counts that are not integers (CountMechanism.release)
        draws = tf.numpy_function(sample, [seed, tf.shape(counts)], tf.float64, stateful=False)
        draws.set_shape(counts.shape)
        return tf.cast(draws, counts.dtype)

    def _integer_counts_message(self) -> str:
        if self.capabilities.unit_weights:  # histogram-public-scores: weights of 1 only
            return super()._integer_counts_message()
        return (
            f"{self.name} with noise='discrete' needs integer counts (unit sample weights); "
            "use noise='continuous' for fractional weights"
        )

    def _noise_description(self, scale: float | None = None) -> str:
        scale = self.noise_scale if scale is None else scale
        if self.noise_kind.exact:
            return f"exact discrete Laplace(scale={scale:g}) (integer noise)"
        return f"Laplace(scale={scale:g})"

    def options(self) -> dict:
        split = split_options(self.positive_share, self.positive_rate)
        return {"noise": self.noise, **split, **super().options()}

    @property
    def noise_scale(self) -> float:
        """The scale of the equal split (``l1_sensitivity / epsilon``)."""
        return self.l1_sensitivity / self.epsilon

    @property
    def class_scales(self) -> tuple[float, float]:
        """Laplace scales of the positive and the negative counts (``1 / eps_class``)."""
        share = self.positive_share
        return (
            self.noise_scale * EQUAL_SHARE / share,
            self.noise_scale * EQUAL_SHARE / (1.0 - share),
        )

    @property
    def noise_stddev(self) -> float:
        """Standard deviation of the noise on one count (the noisier class's)."""
        scale = max(self.class_scales)
        if self.noise_kind.exact:
            return math.sqrt(exact.discrete_laplace_variance(scale))
        return math.sqrt(2.0) * scale

    def _noisy_release(self, pos, neg, seed):
        seeds = split_seed(seed, 2)
        scale_pos, scale_neg = self.class_scales
        return {
            "pos": pos + self._laplace(pos, seeds[0], scale_pos),
            "neg": neg + self._laplace(neg, seeds[1], scale_neg),
        }

    def _histograms(self, release):
        return release["pos"], release["neg"]

    # -- the noise law -------------------------------------------------------------------
    def noise_variances(self, release):
        """Independent Laplace noise of the class's scale on every count."""
        pos_scale, neg_scale = self.class_scales
        return {
            "pos": np.asarray(laplace_variance(pos_scale, self.noise_kind)),
            "neg": np.asarray(laplace_variance(neg_scale, self.noise_kind)),
        }

    def sums_client_noise(self) -> bool:
        """Continuous Laplace: the sum of ``K`` clients' noise is ``b (G1 - G2)``."""
        return not self.noise_kind.exact

    def summed_client_release(self, pos, neg, num_clients, seed, repeats):
        """The summed counts plus one draw of ``K`` clients' summed Laplace noise per count
        (seeds: one per class, as `_noisy_release` splits them)."""
        pos = tf.reduce_sum(pos, axis=0, keepdims=True)  # [1, T + 1]: the counts' sum is exact
        neg = tf.reduce_sum(neg, axis=0, keepdims=True)
        seeds = split_seed(seed, 2)
        scale_pos, scale_neg = self.class_scales
        return {
            "pos": summed_laplace_counts(pos, scale_pos, num_clients, seeds[0], repeats),
            "neg": summed_laplace_counts(neg, scale_neg, num_clients, seeds[1], repeats),
        }

    def released_confusion(self, release):
        """The suffix sums of the noisy histograms (the AUC is estimated from these)."""
        return confusion_from_histogram(*self._histograms(release))

    def to_confusion(self, release):
        """Monotone, consistent cumulative counts ([`monotone_confusion`][]) for the curve."""
        return monotone_confusion(*self._histograms(release))

    def dp_event(self) -> dp_accounting.DpEvent:
        """A flip moves ``l1_sensitivity`` counts by at most one each: that many
        unit-sensitivity Laplace events composed (`laplace_event`), or exact
        discrete-Laplace ones (`discrete_laplace_event`). An unequal split: the
        composition of the two classes' unit-sensitivity events."""
        if self.positive_share != EQUAL_SHARE:
            return class_pair_event(*self.class_scales, discrete=self.noise_kind.exact)
        if self.noise_kind.exact:
            return discrete_laplace_event(self.noise_scale, int(self.l1_sensitivity))
        return laplace_event(self.noise_scale, int(self.l1_sensitivity))

    def statement(self):
        if self.positive_share == EQUAL_SHARE:
            noise = (
                f"{self._noise_description()} on each of 2(T+1) = "
                f"{2 * self.num_buckets} bucket counts"
            )
        else:
            scale_pos, scale_neg = self.class_scales
            noise = (
                f"{self._noise_description(scale_pos)} on each of the T+1 = {self.num_buckets} "
                f"positive counts, {self._noise_description(scale_neg)} on each negative count "
                f"(epsilon split {self.positive_share:.4g} : {1 - self.positive_share:.4g})"
            )
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity="L1 = 2 (one unit of weight moves between pos[b] and neg[b])",
            noise=noise,
            epsilon=self.epsilon,
            delta=0.0,
            sensitivity_value=self.l1_sensitivity,
            noise_scale=max(self.class_scales),
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
    capabilities: ClassVar[Capabilities] = Capabilities(unit_weights=True, fed_eval=True)
    l1_sensitivity: ClassVar[float] = 1.0

    def _noisy_release(self, pos, neg, seed):
        return {"pos": pos + self._laplace(pos, seed, self.noise_scale), "total": pos + neg}

    def _histograms(self, release):
        return release["pos"], release["total"] - release["pos"]

    def noise_variances(self, release):
        """Laplace noise on the positive counts; the totals are exact."""
        return {
            "pos": np.asarray(laplace_variance(self.noise_scale, self.noise_kind)),
            "total": np.zeros(()),
        }

    def summed_client_release(self, pos, neg, num_clients, seed, repeats):
        """The summed positive counts plus ``K`` clients' summed Laplace noise; the exact
        summed totals."""
        pos = tf.reduce_sum(pos, axis=0, keepdims=True)
        neg = tf.reduce_sum(neg, axis=0, keepdims=True)
        total = tf.broadcast_to((pos + neg)[None], tf.concat([[repeats], tf.shape(pos)], 0))
        noisy = summed_laplace_counts(pos, self.noise_scale, num_clients, seed, repeats)
        return {"pos": noisy, "total": total}

    def statement(self):
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring + "; the score histogram is released exactly",
            sensitivity="L1 = 1 (one positive count changes by the example's weight)",
            noise=f"{self._noise_description()} on each of T+1 = "
            f"{self.num_buckets} positive bucket counts; bucket totals exact",
            epsilon=self.epsilon,
            delta=0.0,
            sensitivity_value=self.l1_sensitivity,
            noise_scale=self.noise_scale,
        )
