"""``auc-only``: the AUC of one data holder's exact counts plus scalar Laplace noise.

When whoever computes the metric holds all the labels (``model.compile``, ``dpauc evaluate
--clients 1``) and publishes one number, there is no need to release a whole noisy curve.
This mechanism counts on a fine grid, computes the Mann-Whitney AUC of the exact counts and
adds noise to that scalar. Proofs and figures: ``docs/auc_only.md``.

**Sensitivity.** With ``P`` positives and ``N`` negatives (weights in [0, 1]), one label flip
moves the AUC (Mann-Whitney, ties counted 1/2) by at most ``1 / min(P, N)``
(`auc_flip_sensitivity` is the exact maximum for unit weights). The class counts are
private, so the bound is itself estimated privately:

1. ``m_low = min(P, N) + Laplace(1 / eps_count) - margin``, ``margin = ln(1 / (2 delta)) /
   eps_count``: ``P(m_low > min(P, N)) = delta`` (``min(P, N)`` has sensitivity 1);
2. if ``m_low >= MIN_BOUND``: ``AUC + Laplace(1 / (m_low eps_auc))``; otherwise the release
   is NaN (the bound says the data are too small to release anything useful; the decision
   depends on ``m_low`` only).

``eps_count = count_share * epsilon``, ``eps_auc = epsilon - eps_count``. Guarantee:
(epsilon, delta)-label DP for one release (propose-test-release: the noise of step 2 is
calibrated whenever the bound holds, which fails with probability at most ``delta``).

**The share suits n** (default, ``count_share=None``): the number of examples ``n`` (the
counts' total, the same for every labelling: public under label DP) sets
``count_share = clip(sqrt(ln(1 / (2 delta)) / (epsilon n / 4)), 0.05, 0.5)``, the share that
minimises the AUC's noise scale ``1 / ((m - margin) (1 - c) epsilon)`` when ``min(P, N) =
m = n / 4`` (a guess: a wrong one costs accuracy, never privacy). At epsilon 1 and delta
1e-6 that is 0.05 (as a fixed share) from n = 21,000 up and 0.32 at n = 500, where the
margin falls from 262 to 41 and 127 positives release a number (docs/auc_only.md). A given
``count_share`` is used as it is.

Examples:
    >>> m = AucOnly(epsilon=1.0, num_thresholds=200, delta=1e-6)
    >>> m.num_thresholds, round(m.margin_for(100_000), 1), round(m.margin_for(500), 1)
    (131073, 262.4, 40.5)
    >>> m.capabilities.releases
    'auc'
"""

from __future__ import annotations

import math
from typing import ClassVar

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.core.postprocessing import mann_whitney_auc
from dpauc_tf.core.sampling_variance import hanley_mcneil_variance
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.base import CountMechanism, float_counts, with_repeats
from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.class_split import MAX_FRACTION, MIN_FRACTION
from dpauc_tf.mechanisms.laws import GridRule, IntervalLaw
from dpauc_tf.noise import samplers
from dpauc_tf.noise.seeds import make_seed, split_seed
from dpauc_tf.privacy.events import BoundFailureDpEvent
from dpauc_tf.privacy.statement import PrivacyStatement

# TensorFlow's grid with 2^17 + 1 thresholds: buckets of width 2^-17, bucketed exactly in
# float32 (a power-of-two multiply), O(n). Within-bucket pairs count 1/2, which moves the
# Mann-Whitney value by at most half the within-bucket share of pairs (see
# ``grid_error_bound``): about 5e-6 on the paper-like score sets (docs/auc_only.md).
COUNT_RESOLUTION = 2**17 + 1
DEFAULT_COUNT_SHARE = 0.05  # the smallest share the n-dependent default uses
MAX_AUTO_COUNT_SHARE = 0.5
AUTO_CLASS_FRACTION = 0.25  # the guess of min(P, N) / n behind the n-dependent share
# Below this lower bound of min(P, N) the release is NaN (an AUC of 1 or 2 examples per class
# under noise of scale >= 1/(2 eps) says nothing, and a neighbour may lose its last example).
MIN_BOUND = 2.0
NO_CURVE = "auc-only releases only the ROC AUC: there is no curve to show"


def auc_flip_sensitivity(num_pos: int, num_neg: int) -> float:
    """The largest change of the AUC by one label flip over all data sets with ``num_pos``
    positives and ``num_neg`` negatives (unit weights, any scores, ties counted 1/2); only
    flips that leave both classes non-empty count. ``nan`` if a class is empty.

    A flip negative -> positive moves it by at most ``1 / min(P + 1, N)``, positive ->
    negative by at most ``1 / min(P, N + 1)``; both are attained (docs/auc_only.md). Their
    maximum is ``1 / min(P, N)`` except when a class has one example (its flip would empty it).

    Examples:
        >>> auc_flip_sensitivity(3, 10), auc_flip_sensitivity(1, 10)
        (0.3333333333333333, 0.5)
    """
    if num_pos < 1 or num_neg < 1:
        return math.nan
    candidates = []
    if num_neg >= 2:
        candidates.append(1.0 / min(num_pos + 1, num_neg))
    if num_pos >= 2:
        candidates.append(1.0 / min(num_pos, num_neg + 1))
    return max(candidates) if candidates else 0.0


def grid_error_bound(pos: np.ndarray, neg: np.ndarray) -> float:
    """Largest possible gap between the Mann-Whitney AUC of bucket counts and the AUC of the
    unbucketed scores: half the share of positive-negative pairs that share a bucket.

    Examples:
        >>> grid_error_bound(np.array([1., 1.]), np.array([1., 0.]))
        0.25
    """
    pos, neg = np.asarray(pos, np.float64), np.asarray(neg, np.float64)
    return float(0.5 * np.sum(pos * neg) / (pos.sum() * neg.sum()))


class AucOnly(CountMechanism):
    """The exact AUC plus Laplace noise scaled to a private lower bound of ``min(P, N)``.

    Args:
      epsilon: epsilon of one release (the count query and the AUC together).
      num_thresholds: ignored (the counts are kept on a grid of ``resolution`` thresholds).
      delta: delta of one release: the probability that the lower bound of ``min(P, N)`` is
        too high (required).
      count_share: share of ``epsilon`` spent on the lower bound; ``None`` (default): from
        the public number of examples of each release ([`count_share_for`][]; 0.05 from
        about 21,000 examples up at epsilon 1, delta 1e-6; ``docs/auc_only.md``).
      resolution: thresholds of the counting grid (TensorFlow's grid).

    Examples:
        >>> m = AucOnly(epsilon=1.0, num_thresholds=10, delta=1e-6, resolution=11)
        >>> r = m.release(tf.constant([0., 0., 0., 0., 0., 300., 400., 0., 0., 0., 0., 0.]),
        ...               tf.constant([0., 0., 0., 600., 500., 100., 0., 0., 0., 0., 0., 0.]), seed=0)
        >>> sorted(r), 0.9 < float(m.estimate_auc(r)) < 1.0
        (['auc', 'min_count_bound'], True)
    """

    name = "auc-only"
    capabilities: ClassVar[Capabilities] = Capabilities(
        unit_weights=True, federated=False, releases="auc"
    )
    grid_rule: ClassVar[GridRule] = GridRule.DEFAULT_GRID  # counts on its own grid
    interval_law: ClassVar[IntervalLaw] = IntervalLaw.LAPLACE_ON_AUC
    requires_delta = True
    roc_note = NO_CURVE
    undefined_note = f"the noisy lower bound of min(P, N) was below {MIN_BOUND:g}"

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int = COUNT_RESOLUTION,
        delta: float | None = None,
        count_share: float | None = None,
        resolution: int = COUNT_RESOLUTION,
    ):
        del num_thresholds  # the caller's grid does not apply: the counts need a fine one
        if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)):
            raise TypeError(f"resolution must be an int, got {resolution!r}")
        super().__init__(epsilon=epsilon, num_thresholds=int(resolution), delta=delta)
        if count_share is not None:
            if isinstance(count_share, bool) or not isinstance(count_share, (int, float)):
                raise TypeError(f"count_share must be a number or None, got {count_share!r}")
            if not MIN_FRACTION <= count_share <= MAX_FRACTION:
                raise ValueError(
                    f"count_share must be in [{MIN_FRACTION:g}, {MAX_FRACTION:g}], "
                    f"got {count_share:g}"
                )
            count_share = float(count_share)
        self.count_share = count_share
        self.resolution = int(resolution)

    # -- the budget split and the bound ---------------------------------------------------
    def count_share_for(self, num_examples: float) -> float:
        """The share of ``epsilon`` on the count for a release of ``num_examples`` (public)."""
        if self.count_share is not None:
            return self.count_share
        log_term = math.log(1.0 / (2.0 * self.delta))
        guess = self.epsilon * AUTO_CLASS_FRACTION * max(float(num_examples), 1.0)
        share = math.sqrt(log_term / guess)
        return float(min(max(share, DEFAULT_COUNT_SHARE), MAX_AUTO_COUNT_SHARE))

    def _share_tensor(self, total: tf.Tensor) -> tf.Tensor:
        dtype = total.dtype
        if self.count_share is not None:
            return tf.fill(tf.shape(total), tf.constant(self.count_share, dtype))
        log_term = math.log(1.0 / (2.0 * self.delta))
        guess = self.epsilon * AUTO_CLASS_FRACTION * tf.maximum(total, tf.ones_like(total))
        share = tf.sqrt(tf.constant(log_term, dtype) / guess)
        return tf.clip_by_value(share, DEFAULT_COUNT_SHARE, MAX_AUTO_COUNT_SHARE)

    def _fixed(self, what: str) -> float:
        if self.count_share is None:
            raise ValueError(
                f"{what} depends on the number of examples with count_share=None: use "
                f"{what}_for(num_examples)"
            )
        return self.count_share

    @property
    def count_epsilon(self) -> float:
        """Epsilon of the noisy count ``min(P, N)`` (a fixed ``count_share`` only)."""
        return self._fixed("count_epsilon") * self.epsilon

    @property
    def auc_epsilon(self) -> float:
        """Epsilon of the noisy AUC (a fixed ``count_share`` only)."""
        return self.epsilon - self._fixed("auc_epsilon") * self.epsilon

    @property
    def count_scale(self) -> float:
        """Laplace scale of the count (sensitivity 1; a fixed ``count_share`` only)."""
        return 1.0 / (self._fixed("count_scale") * self.epsilon)

    @property
    def margin(self) -> float:
        """Subtracted from the noisy count: ``P(Laplace(count_scale) > margin) = delta``."""
        return self.margin_for(0.0) if self.count_share is not None else self._fixed("margin")

    def count_epsilon_for(self, num_examples: float) -> float:
        return self.count_share_for(num_examples) * self.epsilon

    def auc_epsilon_for(self, num_examples: float) -> float:
        return self.epsilon - self.count_epsilon_for(num_examples)

    def count_scale_for(self, num_examples: float) -> float:
        return 1.0 / self.count_epsilon_for(num_examples)

    def margin_for(self, num_examples: float) -> float:
        """The margin of a release of ``num_examples``: ``P(Laplace(count_scale) > margin)
        = delta``."""
        return math.log(1.0 / (2.0 * self.delta)) * self.count_scale_for(num_examples)

    def noise_scale_for(self, min_count_bound: float, num_examples: float | None = None) -> float:
        """Laplace scale of the AUC given the released lower bound of ``min(P, N)`` (and the
        number of examples, with the n-dependent share)."""
        if num_examples is None:
            self._fixed("noise_scale")
            num_examples = 0.0
        return 1.0 / (float(min_count_bound) * self.auc_epsilon_for(num_examples))

    def _auc_scale(self, bound: tf.Tensor) -> tf.Tensor:
        """Sensitivity ``1 / bound`` over the whole ``epsilon``; the release divides it by
        the AUC's share ``1 - c``."""
        return 1.0 / (bound * self.epsilon)

    @property
    def noise_stddev(self) -> float:
        """The largest standard deviation of the AUC's noise (at the smallest bound that
        releases, `MIN_BOUND`, and the largest share on the count); a release's is
        ``sqrt(2) noise_scale_for(m, n)``."""
        share = self.count_share if self.count_share is not None else MAX_AUTO_COUNT_SHARE
        return math.sqrt(2.0) / (MIN_BOUND * (1.0 - share) * self.epsilon)

    # -- the client-side step -------------------------------------------------------------
    def count_thresholds(self, thresholds: Thresholds) -> Thresholds:
        """TensorFlow's grid with ``resolution`` thresholds (data-independent)."""
        del thresholds
        return Thresholds.make(self.resolution)

    def release(self, pos, neg, seed=None, repeats=None):
        """Noisy release; the exact AUC and ``min(P, N)`` are computed once, before the
        ``repeats`` axis (only two scalars per repeat are drawn)."""
        pos, neg = float_counts(pos, neg)
        if self._takes_integer_counts():  # weights of 1 only (CountMechanism.release)
            pos, neg = self._require_integer_counts(pos, neg)
        exact, smaller, total = self._exact(pos, neg)
        stats = with_repeats({"exact": exact, "smaller": smaller, "total": total}, repeats)
        return self._noisy_auc(stats["exact"], stats["smaller"], stats["total"], make_seed(seed))

    @staticmethod
    def _exact(pos, neg):
        num_pos, num_neg = tf.reduce_sum(pos, -1), tf.reduce_sum(neg, -1)
        smaller = tf.minimum(num_pos, num_neg)
        return mann_whitney_auc(confusion_from_histogram(pos, neg)), smaller, num_pos + num_neg

    def _noisy_release(self, pos, neg, seed):
        return self._noisy_auc(*self._exact(pos, neg), seed)

    def _noisy_auc(self, exact, smaller, total, seed):
        seeds = split_seed(seed, 2)
        dtype = exact.dtype
        count_epsilon = self._share_tensor(total) * self.epsilon  # n is public
        log_term = tf.constant(math.log(1.0 / (2.0 * self.delta)), dtype)
        count_noise = samplers.laplace(tf.shape(smaller), 1.0, seeds[0], dtype) / count_epsilon
        bound = smaller + count_noise - log_term / count_epsilon
        usable = bound >= MIN_BOUND
        auc_share = 1.0 - count_epsilon / self.epsilon
        scale = self._auc_scale(tf.where(usable, bound, tf.ones_like(bound))) / auc_share
        noisy = exact + scale * samplers.laplace(tf.shape(smaller), 1.0, seeds[1], dtype)
        auc = tf.where(usable, noisy, tf.constant(math.nan, dtype))
        return {"auc": auc, "min_count_bound": bound}

    # -- the server-side step (post-processing) -------------------------------------------
    def estimate_auc(self, release):
        """The released AUC clipped to [0, 1] (post-processing, as every estimator; it binds
        only when the noise reaches 0 or 1); NaN where the bound was below `MIN_BOUND`."""
        auc = release["auc"]
        return tf.where(tf.math.is_nan(auc), auc, tf.clip_by_value(auc, 0.0, 1.0))

    def to_confusion(self, release):
        del release
        raise ValueError(NO_CURVE)

    # -- the noise law (the LAPLACE_ON_AUC interval law) ------------------------------------
    def _public_n(self, num_examples: float | None) -> float:
        """The public number of examples the share of the count was chosen for (refused when
        the share depends on it and it is not given)."""
        if num_examples is None:
            if self.count_share is None:
                raise ValueError(
                    "an auc-only interval needs the number of examples (its count's share of "
                    "epsilon depends on it): pass num_examples"
                )
            return 0.0
        return float(num_examples)

    def auc_noise_scale(self, release, num_examples: float | None = None) -> np.ndarray:
        """The Laplace scale of the noise on every released AUC ``[...]`` (from its released
        bound of ``min(P, N)``; NaN where nothing was released)."""
        bound = np.asarray(release["min_count_bound"], np.float64)
        auc_epsilon = self.auc_epsilon_for(self._public_n(num_examples))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(bound >= 2.0, 1.0 / (np.maximum(bound, 1e-300) * auc_epsilon), np.nan)

    def sampling_variance(self, release, auc, num_examples):
        """Hanley-McNeil from the AUC and the noisy ``min(P, N)`` (``bound + margin``,
        unbiased); the larger class is ``n - min`` (``n`` public; without it, ``min``: the
        largest variance the release allows). The release does not say which class is the
        smaller: the mean of the two assignments is taken (on binormal scores, where the
        true variance is symmetric in the classes, the larger assignment overstates it by
        about 19%: ``docs/intervals.md``)."""
        margin = self.margin_for(self._public_n(num_examples))
        smaller = np.asarray(release["min_count_bound"], np.float64) + margin
        smaller = np.maximum(smaller, 2.0)
        larger = (
            smaller if num_examples is None else np.maximum(float(num_examples) - smaller, smaller)
        )
        return 0.5 * (
            hanley_mcneil_variance(auc, smaller, larger)
            + hanley_mcneil_variance(auc, larger, smaller)
        )

    # -- the guarantee --------------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        """The count's and the AUC's Laplace events (noise multiplier = scale / sensitivity)
        and the delta of the bound (basic composition). With the n-dependent share the two
        epsilons still add up to ``epsilon`` whatever n; the event is then one Laplace of
        ``epsilon`` and the bound's delta (the same basic figure: a bound failure composes by
        the basic sum only)."""
        if self.count_share is None:
            return dp_accounting.ComposedDpEvent(
                [
                    dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / self.epsilon),
                    BoundFailureDpEvent(self.delta),
                ]
            )
        return dp_accounting.ComposedDpEvent(
            [
                dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / self.count_epsilon),
                dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / self.auc_epsilon),
                BoundFailureDpEvent(self.delta),
            ]
        )

    def statement(self) -> PrivacyStatement:
        if self.count_share is None:
            noise = (
                f"with c = clip(sqrt(ln(1/(2 delta)) / ({self.epsilon:g} n / 4)), "
                f"{DEFAULT_COUNT_SHARE:g}, {MAX_AUTO_COUNT_SHARE:g}) from the public number of "
                f"examples n: m = min(P, N) + Laplace(1 / (c {self.epsilon:g})) - "
                f"ln(1/(2 delta)) / (c {self.epsilon:g}); AUC + Laplace(1 / ((1 - c) "
                f"{self.epsilon:g} m)), NaN if m < {MIN_BOUND:g}"
            )
        else:
            noise = (
                f"m = min(P, N) + Laplace({self.count_scale:g}) - {self.margin:.6g}; "
                f"AUC + Laplace(1 / ({self.auc_epsilon:g} m)), NaN if m < {MIN_BOUND:g}"
            )
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity="min(P, N): 1; AUC: 1/min(P, N) (docs/auc_only.md), used with a noisy "
            f"lower bound m of min(P, N) that is too high with probability delta={self.delta:g}",
            noise=noise,
            epsilon=self.epsilon,
            delta=self.delta,
        )

    def options(self) -> dict:
        shared = {} if self.count_share is None else {"count_share": self.count_share}
        return {**shared, "resolution": self.resolution}
