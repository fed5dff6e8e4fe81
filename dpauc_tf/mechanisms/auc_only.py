"""``auc-only``: the AUC of one data holder's exact counts plus scalar Laplace noise.

When whoever computes the metric holds all the labels (``model.compile``, ``dpauc evaluate
--clients 1``) and publishes one number, there is no need to release a whole noisy curve.
This mechanism counts on a fine grid, computes the Mann-Whitney AUC of the exact counts and
adds noise to that scalar. Proofs and figures: ``docs/auc_only.md``.

**Sensitivity.** With ``P`` positives and ``N`` negatives (weights in [0, 1]), one label flip
moves the AUC (Mann-Whitney, ties counted 1/2) by at most ``1 / min(P, N)``
([`auc_flip_sensitivity`][] is the exact maximum for unit weights). The class counts are
private, so the bound is itself estimated privately:

1. ``m_low = min(P, N) + Laplace(1 / eps_count) - margin``, ``margin = ln(1 / (2 delta)) /
   eps_count``: ``P(m_low > min(P, N)) = delta`` (``min(P, N)`` has sensitivity 1);
2. if ``m_low >= MIN_BOUND``: ``AUC + Laplace(1 / (m_low eps_auc))``; otherwise the release
   is NaN (the bound says the data are too small to release anything useful; the decision
   depends on ``m_low`` only).

``eps_count = count_share * epsilon``, ``eps_auc = epsilon - eps_count``. Guarantee:
(epsilon, delta)-label DP for one release (propose-test-release: the noise of step 2 is
calibrated whenever the bound holds, which fails with probability at most ``delta``).

    >>> m = AucOnly(epsilon=1.0, num_thresholds=200, delta=1e-6)
    >>> m.num_thresholds, round(m.margin, 1)
    (131073, 262.4)
    >>> m.capabilities.releases
    'auc'
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.core.postprocessing import mann_whitney_auc
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.base import CountMechanism
from dpauc_tf.mechanisms.class_split import MAX_FRACTION, MIN_FRACTION
from dpauc_tf.noise import samplers
from dpauc_tf.noise.seeds import make_seed, split_seed
from dpauc_tf.privacy.events import BoundFailureDpEvent
from dpauc_tf.privacy.statement import PrivacyStatement

# TensorFlow's grid with 2^17 + 1 thresholds: buckets of width 2^-17, bucketed exactly in
# float32 (a power-of-two multiply), O(n). Within-bucket pairs count 1/2, which moves the
# Mann-Whitney value by at most half the within-bucket share of pairs (see
# ``grid_error_bound``): about 5e-6 on the paper-like score sets (docs/auc_only.md).
COUNT_RESOLUTION = 2**17 + 1
DEFAULT_COUNT_SHARE = 0.05
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
      count_share: share of ``epsilon`` spent on the lower bound (default 0.05;
        ``docs/auc_only.md`` shows why).
      resolution: thresholds of the counting grid (TensorFlow's grid).

    Examples:
        >>> m = AucOnly(epsilon=1.0, num_thresholds=10, delta=1e-6, resolution=11)
        >>> r = m.release(tf.constant([0., 0., 0., 0., 0., 300., 400., 0., 0., 0., 0., 0.]),
        ...               tf.constant([0., 0., 0., 600., 500., 100., 0., 0., 0., 0., 0., 0.]), seed=0)
        >>> sorted(r), 0.9 < float(m.estimate_auc(r)) < 1.0
        (['auc', 'min_count_bound'], True)
    """

    name = "auc-only"
    requires_delta = True
    roc_note = NO_CURVE
    undefined_note = f"the noisy lower bound of min(P, N) was below {MIN_BOUND:g}"

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int = COUNT_RESOLUTION,
        delta: float | None = None,
        count_share: float = DEFAULT_COUNT_SHARE,
        resolution: int = COUNT_RESOLUTION,
    ):
        del num_thresholds  # the caller's grid does not apply: the counts need a fine one
        if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)):
            raise TypeError(f"resolution must be an int, got {resolution!r}")
        super().__init__(epsilon=epsilon, num_thresholds=int(resolution), delta=delta)
        if isinstance(count_share, bool) or not isinstance(count_share, (int, float)):
            raise TypeError(f"count_share must be a number, got {count_share!r}")
        if not MIN_FRACTION <= count_share <= MAX_FRACTION:
            raise ValueError(
                f"count_share must be in [{MIN_FRACTION:g}, {MAX_FRACTION:g}], got {count_share:g}"
            )
        self.count_share = float(count_share)
        self.resolution = int(resolution)

    # -- the budget split and the bound ---------------------------------------------------
    @property
    def count_epsilon(self) -> float:
        """Epsilon of the noisy count ``min(P, N)``."""
        return self.count_share * self.epsilon

    @property
    def auc_epsilon(self) -> float:
        """Epsilon of the noisy AUC."""
        return self.epsilon - self.count_epsilon

    @property
    def count_scale(self) -> float:
        """Laplace scale of the count (sensitivity 1)."""
        return 1.0 / self.count_epsilon

    @property
    def margin(self) -> float:
        """Subtracted from the noisy count: ``P(Laplace(count_scale) > margin) = delta``."""
        return math.log(1.0 / (2.0 * self.delta)) * self.count_scale

    def noise_scale_for(self, min_count_bound: float) -> float:
        """Laplace scale of the AUC given the released lower bound of ``min(P, N)``."""
        return float(self._auc_scale(tf.constant(float(min_count_bound), tf.float64)))

    def _auc_scale(self, bound: tf.Tensor) -> tf.Tensor:
        """Laplace scale of the AUC: sensitivity ``1 / bound`` over ``auc_epsilon``."""
        return 1.0 / (bound * self.auc_epsilon)

    @property
    def noise_stddev(self) -> float:
        """The largest standard deviation of the AUC's noise (at the smallest bound that
        releases, `MIN_BOUND`); a release's is ``sqrt(2) noise_scale_for(m)``."""
        return math.sqrt(2.0) * self.noise_scale_for(MIN_BOUND)

    # -- the client-side step -------------------------------------------------------------
    def count_thresholds(self, thresholds: Thresholds) -> Thresholds:
        """TensorFlow's grid with ``resolution`` thresholds (data-independent)."""
        del thresholds
        return Thresholds.make(self.resolution)

    def release(self, pos, neg, seed=None, repeats=None):
        """Noisy release; the exact AUC and ``min(P, N)`` are computed once, before the
        ``repeats`` axis (only two scalars per repeat are drawn)."""
        pos = tf.convert_to_tensor(pos)
        if not pos.dtype.is_floating:
            pos = tf.cast(pos, tf.float64)
        neg = tf.cast(tf.convert_to_tensor(neg), pos.dtype)
        exact, smaller = self._exact(pos, neg)
        if repeats is not None:
            if repeats < 1:
                raise ValueError(f"repeats must be >= 1, got {repeats}")
            shape = tf.concat([[repeats], tf.shape(exact)], 0)
            exact, smaller = tf.broadcast_to(exact, shape), tf.broadcast_to(smaller, shape)
        return self._noisy_auc(exact, smaller, make_seed(seed))

    @staticmethod
    def _exact(pos, neg):
        smaller = tf.minimum(tf.reduce_sum(pos, -1), tf.reduce_sum(neg, -1))
        return mann_whitney_auc(confusion_from_histogram(pos, neg)), smaller

    def _noisy_release(self, pos, neg, seed):
        return self._noisy_auc(*self._exact(pos, neg), seed)

    def _noisy_auc(self, exact, smaller, seed):
        seeds = split_seed(seed, 2)
        dtype = exact.dtype
        count_noise = samplers.laplace(tf.shape(smaller), self.count_scale, seeds[0], dtype)
        bound = smaller + count_noise - tf.cast(self.margin, dtype)
        usable = bound >= MIN_BOUND
        scale = self._auc_scale(tf.where(usable, bound, tf.ones_like(bound)))
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

    # -- the guarantee --------------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        """The count's and the AUC's Laplace events (noise multiplier = scale / sensitivity)
        and the delta of the bound (basic composition)."""
        return dp_accounting.ComposedDpEvent(
            [
                dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / self.count_epsilon),
                dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / self.auc_epsilon),
                BoundFailureDpEvent(self.delta),
            ]
        )

    def statement(self) -> PrivacyStatement:
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity="min(P, N): 1; AUC: 1/min(P, N) (docs/auc_only.md), used with a noisy "
            f"lower bound m of min(P, N) that is too high with probability delta={self.delta:g}",
            noise=f"m = min(P, N) + Laplace({self.count_scale:g}) - {self.margin:.6g}; "
            f"AUC + Laplace(1 / ({self.auc_epsilon:g} m)), NaN if m < {MIN_BOUND:g}",
            epsilon=self.epsilon,
            delta=self.delta,
        )

    def options(self) -> dict:
        return {"count_share": self.count_share, "resolution": self.resolution}
