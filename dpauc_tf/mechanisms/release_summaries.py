"""Partial AUC, operating points, average precision and calibration of a released curve, each
with an interval: post-processing of one [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]
(no extra privacy cost).

The numbers are computed from the release's public fields only: its (summed) counts
``noisy_counts`` projected to non-negative bucket counts as the mechanism projects its curve
(`dpauc_tf.mechanisms.intervals.projected_histogram`), then
[`dpauc_tf.core.curve_summaries`][] and [`dpauc_tf.core.calibration`][] (whose bins must be
unions of the release's buckets: a bin that splits a bucket is refused). So every backend that
returns an ``AUCResult`` with its release gets them.

Intervals (``docs/evaluation_metrics.md`` has the formulas and the measured coverage):

* privacy noise: the delta method through the release, ``sum_i var_i (d x / d r_i)^2`` with
  the mechanism's stated per-entry noise variances
  (`dpauc_tf.mechanisms.intervals.release_noise_variances`) and the gradient of the number
  ``x`` with respect to the released entries ``r_i`` (its gradient with respect to the bucket
  counts, at the projected counts, pulled back through the linear map from the release to the
  bucket counts);
* sampling error (``target="population"``): binomial for a rate at a fixed threshold or in a
  fixed bin; for the partial AUC and the average precision the jackknife of the projected
  counts (leave one example out of each occupied bucket and class: the class sizes vary as
  between test sets, which the average precision depends on; deterministic);
* a reliability bin's positive rate: its released positives before the projection (an
  unbiased sum whose noise is exactly the stated one, `released_bucket_counts`) over its
  public number of examples, clipped to [0, 1];
* rates: Wilson's interval with the privacy variance added (``rate_interval``); the
  partial AUC and the ECE: ``x +- z sqrt(privacy + sampling)``, clipped to [0, 1]; the
  average precision: the same on the logit scale.

Examples:
    >>> import numpy as np
    >>> from dpauc_tf.mechanisms.release import ReleaseSpec, finish_release
    >>> spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=5)
    >>> pos, neg = np.array([[0., 0., 1., 3., 6., 0.]]), np.array([[0., 6., 3., 1., 0., 0.]])
    >>> result = finish_release(spec, {"pos": pos, "neg": neg}, num_examples=20.0)
    >>> summary = summarize_release(result, spec.build(), spec.count_grid(), max_fpr=0.5)
    >>> round(float(summary.partial_auc.value[0]), 4), round(float(summary.average_precision.value[0]), 4)
    (0.9467, 0.9414)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import stats

from dpauc_tf.core import calibration, curve_summaries
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.laws import IntervalTarget

_STEP = 1e-3  # central-difference step (in counts) for gradients of pAUC and AP


@dataclasses.dataclass(frozen=True)
class SummaryInterval:
    """One number of every release ``[R]`` with its interval.

    Attributes:
      value: the estimate (NaN where undefined).
      low: the interval's lower bound (NaN where undefined or not asked).
      high: its upper bound.
      privacy_variance: the variance the privacy noise adds.
      sampling_variance: the sampling variance (0 for ``target="sample"``).

    Examples:
        >>> s = SummaryInterval(np.array([0.5]), np.array([0.4]), np.array([0.6]),
        ...                     np.array([1e-3]), np.array([0.0]))
        >>> s.to_dict(0)["ci_low"]
        0.4
    """

    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    privacy_variance: np.ndarray
    sampling_variance: np.ndarray

    def to_dict(self, repeat: int = 0) -> dict[str, Any]:
        """One release's number, bounds and standard deviations (``None`` for NaN)."""
        return {
            "value": _plain(self.value[repeat]),
            "ci_low": _plain(self.low[repeat]),
            "ci_high": _plain(self.high[repeat]),
            "privacy_std": _plain(math.sqrt(max(float(self.privacy_variance[repeat]), 0.0))),
            "sampling_se": _plain(math.sqrt(max(float(self.sampling_variance[repeat]), 0.0))),
        }


@dataclasses.dataclass(frozen=True)
class OperatingPointSummary:
    """An operating point on the private curve: the threshold and the rates achieved there.

    Attributes:
      target: the rate asked for (``tpr_at_fpr``: the largest false-positive rate allowed;
        ``fpr_at_tpr``: the smallest recall required).
      threshold: the chosen threshold of every release ``[R]``.
      cut: how many of the highest buckets that threshold predicts positive ``[R]`` (-1
        where undefined).
      tpr: the recall achieved at that threshold, with its interval.
      fpr: the false-positive rate achieved at that threshold, with its interval.
    """

    target: float
    threshold: np.ndarray
    cut: np.ndarray
    tpr: SummaryInterval
    fpr: SummaryInterval


@dataclasses.dataclass(frozen=True)
class CalibrationSummary:
    """The reliability table of every release and its ECE.

    Attributes:
      num_bins: the number of equal-width bins.
      table: the [`ReliabilityTable`][dpauc_tf.core.calibration.ReliabilityTable].
      rate_low: the lower bound of every bin's positive rate ``[R, B]``.
      rate_high: its upper bound.
      ece: the expected calibration error, with its interval.
    """

    num_bins: int
    table: calibration.ReliabilityTable
    rate_low: np.ndarray
    rate_high: np.ndarray
    ece: SummaryInterval

    def bins(self, repeat: int = 0) -> list[dict[str, Any]]:
        """One JSON-ready object per bin: its edges, examples, mean score, positive rate and
        the rate's interval (``None`` for an empty bin)."""
        t = self.table
        return [
            {
                "low": k / self.num_bins,
                "high": (k + 1) / self.num_bins,
                "count": float(t.counts[repeat, k]),
                "mean_score": _plain(t.mean_score[repeat, k]),
                "positive_rate": _plain(t.positive_rate[repeat, k]),
                "ci_low": _plain(self.rate_low[repeat, k]),
                "ci_high": _plain(self.rate_high[repeat, k]),
            }
            for k in range(self.num_bins)
        ]


@dataclasses.dataclass(frozen=True)
class ReleaseSummaries:
    """What [`summarize_release`][] computed (``None`` for what was not asked).

    Attributes:
      confidence: the intervals' nominal coverage (``None``: no intervals).
      target: ``"population"`` or ``"sample"``.
      max_fpr: the partial AUC's bound.
      partial_auc: McClish-standardised partial AUC.
      tpr_at_fpr: the operating point at a false-positive rate.
      fpr_at_tpr: the operating point at a recall.
      average_precision: scikit-learn's step-sum average precision.
      calibration: the reliability table and ECE.
    """

    confidence: float | None
    target: str
    max_fpr: float | None = None
    partial_auc: SummaryInterval | None = None
    tpr_at_fpr: OperatingPointSummary | None = None
    fpr_at_tpr: OperatingPointSummary | None = None
    average_precision: SummaryInterval | None = None
    calibration: CalibrationSummary | None = None

    @property
    def num_releases(self) -> int:
        """How many releases the numbers are of (0 where none was asked)."""
        for name in ("partial_auc", "average_precision"):
            number = getattr(self, name)
            if number is not None:
                return int(np.shape(number.value)[0])
        for name in ("tpr_at_fpr", "fpr_at_tpr"):
            point = getattr(self, name)
            if point is not None:
                return int(np.shape(point.tpr.value)[0])
        if self.calibration is not None:
            return int(np.shape(self.calibration.ece.value)[0])
        return 0

    def to_dicts(self) -> list[dict[str, Any]]:
        """Every release's numbers (``to_dict`` of each), in release order."""
        return [self.to_dict(repeat) for repeat in range(self.num_releases)]

    def to_dict(self, repeat: int = 0) -> dict[str, Any]:
        """The first (or ``repeat``-th) release's numbers as plain JSON values."""
        out: dict[str, Any] = {}
        if self.partial_auc is not None:
            out["partial_auc"] = {"max_fpr": self.max_fpr, **self.partial_auc.to_dict(repeat)}
        for name in ("tpr_at_fpr", "fpr_at_tpr"):
            point = getattr(self, name)
            if point is not None:
                out[name] = {
                    "target": point.target,
                    "threshold": _plain(point.threshold[repeat], keep_infinite=True),
                    "tpr": point.tpr.to_dict(repeat),
                    "fpr": point.fpr.to_dict(repeat),
                }
        if self.average_precision is not None:
            out["average_precision"] = self.average_precision.to_dict(repeat)
        if self.calibration is not None:
            out["ece"] = {
                "num_bins": self.calibration.num_bins,
                **self.calibration.ece.to_dict(repeat),
            }
            out["reliability"] = self.calibration.bins(repeat)
        if out:
            out["summary_confidence"] = self.confidence
            out["summary_ci_target"] = self.target
        return out


def _plain(value: Any, keep_infinite: bool = False) -> float | str | None:
    value = float(value)
    if math.isnan(value):
        return None
    if math.isinf(value):
        return ("inf" if value > 0 else "-inf") if keep_infinite else None
    return value


# -- checks ---------------------------------------------------------------------------------
def check_summarizable(
    mechanism, what: str = "these numbers", hint: str = "--mechanism histogram"
) -> None:
    """Refuses (one line) a mechanism whose release is no curve of bucket counts; ``hint``
    says how to pass a curve mechanism where the caller is (a flag, a keyword)."""
    if mechanism.capabilities.releases != "curve":
        raise ValueError(
            f"mechanism {mechanism.name!r} releases only the AUC, no curve: {what} need a "
            f"curve mechanism (e.g. {hint})"
        )
    if mechanism.capabilities.transforms_data:
        raise ValueError(
            f"mechanism {mechanism.name!r} counts noisy scores: {what} of its curve would "
            "describe the noisy scores, not the model"
        )


# -- the delta method through the release -------------------------------------------------
def _histogram_kind(mechanism) -> str:
    """How the bucket counts follow from the release: ``"none"`` (they are the release),
    ``"rr"`` (debiased flipped counts), ``"tree"`` (least-squares leaves) or ``"confusion"``
    (the suffix sums the mechanism releases, ``released_confusion``). Public names only."""
    from dpauc_tf.mechanisms.none import NoNoise
    from dpauc_tf.mechanisms.randomized_response import RandomizedResponse
    from dpauc_tf.mechanisms.tree import TreeHistogram

    if isinstance(mechanism, NoNoise):
        return "none"
    if isinstance(mechanism, RandomizedResponse):
        return "rr"
    if isinstance(mechanism, TreeHistogram):
        return "tree"
    return "confusion"


def _release_histogram(mechanism, kind: str, tensors: dict):
    """The bucket counts ``pos, neg [..., T + 1]`` as a differentiable (linear) function of
    the release, before any projection."""
    import tensorflow as tf

    from dpauc_tf.core.curve import confusion_from_histogram

    if kind == "none":
        confusion = confusion_from_histogram(tensors["pos"], tensors["neg"])
    elif kind == "rr":
        p = mechanism.flip_probability
        total = tensors["pos"] + tensors["neg"]
        pos = (tensors["pos"] * (1 - p) - tensors["neg"] * p) / (1 - 2 * p)
        return pos, total - pos
    elif kind == "tree":
        confusion = confusion_from_histogram(*mechanism.leaves(tensors))
    else:
        confusion = mechanism.released_confusion(tensors)
    out = []
    for above, below in ((confusion.tp, confusion.fn), (confusion.fp, confusion.tn)):
        total = above[..., :1] + below[..., :1]
        padded = tf.concat([total, above, tf.zeros_like(total)], -1)
        out.append(padded[..., :-1] - padded[..., 1:])
    return out[0], out[1]


def released_bucket_counts(mechanism, release: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The bucket counts ``pos, neg [R, T + 1]`` as the release's linear, unbiased estimate,
    before the projection to non-negative monotone counts: what a reliability bin's positive
    rate reads (the sum of a bin's released positives over its public number of examples,
    clipped to [0, 1] by [`dpauc_tf.core.calibration.reliability`][]). Projecting first
    removes part of the noise of a near-empty bin and moves its rate away from 0, so the
    delta method's stated spread no longer described it (``docs/evaluation_metrics.md``,
    Coverage). Without noise it equals the projected counts.

        >>> from dpauc_tf.mechanisms import get_mechanism
        >>> m = get_mechanism("histogram", epsilon=1.0, num_thresholds=3)
        >>> pos, neg = released_bucket_counts(m, {"pos": [[-2.0, 1.5, 4.0, 0.5]], "neg": [[3.0, 2.0, -1.0, 0.0]]})
        >>> pos.tolist(), neg.tolist()
        ([[-2.0, 1.5, 4.0, 0.5]], [[3.0, 2.0, -1.0, 0.0]])
    """
    import tensorflow as tf

    tensors = {
        key: tf.constant(np.atleast_2d(np.asarray(value, np.float64)))
        for key, value in release.items()
    }
    pos, neg = _release_histogram(mechanism, _histogram_kind(mechanism), tensors)
    return np.asarray(pos, np.float64), np.asarray(neg, np.float64)


class _DeltaMethod:
    """``var(x) = sum_i var_i (J^T g)_i^2`` for the gradient ``g`` of a number with respect
    to the bucket counts; one instance per release (its noise law, watched entries)."""

    def __init__(self, mechanism, release: dict[str, np.ndarray], copies: float):
        from dpauc_tf.mechanisms import intervals

        self.inner = mechanism
        self.kind = _histogram_kind(mechanism)
        self.copies = copies
        self.supported = True
        try:
            intervals.check_interval_support(mechanism)
        except ValueError as error:
            self.supported = False
            self.reason = str(error)
            return
        from dpauc_tf.mechanisms.weight_bound import WeightBounded

        if isinstance(mechanism, WeightBounded):  # counts in units of max_weight: not yet
            self.supported = False
            self.reason = "intervals of weight-bounded releases are not derived yet"
            return
        self.laws = intervals.release_noise_variances(self.inner, release)
        self.release = {k: np.asarray(v, np.float64) for k, v in release.items()}

    def _covariance(self) -> np.ndarray:
        """The noise covariance ``[R, 2 (T + 1), 2 (T + 1)]`` of the bucket counts
        ``(pos, neg)``: ``J S J^T``, with ``J`` read off the (affine) map from the release
        to the bucket counts by moving one released entry at a time (one batched call per
        released key); computed once per release."""
        if getattr(self, "_cov", None) is not None:
            return self._cov
        import tensorflow as tf

        def histogram(release):
            tensors = {k: tf.constant(v) for k, v in release.items()}
            pos, neg = _release_histogram(self.inner, self.kind, tensors)
            pos, neg = pos.numpy(), neg.numpy()
            return np.concatenate([pos, neg], -1)

        base = histogram(self.release)  # [R, 2B]
        rows, size = base.shape
        cov = np.zeros((rows, size, size))
        for key, law in self.laws.items():
            if not np.any(law):  # no noise on this entry (e.g. mechanism "none")
                continue
            value = self.release[key]
            entries = int(np.prod(value.shape[1:]))
            eye = np.eye(entries).reshape((entries, 1, *value.shape[1:]))
            moved = {k: np.broadcast_to(v, (entries, *v.shape)) for k, v in self.release.items()}
            moved[key] = value[None] + eye
            if self.kind == "rr":  # a flip moves one unit from neg to pos: the total stays
                moved["neg"] = self.release["neg"][None] - eye
            jac = histogram(moved) - base[None]  # [E, R, 2B]
            jac = np.transpose(jac, (1, 2, 0))  # [R, 2B, E]
            law = np.broadcast_to(np.asarray(law, np.float64), value.shape).reshape(rows, -1)
            cov += np.matmul(jac * law[:, None, :], np.transpose(jac, (0, 2, 1)))
        self._cov = cov
        return cov

    def variance(self, grad_pos: np.ndarray, grad_neg: np.ndarray) -> np.ndarray:
        """The variance ``[R]`` of a number whose gradient with respect to the bucket counts
        is ``grad_pos, grad_neg [R, T + 1]``."""
        cov = self._covariance()
        rows = cov.shape[0]
        g = np.concatenate(
            [np.broadcast_to(grad_pos, (rows, cov.shape[1] // 2)),
             np.broadcast_to(grad_neg, (rows, cov.shape[1] // 2))], -1
        )  # fmt: skip
        return self.copies * np.einsum("ri,rij,rj->r", g, cov, g)


def _numeric_gradient(function, pos: np.ndarray, neg: np.ndarray):
    """Central differences of ``function(pos, neg) -> [R]`` in every bucket count."""
    rows, size = pos.shape
    out = []
    for which in (0, 1):
        eye = np.eye(size) * _STEP
        grads = np.zeros((rows, size))
        for r in range(rows):
            base = [np.repeat(pos[r : r + 1], size, 0), np.repeat(neg[r : r + 1], size, 0)]
            up, down = [b.copy() for b in base], [b.copy() for b in base]
            up[which] += eye
            down[which] -= eye
            grads[r] = (function(*up) - function(*down)) / (2 * _STEP)
        out.append(np.nan_to_num(grads))
    return out


def _jackknife_variances(
    function, pos: np.ndarray, neg: np.ndarray, num_examples: float | None, logit: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The jackknife's sampling variance ``[R]`` of ``function(pos, neg) -> [R]`` (and of its
    logit with ``logit=True``; else the second is the first): leave one example out of each
    occupied cell (bucket and class), ``var = (n - 1) / n sum_i c_i (x_(i) - x_(.))^2`` with
    ``x_(.)`` the count-weighted mean of the leave-one-out values ``x_(i)``.

    All examples are left out alike, so the class sizes vary as between test sets drawn
    from the population (the average precision depends on the prevalence). A cell holding
    less than one example (a projected noisy count) is moved by its count and the change
    scaled to one example. ``num_examples`` (public) sets ``n`` where given (the projected
    counts of a noisy release do not sum to it exactly: the variance scales as ``1 / n``). NaN
    where a leave-one-out value is undefined (e.g. the only positive left out) or ``n <= 1``.
    """
    rows, size = pos.shape
    linear = np.full(rows, np.nan)
    logits = np.full(rows, np.nan)
    for r in range(rows):
        cells = np.concatenate([pos[r], neg[r]])
        total = cells.sum()
        occupied = np.flatnonzero(cells > 0)
        n = total if num_examples is None else float(num_examples)
        value = function(pos[r : r + 1], neg[r : r + 1])[0]
        if n <= 1 or total <= 1 or not np.isfinite(value):
            continue
        step = np.minimum(cells[occupied], 1.0)
        moved = np.repeat(cells[None], occupied.size, 0)
        moved[np.arange(occupied.size), occupied] -= step
        left_out = function(moved[:, :size], moved[:, size:])
        if not np.all(np.isfinite(left_out)):
            continue
        weights = cells[occupied]
        scale = total / n  # the variance of a test set of n examples, not of `total`
        linear[r] = scale * _jackknife_spread(value, left_out, step, weights, total)
        if logit:
            left = _logit(left_out)
            logits[r] = scale * _jackknife_spread(_logit(value), left, step, weights, total)
    return linear, (logits if logit else linear)


def _jackknife_spread(value, left_out, step, weights, n) -> float:
    """``(n - 1) / n sum_i w_i (x_(i) - x_(.))^2`` of the leave-one-out values, each
    scaled to the removal of one whole example (``step`` of its cell)."""
    one = value - (value - left_out) / step
    mean = np.sum(weights * one) / n
    return float((n - 1.0) / n * np.sum(weights * (one - mean) ** 2))


_LOGIT_CLIP = 1e-6  # keeps the logit of a value at 0 or 1 finite


def _logit(value: np.ndarray) -> np.ndarray:
    value = np.clip(value, _LOGIT_CLIP, 1.0 - _LOGIT_CLIP)
    return np.log(value / (1.0 - value))


def _expit(value: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-value))


def _logit_interval(value, privacy, sampling, logit_sampling, confidence, target):
    """The average precision's interval: ``x +- z sqrt(privacy)`` for ``target="sample"``;
    for ``"population"`` on the logit scale, ``expit(logit(x) +- z sqrt(privacy / (x (1 -
    x))^2 + s))`` with ``s`` the jackknife's variance of ``logit(x)`` (the step sum is
    skewed near 1 on a finite test set). ``sampling_variance`` is the jackknife's of ``x``."""
    linear = _interval(value, privacy, sampling, confidence, target)
    if confidence is None or target == "sample":
        return linear
    value = np.asarray(value, np.float64)
    privacy = np.broadcast_to(np.asarray(privacy, np.float64), value.shape)
    logit_sampling = np.broadcast_to(np.asarray(logit_sampling, np.float64), value.shape)
    z = stats.norm.ppf(0.5 + confidence / 2)
    ok = np.isfinite(value) & np.isfinite(privacy) & np.isfinite(logit_sampling)
    safe = np.where(ok, value, 0.5)
    slope = np.clip(safe * (1.0 - safe), _LOGIT_CLIP, None)
    spread = np.sqrt(np.where(ok, privacy, 0.0) / slope**2 + np.where(ok, logit_sampling, 0.0))
    center = _logit(safe)
    low = np.where(ok, _expit(center - z * spread), linear.low)
    high = np.where(ok, _expit(center + z * spread), linear.high)
    return dataclasses.replace(linear, low=low, high=high)


def _interval(value, privacy, sampling, confidence, target, low=0.0, high=1.0) -> SummaryInterval:
    """``x +- z sqrt(privacy + sampling)`` (sampling 0 for ``target="sample"``), clipped to
    ``[low, high]``; NaN bounds where ``x`` is undefined or no ``confidence`` was asked."""
    value = np.asarray(value, np.float64)
    privacy = np.broadcast_to(np.asarray(privacy, np.float64), value.shape)
    sampling = np.broadcast_to(np.asarray(sampling, np.float64), value.shape)
    if target == "sample":
        sampling = np.zeros_like(value)
    defined = np.isfinite(value)
    if confidence is None:
        nan = np.full(value.shape, np.nan)
        return SummaryInterval(value, nan, nan, privacy, sampling)
    z = stats.norm.ppf(0.5 + confidence / 2)
    total = privacy + sampling
    finite = np.isfinite(total)
    half = np.where(finite, z * np.sqrt(np.where(finite, np.maximum(total, 0.0), 0.0)), np.inf)
    return SummaryInterval(
        value=value,
        low=np.where(defined, np.clip(value - half, low, high), np.nan),
        high=np.where(defined, np.clip(value + half, low, high), np.nan),
        privacy_variance=np.where(defined, privacy, np.nan),
        sampling_variance=np.where(defined, sampling, np.nan),
    )


def rate_interval(
    rate: np.ndarray,
    privacy: np.ndarray | float,
    size: np.ndarray | float,
    confidence: float | None,
    target: str = "population",
) -> SummaryInterval:
    """The interval of a rate ``r`` over ``size`` examples ``m`` (a bin's positive rate, a
    recall or a false-positive rate at a fixed threshold) whose privacy noise has variance
    ``privacy`` (``v``, in rate units). ``target="sample"``: ``r +- z sqrt(v)``.
    ``"population"``: Wilson's interval with the privacy variance added, the rates ``p``
    with ``(r - p)^2 <= z^2 (p (1 - p) / m + v)``:

        ``p = (2 r + q +- z sqrt(4 r (1 - r) / m + q / m + 4 v (1 + q))) / (2 (1 + q))``,
        ``q = z^2 / m``

    (Wilson's for ``v = 0``; a normal interval centred on ``r`` undercovers a rate near 0
    or 1 in a bin of a few dozen examples). ``r`` is taken as released, unclipped (a noisy
    rate may lie below 0 or above 1); the bounds are clipped to [0, 1]; NaN bounds where ``r`` is
    undefined or ``confidence`` is ``None``. ``sampling_variance`` reports Agresti and
    Coull's [`binomial_variance`][].

        >>> ci = rate_interval(np.array([0.0]), 0.0, 20.0, 0.95)
        >>> round(float(ci.low[0]), 4), round(float(ci.high[0]), 4)
        (0.0, 0.1611)
    """
    rate = np.asarray(rate, np.float64)
    size = np.broadcast_to(np.asarray(size, np.float64), rate.shape)
    sampling = binomial_variance(rate, size)
    linear = _interval(rate, privacy, sampling, confidence, target)
    if confidence is None or target == "sample":
        return linear
    z = stats.norm.ppf(0.5 + confidence / 2)
    privacy = np.broadcast_to(np.asarray(privacy, np.float64), rate.shape)
    ok = np.isfinite(rate) & (size > 0) & np.isfinite(privacy)
    # r unclipped: a noisy rate below 0 (or above 1) is evidence too, and clipping it first
    # would make every such release cover a rate near 0 (near-empty bins over-covered)
    r = np.where(ok, rate, 0.5)
    m = np.where(ok, size, 1.0)
    v = np.where(ok, np.maximum(privacy, 0.0), 0.0)
    q = z * z / m
    # no p at all where (r - p)^2 > z^2 (p (1 - p) / m + v) everywhere: the one p closest to it
    discriminant = np.maximum(4.0 * r * (1.0 - r) / m + q / m + 4.0 * v * (1.0 + q), 0.0)
    half = z * np.sqrt(discriminant)
    low = np.clip((2.0 * r + q - half) / (2.0 * (1.0 + q)), 0.0, 1.0)
    high = np.clip((2.0 * r + q + half) / (2.0 * (1.0 + q)), 0.0, 1.0)
    return dataclasses.replace(
        linear, low=np.where(ok, low, linear.low), high=np.where(ok, high, linear.high)
    )


def binomial_variance(rate: np.ndarray, size: np.ndarray) -> np.ndarray:
    """The sampling variance of a rate over ``size`` examples, Agresti-Coull's
    ``r~ (1 - r~) / (m + 4)`` with ``r~ = (r m + 2) / (m + 4)``: Wald's ``r (1 - r) / m``
    is 0 at a rate of 0 or 1, where a bin of a few examples most often lies (NaN for
    ``m = 0``).

        >>> round(float(binomial_variance(np.array(0.0), np.array(16.0))), 6)
        0.0045
    """
    rate = np.asarray(rate, np.float64)
    size = np.asarray(size, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        shrunk = (np.clip(rate, 0.0, 1.0) * size + 2.0) / (size + 4.0)
        return np.where(size > 0, shrunk * (1.0 - shrunk) / (size + 4.0), np.nan)


def _rate_gradients(tp_mask: np.ndarray, pos: np.ndarray, rate: np.ndarray):
    """The gradient of ``sum(pos * mask) / sum(pos)`` in ``pos`` ``[R, T + 1]``."""
    total = pos.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nan_to_num((tp_mask - rate[:, None]) / total)


def _operating_point(point, pos, neg, target_rate, delta, confidence, target):
    """The threshold and the two rates achieved there, each with its interval."""
    size = pos.shape[-1]
    cut = np.where(point.cut >= 0, point.cut, 0)
    # cut i predicts the i highest buckets positive
    mask = (np.arange(size)[None, :] >= (size - cut)[:, None]).astype(np.float64)
    num_pos, num_neg = pos.sum(-1), neg.sum(-1)
    zeros = np.zeros_like(pos)
    estimates = []
    for rate, counts, total in ((point.tpr, pos, num_pos), (point.fpr, neg, num_neg)):
        grad = _rate_gradients(mask, counts, np.nan_to_num(rate))
        if delta.supported:
            grads = (grad, zeros) if counts is pos else (zeros, grad)
            privacy = delta.variance(*grads)
        else:
            privacy = np.full(rate.shape, np.nan)
        estimates.append(
            rate_interval(rate, privacy, total, confidence if delta.supported else None, target)
        )
    return OperatingPointSummary(
        target_rate, point.threshold, point.cut, estimates[0], estimates[1]
    )


# -- the entry point ------------------------------------------------------------------------
def summarize_release(
    result,
    mechanism,
    thresholds: Thresholds,
    *,
    num_examples: float | None = None,
    max_fpr: float | None = None,
    tpr_at_fpr: float | None = None,
    fpr_at_tpr: float | None = None,
    average_precision: bool = True,
    calibration_bins: int | None = None,
    bucket_scores: calibration.BucketScores | None = None,
    confidence: float | None = 0.95,
    target: str = "population",
) -> ReleaseSummaries:
    """The numbers asked for, of every release in ``result``, with intervals.

    Args:
      result: an ``AUCResult`` with its release (``noisy_counts``).
      mechanism: the mechanism the release was drawn with (as for ``with_interval``).
      thresholds: the grid the clients counted on (``spec.count_grid()``).
      num_examples: the (public) number of examples counted; default ``result.num_examples``.
        It sets the size of the test set that the sampling variance of the partial AUC and
        the average precision is for (a noisy release's projected counts do not sum to it
        exactly); without either, the projected counts' total.
      max_fpr: the partial AUC's bound in ``(0, 1]``.
      tpr_at_fpr: the false-positive rate (in ``[0, 1]``) of the operating point.
      fpr_at_tpr: the recall (in ``[0, 1]``) of the operating point.
      average_precision: also scikit-learn's average precision.
      calibration_bins: the number of equal-width bins of the reliability table; needs
        ``bucket_scores`` (label-free per-bucket statistics of the scores on ``thresholds``).
      confidence: the intervals' coverage (``None``: values only).
      target: ``"population"`` (noise and sampling error) or ``"sample"`` (noise only).

    Raises:
      ValueError: one line, where a number cannot come from this release (no curve, bins
        that split the buckets, a bad rate, scores of another grid).
    """
    from dpauc_tf.mechanisms.intervals import (
        check_confidence,
        noise_copies,
        projected_histogram,
    )

    check_summarizable(mechanism)
    target = IntervalTarget(target)
    confidence = check_confidence(confidence)
    if max_fpr is not None:
        max_fpr = curve_summaries.check_rate(max_fpr, "max_fpr")
    if tpr_at_fpr is not None:
        tpr_at_fpr = curve_summaries.check_rate(tpr_at_fpr, "fpr", allow_zero=True)
    if fpr_at_tpr is not None:
        fpr_at_tpr = curve_summaries.check_rate(fpr_at_tpr, "tpr", allow_zero=True)
    bins = None
    if calibration_bins is not None:
        if bucket_scores is None:
            raise ValueError("calibration needs the label-free per-bucket scores (bucket_scores)")
        bins = calibration.calibration_bins(thresholds, calibration_bins)
        if bucket_scores.counts.size != thresholds.num_buckets:
            raise ValueError(
                f"the scores were counted on {bucket_scores.counts.size} buckets, the release "
                f"on {thresholds.num_buckets}: they must come from the same grid"
            )
    if not result.noisy_counts:
        raise ValueError("the result carries no release counts to summarize")
    if num_examples is None:
        num_examples = result.num_examples
    if num_examples is not None:
        num_examples = float(num_examples)
        if not math.isfinite(num_examples) or num_examples < 0:
            raise ValueError(f"num_examples must be a count >= 0, got {num_examples!r}")
    release = {k: np.atleast_2d(np.asarray(v, np.float64)) for k, v in result.noisy_counts.items()}
    pos, neg = projected_histogram(mechanism, release)
    pos, neg = np.atleast_2d(pos), np.atleast_2d(neg)
    if pos.shape[-1] != thresholds.num_buckets:
        raise ValueError(
            f"the release has {pos.shape[-1]} buckets, the grid {thresholds.num_buckets}: "
            "pass the grid the release was counted on (spec.count_grid())"
        )
    copies = noise_copies(mechanism, result.num_clients, result.num_reporting)
    delta = _DeltaMethod(mechanism, release, copies)
    level = confidence if delta.supported else None
    values = thresholds.as_array()
    out: dict[str, Any] = {}
    if max_fpr is not None:

        def pauc(p, n):
            return curve_summaries.partial_auc(p, n, max_fpr)

        value = pauc(pos, neg)
        privacy = delta.variance(*_numeric_gradient(pauc, pos, neg)) if delta.supported else np.nan
        sampling = (
            _jackknife_variances(pauc, pos, neg, num_examples)[0] if target == "population" else 0.0
        )
        out["max_fpr"] = max_fpr
        out["partial_auc"] = _interval(value, privacy, sampling, level, target)
    if tpr_at_fpr is not None:
        point = curve_summaries.tpr_at_fpr(pos, neg, values, tpr_at_fpr)
        out["tpr_at_fpr"] = _operating_point(point, pos, neg, tpr_at_fpr, delta, level, target)
    if fpr_at_tpr is not None:
        point = curve_summaries.fpr_at_tpr(pos, neg, values, fpr_at_tpr)
        out["fpr_at_tpr"] = _operating_point(point, pos, neg, fpr_at_tpr, delta, level, target)
    if average_precision:
        ap = curve_summaries.average_precision
        value = ap(pos, neg)
        privacy = delta.variance(*_numeric_gradient(ap, pos, neg)) if delta.supported else np.nan
        if target == "population":
            sampling, logit_sampling = _jackknife_variances(ap, pos, neg, num_examples, True)
        else:
            sampling = logit_sampling = 0.0
        out["average_precision"] = _logit_interval(
            value, privacy, sampling, logit_sampling, level, target
        )
    if bins is not None:  # a bin's rate reads the release before the projection
        out["calibration"] = _calibration(
            released_bucket_counts(mechanism, release)[0],
            bucket_scores,
            bins,
            calibration_bins,
            delta,
            level,
            target,
        )
    return ReleaseSummaries(confidence=level, target=target.value, **out)


def folded_variance_share(gap: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """``var(|X|) / var(X)`` for ``X ~ N(gap, variance)``, the estimated gap plugged in
    (1 where the variance is 0 or unknown): the share of a bin's noise that the ECE's
    ``|mean score - rate|`` keeps. It is 1 for a gap far outside the noise and ``1 - 2 / pi``
    for a gap of 0; the delta method's ``sign(gap)^2 = 1`` counted all of it, and the ECE's
    interval over-covered (``docs/evaluation_metrics.md``, Coverage).

        >>> folded_variance_share(np.array([0.0, 10.0]), np.array([1.0, 1.0])).round(4).tolist()
        [0.3634, 1.0]
    """
    gap = np.asarray(gap, np.float64)
    variance = np.broadcast_to(np.asarray(variance, np.float64), gap.shape)
    ok = np.isfinite(gap) & np.isfinite(variance) & (variance > 0)
    sigma = np.sqrt(np.where(ok, variance, 1.0))
    g = np.where(ok, gap, 0.0)
    mean_abs = sigma * math.sqrt(2.0 / math.pi) * np.exp(-0.5 * (g / sigma) ** 2) + g * (
        1.0 - 2.0 * stats.norm.cdf(-g / sigma)
    )
    share = (g * g + sigma * sigma - mean_abs * mean_abs) / (sigma * sigma)
    return np.where(ok, np.clip(share, 0.0, 1.0), 1.0)


def _calibration(pos, scores, bins, num_bins, delta, confidence, target) -> CalibrationSummary:
    """The reliability table, every bin's rate interval and the ECE's."""
    table = calibration.reliability(pos, scores, bins, num_bins)
    rows = pos.shape[0]
    counts = table.counts
    rate = table.positive_rate  # clipped to [0, 1]; the interval reads the unclipped rate
    with np.errstate(invalid="ignore", divide="ignore"):
        released_rate = np.where(
            counts > 0, calibration.bin_sums(pos, bins, num_bins) / counts, np.nan
        )
    zeros = np.zeros_like(pos)
    privacy = np.full((rows, num_bins), np.nan)
    if delta.supported:
        for k in range(num_bins):
            if counts[0, k] > 0:
                grad = np.broadcast_to((bins == k) / counts[0, k], pos.shape)
                privacy[:, k] = delta.variance(grad, zeros)
    sampling = binomial_variance(rate, counts)
    rates = [
        rate_interval(released_rate[:, k], privacy[:, k], counts[:, k], confidence, target)
        for k in range(num_bins)
    ]
    # the ECE: d/d pos[b] = -share_k sign(s_k - r_k) / m_k for b in bin k; each bin's privacy
    # term scaled by the share of its variance that |gap| keeps (folded_variance_share). The
    # sampling term stays the plain delta method's: folded too, the noise-free interval
    # under-covered (the ECE's upward bias in small bins was no longer covered; docs).
    shares = table.shares
    gap = table.mean_score - rate
    spread = privacy + (sampling if target == "population" else 0.0)
    keep = folded_variance_share(gap, spread)
    with np.errstate(invalid="ignore", divide="ignore"):
        sign = np.nan_to_num(np.sign(gap)) * np.sqrt(keep)
        per_bin = np.where(counts > 0, -shares * sign / np.where(counts > 0, counts, 1.0), 0.0)
    ece_privacy = np.full(rows, np.nan)
    if delta.supported:
        ece_privacy = delta.variance(per_bin[:, bins], zeros)
    ece_sampling = np.nansum(shares**2 * np.nan_to_num(sampling), -1)
    ece = _interval(table.ece, ece_privacy, ece_sampling, confidence, target)
    return CalibrationSummary(
        num_bins=num_bins,
        table=table,
        rate_low=np.stack([r.low for r in rates], -1),
        rate_high=np.stack([r.high for r in rates], -1),
        ece=ece,
    )


@dataclasses.dataclass(frozen=True)
class CurveBands:
    """The first release's ROC and precision-recall curves (the projected counts' cuts),
    with a pointwise interval of the recall at every threshold of ``cuts``.

    Attributes:
      fpr: false-positive rate of every cut ``[T + 2]``.
      tpr: recall of every cut.
      precision: precision of every cut (NaN where nothing is predicted positive).
      cuts: the cuts that carry an interval (at most ``max_points``).
      tpr_low: the recall's lower bound at those cuts.
      tpr_high: its upper bound.
    """

    fpr: np.ndarray
    tpr: np.ndarray
    precision: np.ndarray
    cuts: np.ndarray
    tpr_low: np.ndarray
    tpr_high: np.ndarray


def curve_bands(
    result,
    mechanism,
    *,
    confidence: float = 0.95,
    target: str = "population",
    max_points: int = 60,
) -> CurveBands:
    """The first release's curves and the recall's pointwise interval at fixed thresholds
    (privacy noise by the delta method, binomial sampling error); post-processing."""
    from dpauc_tf.mechanisms.intervals import noise_copies, projected_histogram

    check_summarizable(mechanism, "curves")
    target = IntervalTarget(target)
    release = {
        k: np.atleast_2d(np.asarray(v, np.float64))[:1] for k, v in result.noisy_counts.items()
    }
    pos, neg = projected_histogram(mechanism, release)
    pos, neg = np.atleast_2d(pos)[:1], np.atleast_2d(neg)[:1]
    fpr, tpr = curve_summaries.roc_points(pos, neg)
    tp, fp = curve_summaries.cut_counts(pos, neg)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / np.where(tp + fp > 0, tp + fp, 1.0), np.nan)
    size = pos.shape[-1]
    cuts = np.unique(np.linspace(0, size, min(max_points, size + 1)).round().astype(int))
    delta = _DeltaMethod(
        mechanism, release, noise_copies(mechanism, result.num_clients, result.num_reporting)
    )
    low, high = [], []
    zeros = np.zeros_like(pos)
    for cut in cuts:
        mask = (np.arange(size)[None, :] >= size - cut).astype(np.float64)
        rate = tpr[:, cut]
        privacy = (
            delta.variance(_rate_gradients(mask, pos, np.nan_to_num(rate)), zeros)
            if delta.supported
            else np.full(1, np.nan)
        )
        level = confidence if delta.supported else None
        band = rate_interval(rate, privacy, pos.sum(-1), level, target)
        low.append(band.low[0])
        high.append(band.high[0])
    return CurveBands(fpr[0], tpr[0], precision[0], cuts, np.array(low), np.array(high))
