"""Scores and labels -> per-bucket positive and negative counts (the only pass over the data).

``bucket_counts`` is O(n + T): one bucket id per example (see
[`dpauc_tf.core.thresholds.Thresholds.bucketize`][]) and one ``unsorted_segment_sum`` over
``2 (T + 1)`` segments. It validates its input, because a wrong label or an out-of-range
weight would silently break the sensitivity bound that every mechanism relies on:

* labels must be 0 or 1 (booleans are accepted);
* scores must be finite and in [0, 1] (with ``from_logits=True``: not NaN, then a sigmoid);
* sample weights must be finite and in [0, 1] (with ``integer_weights=True``, for the
  integer-noise mechanisms: 0 or 1, since a fraction would show through integer noise;
  with ``unit_weights=True``, for the mechanisms that release label-free totals: 1, since
  a weight that depends on the label, such as Keras' ``class_weight``, would show in them);
* one score and one label per example: shapes ``[N]``, ``[N, 1]`` or scalars. One-hot labels
  or several outputs per example (``[N, 2]``) are refused: they would count every example
  several times and multiply the sensitivity.

Counts are accumulated in float64 whatever the caller's dtype: a float32 sum stops counting
at ``2^24`` per bucket (and a label flip then moves it by more than the stated sensitivity);
float64 counts are exact integers up to ``2^53``.

Eagerly and in ``tf.function`` graphs a violation raises ``tf.errors.InvalidArgumentError``
with a message that names it. Under XLA (``jit_compile``) assertions are dropped by the
compiler, so the counts are additionally poisoned with NaN: the AUC then comes out as NaN
instead of a wrong number.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import tensorflow as tf

from dpauc_tf.core.thresholds import Thresholds

# What a bad batch is told (also by the keras.ops counting of Keras 3's JAX backend).
LABEL_MESSAGE = "DPAUC: labels must be 0 or 1."
LOGIT_MESSAGE = "DPAUC: logits must not be NaN."
SCORE_MESSAGE = "DPAUC: predictions must be finite and in [0, 1] (use from_logits=True for logits)."
WEIGHT_MESSAGE = (
    "DPAUC: sample weights must be in [0, 1]; larger weights break the sensitivity "
    "bound of the privacy guarantee (the Keras metric takes a declared bound, "
    "DPAUC(max_weight=...), which scales the noise; elsewhere clip the weights)."
)


def weight_message(max_weight: float | None = 1.0) -> str:
    """What a batch with a weight outside ``[0, max_weight]`` is told (``None``: no upper
    bound, only non-negative finite weights)."""
    if max_weight is None:
        return "DPAUC: sample weights must be finite and >= 0."
    if max_weight == 1.0:
        return WEIGHT_MESSAGE
    return (
        f"DPAUC: sample weights must be in [0, max_weight] = [0, {max_weight:g}]; larger "
        "weights break the sensitivity bound of the privacy guarantee (declare a larger "
        "max_weight, which scales the noise, or clip the weights)."
    )


INTEGER_WEIGHT_MESSAGE = (
    "DPAUC: this mechanism adds integer noise and needs sample weights of 0 or "
    "1; a fractional weight would show through the noise (epsilon = infinity)."
)


UNIT_WEIGHT_MESSAGE = (
    "DPAUC: this release takes sample weights of 1 only: it publishes totals as label-free "
    "(or, one-vs-rest, bounds a class change's effect on the assumption that the weight "
    "stays), and a weight that depends on the label, such as Keras' class_weight, breaks "
    "that; leave the weights out (Keras: pass the metric in metrics=, not "
    "weighted_metrics=) or use mechanism='histogram' (binary), which takes them."
)


def shape_error(what: str, shape) -> ValueError:
    """The error for inputs that hold more than one value per example."""
    return ValueError(
        f"DPAUC: {what} of shape {shape} hold more than one value per example; "
        "DPAUC counts one score and one 0/1 label per example (shape [N] or [N, 1]). "
        "One-hot labels or several outputs would count each example several times and "
        "multiply the privacy cost."
    )


def validate_batch(
    y_true: tf.Tensor,
    y_pred: tf.Tensor,
    sample_weight: tf.Tensor | None = None,
    *,
    from_logits: bool = False,
    integer_weights: bool = False,
    max_weight: float | None = 1.0,
    unit_weights: bool = False,
) -> tf.Tensor:
    """Asserts that a batch is valid and returns a scalar bool ``bad`` (for the XLA path).

    All arguments must already be flat float tensors of equal length (weights may be None).
    Weights must lie in ``[0, max_weight]`` (``max_weight=None``: finite and >= 0), and be 1
    with ``unit_weights``.
    """
    label_ok = tf.logical_or(tf.equal(y_true, 0.0), tf.equal(y_true, 1.0))
    if from_logits:
        score_ok = tf.logical_not(tf.math.is_nan(y_pred))
        score_msg = LOGIT_MESSAGE
    else:
        # NaN fails both comparisons, so it is caught here too.
        score_ok = tf.logical_and(tf.greater_equal(y_pred, 0.0), tf.less_equal(y_pred, 1.0))
        score_msg = SCORE_MESSAGE
    checks = [(label_ok, LABEL_MESSAGE), (score_ok, score_msg)]
    if sample_weight is not None:
        upper = np.inf if max_weight is None else max_weight
        weight_ok = tf.logical_and(
            tf.greater_equal(sample_weight, 0.0),
            tf.less_equal(sample_weight, tf.constant(upper, sample_weight.dtype)),
        )
        if max_weight is None:
            weight_ok = tf.logical_and(weight_ok, tf.math.is_finite(sample_weight))
        # With unit weights that rule comes first: it names class_weight, where the range
        # rule would advise a max_weight that these releases do not take.
        if unit_weights:
            checks.append((tf.equal(sample_weight, 1.0), UNIT_WEIGHT_MESSAGE))
        checks.append((weight_ok, weight_message(max_weight)))
        if integer_weights:
            checks.append(
                (tf.equal(sample_weight, tf.round(sample_weight)), INTEGER_WEIGHT_MESSAGE)
            )
    # One assertion per rule, run in order (automatic control dependencies): the first
    # violated rule is named. No tf.cond: a branch costs more than the checks (update_state
    # is called once per batch).
    oks = [tf.reduce_all(cond) for cond, _ in checks]
    asserts = [
        tf.debugging.Assert(ok, [message]) for ok, (_, message) in zip(oks, checks, strict=True)
    ]
    all_ok = oks[0]
    for ok in oks[1:]:
        all_ok = tf.logical_and(all_ok, ok)
    with tf.control_dependencies(asserts):
        return tf.logical_not(all_ok)


def _one_per_example(tensor: tf.Tensor, what: str) -> tf.Tensor:
    """``[N]`` from ``[N]``, ``[N, 1]`` or a scalar; one-hot / multi-output shapes refused."""
    shape = tensor.shape
    if shape.rank is not None and shape.rank >= 2:
        trailing = shape[1:]
        if shape.rank > 2 or (trailing[0] is not None and trailing[0] != 1):
            raise shape_error(what, shape)
        if trailing[0] is None:
            check = tf.debugging.assert_equal(
                tf.shape(tensor)[1], 1, message=f"DPAUC: {what} must have shape [N] or [N, 1]"
            )
            with tf.control_dependencies([check]):
                tensor = tf.identity(tensor)
    return tf.reshape(tensor, [-1])


def _float(values) -> tf.Tensor:
    """float32, or float64 when given float64 (scores are bucketed in float32, as Keras'
    AUC does; checking them in their own precision keeps a float64 1 + 1e-12 out)."""
    values = tf.convert_to_tensor(values)
    return tf.cast(values, tf.float64 if values.dtype == tf.float64 else tf.float32)


def _flatten_inputs(y_true, y_pred, sample_weight, dtype, float32_scores: bool = False):
    scores = _float(y_pred) if float32_scores else tf.cast(tf.convert_to_tensor(y_pred), dtype)
    y_pred = _one_per_example(scores, "predictions")
    y_true = _one_per_example(_float(y_true), "labels")
    if y_true.shape[0] is not None and y_pred.shape[0] is not None:
        if y_true.shape[0] != y_pred.shape[0]:
            raise ValueError(f"DPAUC: {y_true.shape[0]} labels but {y_pred.shape[0]} predictions")
    else:
        check = tf.debugging.assert_equal(
            tf.size(y_true), tf.size(y_pred), message="DPAUC: as many labels as predictions"
        )
        with tf.control_dependencies([check]):
            y_true = tf.identity(y_true)
    if sample_weight is not None:
        sample_weight = tf.cast(tf.convert_to_tensor(sample_weight), dtype)
        if sample_weight.shape.rank is not None and sample_weight.shape.rank >= 1:
            sample_weight = _one_per_example(sample_weight, "sample weights")
        sample_weight = tf.broadcast_to(sample_weight, tf.shape(y_true))
    return y_true, y_pred, sample_weight


class BucketUpdate(NamedTuple):
    """One batch as per-example updates of the bucket counts: ``pos[index[i]] +=
    pos_weights[i]``, ``neg[index[i]] += neg_weights[i]``; ``bad`` (scalar bool, or ``None``
    without validation): the batch breaks an input rule and the counts must become NaN."""

    index: tf.Tensor
    pos_weights: tf.Tensor
    neg_weights: tf.Tensor
    bad: tf.Tensor | None


def bucket_counts(
    y_true,
    y_pred,
    thresholds: Thresholds,
    sample_weight=None,
    *,
    from_logits: bool = False,
    dtype: tf.DType = tf.float64,
    validate: bool = True,
    integer_weights: bool = False,
    group_ids=None,
    num_groups: int | None = None,
    max_weight: float | None = 1.0,
    sparse: bool = False,
    unit_weights: bool = False,
) -> tuple[tf.Tensor, tf.Tensor]:
    """Counts (weighted) positives and negatives per score bucket.

    Args:
      y_true: labels in {0, 1}, any shape.
      y_pred: scores in [0, 1] (or logits with ``from_logits=True``), same number of elements.
      thresholds: the grid that defines the ``T + 1`` buckets.
      sample_weight: optional weights in [0, 1], broadcastable to ``y_true``.
      from_logits: apply a sigmoid to ``y_pred`` first.
      dtype: float dtype of the returned counts; the sums are always taken in float64.
      validate: check labels, scores and weights (see the module docstring).
      integer_weights: also require weights of 0 or 1 (integer-noise mechanisms).
      group_ids: optional int group (e.g. client) id in ``[0, num_groups)`` per example: count
        every group separately in the same single pass.
      num_groups: the number of groups; required with ``group_ids``.
      max_weight: the largest weight allowed (``None``: any finite weight >= 0; only where
        nothing is private).
      sparse: return the batch as a `BucketUpdate` (one bucket and two weights per
        example) instead of dense counts: for grids far larger than a batch, whose state
        is updated in place (``scatter_add``) at O(batch) cost; without ``group_ids``.
      unit_weights: also require weights of 1 (the mechanisms that release label-free
        totals: ``Capabilities.unit_weights``).

    Returns:
      ``(pos, neg)``, each of shape ``[T + 1]`` (``[num_groups, T + 1]`` with ``group_ids``):
      ``pos[b]`` is the weighted number of positive examples whose score falls in bucket ``b``.

    Examples:
        >>> t = Thresholds.make(num_thresholds=3)
        >>> pos, neg = bucket_counts([1, 0, 1], [0.9, 0.2, 0.4], t)
        >>> pos.numpy().tolist(), neg.numpy().tolist()
        ([0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0])
    """
    out_dtype = dtype
    dtype = tf.float64  # exact integer counts up to 2^53 (float32 stops at 2^24)
    # TensorFlow's grid buckets in float32 (as Keras): no float64 copy of the scores there.
    y_true, y_pred, sample_weight = _flatten_inputs(
        y_true, y_pred, sample_weight, dtype, float32_scores=thresholds.grid == "tf"
    )
    bad = (
        validate_batch(
            y_true,
            y_pred,
            sample_weight,
            from_logits=from_logits,
            integer_weights=integer_weights,
            max_weight=max_weight,
            unit_weights=unit_weights,
        )
        if validate
        else None
    )
    if from_logits:
        y_pred = tf.sigmoid(y_pred)
    num_buckets = thresholds.num_buckets
    # Segment b holds positives of bucket b, segment (T + 1) + b the negatives.
    segment = thresholds.segment_ids(y_pred, y_true)
    weights = tf.ones_like(y_true, dtype) if sample_weight is None else sample_weight
    groups = 1
    if group_ids is not None:
        if num_groups is None or num_groups < 1:
            raise ValueError("group_ids needs num_groups >= 1")
        groups = int(num_groups)
        group_ids = tf.reshape(tf.cast(group_ids, tf.int32), [-1])
        tf.debugging.assert_equal(tf.size(group_ids), tf.size(segment), "one group id per example")
        tf.debugging.assert_non_negative(group_ids, "group ids must be >= 0")
        tf.debugging.assert_less(group_ids, groups, "group ids must be < num_groups")
        segment = segment + group_ids * (2 * num_buckets)
    if sparse:
        if group_ids is not None:
            raise ValueError("sparse=True takes no group_ids")
        positive = segment < num_buckets
        zero = tf.zeros_like(weights)
        return BucketUpdate(
            tf.math.floormod(segment, num_buckets),
            tf.cast(tf.where(positive, weights, zero), out_dtype),
            tf.cast(tf.where(positive, zero, weights), out_dtype),
            bad,
        )
    counts = tf.math.unsorted_segment_sum(weights, segment, 2 * num_buckets * groups)
    if bad is not None:  # one op: the scalar condition broadcasts over the counts
        counts = tf.where(bad, tf.constant(np.nan, dtype), counts)
    counts = tf.cast(counts, out_dtype)
    if group_ids is not None:
        counts = tf.reshape(counts, [groups, 2, num_buckets])
        return counts[:, 0], counts[:, 1]
    pos, neg = tf.split(counts, 2)  # one op (update_state runs once per batch)
    return pos, neg


def bucket_counts_numpy(
    labels: np.ndarray,
    scores: np.ndarray,
    thresholds: Thresholds,
    group_ids: np.ndarray | None = None,
    num_groups: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """[`bucket_counts`][] in NumPy for unweighted, already validated examples: int64 counts.

    The streaming reader's counter ([`dpauc_tf.io.streaming`][]): one
    [`bucketize_numpy`][dpauc_tf.core.thresholds.Thresholds.bucketize_numpy] (TensorFlow's bucket rule,
    bit for bit) and one ``np.bincount``. Labels must be 0/1 and scores in [0, 1] (after
    any sigmoid): the caller validates them (with row numbers). Returns ``(pos, neg)`` of
    shape ``[num_groups, T + 1]``; int64 counts are exact far past ``2^24``.

    Examples:
        >>> pos, neg = bucket_counts_numpy(np.array([1, 0, 1]), np.array([0.9, 0.2, 0.4]),
        ...                                Thresholds.make(num_thresholds=3))
        >>> pos.tolist(), neg.tolist()
        ([[0, 1, 1, 0]], [[0, 1, 0, 0]])
    """
    num_buckets = thresholds.num_buckets
    segment = thresholds.bucketize_numpy(scores)
    segment += (1 - np.asarray(labels).ravel().astype(np.int64)) * num_buckets
    if group_ids is not None:
        segment += np.asarray(group_ids, np.int64).ravel() * (2 * num_buckets)
    counts = np.bincount(segment, minlength=2 * num_buckets * num_groups)
    if counts.size != 2 * num_buckets * num_groups:
        raise ValueError("group ids must be in [0, num_groups)")
    counts = counts.reshape(num_groups, 2, num_buckets)
    return counts[:, 0], counts[:, 1]
