"""``rank-sum``: the ROC AUC from two noisy numbers, the centred rank sum and the positive count.

Under label DP the scores are public, so every example's (mid)rank is public, and the
Mann-Whitney AUC is *linear* in the labels once the class sizes are known. With bucket
totals ``t[b] = pos[b] + neg[b]`` (label-free), ``W = sum_b t[b]`` and the centred midrank
of bucket ``b``

    ``r[b] = sum_{b' < b} t[b'] + t[b] / 2 - W / 2``    (in ``[-W/2, W/2]``),

the centred rank sum ``S = sum_b r[b] pos[b]`` gives the AUC exactly (ties inside a bucket
count 1/2, as TensorFlow's trapezoid does on the same grid):

    ``AUC = 1/2 + S / (P N)``,    ``P = sum_b pos[b]``, ``N = W - P``.

**Sensitivity** (label DP, sample weights of 1). Changing the label of one example in
bucket ``b`` moves ``S`` by ``r[b]`` and ``P`` by 1; ``r`` depends on the totals only, the
same for both neighbours. So ``S`` has sensitivity
``D = max_{b: t[b] > 0} |r[b]| <= W / 2`` (from the public score histogram) and ``P`` has 1.
**Weights of 1 only** (``Capabilities.unit_weights``; the counting refuses others, and
[`RankSum.release`][] refuses fractional counts): a weight that depends on the label (Keras'
``class_weight``) would make ``W`` and ``D`` label statistics (``class_weight={0: 1, 1:
0.5}``: ``2 (n - W)`` is the number of positives), and a weighted AUC needs weighted ranks,
which are then label-dependent too. Use ``histogram`` for weights.

**Release**: ``S + Laplace(D / eps_S)`` and ``P + Laplace(1 / eps_P)``, ``eps_P = c eps``,
``eps_S = (1 - c) eps`` (``c = count_share``): pure ``eps``-label DP by basic composition;
``W`` and ``D`` are released too (functions of the scores and weights only). No ``delta``,
no lower bound that can fail, at any ``n``. The AUC's noise is about
``sqrt(2) D / (eps_S P N) ~ sqrt(2) / (2 eps_S min(P, N))`` (half ``auc-only``'s when the
classes are unbalanced), plus the count's share through ``P N``.

**Estimate** (post-processing): ``1/2 + S~ / (max(P~, 1) max(N~, 1))`` clipped to [0, 1],
``N~ = W - P~``; NaN where ``P~ <= 0`` or ``N~ <= 0`` (as the curve mechanisms, whose AUC is
undefined when the noise leaves no positive or no negative). Proofs and figures:
``docs/rank_sum.md``.

The counts are kept on TensorFlow's grid of ``resolution`` thresholds (``2^17 + 1``), whose
noise does not grow with the grid: the AUC is that of the unbucketed scores up to the pairs
that share a bucket (``grid_error_bound``).

Examples:
    >>> m = RankSum(epsilon=1.0)
    >>> m.num_thresholds, m.count_epsilon, m.rank_epsilon
    (131073, 0.25, 0.75)
    >>> m.capabilities.releases
    'auc'
"""

from __future__ import annotations

import math
from typing import ClassVar

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.sampling_variance import hanley_mcneil_variance
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.auc_only import COUNT_RESOLUTION
from dpauc_tf.mechanisms.base import CountMechanism, float_counts, with_repeats
from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.class_split import MAX_FRACTION, MIN_FRACTION
from dpauc_tf.mechanisms.laws import GridRule, IntervalLaw
from dpauc_tf.noise import samplers
from dpauc_tf.noise.seeds import make_seed, split_seed
from dpauc_tf.privacy.statement import PrivacyStatement

# The share of epsilon on the positive count that minimises the AUC's noise when the AUC is
# 0.75 and a quarter of the examples are positive (docs/rank_sum.md); a wrong guess costs
# accuracy, never privacy.
DEFAULT_COUNT_SHARE = 0.25
NO_CURVE = "rank-sum releases only the ROC AUC: there is no curve to show"


def centred_midranks(total: tf.Tensor) -> tf.Tensor:
    """``r[b] = sum_{b' < b} t[b'] + t[b] / 2 - W / 2`` of bucket totals ``[..., B]``.

    Examples:
        >>> centred_midranks(tf.constant([1., 0., 2., 1.], tf.float64)).numpy().tolist()
        [-1.5, -1.0, 0.0, 1.5]
    """
    before = tf.cumsum(total, axis=-1, exclusive=True)
    whole = tf.reduce_sum(total, axis=-1, keepdims=True)
    return before + total / 2 - whole / 2


def rank_sum_statistics(pos: tf.Tensor, neg: tf.Tensor) -> dict[str, tf.Tensor]:
    """The exact ``rank_sum`` (``S``), ``num_pos`` (``P``), ``total`` (``W``) and
    ``sensitivity`` (``D``, the largest ``|r[b]|`` over non-empty buckets) of counts
    ``[..., B]``.

    Examples:
        >>> stats = rank_sum_statistics(tf.constant([0., 0., 1., 1.], tf.float64),
        ...                             tf.constant([1., 0., 1., 0.], tf.float64))
        >>> {k: float(v) for k, v in stats.items()}
        {'rank_sum': 1.5, 'num_pos': 2.0, 'total': 4.0, 'sensitivity': 1.5}
    """
    total = pos + neg
    ranks = centred_midranks(total)
    occupied = total > 0
    sensitivity = tf.reduce_max(tf.where(occupied, tf.abs(ranks), tf.zeros_like(ranks)), -1)
    return {
        "rank_sum": tf.reduce_sum(ranks * pos, -1),
        "num_pos": tf.reduce_sum(pos, -1),
        "total": tf.reduce_sum(total, -1),
        "sensitivity": sensitivity,
    }


# Past this relative noise of the positive (or negative) count, std / min(P~, N~), the
# first-order law of 1 / (P N) misses the ratio's skew: 90-93% sample coverage at 10-20
# positives (docs/rank_sum.md); the interval is then the conservative box (RankSum.sample_box).
RANK_SUM_COUNT_NOISE_LIMIT = 0.2
# The share of the error rate the box spends on the count (the rest on the rank sum).
RANK_SUM_BOX_COUNT_SHARE = 0.25


def laplace_sum_half_width(copies: float, tail: float) -> float:
    """``t / b``: a sum of ``copies`` independent ``Laplace(b)`` exceeds ``t`` in absolute
    value with probability ``tail``. One draw (or fewer: a secure release's arrived shares,
    whose noise is smaller): ``ln(1 / tail)``. ``K > 1`` draws (``ceil(copies)``): the sum is
    the difference of two ``Gamma(K, b)``, whose tail ``P(X > t) = E[Gamma(K).sf(t + G)]`` is
    integrated numerically and solved for ``t``.

        >>> round(laplace_sum_half_width(1, 0.05), 4)
        2.9957
        >>> round(laplace_sum_half_width(2, 0.05), 2)
        4.11
    """
    if copies <= 1.0:
        return math.log(1.0 / tail)
    from scipy import integrate, optimize, stats

    shape = float(math.ceil(copies))
    gamma = stats.gamma(shape)

    def two_sided(t: float) -> float:
        upper, _ = integrate.quad(lambda g: gamma.sf(t + g) * gamma.pdf(g), 0.0, np.inf)
        return 2.0 * upper - tail

    high = math.log(2.0 / tail) + 2.0 * shape + 4.0 * math.sqrt(shape * math.log(2.0 / tail))
    return float(optimize.brentq(two_sided, 0.0, high, xtol=1e-9))


class RankSum(CountMechanism):
    """The ROC AUC from a noisy centred rank sum and a noisy positive count (pure epsilon).

    Args:
      epsilon: epsilon of one release (the rank sum and the count together).
      num_thresholds: ignored (the counts are kept on a grid of ``resolution`` thresholds).
      delta: must be unset or 0 (the guarantee is pure epsilon-label DP).
      count_share: share ``c`` of ``epsilon`` spent on the positive count (default 0.25).
      resolution: thresholds of the counting grid (TensorFlow's grid).

    Examples:
        >>> m = RankSum(epsilon=1.0, resolution=11)
        >>> r = m.release(tf.constant([0., 0., 0., 0., 0., 300., 400., 0., 0., 0., 0., 0.]),
        ...               tf.constant([0., 0., 0., 600., 500., 100., 0., 0., 0., 0., 0., 0.]),
        ...               seed=0)
        >>> sorted(r), 0.9 < float(m.estimate_auc(r)) < 1.0
        (['num_pos', 'rank_sum', 'sensitivity', 'total'], True)
    """

    name = "rank-sum"
    capabilities: ClassVar[Capabilities] = Capabilities(
        unit_weights=True, federated=False, releases="auc"
    )
    grid_rule: ClassVar[GridRule] = GridRule.DEFAULT_GRID  # counts on its own grid
    interval_law: ClassVar[IntervalLaw] = IntervalLaw.RANK_SUM
    roc_note = NO_CURVE

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int = COUNT_RESOLUTION,
        delta: float | None = None,
        count_share: float = DEFAULT_COUNT_SHARE,
        resolution: int = COUNT_RESOLUTION,
    ):
        del num_thresholds  # the caller's grid does not apply: the counts use a fine one
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

    # -- the budget split -----------------------------------------------------------------
    @property
    def count_epsilon(self) -> float:
        """Epsilon of the noisy positive count."""
        return self.count_share * self.epsilon

    @property
    def rank_epsilon(self) -> float:
        """Epsilon of the noisy rank sum."""
        return self.epsilon - self.count_epsilon

    @property
    def count_scale(self) -> float:
        """Laplace scale of the positive count (sensitivity 1)."""
        return 1.0 / self.count_epsilon

    def rank_scale(self, sensitivity) -> np.ndarray:
        """Laplace scale of the rank sum of a release with that (public) ``sensitivity``."""
        return np.asarray(sensitivity, np.float64) / self.rank_epsilon

    @property
    def noise_stddev(self) -> float:
        """Standard deviation of the noise on the released positive count (the rank sum's is
        ``sqrt(2) rank_scale(sensitivity)``, which depends on the public totals)."""
        return float(np.sqrt(2.0) * self.count_scale)

    # -- the client-side step -------------------------------------------------------------
    def count_thresholds(self, thresholds: Thresholds) -> Thresholds:
        """TensorFlow's grid with ``resolution`` thresholds (data-independent)."""
        del thresholds
        return Thresholds.make(self.resolution)

    releases_from_summed_counts = True

    def release_over_clients(self, pos, neg, num_clients, seed, repeats):
        """Without secure aggregation: every client adds its own noise to its rank sum and
        count, computed with the global ranks (`local_rank_sum_release`)."""
        return local_rank_sum_release(self, pos, neg, num_clients, seed, repeats=repeats)

    def release(self, pos, neg, seed=None, repeats=None):
        """Noisy release; the exact statistics are computed once, before the ``repeats`` axis
        (two scalars per repeat are drawn)."""
        pos, neg = float_counts(pos, neg)
        if self._takes_integer_counts():  # weights of 1 only (CountMechanism.release)
            pos, neg = self._require_integer_counts(pos, neg)
        exact = rank_sum_statistics(pos, neg)
        return self._add_noise(with_repeats(exact, repeats), make_seed(seed))

    def _noisy_release(self, pos, neg, seed):
        return self._add_noise(rank_sum_statistics(pos, neg), seed)

    def _add_noise(self, exact, seed):
        seeds = split_seed(seed, 2)
        dtype = exact["rank_sum"].dtype
        shape = tf.shape(exact["rank_sum"])
        rank_noise = samplers.laplace(shape, 1.0, seeds[0], dtype)
        count_noise = samplers.laplace(shape, 1.0, seeds[1], dtype)
        return {
            "rank_sum": exact["rank_sum"] + exact["sensitivity"] / self.rank_epsilon * rank_noise,
            "num_pos": exact["num_pos"] + self.count_scale * count_noise,
            "total": exact["total"],
            "sensitivity": exact["sensitivity"],
        }

    # -- the server-side step (post-processing) -------------------------------------------
    def estimate_auc(self, release):
        """``1/2 + S~ / (max(P~, 1) max(N~, 1))`` clipped to [0, 1], ``N~ = W - P~``; NaN where
        the noisy count leaves no positive or no negative."""
        rank_sum = tf.convert_to_tensor(release["rank_sum"])
        num_pos = tf.cast(release["num_pos"], rank_sum.dtype)
        num_neg = tf.cast(release["total"], rank_sum.dtype) - num_pos
        one = tf.ones_like(num_pos)
        raw = 0.5 + rank_sum / (tf.maximum(num_pos, one) * tf.maximum(num_neg, one))
        defined = (num_pos > 0) & (num_neg > 0)
        return tf.where(
            defined, tf.clip_by_value(raw, 0.0, 1.0), tf.constant(np.nan, rank_sum.dtype)
        )

    def to_confusion(self, release):
        del release
        raise ValueError(NO_CURVE)

    # -- the noise law (the RANK_SUM interval law) ------------------------------------------
    @staticmethod
    def released_class_sizes(release) -> tuple[np.ndarray, np.ndarray]:
        """The class sizes ``max(P~, 1)``, ``max(W - P~, 1)`` that the estimate divides by
        ([`estimate_auc`][])."""
        num_pos = np.asarray(release["num_pos"], np.float64)
        num_neg = np.asarray(release["total"], np.float64) - num_pos
        return np.maximum(num_pos, 1.0), np.maximum(num_neg, 1.0)

    def auc_noise_laws(self, release) -> tuple[np.ndarray, np.ndarray]:
        """The AUC's Laplace scale from the rank sum's noise (``D / (eps_S P~ N~)``) and the
        first-order variance of the count's noise through ``1 / (P N)``, at the released
        values."""
        rank_sum = np.asarray(release["rank_sum"], np.float64)
        num_pos, num_neg = self.released_class_sizes(release)
        product = num_pos * num_neg
        scale = self.rank_scale(release["sensitivity"]) / product
        # d/dP of S / (P (W - P)) = -S (N - P) / (P N)^2
        gradient = rank_sum * (num_neg - num_pos) / product**2
        return scale, 2.0 * self.count_scale**2 * gradient**2

    def sampling_variance(self, release, auc, num_examples):
        """Hanley-McNeil from the AUC and the noisy class sizes ``P~`` and ``W - P~``."""
        del num_examples
        return hanley_mcneil_variance(auc, *self.released_class_sizes(release))

    def few_positives(self, release, copies: float = 1.0) -> np.ndarray:
        """Where the count's noise (``copies`` draws of it: clients that each add their own)
        is too large against the released class sizes for the first-order interval
        (`RANK_SUM_COUNT_NOISE_LIMIT`); the box is used there."""
        num_pos, num_neg = self.released_class_sizes(release)
        spread = math.sqrt(2.0 * max(copies, 1.0)) * self.count_scale
        relative = spread / np.minimum(num_pos, num_neg)
        return np.atleast_1d(relative > RANK_SUM_COUNT_NOISE_LIMIT)

    def sample_box(
        self, release, tail: float, copies: float = 1.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """A conservative interval for the sample AUC ``1/2 + S / (P (W - P))`` of a release:
        Laplace intervals for the exact ``S`` (error rate ``(1 - c) tail``) and ``P``
        (``c tail``, `RANK_SUM_BOX_COUNT_SHARE`), and the AUC's range over both
        (Bonferroni: it covers with probability at least ``1 - tail`` whatever the class
        sizes), clipped to [0, 1]. ``copies``: the noise draws summed on each (clients that
        each add their own; `laplace_sum_half_width`)."""
        rank_sum = np.asarray(release["rank_sum"], np.float64)
        num_pos = np.asarray(release["num_pos"], np.float64)
        total = np.asarray(release["total"], np.float64)
        count_tail = RANK_SUM_BOX_COUNT_SHARE * tail
        rank_half = self.rank_scale(release["sensitivity"]) * laplace_sum_half_width(
            copies, tail - count_tail
        )
        count_half = self.count_scale * laplace_sum_half_width(copies, count_tail)
        ceiling = np.maximum(total - 1.0, 1.0)
        p_low = np.clip(num_pos - count_half, 1.0, ceiling)
        p_high = np.clip(num_pos + count_half, 1.0, ceiling)
        with np.errstate(divide="ignore", invalid="ignore"):
            inverse = [1.0 / (p * (total - p)) for p in (p_low, p_high)]
            middle = (p_low <= total / 2) & (total / 2 <= p_high)
            smallest = np.where(middle, 4.0 / total**2, np.minimum(*inverse))
            largest = np.maximum(*inverse)
            corners = np.stack(
                [(rank_sum + sign * rank_half) * g for sign in (-1, 1) for g in (smallest, largest)]
            )
        low = np.clip(0.5 + np.min(corners, 0), 0.0, 1.0)
        high = np.clip(0.5 + np.max(corners, 0), 0.0, 1.0)
        # no class size is possible inside the count's interval: the whole range
        impossible = (num_pos + count_half < 1.0) | (num_pos - count_half > total - 1.0)
        return np.where(impossible, 0.0, low), np.where(impossible, 1.0, high)

    # -- the guarantee --------------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        """The rank sum's and the count's Laplace events (noise multiplier = scale /
        sensitivity), composed."""
        return dp_accounting.ComposedDpEvent(
            [
                dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / self.rank_epsilon),
                dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / self.count_epsilon),
            ]
        )

    def statement(self) -> PrivacyStatement:
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity="centred rank sum S = sum_b r[b] pos[b]: D = max |r[b]| <= n/2 over "
            "the occupied buckets (r from the label-free bucket totals); positives P: 1",
            noise=f"S + Laplace(D / {self.rank_epsilon:g}), P + Laplace({self.count_scale:g}); "
            "AUC = 1/2 + S / (P (n - P)); the bucket totals' sum n and D are released "
            "(sample weights of 1 only: they are label-free then); where D = 0 (n <= 1 or "
            f"every score tied) S = 0 is exact and the release spends only {self.count_epsilon:g}",
            epsilon=self.epsilon,
            delta=0.0,
        )

    def options(self) -> dict:
        return {"count_share": self.count_share, "resolution": self.resolution}


# -- the exact statistics -------------------------------------------------------------------
# The most examples whose integer rank sums int64 holds: every partial sum of ``2 r[b] pos[b]``
# is at most ``W P <= W^2 < 2^63`` (a larger ``W`` wrapped silently: 9e9 examples gave 0.46
# for 0.91). ``W`` is public (label-free), so refusing on it reveals nothing.
MAX_EXACT_EXAMPLES = math.isqrt(2**63 - 1)


def twice_centred_midranks(totals: tf.Tensor) -> tf.Tensor:
    """``2 r[b] = 2 sum_{b' < b} t[b'] + t[b] - W`` (integers) of int64 bucket totals ``[..., B]``;
    refused (one line; an assertion in a graph) where ``W`` exceeds `MAX_EXACT_EXAMPLES`.

    Examples:
        >>> twice_centred_midranks(tf.constant([1, 0, 2, 1], tf.int64)).numpy().tolist()
        [-3, -2, 0, 3]
    """
    totals = tf.convert_to_tensor(totals, tf.int64)
    before = tf.cumsum(totals, axis=-1, exclusive=True)
    whole = tf.reduce_sum(totals, axis=-1, keepdims=True)
    message = (
        f"rank sums: more than {MAX_EXACT_EXAMPLES:,} examples, beyond what int64 rank sums hold "
        "exactly; split the data (or release a histogram)"
    )
    if tf.executing_eagerly():
        if np.any(whole.numpy() > MAX_EXACT_EXAMPLES):
            raise ValueError(message)
        return 2 * before + totals - whole
    check = tf.debugging.Assert(
        tf.reduce_all(whole <= tf.constant(MAX_EXACT_EXAMPLES, tf.int64)), [message]
    )
    with tf.control_dependencies([check]):
        return 2 * before + totals - whole


def twice_sensitivity(totals: tf.Tensor) -> tf.Tensor:
    """``2 D``: twice the largest ``|r[b]|`` over the occupied buckets (int64, ``[...]``)."""
    twice = twice_centred_midranks(totals)
    occupied = tf.convert_to_tensor(totals, tf.int64) > 0
    return tf.reduce_max(tf.where(occupied, tf.abs(twice), tf.zeros_like(twice)), -1)


def _integer(counts: tf.Tensor) -> tf.Tensor:
    return tf.cast(tf.round(counts), tf.int64)


def mechanism_statistics(pos: tf.Tensor, totals: tf.Tensor) -> dict[str, tf.Tensor]:
    """``rank_sum`` (``S``), ``num_pos``, ``total`` and ``sensitivity`` (``D``), float64, from
    summed positives and totals (exact integer arithmetic)."""
    totals_int = _integer(tf.cast(totals, tf.float64))
    pos_int = _integer(tf.cast(pos, tf.float64))
    return {
        "rank_sum": tf.cast(
            tf.reduce_sum(twice_centred_midranks(totals_int) * pos_int, -1), tf.float64
        )
        / 2,
        "num_pos": tf.cast(tf.reduce_sum(pos_int, -1), tf.float64),
        "total": tf.cast(tf.reduce_sum(totals_int, -1), tf.float64),
        "sensitivity": tf.cast(twice_sensitivity(totals_int), tf.float64) / 2,
    }


def local_rank_sum_release(
    mechanism: RankSum, pos, neg, num_clients: int, seed, repeats: int | None = None
) -> dict[str, tf.Tensor]:
    """The server's sum of ``num_clients`` clients' local rank-sum reports, from the summed
    counts ``pos, neg [B]``: round one's totals in the clear, each client ``S_k +
    Laplace(D / eps_S)`` and ``P_k + Laplace(1 / eps_P)`` with the global ranks (``D`` from the
    global totals, so the sum's law depends on the summed counts only); the ``K`` Laplace
    draws are summed at once (``b (G1 - G2)``, ``G ~ Gamma(K, 1)``, the same law). Every
    report is ``epsilon``-DP on its own (a label is in one client's counts only)."""
    pos, neg = float_counts(pos, neg)
    pos, neg = mechanism._require_integer_counts(pos, neg)
    stats = mechanism_statistics(pos, pos + neg)
    exact = with_repeats(stats, repeats)
    seeds = split_seed(make_seed(seed), 2)
    shape = tf.shape(exact["rank_sum"])

    def summed_laplace(key_seed):
        gammas = tf.random.stateless_gamma(
            tf.concat([[2], shape], 0),
            seed=key_seed,
            alpha=tf.constant(float(num_clients), tf.float64),
            dtype=tf.float64,
        )
        return gammas[0] - gammas[1]

    return {
        "rank_sum": exact["rank_sum"]
        + exact["sensitivity"] / mechanism.rank_epsilon * summed_laplace(seeds[0]),
        "num_pos": exact["num_pos"] + mechanism.count_scale * summed_laplace(seeds[1]),
        "total": exact["total"],
        "sensitivity": exact["sensitivity"],
    }
