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

The law is the mechanism's own ([`IntervalLaw`][dpauc_tf.mechanisms.laws.IntervalLaw], its
class attribute ``interval_law``): this module holds the generic math (the delta method, the
curvature, the Laplace-normal quantile) and asks the mechanism for its noise
(``noise_variances``), its unclipped estimate, its projected counts and its sampling
variance ([`CountMechanism`][dpauc_tf.mechanisms.base.CountMechanism]); it never asks which
family a mechanism is. ``score-noise`` (the counts of noisy scores do not tell the noise's
effect on the AUC) and the ``"reference"`` estimator (not consistent) are refused, as is any
mechanism whose ``interval_law`` is ``NONE`` (a registered mechanism sets
``interval_law = IntervalLaw.DELTA_METHOD`` and defines ``noise_variances(release)``, a dict
of per-entry variances shaped like its release).

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

from dpauc_tf.mechanisms.interval_curvature import curvature_trace
from dpauc_tf.mechanisms.interval_flips import flip_error_quantile
from dpauc_tf.mechanisms.laws import IntervalLaw, IntervalTarget


def check_confidence(confidence: float | None) -> float | None:
    """``None`` or a confidence level strictly between 0 and 1 (e.g. 0.95)."""
    if confidence is None:
        return None
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise ValueError(f"confidence must be a number in (0, 1), e.g. 0.95, got {confidence!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be in (0, 1), e.g. 0.95, got {confidence!r}")
    return float(confidence)


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
    """How many of the mechanism's stated noise draws a (summed) release carries (the
    mechanism's [`client_noise_copies`][dpauc_tf.mechanisms.base.CountMechanism.client_noise_copies])."""
    return mechanism.client_noise_copies(num_clients, num_reporting)


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
    if not mechanism.interval_law.has_interval:
        raise ValueError(
            f"mechanism {name!r} states no noise law for intervals (set interval_law and "
            "define noise_variances(release) on it)"
        )


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
    law = mechanism.interval_law
    if law is IntervalLaw.LAPLACE_ON_AUC:
        return 2.0 * mechanism.auc_noise_scale(release, num_examples) ** 2
    if law is IntervalLaw.RANK_SUM:  # copies: K clients' own noise (rank-sum, local)
        scale, count_variance = mechanism.auc_noise_laws(release)
        return copies * (2.0 * scale**2 + count_variance)
    laws, watched, estimate, raw, grads = _noise_gradients(mechanism, release)
    variance = np.zeros(np.shape(raw))
    for law, grad in zip(laws.values(), grads.values(), strict=True):
        if grad is None:
            continue
        variance = variance + np.sum(np.broadcast_to(law, grad.shape) * grad**2, -1)
    if second_order and any(np.any(np.asarray(v) != 0) for v in laws.values()):
        # the gradient at the noisy point counts the curvature twice (interval_curvature)
        half = curvature_trace(estimate, watched, laws) / 2.0
        variance = np.maximum(variance - half, half)
    return copies * variance


def release_noise_variances(mechanism, release: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The variance of the noise on every released entry of one full release (the
    mechanism's [`noise_variances`][dpauc_tf.mechanisms.base.CountMechanism.noise_variances],
    as float64 arrays)."""
    return {
        key: np.asarray(value, np.float64)
        for key, value in mechanism.noise_variances(release).items()
    }


def _noise_gradients(mechanism, release: Mapping[str, Any]):
    """The noise law, the noisy entries, the estimator of them, its value and gradient."""
    laws = release_noise_variances(mechanism, release)
    tensors = {key: tf.constant(np.asarray(value, np.float64)) for key, value in release.items()}
    watched = {key: tensors[key] for key in laws}

    def estimate(noisy: dict[str, tf.Tensor]) -> tf.Tensor:
        return mechanism.unclipped_estimate(mechanism.with_noisy_entries(tensors, noisy))

    with tf.GradientTape() as tape:
        tape.watch(list(watched.values()))
        raw = estimate(watched)
        objective = tf.reduce_sum(tf.where(tf.math.is_finite(raw), raw, tf.zeros_like(raw)))
    grads = tape.gradient(objective, list(watched.values()))
    grads = {k: None if g is None else g.numpy() for k, g in zip(watched, grads, strict=True)}
    return laws, watched, estimate, raw.numpy(), grads


def projected_histogram(mechanism, release: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Non-negative bucket counts ``pos, neg [..., T + 1]`` estimated from a release (the
    mechanism's [`projected_counts`][dpauc_tf.mechanisms.base.CountMechanism.projected_counts])."""
    return mechanism.projected_counts(release)


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
        gradient = _noise_gradients(mechanism, rows)[4]["pos"]
        pos, neg = projected_histogram(mechanism, rows)
        variance = np.broadcast_to(np.atleast_1d(sampling), rare.shape)[rare]
        half[rare] = flip_error_quantile(gradient, pos, neg, p, variance, tail=tail)
    return half


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
    target: str = IntervalTarget.POPULATION,
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
    target = IntervalTarget(target)
    check_interval_support(mechanism)
    num_examples = mechanism.examples_in_release_units(num_examples)
    law = mechanism.interval_law
    tensors = {key: tf.constant(np.asarray(value, np.float64)) for key, value in release.items()}
    if estimate is None:
        estimate = mechanism.estimate_auc(tensors).numpy()
    auc = np.asarray(estimate, np.float64)
    noise = np.broadcast_to(privacy_variance(mechanism, release, copies, num_examples), auc.shape)
    sampling = np.broadcast_to(mechanism.sampling_variance(release, auc, num_examples), auc.shape)
    tail = 1.0 - confidence
    if law is IntervalLaw.LAPLACE_ON_AUC:
        scale = mechanism.auc_noise_scale(release, num_examples)
        sigma = np.sqrt(sampling) if target == "population" else np.zeros_like(scale)
        half = laplace_normal_quantile(np.nan_to_num(scale), np.nan_to_num(sigma), tail)
    elif law is IntervalLaw.RANK_SUM:
        scale, count_variance = mechanism.auc_noise_laws(release)
        # one Laplace draw on S kept exact; the other copies' (K clients each adding their
        # own, rank-sum without secure aggregation) as a normal of their variance
        others = max(copies - 1.0, 0.0) * 2.0 * scale**2
        normal = copies * count_variance + others + (sampling if target == "population" else 0.0)
        half = laplace_normal_quantile(np.nan_to_num(scale), np.sqrt(np.nan_to_num(normal)), tail)
    else:
        total = noise + (sampling if target == "population" else 0.0)
        half = stats.norm.ppf(1.0 - tail / 2) * np.sqrt(total)
    if law is IntervalLaw.FLIPS:  # few flips: their exact law
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
    if law is IntervalLaw.RANK_SUM:  # few positives (or negatives): the conservative box
        box_low, box_high = mechanism.sample_box(release, tail, copies)
        if target == "population":  # and the sampling error, each at half the error rate
            box_low, box_high = mechanism.sample_box(release, tail / 2, copies)
            spread = stats.norm.ppf(1.0 - tail / 4) * np.sqrt(np.nan_to_num(sampling, nan=np.inf))
            box_low = np.clip(box_low - spread, 0.0, 1.0)
            box_high = np.clip(box_high + spread, 0.0, 1.0)
        few = (
            np.broadcast_to(
                mechanism.few_positives(release, copies).reshape(np.shape(auc)), np.shape(auc)
            )
            & defined
        )
        low = np.where(few, np.reshape(box_low, np.shape(auc)), low)
        high = np.where(few, np.reshape(box_high, np.shape(auc)), high)
    return AUCInterval(
        low=np.atleast_1d(low),
        high=np.atleast_1d(high),
        target=target.value,
        confidence=confidence,
        privacy_variance=np.atleast_1d(np.where(np.isfinite(auc), noise, np.nan)),
        sampling_variance=np.atleast_1d(np.where(np.isfinite(auc), sampling, np.nan)),
    )
