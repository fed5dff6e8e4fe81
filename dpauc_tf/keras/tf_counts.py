"""DPAUC's counting on the TensorFlow backend (Keras 2 and Keras 3): one batch's per-bucket
positive and negative counts, with the input rules of [`dpauc_tf.keras.checks`][].

* **Noise off** (``epsilon=None``): every input ``tf.keras.metrics.AUC`` takes, counted as
  it counts them: extra dimensions flattened (``multi_label=False``), sample weights
  broadcast, ``label_weights`` along the last axis, any finite weight >= 0.
* **With noise**: one score and one 0/1 label per example (``[N]``, ``[N, 1]``, ...), or
  ``[N, num_labels]`` with ``multi_label``; weights in ``[0, max_weight]`` (integers 0/1 for
  the integer-noise mechanisms; 1 only for the mechanisms that release label-free totals
  and for one-vs-rest). Anything else is refused: it is outside the guarantee.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from dpauc_tf.core.counts import UNIT_WEIGHT_MESSAGE, bucket_counts, weight_message
from dpauc_tf.keras import checks, ops_counts

# From this many buckets a batch updates the counts in place (``scatter_add``, O(batch))
# instead of adding a dense [T + 1] batch histogram (O(T + 1) per batch): the mechanisms
# with a fine grid of their own (rank-sum, auc-only: 2^17 + 1 buckets).
SPARSE_MIN_BUCKETS = 16_385


def add_batch(metric, y_true, y_pred, sample_weight) -> None:
    """Adds one batch to ``metric``'s counts: dense, or in place for fine grids (one bucket
    and two weights per example) when the batch has fewer than an eighth as many examples
    as the grid has buckets (decided in the graph when the batch size is not static). Under
    XLA, which drops assertions, an input the rules refuse makes the counts NaN: all of them
    (dense), or the batch's buckets and both end buckets (in place), so that every
    cumulative count and the AUC are NaN."""
    buckets = metric._count_grid.num_buckets
    if metric.multi_label or buckets < SPARSE_MIN_BUCKETS or tf.distribute.has_strategy():
        return _add_dense(metric, y_true, y_pred, sample_weight)
    size = tf.convert_to_tensor(y_pred).shape.num_elements()
    if size is not None:
        add = _add_sparse if size * 8 < buckets else _add_dense
        return add(metric, y_true, y_pred, sample_weight)
    small = tf.size(y_pred) * 8 < buckets

    def sparse():
        _add_sparse(metric, y_true, y_pred, sample_weight)
        return tf.constant(True)

    def dense():
        _add_dense(metric, y_true, y_pred, sample_weight)
        return tf.constant(False)

    tf.cond(small, sparse, dense)
    return None


def _add_dense(metric, y_true, y_pred, sample_weight) -> None:
    pos, neg = batch_counts(metric, y_true, y_pred, sample_weight)
    add_to(metric.positives, pos)
    add_to(metric.negatives, neg)


def _add_sparse(metric, y_true, y_pred, sample_weight) -> None:
    update = batch_counts(metric, y_true, y_pred, sample_weight, sparse=True)
    index, pos_weights, neg_weights = update.index, update.pos_weights, update.neg_weights
    if update.bad is not None:  # a refused input: NaN into the batch's buckets and both ends
        ends = tf.constant([0, metric._count_grid.num_buckets - 1], index.dtype)
        index = tf.concat([index, ends], 0)
        nan = tf.constant(np.nan, tf.float64)
        pos_weights = tf.where(update.bad, nan, tf.concat([pos_weights, [0.0, 0.0]], 0))
        neg_weights = tf.where(update.bad, nan, tf.concat([neg_weights, [0.0, 0.0]], 0))
    scatter_to(metric.positives, index, pos_weights)
    scatter_to(metric.negatives, index, neg_weights)


def scatter_to(variable, index, weights) -> None:
    """``variable[index[i]] += weights[i]`` in place (duplicates add up)."""
    inner = variable if isinstance(variable, tf.Variable) else getattr(variable, "_value", None)
    if isinstance(inner, tf.Variable) and not _in_stateless_scope():
        inner.scatter_add(tf.IndexedSlices(weights, index))
    else:
        size = int(variable.shape[0])
        variable.assign_add(tf.math.unsorted_segment_sum(weights, index, size))


def batch_counts(metric, y_true, y_pred, sample_weight, sparse: bool = False):
    """``(pos, neg)`` of one batch for ``metric`` (float64; ``[L, T + 1]`` multi-label), or
    with ``sparse`` its [`BucketUpdate`][dpauc_tf.core.counts.BucketUpdate]."""
    options = {
        "from_logits": metric._config["from_logits"],
        "integer_weights": metric._mechanism.capabilities.integer_counts,
        "max_weight": metric._weight_bound,
        "unit_weights": metric._unit_weights,
        "dtype": tf.float64,
    }
    if sparse:
        options["sparse"] = True
    if metric.multi_label:
        return label_counts(metric, y_true, y_pred, sample_weight, options)
    grid = metric._count_grid
    y_true, y_pred = tf.convert_to_tensor(y_true), tf.convert_to_tensor(y_pred)
    if sample_weight is not None:
        sample_weight = tf.cast(tf.convert_to_tensor(sample_weight), tf.float32)
        check_known_weights(sample_weight, metric._weight_bound, metric._unit_weights)
    if metric.epsilon is None:
        label_weights = metric._label_weights
        if label_weights is not None:
            label_weights = tf.constant(label_weights, tf.float32)
        y_true, y_pred, sample_weight = checks.keras_flatten(
            tf, y_true, y_pred, sample_weight, label_weights
        )
        return bucket_counts(y_true, y_pred, grid, sample_weight, **options)
    y_true, y_pred = checks.drop_unit_dims(y_true), checks.drop_unit_dims(y_pred)
    for tensor, what in ((y_true, "labels"), (y_pred, "predictions")):
        dims = tensor.shape.as_list() if tensor.shape.rank is not None else []
        if len(dims) >= 2 and any(d not in (1, None) for d in dims[1:]):
            raise checks.not_one_per_example(what, dims)
    if sample_weight is not None:
        sample_weight = checks.drop_unit_dims(sample_weight)
    return bucket_counts(y_true, y_pred, grid, sample_weight, **options)


def add_to(variable, delta) -> None:
    """``variable.assign_add(delta)`` in one op: Keras 3 adds as a read, an add and an
    assignment (three ops per call); its TensorFlow backend keeps a ``tf.Variable``
    inside, which adds in place (also a distribution strategy's sync-on-read variable)."""
    inner = variable if isinstance(variable, tf.Variable) else getattr(variable, "_value", None)
    if isinstance(inner, tf.Variable) and not _in_stateless_scope():
        inner.assign_add(delta)
    else:
        variable.assign_add(delta)


def _in_stateless_scope() -> bool:
    if checks.KERAS_MAJOR < 3:
        return False
    from keras.src.backend import in_stateless_scope

    return bool(in_stateless_scope())


def check_known_weights(weights, max_weight, unit_weights: bool = False) -> None:
    """Weights known when the step is built (eager calls; Keras 2 traces even those): a
    ``ValueError`` in one line, before the graph's assertion with its traceback."""
    values = tf.get_static_value(weights)
    if values is None:
        return
    values = np.asarray(values, np.float64)
    upper = np.inf if max_weight is None else max_weight
    if unit_weights and not np.all(values == 1.0):  # first: see core.counts.validate_batch
        raise ValueError(UNIT_WEIGHT_MESSAGE)
    if not (np.all(np.isfinite(values)) and np.all((values >= 0) & (values <= upper))):
        raise ValueError(weight_message(max_weight))


def label_counts(metric, y_true, y_pred, sample_weight, options):
    """Multi-label counts: ``[N, L]`` labels and scores, one curve per label."""
    labels = metric._num_labels
    y_true = tf.convert_to_tensor(y_true)
    y_pred = tf.convert_to_tensor(y_pred)
    for tensor, what in ((y_true, "labels"), (y_pred, "predictions")):
        if tensor.shape.rank != 2 or tensor.shape[-1] not in (None, labels):
            raise ValueError(
                f"DPAUC(multi_label=True, num_labels={labels}): {what} must have shape "
                f"[N, {labels}], got {tensor.shape}"
            )
    rows = tf.shape(y_pred)[0]
    groups = tf.tile(tf.range(labels), [rows])
    weights = None
    if sample_weight is not None:
        weights = tf.cast(tf.convert_to_tensor(sample_weight), tf.float64)
        check_known_weights(weights, metric._weight_bound, metric._unit_weights)
        dims = weights.shape.as_list() if weights.shape.rank is not None else None
        ops_counts.check_label_weights_shape(dims, y_pred.shape[0], labels)
        if weights.shape.rank != 0:  # [N], [N, 1] or [N, labels]: one row per example
            weights = tf.reshape(weights, [rows, -1])
        weights = tf.reshape(tf.broadcast_to(weights, [rows, labels]), [-1])
    return bucket_counts(
        tf.reshape(y_true, [-1]),
        tf.reshape(y_pred, [-1]),
        metric._count_grid,
        weights,
        group_ids=groups,
        num_groups=labels,
        **options,
    )
