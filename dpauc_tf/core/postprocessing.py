"""Constrained inference for noisy curves: consistent totals, monotone counts, the AUC estimate.

Post-processing costs no privacy. Every function here is a TensorFlow op on the last axis
(thresholds or buckets) and broadcasts over any leading axes (a "repeat" axis of noisy
releases, clients, ...), so any mechanism's ``to_confusion`` can use it.

What noisy counts violate, and how it is restored:

* **one P and one N**: a release of the ``4T`` cumulative counts (the paper's mechanism) has a
  different ``TP + FN`` at every threshold. [`consistent_confusion`][] replaces them by one
  estimate (the mean over thresholds, variance ``1 / T`` of a single pair) and re-estimates each
  ``TP`` from its two observations ``TP`` and ``P - FN`` (least squares).
* **monotone cumulative counts**: ``TP`` and ``FP`` must not increase with the threshold and
  must lie in ``[0, P]`` / ``[0, N]``; equivalently every bucket count is ``>= 0``.
  `isotonic_regression` is the least-squares projection onto monotone sequences:
  eagerly the pool-adjacent-violators algorithm (`pool_adjacent_violators`, O(T) per
  row, about 0.2 s for 100 rows of 1,024), inside graphs its min-max formula
  ``x_i = max_{j <= i} min_{k >= i} mean(y_j..y_k)`` in TensorFlow ops (O(T^2) per row);
  bounds are applied by clipping the isotonic solution, which is exactly the bounded
  isotonic regression.
* **the AUC**: on a consistent, monotone curve the ROC points are already sorted, so the
  trapezoid area (`auc_estimate`) is the Mann-Whitney statistic of the estimated
  counts (ties in a bucket count 1/2) and equals what `dpauc_tf.core.curve.auc_from_roc`
  gives after its clip-and-sort, which is then a no-op.

**Bias.** The reference code's estimator clips every noisy count at 0 and *re-sorts* the
noisy ROC points by FPR; sorting noisy points moves area, which biases it, and where buckets
hold one class (points that share an FPR) it does not even converge as the noise vanishes.
Least squares is linear and unbiased; the monotone projection is not linear: at high noise
it pools neighbouring thresholds and clips near the ends of the curve, which pulls the AUC
down. So the AUC is estimated from the *unprojected* counts ([`mann_whitney_auc`][], every
mechanism's default) and the monotone curve is kept for plotting. Measurements:
``docs/estimators.md`` and ``docs/tree_histograms.md``.

    >>> import tensorflow as tf
    >>> isotonic_regression(tf.constant([1.0, 3.0, 2.0, 4.0])).numpy().tolist()
    [1.0, 2.5, 2.5, 4.0]
    >>> conf = monotone_confusion(tf.constant([0., 5., -1., 3.]), tf.constant([4., 2., 1., 1.]))
    >>> conf.tp.numpy().tolist()  # suffix sums [7, 2, 3] made non-increasing, within [0, P = 7]
    [7.0, 2.5, 2.5]
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from dpauc_tf.core.curve import Confusion, confusion_from_histogram
from dpauc_tf.core.vocabulary import Vocabulary


class WithinBucket(Vocabulary):
    """How `mann_whitney_auc` counts a positive and a negative in the same bucket: 1/2 (a
    tie, as TensorFlow) or 1/2 + the linear-density correction (`within_bucket_correction`).

    Examples:
        >>> WithinBucket("linear")
        <WithinBucket.LINEAR: 'linear'>
    """

    HALF = "half"
    LINEAR = "linear"


# Elements of the [rows, T, T] working tensor of the isotonic regression per chunk (~64 MB).
MAX_ISOTONIC_ELEMENTS = 8_000_000


def _reverse_cumulative_min(x: tf.Tensor) -> tf.Tensor:
    """``out[..., i] = min(x[..., i:])`` along the last axis, by doubling (log2(n) steps)."""
    n = x.shape[-1]
    shift = 1
    while shift < n:
        shifted = tf.concat([x[..., shift:], x[..., n - shift :]], axis=-1)
        x = tf.minimum(x, shifted)
        shift *= 2
    return x


def _isotonic_increasing_rows(y: tf.Tensor) -> tf.Tensor:
    """Non-decreasing least-squares fit of every row of ``y [rows, n]`` (min-max formula)."""
    n = y.shape[-1]
    zero = tf.zeros_like(y[:, :1])
    prefix = tf.concat([zero, tf.cumsum(y, axis=-1)], axis=-1)  # [rows, n + 1]
    start = tf.range(n)[:, None]  # j
    end = tf.range(n)[None, :]  # k
    length = tf.cast(end - start + 1, y.dtype)
    # means[r, j, k] = mean(y[r, j..k]) for k >= j, +inf below the diagonal.
    means = (prefix[:, None, 1:] - prefix[:, :-1, None]) / tf.maximum(length, 1.0)
    big = tf.constant(float("inf"), y.dtype)
    means = tf.where(end >= start, means, big)
    # inner[r, j, i] = min_{k >= i} means[r, j, k]  (reverse cumulative min over k)
    inner = _reverse_cumulative_min(means)
    # x[r, i] = max_{j <= i} inner[r, j, i]  (entries with j > i do not count)
    inner = tf.where(end >= start, inner, -big)
    return tf.reduce_max(inner, axis=1)


def pool_adjacent_violators(values: np.ndarray, *, increasing: bool = True) -> np.ndarray:
    """Least-squares monotone fit of every row (last axis) of a NumPy array, O(n) per row.

    The pool-adjacent-violators algorithm: a stack of blocks (sum, length); a new value is
    pushed, then merged with the block below while the two are out of order. Each value is
    pushed and merged at most once, so a row costs O(n) (``R = 100`` rows of ``n = 1,024``
    take a few tens of milliseconds); rows are independent, so leading axes are looped over.

        >>> pool_adjacent_violators(np.array([[1.0, 3.0, 2.0, 4.0]])).tolist()
        [[1.0, 2.5, 2.5, 4.0]]
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim < 1:
        raise ValueError("pool_adjacent_violators needs at least one axis")
    n = values.shape[-1]
    rows = (values if increasing else -values).reshape(-1, n)
    out = np.empty_like(rows)
    for r, row in enumerate(rows):
        sums, lengths = [], []
        for value in row.tolist():
            total, length = value, 1
            # merge while the block below has a larger mean: s1 / l1 > s2 / l2
            while sums and sums[-1] * length > total * lengths[-1]:
                total += sums.pop()
                length += lengths.pop()
            sums.append(total)
            lengths.append(length)
        out[r] = np.repeat(np.asarray(sums) / np.asarray(lengths), lengths)
    out = out.reshape(values.shape)
    return out if increasing else -out


def isotonic_regression(values: tf.Tensor, *, increasing: bool = True) -> tf.Tensor:
    """Least-squares monotone fit along the last axis (broadcast over leading axes).

    Eagerly (server-side post-processing, simulations) this is
    `pool_adjacent_violators`, O(n) per row. Inside a graph (a Keras metric's
    ``result()``, a TFF computation, XLA) it is the min-max formula in TensorFlow ops,
    O(n^2) per row (about 35 ms for one row of 1,024 on two cores), chunked over rows.

    Args:
      values: float tensor ``[..., n]``.
      increasing: fit a non-decreasing (``True``) or non-increasing (``False``) sequence.

    Returns:
      The fit, same shape and dtype: the unique minimiser of ``sum (x - values)^2`` over
      monotone ``x``.
    """
    values = tf.convert_to_tensor(values)
    if not values.dtype.is_floating:
        raise TypeError(f"isotonic_regression needs float values, got {values.dtype}")
    if values.shape.rank is None or values.shape.rank < 1 or values.shape[-1] is None:
        raise ValueError("isotonic_regression needs a known last dimension")
    if tf.executing_eagerly():
        fitted = pool_adjacent_violators(values.numpy(), increasing=increasing)
        return tf.constant(fitted, values.dtype)
    return _isotonic_graph(values, increasing)


def _isotonic_graph(values: tf.Tensor, increasing: bool) -> tf.Tensor:
    """The min-max formula ``x_i = max_{j <= i} min_{k >= i} mean(y_j..y_k)`` in TF ops."""
    n = int(values.shape[-1])
    signed = values if increasing else -values
    rows = tf.reshape(signed, [-1, n])
    chunk = max(1, MAX_ISOTONIC_ELEMENTS // max(n * n, 1))
    if rows.shape[0] is not None:  # a known number of rows: no padding past it (a single
        chunk = max(1, min(chunk, int(rows.shape[0])))  # curve was padded to 800 rows)
    num_rows = tf.shape(rows)[0]
    if n <= 1:
        fitted = rows
    else:
        num_chunks = (num_rows + chunk - 1) // chunk
        padded = tf.pad(rows, [[0, num_chunks * chunk - num_rows], [0, 0]])
        blocks = tf.reshape(padded, [num_chunks, chunk, n])
        fitted_blocks = tf.map_fn(
            _isotonic_increasing_rows,
            blocks,
            fn_output_signature=tf.TensorSpec([chunk, n], values.dtype),
        )
        fitted = tf.reshape(fitted_blocks, [-1, n])[:num_rows]
    fitted = tf.reshape(fitted, tf.shape(values))
    return fitted if increasing else -fitted


def monotone_cumulative(cumulative: tf.Tensor, total: tf.Tensor) -> tf.Tensor:
    """Projects noisy cumulative counts ``[..., T]`` (non-increasing in the threshold) onto
    non-increasing sequences within ``[0, total]`` (``total`` of shape ``[..., 1]``)."""
    fitted = isotonic_regression(cumulative, increasing=False)
    total = tf.maximum(total, tf.zeros_like(total))
    return tf.clip_by_value(fitted, tf.zeros_like(fitted), tf.broadcast_to(total, tf.shape(fitted)))


def _from_cumulative(tp, fp, num_pos, num_neg) -> Confusion:
    num_pos = tf.maximum(num_pos, tf.zeros_like(num_pos))
    num_neg = tf.maximum(num_neg, tf.zeros_like(num_neg))
    tp = monotone_cumulative(tp, num_pos)
    fp = monotone_cumulative(fp, num_neg)
    return Confusion(tp=tp, fp=fp, tn=num_neg - fp, fn=num_pos - tp)


def monotone_confusion(pos: tf.Tensor, neg: tf.Tensor) -> Confusion:
    """Consistent, monotone cumulative counts from noisy bucket counts ``[..., T + 1]``.

    ``P = sum(pos)`` and ``N = sum(neg)`` (clipped at 0) are the single totals; ``TP`` and
    ``FP`` are the suffix sums projected by `monotone_cumulative`; ``FN = P - TP``,
    ``TN = N - FP``. Every count is then in ``[0, total]`` and monotone.
    """
    raw = confusion_from_histogram(pos, neg)
    num_pos = tf.reduce_sum(pos, axis=-1, keepdims=True)
    num_neg = tf.reduce_sum(neg, axis=-1, keepdims=True)
    return _from_cumulative(raw.tp, raw.fp, num_pos, num_neg)


def least_squares_confusion(confusion: Confusion) -> Confusion:
    """One P and one N for cumulative counts whose totals disagree (no monotone projection).

    ``P^ = mean_j (TP_j + FN_j)``, ``N^ = mean_j (FP_j + TN_j)``; each ``TP_j`` is the
    least-squares combination ``(TP_j + P^ - FN_j) / 2`` of its two observations (likewise
    ``FP_j``); ``FN_j = P^ - TP_j``, ``TN_j = N^ - FP_j``. Linear, so unbiased. On counts
    whose totals already agree ([`confusion_from_histogram`][]) it changes nothing.
    """
    tp, fp, tn, fn = confusion
    num_pos = tf.reduce_mean(tp + fn, axis=-1, keepdims=True)
    num_neg = tf.reduce_mean(fp + tn, axis=-1, keepdims=True)
    tp = (tp + num_pos - fn) / 2
    fp = (fp + num_neg - tn) / 2
    return Confusion(tp=tp, fp=fp, tn=num_neg - fp, fn=num_pos - tp)


def consistent_confusion(confusion: Confusion) -> Confusion:
    """One P and one N for a release of the ``4T`` cumulative counts, then monotone counts.

    `least_squares_confusion`, then `monotone_cumulative` (for plotting).
    """
    ls = least_squares_confusion(confusion)
    num_pos = ls.tp[..., :1] + ls.fn[..., :1]
    num_neg = ls.fp[..., :1] + ls.tn[..., :1]
    return _from_cumulative(ls.tp, ls.fp, num_pos, num_neg)


def mann_whitney_auc(confusion: Confusion, *, within_bucket: str = "half") -> tf.Tensor:
    """The default AUC estimate of every mechanism that releases a curve; shape ``[...]``.

    Consistent: as the noise vanishes it converges to TensorFlow's AUC
    ([`dpauc_tf.core.curve.auc_from_histogram`][] of the exact counts) on any data,
    including point masses and buckets that hold only one class, because the points are
    taken in threshold order and never re-sorted. Steps:

    1. `least_squares_confusion` (one ``P^``, one ``N^``; a no-op on histogram counts);
    2. the end points ``(TP, FP) = (P^, N^)`` and ``(0, 0)`` are added (an empty bucket below
       and above every score), so every bucket's noise enters the area as it enters the
       totals;
    3. the trapezoid in threshold order, ``sum_j (FP_j - FP_{j+1}) (TP_j + TP_{j+1}) / 2``,
       divided by ``P^ N^``: the Mann-Whitney statistic of the counts (ties within a
       bucket count 1/2). Its numerator is bilinear in the two classes' counts, so it is
       unbiased when their noises are independent;
    4. with ``within_bucket="linear"`` (opt-in) the pairs inside a bucket count
       ``1/2 + (alpha_b + beta_b) / 12`` instead of 1/2: `within_bucket_correction`
       is added to the area (smooth, continuous scores only; see there);
    5. the value is clipped to [0, 1] (post-processing; binds only when noise swamps the
       counts).

    **Undefined AUC.** Where ``P^ <= 0`` or ``N^ <= 0`` (noise-free: the data hold one class,
    or none) the AUC is undefined and the result is **NaN**, not a number that looks like an
    estimate (TensorFlow returns 0 there). With noise a one-class test set can still give
    ``P^ > 0``; the estimate is then dominated by noise, as every estimate at that size is.

    Runs eagerly, in ``tf.function`` and under XLA; computed in float64, returned in the
    counts' dtype.

        >>> from dpauc_tf.core.curve import confusion_from_histogram
        >>> pos, neg = tf.constant([0., 0., 1., 2.]), tf.constant([0., 2., 1., 0.])
        >>> round(float(mann_whitney_auc(confusion_from_histogram(pos, neg))), 4)
        0.9444
        >>> float(mann_whitney_auc(confusion_from_histogram(pos, tf.zeros(4))))
        nan
    """
    within_bucket = WithinBucket(within_bucket)
    dtype = confusion.tp.dtype
    tp, fp, tn, fn = (tf.cast(c, tf.float64) for c in confusion)
    tp, fp, tn, fn = least_squares_confusion(Confusion(tp, fp, tn, fn))
    num_pos = tp[..., :1] + fn[..., :1]
    num_neg = fp[..., :1] + tn[..., :1]
    zero = tf.zeros_like(num_pos)
    tp = tf.concat([num_pos, tp, zero], axis=-1)
    fp = tf.concat([num_neg, fp, zero], axis=-1)
    area = tf.reduce_sum((fp[..., :-1] - fp[..., 1:]) * (tp[..., :-1] + tp[..., 1:]) / 2, axis=-1)
    if within_bucket == "linear":  # bucket counts are the differences of the padded sums
        area += within_bucket_correction(tp[..., :-1] - tp[..., 1:], fp[..., :-1] - fp[..., 1:])
    num_pos, num_neg = num_pos[..., 0], num_neg[..., 0]
    defined = (num_pos > 0) & (num_neg > 0)
    safe = tf.where(defined, num_pos * num_neg, tf.ones_like(num_pos))
    auc = tf.clip_by_value(area / safe, 0.0, 1.0)
    auc = tf.where(defined, auc, tf.constant(float("nan"), tf.float64))
    return tf.cast(auc, dtype)


def within_bucket_correction(pos: tf.Tensor, neg: tf.Tensor) -> tf.Tensor:
    """What the pairs inside the buckets add beyond 1/2 each, for smooth score densities.

    The Mann-Whitney statistic of bucket counts counts a positive and a negative in the same
    bucket as 1/2 (a tie), which biases it low on continuous scores (a grid bias of order
    ``1 / T^2``). If, in bucket units ``u`` in ``[-1/2, 1/2]``, the class densities inside
    bucket ``b`` are ``f_pos ~ 1 + alpha_b u`` and ``f_neg ~ 1 - beta_b u``, then
    ``P(S_pos > S_neg) = 1/2 + (alpha_b + beta_b) / 12`` exactly (quadratic terms add
    nothing), and ``alpha_b + beta_b`` is the slope of ``log(f_pos / f_neg)`` per bucket,
    which does not depend on the score coordinate. With the slopes of the counts from the
    neighbours (central differences; one-sided in the two end buckets),
    ``pos[b] neg[b] (alpha_b + beta_b) = (neg[b] pos'[b] - pos[b] neg'[b])`` (unequal bucket
    widths cancel to first order), and the sum over the buckets telescopes to::

        sum_b w_b (neg[b] pos[b+1] - pos[b] neg[b+1]) / 12,   b = 0 .. T - 1

    with ``w_b = 1`` except ``3/2`` for the first and the last pair (the one-sided ends),
    to add to the numerator ``sum_b neg[b] (TP_above[b] + pos[b] / 2)``. It is exact when
    both densities are linear over the buckets, and **bilinear** in the two classes' counts
    (no logarithm, no division): with independent noise on the classes it is unbiased, and
    negative or zero noisy counts give a finite number (an empty bucket contributes 0).

    **When it is valid.** Only when every bucket holds a continuum of distinct scores whose
    densities change smoothly over a few buckets (for example quantile buckets on model
    scores). Where a bucket holds tied scores (point masses, or a grid finer than the
    scores' resolution) the true within-bucket term is exactly 1/2, TensorFlow's AUC is
    already exact, and this correction moves the estimate away from it by its own value
    divided by ``P N``. Hence it is opt-in (``estimator="mann-whitney-smooth"``).

    Args:
      pos: bucket counts of the positives, ``[..., T + 1]``, ascending scores.
      neg: bucket counts of the negatives, the same shape.

    Returns:
      ``[...]`` in the counts' dtype (not divided by ``P N``); 0 for fewer than 2 buckets.

    Examples:
        >>> pos, neg = tf.constant([1., 2., 3.]), tf.constant([3., 2., 1.])
        >>> float(within_bucket_correction(pos, neg))  # (4 * 3/2 + 4 * 3/2) / 12
        1.0
    """
    pos = tf.convert_to_tensor(pos)
    neg = tf.cast(tf.convert_to_tensor(neg), pos.dtype)
    if pos.shape[-1] is not None and pos.shape[-1] < 2:
        return tf.zeros_like(pos[..., 0]) if pos.shape[-1] == 1 else tf.reduce_sum(pos, -1)
    cross = neg[..., :-1] * pos[..., 1:] - pos[..., :-1] * neg[..., 1:]
    ends = (cross[..., 0] + cross[..., -1]) / 2  # one-sided slopes in the end buckets
    return (tf.reduce_sum(cross, axis=-1) + ends) / 12


def auc_estimate(confusion: Confusion) -> tf.Tensor:
    """Trapezoid AUC in threshold order (no clipping, no re-sorting); shape ``[...]``.

    The Mann-Whitney statistic of the counts (ties within a bucket count 1/2), with
    ``P = TP + FN`` and ``N = FP + TN`` taken at the first threshold. On a curve from
    [`monotone_confusion`][] or [`consistent_confusion`][] this equals
    [`dpauc_tf.core.curve.auc_from_confusion`][].
    """
    tp, fp, tn, fn = confusion
    num_pos = tp[..., :1] + fn[..., :1]
    num_neg = fp[..., :1] + tn[..., :1]
    tpr = tf.math.divide_no_nan(tp, num_pos)
    fpr = tf.math.divide_no_nan(fp, num_neg)
    # thresholds ascend, so fpr descends: area = sum (fpr_j - fpr_{j+1}) (tpr_j + tpr_{j+1}) / 2
    dx = fpr[..., :-1] - fpr[..., 1:]
    mean_y = (tpr[..., :-1] + tpr[..., 1:]) / 2
    return tf.reduce_sum(dx * mean_y, axis=-1)
