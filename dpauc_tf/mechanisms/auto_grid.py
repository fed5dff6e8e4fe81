"""``num_thresholds="auto"``: a grid that suits the number of examples, and a warning when
the privacy noise would dominate the sampling error.

**Why.** A curve mechanism puts noise on every bucket: its AUC's noise grows with the
number of buckets while the grid's bias falls like ``1 / T^2``. TensorFlow's 200 thresholds
suit a few hundred thousand examples; on 500 they make the histogram's error four times the
best grid's (``docs/small_test_sets.md``). Balancing the two (variance ``~ T / (eps n)^2``,
squared bias ``~ 1 / T^4``) gives ``T ~ (eps n)^(2/5)``; measured on binormal score sets the
best ``T`` is about ``0.6 (eps n)^0.4`` (7 at n = 500, 12 at 2,000, 31 at 20,000, epsilon 1).

**Where n comes from.** The number of examples is the same for every labelling of a test
set: under label DP it is public, so choosing the grid from it costs no budget (the
statement says so). Under add/remove-one-example DP it would not be; that mode has no
``"auto"``.

**The grid.** ``auto_num_thresholds`` rounds ``0.6 (eps n)^0.4`` (in log scale) to the ladder
``5, 9, 17, 33, 65, 129`` (TensorFlow grids with ``2^k`` buckets, so that a finer count
merges exactly into a coarser one) and keeps TensorFlow's default (200) once the rule asks
for more than 129, or for mechanisms whose noise does not grow with the grid: each family
states its ``grid_rule`` ([`GridRule`][dpauc_tf.mechanisms.laws.GridRule];
``auc-only`` and ``rank-sum`` count on their own grid; ``rr``, ``score-noise`` and ``none``
add no per-bucket noise).

Examples:
    >>> auto_num_thresholds(500, 1.0), auto_num_thresholds(20_000, 1.0)
    (9, 33)
    >>> auto_num_thresholds(10**7, 1.0), auto_num_thresholds(500, 1.0, "rr")
    (200, 200)
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.mechanisms.laws import GridRule

if TYPE_CHECKING:  # pragma: no cover
    from dpauc_tf.mechanisms.base import CountMechanism

AUTO = "auto"
AUTO_LADDER = (5, 9, 17, 33, 65, 129)
AUTO_COEFFICIENT = 0.6
AUTO_EXPONENT = 0.4
GUESS_AUC = 0.75  # the typical test set behind the warning (public guesses, no data)
GUESS_POSITIVE_RATE = 0.3


def grid_rule(mechanism: str | CountMechanism | type[CountMechanism]) -> GridRule:
    """The ``grid_rule`` a mechanism (a registered name, a class or an instance) states."""
    if isinstance(mechanism, str):
        from dpauc_tf.mechanisms.registry import mechanism_class

        mechanism = mechanism_class(mechanism)
    return mechanism.grid_rule


def auto_num_thresholds(
    num_examples: float,
    epsilon: float | None,
    mechanism: str | CountMechanism | type[CountMechanism] = "histogram",
) -> int:
    """The number of thresholds ``"auto"`` picks for ``num_examples`` (public under label DP)
    at ``epsilon`` for ``mechanism`` (a registered name, a class or an instance; see the
    module docstring)."""
    if epsilon is None or not grid_rule(mechanism).grows_with_grid:
        return DEFAULT_NUM_THRESHOLDS
    if not (isinstance(num_examples, (int, float)) and num_examples >= 0):
        raise ValueError(f"num_examples must be a number >= 0, got {num_examples!r}")
    target = AUTO_COEFFICIENT * max(float(epsilon) * float(num_examples), 1.0) ** AUTO_EXPONENT
    if target > AUTO_LADDER[-1] * math.sqrt(DEFAULT_NUM_THRESHOLDS / AUTO_LADDER[-1]):
        return DEFAULT_NUM_THRESHOLDS
    return min(AUTO_LADDER, key=lambda t: abs(math.log(t / target)))


def resolve_num_thresholds(
    num_thresholds: int | str,
    *,
    num_examples: float | None,
    epsilon: float | None,
    mechanism: str | CountMechanism | type[CountMechanism],
) -> int:
    """``num_thresholds`` as an int: itself, or [`auto_num_thresholds`][] for ``"auto"``
    (which needs ``num_examples``)."""
    if num_thresholds != AUTO:
        return num_thresholds
    if num_examples is None:
        raise ValueError(
            "num_thresholds='auto' needs the number of examples (public under label DP): "
            "pass num_examples=, or give num_thresholds as an int"
        )
    return auto_num_thresholds(num_examples, epsilon, mechanism)


def sampling_std(auc: float, num_pos: float, num_neg: float) -> float:
    """Hanley-McNeil standard error of an AUC with ``num_pos`` positives and ``num_neg``
    negatives (binormal-free approximation).

    Examples:
        >>> round(sampling_std(0.81, 604, 1396), 4)
        0.0115
    """
    if not (num_pos >= 1 and num_neg >= 1 and 0.0 < auc < 1.0):
        return math.nan
    q1, q2 = auc / (2.0 - auc), 2.0 * auc**2 / (1.0 + auc)
    var = (auc * (1 - auc) + (num_pos - 1) * (q1 - auc**2) + (num_neg - 1) * (q2 - auc**2)) / (
        num_pos * num_neg
    )
    return math.sqrt(max(var, 0.0))


def noise_dominates_warning(privacy_std: float, sampling: float) -> str | None:
    """A one-line warning when the privacy noise's std would exceed the sampling standard
    error, else ``None``."""
    if not math.isfinite(sampling) or privacy_std <= sampling:
        return None
    if math.isfinite(privacy_std):
        noise = (
            f"the privacy noise (std about {privacy_std:.2g} on a typical test set of this size)"
        )
        verb = "would exceed"
    else:  # fewer than two defined releases: the noise leaves no positive or no negative
        noise = (
            "the privacy noise would leave the AUC undefined in most releases on a typical "
            "test set of this size (no positive or no negative left): it"
        )
        verb = "far exceeds"
    return (
        f"{noise} {verb} the sampling error (about {sampling:.2g}): a larger epsilon, more "
        "examples, fewer thresholds or another mechanism would help (docs/small_test_sets.md)"
    )


def predicted_noise_std(
    mechanism,
    thresholds,
    num_examples: float,
    *,
    auc: float = GUESS_AUC,
    positive_rate: float = GUESS_POSITIVE_RATE,
    repeats: int = 64,
    seed: int = 0,
) -> tuple[float, float]:
    """``(privacy std, sampling std)`` that a release of ``num_examples`` (public) would
    have on a typical test set: expected counts of binormal scores of AUC ``auc`` with
    ``positive_rate`` positives on the mechanism's count grid, released ``repeats`` times
    (central noise: local noise of many clients is larger). Reads no data, spends nothing."""
    import numpy as np
    import tensorflow as tf
    from scipy import stats

    grid = mechanism.count_thresholds(thresholds)
    values = np.clip(np.asarray(grid.values, np.float64), 0.0, 1.0)
    shift = math.sqrt(2.0) * stats.norm.ppf(auc)
    logits = np.log(np.clip(values, 1e-12, 1.0)) - np.log(np.clip(1.0 - values, 1e-12, 1.0))
    num_pos = positive_rate * float(num_examples)
    num_neg = float(num_examples) - num_pos
    centre = -shift  # scores centred so that the classes straddle 0.5

    def bucket_counts(mean, total):
        cdf = stats.norm.cdf(logits - centre, loc=mean)
        edges = np.concatenate([[0.0], cdf, [1.0]])
        return total * np.diff(edges)

    pos = bucket_counts(shift, num_pos)
    neg = bucket_counts(0.0, num_neg)
    capabilities = mechanism.capabilities
    if capabilities.integer_counts or capabilities.unit_weights:
        # These releases take whole counts only. Rounding each bucket would empty a fine
        # grid (rank-sum counts on 2^17 buckets, most expecting under one example); rounding
        # the cumulative counts keeps every total and the shape of the distribution.
        pos, neg = _whole_counts(pos), _whole_counts(neg)
    base = mechanism.aggregate() if hasattr(mechanism, "aggregate") else mechanism
    released = base.release(tf.constant(pos), tf.constant(neg), seed=seed, repeats=repeats)
    drawn = np.asarray(base.estimate_auc(released))
    drawn = drawn[np.isfinite(drawn)]
    privacy = float(drawn.std()) if drawn.size > 1 else math.inf
    return privacy, sampling_std(auc, num_pos, num_neg)


def _whole_counts(expected):
    """Whole bucket counts with the same total and cumulative shape as ``expected``."""
    import numpy as np

    cumulative = np.round(np.concatenate([[0.0], np.cumsum(expected)]))
    return np.diff(cumulative)
