"""Confidence intervals for a released AUC, from the release and the mechanism's noise law only.

An interval is post-processing of what was released (no extra privacy cost): the mechanism
states its noise exactly, so the variance that the noise adds to the estimate is known up to
the (noisy) counts it is evaluated at. Two targets:

* ``target="sample"``: the AUC of **this test set** (on the mechanism's counting grid, i.e.
  the AUC that ``tf.keras.metrics.AUC`` with the same thresholds reports, or the exact AUC for
  ``auc-only``): the privacy noise only.
* ``target="population"``: the AUC of the **population** the test set was drawn from: the
  privacy noise and the sampling error of the test set, added (they are independent).

Variances (``docs/intervals.md`` has the formulas and the measured coverage):

* privacy noise of a curve mechanism: the delta method, ``sum_i var_i (dA / dr_i)^2`` over
  the released entries ``r_i`` (independent noise of stated variance ``var_i``; the gradient
  of the mechanism's own estimator, without its final clip, at the released values). For a
  histogram this is `dpauc_tf.core.sampling_variance.count_noise_variance`. For ``rr``
  the flipped count of a bucket has variance ``n[b] p (1 - p)`` (``n[b]`` is released).
  Less the curvature that the gradient at the noisy values counts twice
  (`dpauc_tf.mechanisms.interval_curvature`); ``rr`` with fewer than 3 expected flips:
  the quantile of the flips' exact law (`dpauc_tf.mechanisms.interval_flips`).
* sampling error: DeLong's variance ([`dpauc_tf.core.sampling_variance.delong_variance`][])
  of the projected counts (monotone, non-negative), or for ``auc-only``, which releases no
  counts, Hanley & McNeil's from the AUC, the noisy ``min(P, N)`` and the public ``n``.
* the interval is ``A +- z sqrt(variance)`` clipped to [0, 1]; for ``auc-only`` the noise is
  one Laplace draw of a released scale, so its exact quantile is used (convolved with the
  normal sampling error for the population target).

``score-noise`` (the counts of noisy scores do not tell the noise's effect on the AUC) and the
``"reference"`` estimator (not consistent) are refused, as is any mechanism that states no
noise law (a registered mechanism may define ``release_noise_variances(release)``, a dict of
per-entry variances shaped like its release).

Examples:
    >>> import numpy as np
    >>> from dpauc_tf.mechanisms import get_mechanism
    >>> m = get_mechanism("histogram", epsilon=1.0, num_thresholds=3)
    >>> release = m.release(np.array([0., 100., 300., 0.]), np.array([0., 400., 200., 0.]), seed=0)
    >>> ci = release_interval(m, release, confidence=0.95, target="population")
    >>> bool(ci.low[0] < float(m.estimate_auc(release)) < ci.high[0]), ci.target
    (True, 'population')
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf
from scipy import special, stats

from dpauc_tf.core.curve import Confusion, confusion_from_histogram
from dpauc_tf.core.postprocessing import (
    least_squares_confusion,
    monotone_confusion,
    within_bucket_correction,
)
from dpauc_tf.core.sampling_variance import delong_variance, hanley_mcneil_variance
from dpauc_tf.mechanisms.interval_curvature import curvature_trace
from dpauc_tf.mechanisms.interval_flips import flip_error_quantile
from dpauc_tf.noise.exact import discrete_laplace_variance

TARGETS = ("sample", "population")
DEFAULT_TARGET = "population"


def check_confidence(confidence: float | None) -> float | None:
    """``None`` or a confidence level strictly between 0 and 1 (e.g. 0.95)."""
    if confidence is None:
        return None
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise ValueError(f"confidence must be a number in (0, 1), e.g. 0.95, got {confidence!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be in (0, 1), e.g. 0.95, got {confidence!r}")
    return float(confidence)


def check_target(target: str) -> str:
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    return target


@dataclasses.dataclass(frozen=True)
class AUCInterval:
    """The interval of every release ``[R]`` and the split of its variance.

    Attributes:
      low: the lower bounds (NaN where the release's AUC is undefined).
      high: the upper bounds.
      target: ``"sample"`` or ``"population"`` (module docstring).
      confidence: the nominal coverage, e.g. 0.95.
      privacy_variance: the variance the privacy noise adds to the estimate.
      sampling_variance: the estimated sampling variance of the test set's AUC (NaN where
        it cannot be estimated).

    Examples:
        >>> ci = AUCInterval(np.array([0.7]), np.array([0.8]), "sample", 0.95,
        ...                  np.array([1e-4]), np.array([3e-4]))
        >>> round(float(ci.privacy_share[0]), 6), round(float(ci.privacy_ratio[0]) ** 2, 6)
        (0.25, 0.333333)
    """

    low: np.ndarray
    high: np.ndarray
    target: str
    confidence: float
    privacy_variance: np.ndarray
    sampling_variance: np.ndarray

    @property
    def privacy_share(self) -> np.ndarray:
        """The share of the total variance that the privacy noise adds."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.privacy_variance / (self.privacy_variance + self.sampling_variance)

    @property
    def privacy_ratio(self) -> np.ndarray:
        """Privacy-noise standard deviation over the sampling standard error."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sqrt(self.privacy_variance / self.sampling_variance)

    @property
    def width(self) -> np.ndarray:
        return self.high - self.low


def noise_copies(mechanism, num_clients: int | None, num_reporting: int | None) -> float:
    """How many of the mechanism's stated noise draws a (summed) release carries: 1 for one
    data holder; the number of reports summed for a local mechanism (each adds its own
    noise); ``reporting / num_clients`` for a secure one (its statement is of all shares)."""
    if num_clients is None:
        return 1.0
    reporting = num_clients if num_reporting is None else int(num_reporting)
    if mechanism.capabilities.secure:
        shares = int(getattr(mechanism, "num_clients", num_clients))
        return reporting / shares
    return float(max(reporting, 1))


def check_interval_support(mechanism) -> None:
    """Raises ``ValueError`` (one line, saying why) where no valid interval exists."""
    name = mechanism.name
    if mechanism.capabilities.transforms_data:
        raise ValueError(
            f"mechanism {name!r} adds noise to every score before counting: the released counts "
            "do not tell how far that noise moved the AUC, so no interval is given"
        )
    if getattr(mechanism, "estimator", None) == "reference":
        raise ValueError(
            f"mechanism {name!r} with estimator='reference' (the paper's clip-sort-trapezoid) is "
            "not a consistent estimate: no interval; use the default estimator"
        )
    if _kind(mechanism) is None:
        raise ValueError(
            f"mechanism {name!r} states no noise law for intervals (define "
            "release_noise_variances(release) on it)"
        )


def _unbound(mechanism, num_examples: float | None = None):
    """A weight-bounded mechanism ([`dpauc_tf.mechanisms.weight_bound`][]) releases its inner
    mechanism's release of the counts divided by ``max_weight``: the noise law is the inner
    one's in those units, and so is the number of examples."""
    from dpauc_tf.mechanisms.weight_bound import WeightBounded

    if not isinstance(mechanism, WeightBounded):
        return mechanism, num_examples
    scaled = None if num_examples is None else float(num_examples) / mechanism.max_weight
    return mechanism.inner, scaled


def _kind(mechanism) -> str | None:
    from dpauc_tf.mechanisms.auc_only import AucOnly
    from dpauc_tf.mechanisms.histogram import HistogramLaplace, HistogramPublicScores
    from dpauc_tf.mechanisms.none import NoNoise
    from dpauc_tf.mechanisms.paper import PaperLaplace
    from dpauc_tf.mechanisms.randomized_response import RandomizedResponse
    from dpauc_tf.mechanisms.rank_sum import RankSum
    from dpauc_tf.mechanisms.secure_histogram import SecureHistogram
    from dpauc_tf.mechanisms.tree import TreeHistogram

    kinds = (
        (AucOnly, "auc-only"),
        (RankSum, "rank-sum"),
        (HistogramPublicScores, "public-histogram"),
        (HistogramLaplace, "histogram"),
        (SecureHistogram, "secure-histogram"),
        (TreeHistogram, "tree"),
        (PaperLaplace, "paper"),
        (RandomizedResponse, "rr"),
        (NoNoise, "none"),
    )
    mechanism, _ = _unbound(mechanism)
    for cls, kind in kinds:
        if isinstance(mechanism, cls):
            return kind
    if callable(getattr(mechanism, "release_noise_variances", None)):
        return "custom"
    return None


# -- the noise law of a release ------------------------------------------------------------
def _laplace_variance(scale: float, discrete: bool) -> float:
    return discrete_laplace_variance(scale) if discrete else 2.0 * scale**2


def release_noise_variances(mechanism, release: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The variance of the noise on every released entry (of one full release), keyed and
    shaped like the release (broadcastable); ``rr``: the variance of the flipped positive
    count (its negative count is the released total minus it)."""
    kind = _kind(mechanism)
    if kind == "custom":
        return {
            k: np.asarray(v, np.float64)
            for k, v in mechanism.release_noise_variances(release).items()
        }
    if kind == "none":
        return {"pos": np.zeros(()), "neg": np.zeros(())}
    if kind == "public-histogram":
        discrete = mechanism.noise == "discrete"
        return {
            "pos": np.asarray(_laplace_variance(mechanism.noise_scale, discrete)),
            "total": np.zeros(()),
        }
    if kind == "histogram":
        discrete = mechanism.noise == "discrete"
        pos_scale, neg_scale = mechanism.class_scales
        return {
            "pos": np.asarray(_laplace_variance(pos_scale, discrete)),
            "neg": np.asarray(_laplace_variance(neg_scale, discrete)),
        }
    if kind == "secure-histogram":
        pos_scale, neg_scale = mechanism.class_scales
        if mechanism.family == "skellam":
            return {"pos": np.asarray(2.0 * pos_scale), "neg": np.asarray(2.0 * neg_scale)}
        return {
            "pos": np.asarray(discrete_laplace_variance(pos_scale)),
            "neg": np.asarray(discrete_laplace_variance(neg_scale)),
        }
    if kind == "tree":
        levels = mechanism.layout.node_levels()
        real = np.asarray(mechanism.layout.real_nodes, np.float64)
        per_class = [
            np.asarray(v, np.float64)[levels] * real for v in mechanism.class_level_variances
        ]
        if mechanism.public_scores:
            return {"pos_tree": per_class[0], "total": np.zeros(())}
        return {"pos_tree": per_class[0], "neg_tree": per_class[1]}
    if kind == "paper":
        variance = np.asarray(mechanism.noise_stddev**2)
        return {key: variance for key in ("tp", "fp", "tn", "fn")}
    if kind == "rr":
        p = mechanism.flip_probability
        total = np.asarray(release["pos"], np.float64) + np.asarray(release["neg"], np.float64)
        return {"pos": total * p * (1.0 - p)}
    raise ValueError(f"no noise law for mechanism {mechanism.name!r}")


def _area_over_pairs(confusion: Confusion, within_bucket: str) -> tf.Tensor:
    """[`mann_whitney_auc`][dpauc_tf.core.postprocessing.mann_whitney_auc] without its clip and NaN (so
    that its gradient exists where the clip binds)."""
    tp, fp, tn, fn = least_squares_confusion(
        Confusion(*(tf.cast(c, tf.float64) for c in confusion))
    )
    num_pos = tp[..., :1] + fn[..., :1]
    num_neg = fp[..., :1] + tn[..., :1]
    zero = tf.zeros_like(num_pos)
    tp = tf.concat([num_pos, tp, zero], axis=-1)
    fp = tf.concat([num_neg, fp, zero], axis=-1)
    area = tf.reduce_sum((fp[..., :-1] - fp[..., 1:]) * (tp[..., :-1] + tp[..., 1:]) / 2, axis=-1)
    if within_bucket == "linear":
        area += within_bucket_correction(tp[..., :-1] - tp[..., 1:], fp[..., :-1] - fp[..., 1:])
    product = num_pos[..., 0] * num_neg[..., 0]
    return area / tf.where(product > 0, product, tf.ones_like(product))


def _raw_estimate(mechanism, kind: str, release: dict[str, tf.Tensor]) -> tf.Tensor:
    """The mechanism's estimate before its final clip to [0, 1] (differentiable)."""
    within = mechanism.within_bucket
    if kind == "tree":
        return _area_over_pairs(confusion_from_histogram(*mechanism.leaves(release)), within)
    if kind == "rr":
        flipped = _area_over_pairs(confusion_from_histogram(release["pos"], release["neg"]), within)
        return _debias_unclipped(mechanism, flipped, release)
    if kind in ("none",):
        return _area_over_pairs(confusion_from_histogram(release["pos"], release["neg"]), within)
    return _area_over_pairs(mechanism.released_confusion(release), within)


def _debias_unclipped(mechanism, flipped: tf.Tensor, release) -> tf.Tensor:
    """Menon et al.'s debiasing ([`debias_auc`][dpauc_tf.mechanisms.randomized_response.debias_auc])
    without its clip; where it is undefined the release's AUC is NaN anyway."""
    p = q = mechanism.flip_probability
    pos = tf.reduce_sum(release["pos"], -1)
    n = pos + tf.reduce_sum(release["neg"], -1)
    neg = n - pos
    pi = ((pos * (1 - q) - neg * q) / (1 - p - q)) / tf.where(n > 0, n, tf.ones_like(n))
    pi = tf.clip_by_value(pi, 1e-9, 1 - 1e-9)
    alpha = (1 - pi) * q / (pi * (1 - p) + (1 - pi) * q)
    beta = pi * p / (pi * p + (1 - pi) * (1 - q))
    return (flipped - (alpha + beta) / 2) / (1 - alpha - beta)


def privacy_variance(
    mechanism,
    release: Mapping[str, Any],
    copies: float = 1.0,
    num_examples: float | None = None,
    *,
    second_order: bool = True,
) -> np.ndarray:
    """The variance ``[...]`` of ``mechanism.estimate_auc(release)`` from the noise: the
    delta method at the released values, less the curvature it counts twice there
    ([`dpauc_tf.mechanisms.interval_curvature`][]; ``second_order=False``: the plain delta
    method); ``copies`` scales the stated noise variance ([`noise_copies`][]).
    ``auc-only``: the released Laplace scale's ``2 b^2`` (its share of epsilon on the count
    may depend on the public ``num_examples``)."""
    check_interval_support(mechanism)
    kind = _kind(mechanism)
    if kind == "auc-only":
        scale = _auc_only_scale(mechanism, release, num_examples)
        return 2.0 * scale**2
    if kind == "rank-sum":
        scale, count_variance = _rank_sum_laws(mechanism, release)
        return 2.0 * scale**2 + count_variance
    laws, watched, estimate, raw, grads = _noise_gradients(mechanism, kind, release)
    variance = np.zeros(np.shape(raw))
    for law, grad in zip(laws.values(), grads.values(), strict=True):
        if grad is None:
            continue
        variance = variance + np.sum(np.broadcast_to(law, grad.shape) * grad**2, -1)
    if second_order and kind != "none":
        # the gradient at the noisy point counts the curvature twice (interval_curvature)
        half = curvature_trace(estimate, watched, laws) / 2.0
        variance = np.maximum(variance - half, half)
    return copies * variance


def _noise_gradients(mechanism, kind: str, release: Mapping[str, Any]):
    """The noise law, the noisy entries, the estimator of them, its value and gradient."""
    laws = release_noise_variances(mechanism, release)
    tensors = {key: tf.constant(np.asarray(value, np.float64)) for key, value in release.items()}
    watched = {key: tensors[key] for key in laws}

    def estimate(noisy: dict[str, tf.Tensor]) -> tf.Tensor:
        inputs = dict(tensors, **noisy)
        if kind == "rr":  # the flipped negatives are the released totals minus the positives
            total = tf.stop_gradient(tensors["pos"] + tensors["neg"])
            inputs["neg"] = total - noisy["pos"]
        return _raw_estimate(mechanism, kind, inputs)

    with tf.GradientTape() as tape:
        tape.watch(list(watched.values()))
        raw = estimate(watched)
        objective = tf.reduce_sum(tf.where(tf.math.is_finite(raw), raw, tf.zeros_like(raw)))
    grads = tape.gradient(objective, list(watched.values()))
    grads = {k: None if g is None else g.numpy() for k, g in zip(watched, grads, strict=True)}
    return laws, watched, estimate, raw.numpy(), grads


def projected_histogram(mechanism, release: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative bucket counts ``pos, neg [..., T + 1]`` estimated from a release (the
    monotone projection of the mechanism's counts; ``rr``: of its debiased counts)."""
    kind = _kind(mechanism)
    tensors = {key: tf.constant(np.asarray(value, np.float64)) for key, value in release.items()}
    if kind == "rr":
        p = mechanism.flip_probability
        total = tensors["pos"] + tensors["neg"]
        pos = (tensors["pos"] * (1 - p) - tensors["neg"] * p) / (1 - 2 * p)
        confusion = monotone_confusion(pos, total - pos)
    elif kind == "tree":
        confusion = monotone_confusion(*mechanism.leaves(tensors))
    elif kind == "none":
        confusion = confusion_from_histogram(tensors["pos"], tensors["neg"])
    else:
        confusion = mechanism.to_confusion(tensors)
    return _histogram_of(confusion)


def _histogram_of(confusion: Confusion) -> tuple[np.ndarray, np.ndarray]:
    tp, fp, tn, fn = (np.asarray(c, np.float64) for c in confusion)
    out = []
    for above, below in ((tp, fn), (fp, tn)):
        total = above[..., :1] + below[..., :1]
        padded = np.concatenate([total, above, np.zeros_like(total)], -1)
        out.append(np.maximum(padded[..., :-1] - padded[..., 1:], 0.0))
    return out[0], out[1]


RARE_FLIPS = 3.0  # below this expected number of flips the normal law does not hold


def _rare_flips_half(mechanism, release, tail: float, sampling) -> np.ndarray:
    """``rr`` with few expected flips ``n p`` (large epsilon, small n): the noise is a
    handful of discrete jumps, not normal; the half-width is the quantile of the flips' own
    law ([`dpauc_tf.mechanisms.interval_flips`][]); NaN where ``n p >= RARE_FLIPS``."""
    p = mechanism.flip_probability
    n = np.asarray(release["pos"], np.float64).sum(-1) + np.asarray(release["neg"]).sum(-1)
    rare = np.atleast_1d(n * p < RARE_FLIPS)
    half = np.full(rare.shape, np.nan)
    if rare.any():
        rows = {k: np.atleast_2d(np.asarray(v, np.float64))[rare] for k, v in release.items()}
        gradient = _noise_gradients(mechanism, "rr", rows)[4]["pos"]
        pos, neg = projected_histogram(mechanism, rows)
        variance = np.broadcast_to(np.atleast_1d(sampling), rare.shape)[rare]
        half[rare] = flip_error_quantile(gradient, pos, neg, p, variance, tail=tail)
    return half


# -- rank-sum: a Laplace draw on the rank sum, the count's noise through P N ---------------
def _rank_sum_classes(release) -> tuple[np.ndarray, np.ndarray]:
    """The class sizes ``max(P~, 1)``, ``max(W - P~, 1)`` that the estimate divides by
    ([`RankSum.estimate_auc`][dpauc_tf.mechanisms.rank_sum.RankSum.estimate_auc])."""
    num_pos = np.asarray(release["num_pos"], np.float64)
    num_neg = np.asarray(release["total"], np.float64) - num_pos
    return np.maximum(num_pos, 1.0), np.maximum(num_neg, 1.0)


def _rank_sum_laws(mechanism, release) -> tuple[np.ndarray, np.ndarray]:
    """The AUC's Laplace scale from the rank sum's noise (``D / (eps_S P~ N~)``) and the
    first-order variance of the count's noise through ``1 / (P N)``, at the released values."""
    rank_sum = np.asarray(release["rank_sum"], np.float64)
    num_pos, num_neg = _rank_sum_classes(release)
    product = num_pos * num_neg
    scale = mechanism.rank_scale(release["sensitivity"]) / product
    # d/dP of S / (P (W - P)) = -S (N - P) / (P N)^2
    gradient = rank_sum * (num_neg - num_pos) / product**2
    return scale, 2.0 * mechanism.count_scale**2 * gradient**2


# Past this relative noise of the positive (or negative) count, std / min(P~, N~), the
# first-order law of 1 / (P N) misses the ratio's skew: 90-93% sample coverage at 10-20
# positives (docs/rank_sum.md); the interval is then the conservative box below.
RANK_SUM_COUNT_NOISE_LIMIT = 0.2
# The share of the error rate the box spends on the count (the rest on the rank sum).
RANK_SUM_BOX_COUNT_SHARE = 0.25


def rank_sum_few_positives(mechanism, release) -> np.ndarray:
    """Where the count's noise is too large against the released class sizes for the
    first-order interval (`RANK_SUM_COUNT_NOISE_LIMIT`); the box is used there."""
    num_pos, num_neg = _rank_sum_classes(release)
    relative = math.sqrt(2.0) * mechanism.count_scale / np.minimum(num_pos, num_neg)
    return np.atleast_1d(relative > RANK_SUM_COUNT_NOISE_LIMIT)


def rank_sum_box(mechanism, release, tail: float) -> tuple[np.ndarray, np.ndarray]:
    """A conservative interval for the sample AUC ``1/2 + S / (P (W - P))`` of a rank-sum
    release: Laplace intervals for the exact ``S`` (error rate ``(1 - c) tail``) and ``P``
    (``c tail``, `RANK_SUM_BOX_COUNT_SHARE`), and the AUC's range over both (Bonferroni:
    it covers with probability at least ``1 - tail`` whatever the class sizes), clipped
    to [0, 1]."""
    rank_sum = np.asarray(release["rank_sum"], np.float64)
    num_pos = np.asarray(release["num_pos"], np.float64)
    total = np.asarray(release["total"], np.float64)
    count_tail = RANK_SUM_BOX_COUNT_SHARE * tail
    rank_half = mechanism.rank_scale(release["sensitivity"]) * math.log(1.0 / (tail - count_tail))
    count_half = mechanism.count_scale * math.log(1.0 / count_tail)
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


def _rank_sum_sampling(release, auc) -> np.ndarray:
    """Hanley-McNeil from the AUC and the noisy class sizes ``P~`` and ``W - P~``."""
    return hanley_mcneil_variance(auc, *_rank_sum_classes(release))


# -- auc-only: one Laplace draw of a released scale --------------------------------------
def _auc_only_n(mechanism, num_examples) -> float:
    """The public number of examples the share of the count was chosen for (refused when the
    mechanism's share depends on it and it is not given)."""
    if num_examples is None:
        if getattr(mechanism, "count_share", 0.0) is None:
            raise ValueError(
                "an auc-only interval needs the number of examples (its count's share of "
                "epsilon depends on it): pass num_examples"
            )
        return 0.0
    return float(num_examples)


def _auc_only_scale(mechanism, release, num_examples=None) -> np.ndarray:
    bound = np.asarray(release["min_count_bound"], np.float64)
    auc_epsilon = mechanism.auc_epsilon_for(_auc_only_n(mechanism, num_examples))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bound >= 2.0, 1.0 / (np.maximum(bound, 1e-300) * auc_epsilon), np.nan)


def _auc_only_sampling(mechanism, release, auc, num_examples) -> np.ndarray:
    """Hanley-McNeil from the AUC and the noisy ``min(P, N)`` (``bound + margin``, unbiased);
    the larger class is ``n - min`` (``n`` public; without it, ``min``: the largest variance
    the release allows). The release does not say which class is the smaller: the mean of the
    two assignments is taken (on binormal scores, where the true variance is symmetric in the
    classes, the larger assignment overstates it by about 19%: ``docs/intervals.md``)."""
    margin = mechanism.margin_for(_auc_only_n(mechanism, num_examples))
    smaller = np.asarray(release["min_count_bound"], np.float64) + margin
    smaller = np.maximum(smaller, 2.0)
    larger = smaller if num_examples is None else np.maximum(float(num_examples) - smaller, smaller)
    return 0.5 * (
        hanley_mcneil_variance(auc, smaller, larger) + hanley_mcneil_variance(auc, larger, smaller)
    )


def laplace_normal_quantile(scale, sigma, tail: float) -> np.ndarray:
    """``t`` with ``P(|L + G| > t) = tail`` for ``L ~ Laplace(scale)``, ``G ~ N(0, sigma^2)``
    (vectorised bisection on the closed-form CDF; ``sigma = 0``: ``scale ln(1 / tail)``).

    Examples:
        >>> float(laplace_normal_quantile(1.0, 0.0, 0.05)) == math.log(20)
        True
        >>> round(float(laplace_normal_quantile(1e-9, 1.0, 0.05)), 4)
        1.96
    """
    b, s = np.broadcast_arrays(np.asarray(scale, np.float64), np.asarray(sigma, np.float64))
    if np.all(s == 0):
        return b * math.log(1.0 / tail)
    s = np.maximum(s, 1e-12)
    b = np.maximum(b, 1e-12)

    def upper_tail(t):  # P(L + G > t), t >= 0
        shift = s**2 / (2 * b**2)
        a = np.exp(np.minimum(-t / b + shift + special.log_ndtr(t / s - s / b), 700))
        c = np.exp(np.minimum(t / b + shift + special.log_ndtr(-t / s - s / b), 700))
        return special.ndtr(-t / s) + 0.5 * a - 0.5 * c

    low = np.zeros_like(b)
    high = 40.0 * (b + s)
    with np.errstate(all="ignore"):
        for _ in range(80):
            mid = (low + high) / 2
            too_small = 2 * upper_tail(mid) > tail
            low, high = np.where(too_small, mid, low), np.where(too_small, high, mid)
    mixed = (low + high) / 2
    # one part negligible: its own quantile (the closed form loses precision there)
    mixed = np.where(b < 1e-4 * s, stats.norm.ppf(1 - tail / 2) * s, mixed)
    return np.where(s < 1e-4 * b, b * math.log(1.0 / tail), mixed)


# -- the interval ------------------------------------------------------------------------
def release_interval(
    mechanism,
    release: Mapping[str, Any],
    *,
    confidence: float = 0.95,
    target: str = DEFAULT_TARGET,
    num_examples: float | None = None,
    copies: float = 1.0,
    estimate: np.ndarray | None = None,
) -> AUCInterval:
    """The interval of every release (leading repeats axis) for ``target``.

    Args:
      mechanism: the mechanism the release was drawn with (for secure mechanisms, the one
        built for the number of shares).
      release: the (summed) release, arrays ``[..., ...]`` as ``finish_release`` takes.
      confidence: nominal coverage in (0, 1).
      target: ``"sample"`` (this test set's AUC) or ``"population"``.
      num_examples: the (public) number of examples; used by ``auc-only``.
      copies: [`noise_copies`][] (1 for one central release).
      estimate: the release's AUC estimate (default: ``mechanism.estimate_auc(release)``).

    Raises:
      ValueError: the mechanism has no valid interval ([`check_interval_support`][]).
    """
    confidence = check_confidence(confidence)
    if confidence is None:
        raise ValueError("confidence must be in (0, 1), e.g. 0.95")
    check_target(target)
    check_interval_support(mechanism)
    mechanism, num_examples = _unbound(mechanism, num_examples)
    kind = _kind(mechanism)
    tensors = {key: tf.constant(np.asarray(value, np.float64)) for key, value in release.items()}
    if estimate is None:
        estimate = mechanism.estimate_auc(tensors).numpy()
    auc = np.asarray(estimate, np.float64)
    noise = np.broadcast_to(privacy_variance(mechanism, release, copies, num_examples), auc.shape)
    if kind == "auc-only":
        sampling = _auc_only_sampling(mechanism, release, auc, num_examples)
    elif kind == "rank-sum":
        sampling = _rank_sum_sampling(release, auc)
    else:
        sampling = delong_variance(*projected_histogram(mechanism, release))
    sampling = np.broadcast_to(sampling, auc.shape)
    tail = 1.0 - confidence
    if kind == "auc-only":
        scale = _auc_only_scale(mechanism, release, num_examples)
        sigma = np.sqrt(sampling) if target == "population" else np.zeros_like(scale)
        half = laplace_normal_quantile(np.nan_to_num(scale), np.nan_to_num(sigma), tail)
    elif kind == "rank-sum":
        scale, count_variance = _rank_sum_laws(mechanism, release)
        normal = count_variance + (sampling if target == "population" else 0.0)
        half = laplace_normal_quantile(np.nan_to_num(scale), np.sqrt(np.nan_to_num(normal)), tail)
    else:
        total = noise + (sampling if target == "population" else 0.0)
        half = stats.norm.ppf(1.0 - tail / 2) * np.sqrt(total)
    if kind == "rr":  # few flips: their exact law
        rare = _rare_flips_half(
            mechanism, release, tail, sampling if target == "population" else 0.0
        )
        half = np.where(np.isfinite(rare), rare.reshape(np.shape(half)), half)
    # a defined AUC whose variance cannot be estimated (e.g. DeLong's of a projection left
    # with one class): the whole range [0, 1], which covers, never "undefined"
    half = np.where(np.isfinite(auc) & ~np.isfinite(half), np.inf, half)
    defined = np.isfinite(auc)
    low = np.where(defined, np.clip(auc - half, 0.0, 1.0), np.nan)
    high = np.where(defined, np.clip(auc + half, 0.0, 1.0), np.nan)
    if kind == "rank-sum":  # few positives (or negatives): the conservative box
        box_low, box_high = rank_sum_box(mechanism, release, tail)
        if target == "population":  # and the sampling error, each at half the error rate
            box_low, box_high = rank_sum_box(mechanism, release, tail / 2)
            spread = stats.norm.ppf(1.0 - tail / 4) * np.sqrt(np.nan_to_num(sampling, nan=np.inf))
            box_low = np.clip(box_low - spread, 0.0, 1.0)
            box_high = np.clip(box_high + spread, 0.0, 1.0)
        few = (
            np.broadcast_to(
                rank_sum_few_positives(mechanism, release).reshape(np.shape(auc)), np.shape(auc)
            )
            & defined
        )
        low = np.where(few, np.reshape(box_low, np.shape(auc)), low)
        high = np.where(few, np.reshape(box_high, np.shape(auc)), high)
    return AUCInterval(
        low=np.atleast_1d(low),
        high=np.atleast_1d(high),
        target=target,
        confidence=confidence,
        privacy_variance=np.atleast_1d(np.where(np.isfinite(auc), noise, np.nan)),
        sampling_variance=np.atleast_1d(np.where(np.isfinite(auc), sampling, np.nan)),
    )
