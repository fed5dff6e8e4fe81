"""Private paired comparison by the rank-sum difference: ``AUC_B - AUC_A`` from four noisy numbers.

Two models A and B score the same ``n`` examples; the labels are private, the scores public
(label DP). Each model's (centred) midranks ``r_A[i]``, ``r_B[i]`` are then public, and with
``d[i] = r_B[i] - r_A[i]`` the difference of the two Mann-Whitney AUCs is **linear** in the
labels once the class sizes are known:

    ``AUC_B - AUC_A = Delta / (P N)``,    ``Delta = sum_i y[i] d[i]``.

**Sensitivity** (label DP, weights of 1). A flip of example ``i`` moves ``Delta`` by
``d[i]``: ``D = max_i |d[i]|``, from both models' public scores (small when the two models
rank alike, whatever ``n``: the point of pairing). The release also carries ``S_A = sum_i
y[i] r_A[i]`` (sensitivity ``D_A = max |r_A|``: model A's AUC, B's is A's plus the
difference), ``P`` (1) and ``Q = sum_i y[i] d[i]^2`` (``D^2``) for the sampling variance.

**Release** (pure epsilon): every number ``x`` with sensitivity ``s_x`` gets
``Laplace(s_x / (w_x eps))`` with budget shares ``w`` (difference 0.5, ``S_A`` 0.2, ``P``
0.2, ``Q`` 0.1; they sum to 1): a flip moves each by at most its sensitivity, so the loss
is at most ``sum_x w_x eps = eps`` (basic composition of the four Laplace events,
[`RankSumComparison.dp_event`][]). Where ``D = 0`` (the two rankings agree) ``Delta = Q = 0``
exactly.

**Test and interval** (post-processing). ``z = diff / sqrt(V_sampling + V_privacy)``,
two-sided normal, with ``V_privacy`` the released noise's first-order variance of the
difference and ``V_sampling = (Var_pos(d) / P + Var_neg(d) / N) / n^2`` (the within-class
spreads of ``d`` from ``Q``, ``Delta`` and the public ``sum_i d[i]^2``): DeLong's paired
variance with each example's placement value replaced by its overall rank over ``n``. That
replacement adds the positives' own rank shift to ``d``, so it is conservative against
DeLong in every case measured (``docs/comparison.md``: variance ratio 1.0-1.4 on binormal
pairs); it is an approximation, not a bound. What is tested is the equality of the two
models' AUCs on the population the test set is drawn from (as DeLong's test).

Against ``compare_models(method="histogram")`` (noise on every cell of a ``B x B`` joint
histogram, the AUCs of 6 quantile buckets per model): no grid bias, and the difference's
noise scales with ``D`` (how differently the two models rank), not with the number of cells.

**Federated** ([`RankSumComparison.round_one_report`][], [`RankSumComparison.round_two_report`][],
[`RankSumComparison.finish`][]): the ranks need the global score histograms of both models first (round one,
label-free), then the sensitivity ``D`` (the largest ``|d|`` of every client, label-free:
the server learns each client's maximum, a function of the public scores), then the four
sums with noise (round two: every client its own noise, or with ``secure`` a share of the
discrete law on the integer statistics ``2 Delta``, ``2 S_A``, ``P`` and ``4 Q`` whose sum
is one central draw).

Examples:
    >>> import numpy as np
    >>> m = RankSumComparison(epsilon=1.0)
    >>> stats = comparison_statistics(np.array([1, 0, 1, 0]), np.array([.9, .2, .6, .4]),
    ...                               np.array([.8, .3, .4, .7]))
    >>> stats["difference"] / (2 * 2), float(stats["sensitivity"])
    (-0.25, 1.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import dp_accounting
import numpy as np
from scipy import stats

from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.privacy.events import discrete_laplace_event, laplace_event
from dpauc_tf.privacy.statement import PrivacyStatement

RANK_SUM_COMPARISON = "paired-comparison-rank-sum"
# Budget shares of the four released numbers (sum 1).
DEFAULT_SHARES = {"difference": 0.5, "rank_sum_a": 0.2, "num_pos": 0.2, "square": 0.1}
STATISTICS = tuple(DEFAULT_SHARES)
# The factor that makes each statistic an integer (midranks are half-integers, so d is a
# multiple of 1/2 and d^2 of 1/4): exact discrete noise goes on the scaled statistic, so
# that neighbours' releases share one lattice.
LATTICE = {"difference": 2.0, "rank_sum_a": 2.0, "num_pos": 1.0, "square": 4.0}


def centred_midranks_of(buckets: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Every example's centred midrank ``sum_{b' < b} t[b'] + t[b] / 2 - W / 2`` from its bucket
    and the bucket totals (float64, half-integers).

    Examples:
        >>> centred_midranks_of(np.array([0, 2, 2]), np.array([1, 0, 2])).tolist()
        [-1.0, 0.5, 0.5]
    """
    totals = np.asarray(totals, np.float64)
    ranks = np.cumsum(totals) - totals / 2 - totals.sum() / 2
    return ranks[np.asarray(buckets, np.int64)]


def exact_buckets(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct score its own bucket: ``(bucket ids, totals)`` (exact midranks)."""
    values, inverse = np.unique(np.asarray(scores, np.float64), return_inverse=True)
    return inverse, np.bincount(inverse, minlength=values.size)


def comparison_statistics(
    labels: np.ndarray,
    scores_a: np.ndarray,
    scores_b: np.ndarray,
    ranks: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, float]:
    """The exact ``difference`` (``Delta``), ``rank_sum_a``, ``num_pos``, ``square``
    (``Q``) and the public ``sensitivity`` (``D``), ``sensitivity_a`` (``D_A``),
    ``total_square`` (``sum d^2``) and ``total`` (``n``); ``ranks``: the examples' centred
    midranks under A and B when already known (a federation's global ranks)."""
    labels = np.asarray(labels, np.float64)
    if ranks is None:
        ranks = tuple(centred_midranks_of(*exact_buckets(s)) for s in (scores_a, scores_b))
    rank_a, rank_b = ranks
    d = rank_b - rank_a
    return {
        "difference": float(labels @ d),
        "rank_sum_a": float(labels @ rank_a),
        "num_pos": float(labels.sum()),
        "square": float(labels @ (d * d)),
        "sensitivity": float(np.abs(d).max(initial=0.0)),
        "sensitivity_a": float(np.abs(rank_a).max(initial=0.0)),
        "total_square": float(d @ d),
        "total": float(labels.size),
    }


class RankSumComparison:
    """The paired comparison's rank-sum release and its guarantee (pure epsilon).

    Args:
      epsilon: the budget of the one release (> 0).
      shares: budget shares of ``difference``, ``rank_sum_a``, ``num_pos`` and ``square``
        (default `DEFAULT_SHARES`; they must sum to 1).
      num_clients: clients of a federated release.
      secure: every client adds a share of discrete Laplace noise on the integer multiples
        ``LATTICE`` of the statistics (``2 Delta``, ``2 S_A``, ``P``, ``4 Q``), summed by
        secure aggregation; otherwise every client adds its own noise.

    Examples:
        >>> m = RankSumComparison(epsilon=2.0)
        >>> m.scale("difference", 3.0), m.statement().epsilon
        (3.0, 2.0)
    """

    releases_from_summed_counts = True  # over clients: two rounds, ranks from round one

    name = RANK_SUM_COMPARISON
    neighbouring = "label DP: one example's label differs (scores unchanged, unit weights)"
    capabilities: ClassVar[Capabilities] = Capabilities(
        unit_weights=True, releases="auc", keras_metric=False, federated=False
    )
    delta = 0.0

    def __init__(
        self,
        epsilon: float,
        shares: Mapping[str, float] | None = None,
        num_clients: int = 1,
        secure: bool = False,
    ):
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
            raise TypeError(f"epsilon must be a number, got {epsilon!r}")
        if not (math.isfinite(epsilon) and epsilon > 0):
            raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
        self.epsilon = float(epsilon)
        shares = dict(DEFAULT_SHARES if shares is None else shares)
        if set(shares) != set(STATISTICS) or any(
            not (isinstance(v, (int, float)) and 0 < v < 1) for v in shares.values()
        ):
            raise ValueError(f"shares must give each of {STATISTICS} a share in (0, 1)")
        if abs(sum(shares.values()) - 1.0) > 1e-9:
            raise ValueError(f"shares must sum to 1, got {sum(shares.values()):g}")
        self.shares = {key: float(shares[key]) for key in STATISTICS}
        self.num_clients = int(num_clients)
        self.secure = bool(secure)

    def scale(self, key: str, sensitivity: float) -> float:
        """The Laplace scale of statistic ``key`` with that (public) sensitivity."""
        return float(sensitivity) / (self.shares[key] * self.epsilon)

    def _sensitivities(self, exact: Mapping[str, float]) -> dict[str, float]:
        d = exact["sensitivity"]
        return {
            "difference": d,
            "rank_sum_a": exact["sensitivity_a"],
            "num_pos": 1.0,
            "square": d * d,
        }

    def _noise(self, scales: Mapping[str, float], seed, repeats: int, shares: int):
        """``[repeats]`` noise of every statistic: continuous Laplace (the whole law), or a
        Polya share of discrete Laplace on ``LATTICE`` times the statistic (``secure``)."""
        import tensorflow as tf

        from dpauc_tf.noise import samplers
        from dpauc_tf.noise.seeds import make_seed, split_seed

        seeds = split_seed(make_seed(seed), len(STATISTICS))
        out = {}
        for i, key in enumerate(STATISTICS):
            if self.secure:
                from dpauc_tf.mechanisms.secure_rank_sum import _polya_share

                factor = LATTICE[key]  # noise on the integer factor * x
                scale = tf.constant(factor * scales[key], tf.float64)
                draw = _polya_share(tf.constant([repeats]), scale, shares, seeds[i]).numpy()
                out[key] = draw / factor
            else:
                out[key] = scales[key] * samplers.laplace([repeats], 1.0, seeds[i]).numpy()
        return out

    def release(self, exact: Mapping[str, float], seed=None, repeats: int = 1) -> dict:
        """The noisy release ``[repeats]`` of exact statistics (the one data holder's, or the
        exact aggregate of every client's shares)."""
        sens = self._sensitivities(exact)
        scales = {key: self.scale(key, sens[key]) for key in STATISTICS}
        noise = self._noise(scales, seed, repeats, 1)
        return self._finished({key: exact[key] + noise[key] for key in STATISTICS}, exact)

    @staticmethod
    def _finished(noisy: Mapping[str, Any], exact: Mapping[str, float]) -> dict:
        out = {key: np.atleast_1d(np.asarray(noisy[key], np.float64)) for key in STATISTICS}
        repeats = out["difference"].shape
        for key in ("sensitivity", "sensitivity_a", "total_square", "total"):
            out[key] = np.full(repeats, float(exact[key]))
        return out

    # -- federated ------------------------------------------------------------------------
    @staticmethod
    def round_one_report(bucket_a: np.ndarray, bucket_b: np.ndarray, num_buckets: int):
        """A client's bucket totals of both models ``[2, B]`` (label-free)."""
        return np.stack(
            [
                np.bincount(np.asarray(b, np.int64), minlength=num_buckets)
                for b in (bucket_a, bucket_b)
            ]
        )

    @staticmethod
    def client_ranks(bucket_a, bucket_b, totals) -> tuple[np.ndarray, np.ndarray]:
        """A client's examples' global centred midranks under A and B."""
        return centred_midranks_of(bucket_a, totals[0]), centred_midranks_of(bucket_b, totals[1])

    def round_two_report(
        self, labels, bucket_a, bucket_b, totals, sensitivity: float, seed, repeats: int = 1
    ) -> dict[str, np.ndarray]:
        """A client's four sums with the global ranks, plus its noise (its whole own, or a
        share with ``secure``), and its number of examples."""
        ranks = self.client_ranks(bucket_a, bucket_b, totals)
        exact = comparison_statistics(labels, None, None, ranks)
        exact["sensitivity"] = float(sensitivity)
        exact["sensitivity_a"] = float(
            np.abs(centred_midranks_of(np.flatnonzero(totals[0]), totals[0])).max(initial=0.0)
        )
        sens = self._sensitivities(exact)
        scales = {key: self.scale(key, sens[key]) for key in STATISTICS}
        noise = self._noise(scales, seed, repeats, self.num_clients if self.secure else 1)
        report = {key: exact[key] + noise[key] for key in STATISTICS}
        report["num_examples"] = np.full(repeats, len(np.atleast_1d(labels)), np.float64)
        report["total_square"] = np.full(repeats, exact["total_square"])
        return report

    def finish(self, summed: Mapping[str, Any], totals, sensitivity: float) -> dict:
        """The server's release from round two's sums; refuses a round two whose examples are
        not those ranked in round one."""
        expected = float(np.asarray(totals)[0].sum())
        if np.any(np.asarray(summed["num_examples"]) != expected):
            raise ValueError(
                f"{self.name}: round two summed {int(np.asarray(summed['num_examples']).ravel()[0])} "
                f"examples but round one ranked {int(expected)}: a client was lost (or added) "
                "between the rounds; nothing is released"
            )
        sens_a = float(
            np.abs(centred_midranks_of(np.flatnonzero(totals[0]), totals[0])).max(initial=0.0)
        )
        exact = {
            "sensitivity": float(sensitivity),
            "sensitivity_a": sens_a,
            "total_square": float(np.asarray(summed["total_square"]).ravel()[0]),
            "total": expected,
        }
        return self._finished(summed, exact)

    # -- post-processing ------------------------------------------------------------------
    def privacy_variance(self, release: Mapping[str, Any]) -> np.ndarray:
        """First-order variance of the released noise on the difference ``Delta / (P N)``."""
        num_pos, num_neg = _class_sizes(release)
        sens = float(np.asarray(release["sensitivity"]).ravel()[0])
        delta = np.asarray(release["difference"], np.float64)
        var_delta = self._variance("difference", sens)
        var_count = self._variance("num_pos", 1.0)
        product = num_pos * num_neg
        gradient = delta * (num_neg - num_pos) / product**2
        return var_delta / product**2 + var_count * gradient**2

    def _variance(self, key: str, sensitivity: float) -> float:
        scale = self.scale(key, sensitivity)
        if not self.secure:  # every client's own draw: the sum carries num_clients of them
            return 2.0 * scale**2 * self.num_clients
        from dpauc_tf.noise.exact import discrete_laplace_variance

        factor = LATTICE[key]
        if scale <= 0:
            return 0.0
        return discrete_laplace_variance(factor * scale) / factor**2

    def comparison_result(self, summed: Mapping[str, Any], confidence: float, num_examples):
        """The difference, its interval and the test of H0 (equal AUCs) of the first
        release, as a [`ComparisonResult`][dpauc_tf.mechanisms.comparison.ComparisonResult]."""
        from dpauc_tf.core.sampling_variance import hanley_mcneil_variance
        from dpauc_tf.mechanisms.comparison import ComparisonResult, _clip, swamped_warning

        release = {key: np.atleast_1d(np.asarray(v, np.float64))[:1] for key, v in summed.items()}
        num_pos, num_neg = _class_sizes(release)
        product = num_pos * num_neg
        n = release["total"]
        diff = float((release["difference"] / product)[0])
        auc_a = float((0.5 + release["rank_sum_a"] / product)[0])
        auc_b = auc_a + diff
        mean_pos = release["difference"] / num_pos
        var_pos = np.maximum(release["square"] / num_pos - mean_pos**2, 0.0)
        mean_neg = -release["difference"] / num_neg
        var_neg = np.maximum(
            (release["total_square"] - release["square"]) / num_neg - mean_neg**2, 0.0
        )
        sampling = float(((var_pos / num_pos + var_neg / num_neg) / n**2)[0])
        privacy = float(self.privacy_variance(release)[0])
        total = sampling + privacy
        std = math.sqrt(total) if total > 0 else math.nan
        z = diff / std if math.isfinite(std) else math.nan
        p_value = float(2 * stats.norm.sf(abs(z))) if math.isfinite(z) else math.nan
        quantile = float(stats.norm.ppf(0.5 + confidence / 2))
        low, high = _clip(diff - quantile * std, -1.0, 1.0), _clip(diff + quantile * std, -1.0, 1.0)
        var_a = float(hanley_mcneil_variance(min(max(auc_a, 0.0), 1.0), num_pos, num_neg)[0])
        var_b = float(hanley_mcneil_variance(min(max(auc_b, 0.0), 1.0), num_pos, num_neg)[0])
        raw = {"auc_a": auc_a, "auc_b": auc_b, "difference": diff}
        return ComparisonResult(
            auc_a=_clip(auc_a, 0.0, 1.0),
            auc_b=_clip(auc_b, 0.0, 1.0),
            difference=_clip(diff, -1.0, 1.0),
            ci_low=low,
            ci_high=high,
            confidence=float(confidence),
            p_value=p_value,
            z=z,
            std_error=std,
            sampling_variance=sampling,
            sampling_variance_a=var_a,
            sampling_variance_b=var_b,
            privacy_variance=privacy,
            epsilon=self.epsilon,
            delta=0.0,
            statement=self.statement(),
            num_examples=None if num_examples is None else int(num_examples),
            num_buckets=(0, 0),
            noisy_counts={key: np.asarray(v) for key, v in summed.items()},
            warning=swamped_warning(raw, privacy),
            target="the AUCs of this test set's population (DeLong-type paired variance from "
            "the released rank differences, conservative; + privacy noise)",
        )

    # -- the guarantee --------------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        """The four statistics' events (each moved by at most its sensitivity: a unit shift
        at scale ``1 / (w eps)``), composed."""
        event = discrete_laplace_event if self.secure else laplace_event
        return dp_accounting.ComposedDpEvent(
            [event(1.0 / (self.shares[key] * self.epsilon), 1) for key in STATISTICS]
        )

    def privacy_spent(self, releases: int = 1, delta: float | None = None):
        from dpauc_tf.privacy.accounting import composed_epsilon

        return composed_epsilon(self.dp_event(), releases, 0.0 if delta is None else delta)

    def statement(self) -> PrivacyStatement:
        kind = (
            "discrete Laplace (secure shares) on 2 Delta, 2 S_A, P, 4 Q: the"
            if self.secure
            else "Laplace on the"
        )
        parts = ", ".join(f"{key} {self.shares[key] * self.epsilon:.4g}" for key in STATISTICS)
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring + self._trust(),
            sensitivity="Delta = sum_i y[i] d[i] with d = r_B - r_A (both models' public "
            "midranks): D = max |d[i]|; S_A: max |r_A|; P: 1; Q = sum_i y[i] d[i]^2: D^2",
            noise=f"{kind} statistics, epsilon shares: {parts}; D, sum d^2 and n are released",
            epsilon=self.epsilon,  # the shares sum to 1 (dp_event composes to it)
            delta=0.0,
        )

    def _trust(self) -> str:
        """What the server sees over clients (round one's label-free parts included)."""
        if self.secure:
            return (
                "; trust: the server sees only the secure sums (round one: both models' "
                "aggregate score histograms, label-free) and every client's largest |d| (a "
                "function of the public scores); round two: the four sums with their noise"
            )
        if self.num_clients > 1:
            return (
                f"; over {self.num_clients} clients without secure aggregation the server sees "
                "every client's score histograms of both models (round one, in the clear, "
                "label-free), its largest |d| and its four sums, each with its own whole noise"
            )
        return ""

    def options(self) -> dict:
        return {"shares": dict(self.shares)}


def _class_sizes(release: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """``P~`` and ``n - P~``, each at least 1."""
    n = np.asarray(release["total"], np.float64)
    num_pos = np.clip(np.asarray(release["num_pos"], np.float64), 1.0, np.maximum(n - 1.0, 1.0))
    return num_pos, np.maximum(n - num_pos, 1.0)
