"""Private paired comparison of two models' AUCs on one labelled test set.

Two models A and B score the same ``n`` examples; the labels are private. One release of a
**joint** statistic answers "is B's AUC different from A's?" with the difference, its
interval and a p-value, paired as DeLong's test is (it uses the correlation of the two
models' scores).

**The release.** Each model's scores are cut into ``num_buckets`` buckets (by default at
quantiles of that model's scores on this test set: under label DP the scores are public, and
no label is read). Per class, the 2-D histogram of (bucket of A, bucket of B) is counted,
``pos[i, j]`` and ``neg[i, j]``, and released with Laplace noise of scale ``1 / (s eps)`` on
every positive cell and ``1 / ((1 - s) eps)`` on every negative cell (``s`` the positive
share, 0.5 by default; `dpauc_tf.mechanisms.class_split`).

* Neighbouring relation: label DP (one example's label differs; scores unchanged, unit
  weights).
* Sensitivity: a flip moves one unit from ``pos[i, j]`` to ``neg[i, j]`` of the example's
  cell: one unit in each class, L1 = 2.
* Epsilon: ``s eps + (1 - s) eps = eps`` (pure DP), one release
  ([`PairedComparison.dp_event`][], composed by the ledger like any release).

**The estimate (post-processing).** The marginals give each model's bucketed Mann-Whitney
AUC (ties within a bucket count 1/2); ``D = AUC_B - AUC_A``. Its variance is DeLong's paired
variance of the bucketed statistic, ``S10 / P + S01 / N`` with ``S10`` the variance over the
positives of the difference of their placement values (computed per cell from the noisy
counts, so the covariance of the two models enters), plus the privacy noise's variance of
``D`` (linearised: ``sum_cells g^2 Var(noise)`` with the known noise law). The test is
``z = D / sqrt(total)``, two-sided normal; the interval ``D +- z_(1-a/2) sqrt(total)``.
What is tested is the equality of the two **bucketed** AUCs; with few buckets they are
below the exact AUCs by the grid's bias, which is nearly the same for two similar models
(``docs/comparison.md`` measures it). Figures: ``docs/comparison.md``.

"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import dp_accounting
import numpy as np
from scipy import stats

from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.class_split import resolve_positive_share, split_options
from dpauc_tf.privacy.events import class_pair_event
from dpauc_tf.privacy.statement import PrivacyStatement

# The name under which the spec builds the paired comparison ([`PairedComparison`][]).
PAIRED_COMPARISON = "paired-comparison"

DEFAULT_COMPARISON_BUCKETS = 6
MAX_COMPARISON_BUCKETS = 64
DEFAULT_CONFIDENCE = 0.95


def quantile_edges(scores: np.ndarray, num_buckets: int) -> np.ndarray:
    """Inner bucket edges at the ``1 / num_buckets, ...`` quantiles of ``scores`` (unique,
    so tied scores never straddle an edge); a score goes to the first bucket whose edge is
    ``>=`` it (``np.searchsorted(edges, s, side="left")``).

    Examples:
        >>> quantile_edges(np.array([0.1, 0.2, 0.3, 0.4]), 2).tolist()
        [0.25]
    """
    scores = np.asarray(scores, np.float64)
    return np.unique(np.quantile(scores, np.arange(1, num_buckets) / num_buckets))


def joint_counts(
    labels: np.ndarray,
    bucket_a: np.ndarray,
    bucket_b: np.ndarray,
    shape: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray]:
    """``pos[i, j]`` and ``neg[i, j]``: examples of each class in bucket ``i`` of A and ``j``
    of B (float64)."""
    labels = np.asarray(labels).astype(bool)
    flat = np.asarray(bucket_a) * shape[1] + np.asarray(bucket_b)
    size = shape[0] * shape[1]
    pos = np.bincount(flat[labels], minlength=size).astype(np.float64).reshape(shape)
    neg = np.bincount(flat[~labels], minlength=size).astype(np.float64).reshape(shape)
    return pos, neg


def _placements(pos: np.ndarray, neg: np.ndarray):
    """Per bucket: a positive's share of negatives below it (ties 1/2) and a negative's share
    of positives above it, for one model's marginal histograms; and its AUC."""
    num_pos, num_neg = pos.sum(), neg.sum()
    below_neg = (np.cumsum(neg) - neg / 2) / num_neg
    above_pos = 1.0 - (np.cumsum(pos) - pos / 2) / num_pos
    auc = float(np.sum(pos * below_neg) / num_pos)
    return below_neg, above_pos, auc


def paired_statistics(pos: np.ndarray, neg: np.ndarray) -> dict[str, float]:
    """The bucketed AUCs of A (rows) and B (columns), ``D = AUC_B - AUC_A`` and DeLong's
    paired sampling variance of ``D`` from joint counts ``pos, neg [B_a, B_b]``.

    Negative (noisy) cells are clipped at 0 for the variance terms only; the AUCs use the
    counts as given (their noise then adds no bias to first order).

    Examples:
        >>> pos = np.array([[0., 1.], [1., 8.]]); neg = np.array([[8., 1.], [1., 0.]])
        >>> s = paired_statistics(pos, neg)
        >>> round(s["auc_a"], 4), round(s["difference"], 4)
        (0.9, 0.0)
    """
    pos = np.asarray(pos, np.float64)
    neg = np.asarray(neg, np.float64)
    num_pos, num_neg = float(pos.sum()), float(neg.sum())
    out = {"num_pos": num_pos, "num_neg": num_neg}
    if num_pos < 2 or num_neg < 2:
        nan = math.nan
        return {
            **out,
            "auc_a": nan,
            "auc_b": nan,
            "difference": nan,
            "sampling_variance": nan,
            "sampling_variance_a": nan,
            "sampling_variance_b": nan,
        }
    a10, a01, auc_a = _placements(pos.sum(1), neg.sum(1))
    b10, b01, auc_b = _placements(pos.sum(0), neg.sum(0))
    diff = auc_b - auc_a
    pos_w, neg_w = np.maximum(pos, 0.0), np.maximum(neg, 0.0)
    wp, wn = max(pos_w.sum() - 1.0, 1.0), max(neg_w.sum() - 1.0, 1.0)

    def spread(weights, values, denominator):
        mean = np.sum(weights * values) / weights.sum()
        return float(np.sum(weights * (values - mean) ** 2) / denominator)

    d10 = b10[None, :] - a10[:, None]
    d01 = b01[None, :] - a01[:, None]
    grid_a10 = np.broadcast_to(a10[:, None], pos.shape)
    grid_b10 = np.broadcast_to(b10[None, :], pos.shape)
    grid_a01 = np.broadcast_to(a01[:, None], neg.shape)
    grid_b01 = np.broadcast_to(b01[None, :], neg.shape)
    out.update(
        auc_a=auc_a,
        auc_b=auc_b,
        difference=diff,
        sampling_variance=spread(pos_w, d10, wp) / num_pos + spread(neg_w, d01, wn) / num_neg,
        sampling_variance_a=spread(pos_w, grid_a10, wp) / num_pos
        + spread(neg_w, grid_a01, wn) / num_neg,
        sampling_variance_b=spread(pos_w, grid_b10, wp) / num_pos
        + spread(neg_w, grid_b01, wn) / num_neg,
    )
    return out


def difference_gradient(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Derivatives of ``D = AUC_B - AUC_A`` with respect to every cell of ``pos`` and ``neg``
    (``dAUC/dpos[b] = (F_neg(b) - AUC) / P``, ``dAUC/dneg[b] = (1 - F_pos(b) - AUC) / N`` per
    model, as [`dpauc_tf.core.tree.auc_gradient`][])."""
    pos = np.asarray(pos, np.float64)
    neg = np.asarray(neg, np.float64)
    num_pos, num_neg = pos.sum(), neg.sum()
    a10, a01, auc_a = _placements(pos.sum(1), neg.sum(1))
    b10, b01, auc_b = _placements(pos.sum(0), neg.sum(0))
    grad_pos = ((b10 - auc_b)[None, :] - (a10 - auc_a)[:, None]) / num_pos
    grad_neg = ((b01 - auc_b)[None, :] - (a01 - auc_a)[:, None]) / num_neg
    return grad_pos, grad_neg


class PairedComparison:
    """The joint release of two models' class histograms, and its guarantee.

    Args:
      epsilon: the budget of the one release (> 0).
      positive_share: the positive histogram's share of ``epsilon`` (default 0.5).
      positive_rate: a public prior of the fraction of positives (sets the share instead).

    Examples:
        >>> m = PairedComparison(epsilon=1.0)
        >>> m.scales
        (2.0, 2.0)
        >>> r = m.release(np.ones((2, 2)), np.ones((2, 2)), seed=0)
        >>> sorted(r), r["pos"].shape
        (['neg', 'pos'], (2, 2))
    """

    releases_from_summed_counts = False  # every client releases its own histograms

    name = PAIRED_COMPARISON
    neighbouring = "label DP: one example's label differs (scores unchanged, unit weights)"
    capabilities: ClassVar[Capabilities] = Capabilities(
        unit_weights=True, keras_metric=False, federated=False
    )
    delta = 0.0

    def __init__(
        self,
        epsilon: float,
        positive_share: float | None = None,
        positive_rate: float | None = None,
    ):
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
            raise TypeError(f"epsilon must be a number, got {epsilon!r}")
        if not (math.isfinite(epsilon) and epsilon > 0):
            raise ValueError(f"epsilon must be finite and > 0, got {epsilon}")
        self.epsilon = float(epsilon)
        self.positive_rate = positive_rate
        self.positive_share = resolve_positive_share(positive_share, positive_rate, "laplace")

    @property
    def scales(self) -> tuple[float, float]:
        """Laplace scales of a positive and of a negative cell."""
        s = self.positive_share
        return 1.0 / (s * self.epsilon), 1.0 / ((1.0 - s) * self.epsilon)

    def release(self, pos, neg, seed=None) -> dict[str, np.ndarray]:
        """Noisy joint counts ``{"pos", "neg"}`` (float64, the shapes of the inputs)."""
        import tensorflow as tf

        from dpauc_tf.noise import samplers
        from dpauc_tf.noise.seeds import make_seed, split_seed

        pos = np.asarray(pos, np.float64)
        neg = np.asarray(neg, np.float64)
        seeds = split_seed(make_seed(seed), 2)
        scale_pos, scale_neg = self.scales
        noise_pos = samplers.laplace(tf.constant(pos.shape, tf.int32), scale_pos, seeds[0])
        noise_neg = samplers.laplace(tf.constant(neg.shape, tf.int32), scale_neg, seeds[1])
        return {"pos": pos + noise_pos.numpy(), "neg": neg + noise_neg.numpy()}

    def privacy_variance(self, pos, neg) -> float:
        """The noise's variance of ``D`` to first order, at the (noisy) counts given."""
        grad_pos, grad_neg = difference_gradient(pos, neg)
        scale_pos, scale_neg = self.scales
        return float(
            np.sum(grad_pos**2) * 2 * scale_pos**2 + np.sum(grad_neg**2) * 2 * scale_neg**2
        )

    def dp_event(self) -> dp_accounting.DpEvent:
        """The two classes' unit-sensitivity Laplace events composed (a flip moves one cell
        of each class by one)."""
        return class_pair_event(*self.scales, discrete=False)

    def statement(self) -> PrivacyStatement:
        scale_pos, scale_neg = self.scales
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring,
            sensitivity="L1 = 2 (a flip moves one unit from pos[i, j] to neg[i, j] of the "
            "example's cell of the joint histogram of (bucket of A, bucket of B))",
            noise=f"Laplace({scale_pos:.4g}) on every positive cell, Laplace({scale_neg:.4g}) "
            "on every negative cell",
            epsilon=self.epsilon,
            delta=0.0,
        )

    def options(self) -> dict:
        return split_options(self.positive_share, self.positive_rate)

    def comparison_result(self, summed, confidence: float, num_examples) -> ComparisonResult:
        """The post-processing of one release of joint counts ([`comparison_result`][])."""
        return comparison_result(self, summed, confidence, num_examples)

    def privacy_spent(self, releases: int = 1, delta: float | None = None):
        from dpauc_tf.privacy.accounting import composed_epsilon

        return composed_epsilon(self.dp_event(), releases, 0.0 if delta is None else delta)


@dataclasses.dataclass(frozen=True)
class ComparisonResult:
    """One private paired comparison: ``difference = auc_b - auc_a`` with its interval and
    two-sided p-value (H0: equal bucketed AUCs), and what was released.

    The AUCs are projected onto [0, 1], the difference and the interval onto [-1, 1]
    (post-processing; ``z`` and ``p_value`` are of the unprojected difference), and
    ``warning`` says when the noise swamps the signal (``None`` otherwise).
    ``std_error**2 = sampling_variance + privacy_variance``; ``sampling_variance_a`` and
    ``_b`` are each model's own DeLong variance (their sum minus ``sampling_variance`` is
    twice the covariance that pairing uses). ``privacy_share`` is the share of the variance
    that privacy adds.
    """

    auc_a: float
    auc_b: float
    difference: float
    ci_low: float
    ci_high: float
    confidence: float
    p_value: float
    z: float
    std_error: float
    sampling_variance: float
    sampling_variance_a: float
    sampling_variance_b: float
    privacy_variance: float
    epsilon: float
    delta: float
    statement: Any
    num_examples: int
    num_buckets: tuple[int, int]
    noisy_counts: dict[str, np.ndarray]
    warning: str | None = None
    target: str = "bucketed AUCs of this test set's population (paired DeLong + privacy noise)"

    @property
    def privacy_share(self) -> float:
        total = self.sampling_variance + self.privacy_variance
        return self.privacy_variance / total if total > 0 else math.nan

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (``None`` for NaN)."""

        def plain(value):
            return value if value is None or math.isfinite(value) else None

        out = {
            key: plain(float(getattr(self, key)))
            for key in (
                "auc_a", "auc_b", "difference", "ci_low", "ci_high", "confidence", "p_value",
                "z", "std_error", "sampling_variance", "sampling_variance_a",
                "sampling_variance_b", "privacy_variance", "privacy_share", "epsilon", "delta",
            )
        }  # fmt: skip
        out.update(
            privacy=str(self.statement),
            num_examples=self.num_examples,
            num_buckets=list(self.num_buckets),
            target=self.target,
            warning=self.warning,
        )
        return out


# The privacy noise's std of the difference past which it swamps any difference of two
# AUCs worth testing (a warning is given).
SWAMPED_PRIVACY_STD = 0.1


def _clip(value: float, low: float, high: float) -> float:
    return min(max(value, low), high) if math.isfinite(value) else value


def swamped_warning(raw: dict[str, float], privacy_variance: float) -> str | None:
    """A one-line warning where the privacy noise swamps the signal: an AUC or the
    difference outside its range before the projection, or a privacy std of the difference
    above `SWAMPED_PRIVACY_STD`; ``None`` otherwise."""
    moved = [
        f"{name} {raw[key]:.3g}"
        for name, key, low, high in (
            ("AUC of A", "auc_a", 0.0, 1.0),
            ("AUC of B", "auc_b", 0.0, 1.0),
            ("difference", "difference", -1.0, 1.0),
        )
        if math.isfinite(raw[key]) and not low <= raw[key] <= high
    ]
    privacy_std = math.sqrt(privacy_variance) if privacy_variance >= 0 else math.nan
    if not moved and not privacy_std > SWAMPED_PRIVACY_STD:
        return None
    what = f"the noisy {', '.join(moved)} fell outside the possible range (projected onto it)"
    return (
        "the privacy noise swamps the signal: "
        + (what + "; " if moved else "")
        + f"the noise's std of the difference is {privacy_std:.2g}: use more examples, a "
        "larger epsilon or fewer buckets"
    )


def comparison_result(mechanism, noisy, confidence, num_examples) -> ComparisonResult:
    """The paired comparison's post-processing of one release of joint counts
    ([`finish_release`][dpauc_tf.mechanisms.release.finish_release] calls it): difference,
    interval and p-value at ``confidence``, no privacy cost."""
    noisy = {key: np.asarray(value, np.float64) for key, value in noisy.items()}
    shape = tuple(int(n) for n in noisy["pos"].shape)
    stats_ = paired_statistics(noisy["pos"], noisy["neg"])
    nan = math.nan
    privacy = nan
    if math.isfinite(stats_["difference"]):
        privacy = mechanism.privacy_variance(noisy["pos"], noisy["neg"])
    total = stats_["sampling_variance"] + privacy
    std = math.sqrt(total) if math.isfinite(total) and total > 0 else nan
    diff = stats_["difference"]
    quantile = float(stats.norm.ppf(0.5 + confidence / 2))
    z = diff / std if math.isfinite(std) else nan
    p_value = float(2 * stats.norm.sf(abs(z))) if math.isfinite(z) else nan
    # post-processing onto the possible values: each AUC in [0, 1], the difference and its
    # interval in [-1, 1] (the true difference lies there, so the intersection covers
    # whenever the interval did; an interval wholly outside did not cover: [-1, 1])
    low, high = _clip(diff - quantile * std, -1.0, 1.0), _clip(diff + quantile * std, -1.0, 1.0)
    if low == high and abs(low) == 1.0 and abs(diff) > 1.0:
        low, high = -1.0, 1.0
    return ComparisonResult(
        auc_a=_clip(stats_["auc_a"], 0.0, 1.0),
        auc_b=_clip(stats_["auc_b"], 0.0, 1.0),
        difference=_clip(diff, -1.0, 1.0),
        ci_low=low,
        ci_high=high,
        warning=swamped_warning(stats_, privacy) if math.isfinite(diff) else None,
        confidence=float(confidence),
        p_value=p_value,
        z=z,
        std_error=std,
        sampling_variance=stats_["sampling_variance"],
        sampling_variance_a=stats_["sampling_variance_a"],
        sampling_variance_b=stats_["sampling_variance_b"],
        privacy_variance=privacy,
        epsilon=mechanism.epsilon,
        delta=0.0,
        statement=mechanism.statement(),
        num_examples=num_examples,
        num_buckets=shape,
        noisy_counts=noisy,
    )
