"""DPAUC's counting on Keras 3's JAX backend, written with ``keras.ops``.

On the TensorFlow backend [`dpauc_tf.keras.metric.DPAUC`][] counts with
[`dpauc_tf.core.counts.bucket_counts`][]; on JAX a metric's ``update_state`` runs inside
``jax.jit`` and TensorFlow ops cannot, so this module counts the same buckets
([`dpauc_tf.core.thresholds.Thresholds.segment_ids_with`][]) with the same checks and
messages ([`dpauc_tf.core.counts`][]). The release itself stays on the host, through the
mechanism's TensorFlow code (see ``docs/keras_backends.md``).

**Exact counts without float64.** JAX has no float64 unless ``jax_enable_x64`` is set, and
a float32 sum stops counting at 2^24. The counts are kept as two float32 arrays whose sum
is the count (``high + low``, double-float arithmetic): [`add_exactly`][] adds a batch
without rounding (TwoSum), so integer counts stay exact up to 2^47 per bucket, and the host
reads them as float64 ([`read_counts`][]). One batch is summed in float32, exact for
integer weights while a bucket gets fewer than 2^24 examples of one batch: a batch of more
than 2^24 examples is refused.

**Bad input.** Eagerly (concrete arrays) a bad batch raises ``ValueError`` naming the rule.
Inside ``jax.jit`` values cannot raise, so, as under TensorFlow's XLA, the batch's counts are
poisoned with NaN and the AUC comes out NaN instead of a wrong number.
"""

from __future__ import annotations

import numpy as np

try:
    from keras import ops
except ImportError:  # Keras 2 (TensorFlow 2.14): one backend, TensorFlow, which counts in core
    ops = None

from dpauc_tf.core import counts as core_counts
from dpauc_tf.core.thresholds import Thresholds

MAX_BATCH = 2**24


def is_traced(value) -> bool:
    """Whether ``value`` is a JAX tracer (inside ``jax.jit``, ``eval_shape``, ...)."""
    import jax

    return isinstance(value, jax.core.Tracer)


def in_step(value) -> bool:
    """Whether we run inside a Keras step: traced, or in a ``StatelessScope`` (where Keras'
    JAX trainer runs ``train_step`` and ``test_step``, jitted or not)."""
    if is_traced(value):
        return True
    try:
        from keras.src.backend import in_stateless_scope
    except ImportError:  # pragma: no cover - a Keras without it: tracers are the signal
        return False
    return bool(in_stateless_scope())


def as_tensor(values):
    """``values`` as a backend tensor (for its shape)."""
    return ops.convert_to_tensor(values)


def add_variables(metric, shape) -> None:
    """A metric's state on JAX: the counts as float32 ``high + low`` halves
    ``[2 (pos, neg), ...]`` (exact without float64), and the last release as a metric
    variable: a jitted step reads only the state Keras passes in, so the value a step shows
    must be part of it (its float64 original stays on the host)."""
    import keras

    for half in ("counts_high", "counts_low"):
        variable = metric.add_weight(
            name=half, shape=(2, *shape), initializer="zeros", dtype="float32"
        )
        setattr(metric, half, variable)
    metric.released = metric.add_weight(
        name="released",
        shape=(),
        initializer=keras.initializers.Constant(float("nan")),
        dtype="float32",
    )
    object.__setattr__(metric, "_last_release_host", float("nan"))


def _one_per_example(tensor, what: str):
    shape = tuple(tensor.shape)
    if any(dim != 1 for dim in shape[1:]):  # [N], [N, 1], [N, 1, 1], ...: one per example
        from dpauc_tf.keras.checks import not_one_per_example

        raise not_one_per_example(what, shape)
    return ops.reshape(tensor, [-1])


def check_label_weights_shape(dims, rows, labels: int) -> None:
    """Multi-label sample weights: a scalar, ``[N]``, ``[N, 1]`` or ``[N, num_labels]`` (one
    weight per example, or one per example and label, as ``tf.keras.metrics.AUC``); ``dims``
    the weights' dimensions (None where unknown, or None for an unknown rank), ``rows`` the
    number of examples (or None). Used by both backends."""
    if dims is None or not dims:
        return
    ok = len(dims) <= 2 and (len(dims) == 1 or dims[1] in (None, 1, labels))
    if ok and rows is not None and dims[0] is not None and dims[0] != rows:
        ok = False
    if not ok:
        raise ValueError(
            f"DPAUC(multi_label=True, num_labels={labels}): sample weights must have shape "
            f"[N], [N, 1] or [N, {labels}] for {rows if rows is not None else 'N'} examples, "
            f"got {tuple(dims)}"
        )


def _flatten(
    y_true, y_pred, sample_weight, num_labels: int, multi_label: bool, keras_shapes, label_weights
):
    """Flat float32 labels, scores and weights, and the label id of each (or None)."""
    y_true = ops.cast(ops.convert_to_tensor(y_true), "float32")
    y_pred = ops.cast(ops.convert_to_tensor(y_pred), "float32")
    weights = None
    if sample_weight is not None:
        weights = ops.cast(ops.convert_to_tensor(sample_weight), "float32")
    if keras_shapes and not multi_label:  # noise off: every shape, as Keras' AUC counts it
        from dpauc_tf.keras.checks import keras_flatten

        if label_weights is not None:
            label_weights = ops.convert_to_tensor(np.asarray(label_weights, "float32"))
        y_true, y_pred, weights = keras_flatten(ops, y_true, y_pred, weights, label_weights)
        rows, groups = y_true.shape[0], None
    elif not multi_label:
        y_pred = _one_per_example(y_pred, "predictions")
        y_true = _one_per_example(y_true, "labels")
        if y_true.shape[0] != y_pred.shape[0]:
            raise ValueError(f"DPAUC: {y_true.shape[0]} labels but {y_pred.shape[0]} predictions")
        rows, groups = y_true.shape[0], None
        if weights is not None:
            if len(weights.shape) >= 1:
                weights = _one_per_example(weights, "sample weights")
            weights = ops.broadcast_to(weights, (rows,))
    else:
        for tensor, what in ((y_true, "labels"), (y_pred, "predictions")):
            if len(tensor.shape) != 2 or tensor.shape[-1] != num_labels:
                raise ValueError(
                    f"DPAUC(multi_label=True, num_labels={num_labels}): {what} must have shape "
                    f"[N, {num_labels}], got {tuple(tensor.shape)}"
                )
        rows = y_pred.shape[0]
        groups = ops.tile(ops.arange(num_labels, dtype="int32"), [rows])
        y_true, y_pred = ops.reshape(y_true, [-1]), ops.reshape(y_pred, [-1])
        if weights is not None:
            check_label_weights_shape(list(weights.shape), rows, num_labels)
            if len(weights.shape) != 0:  # [N], [N, 1] or [N, labels]: one row per example
                weights = ops.reshape(weights, (rows, -1))
            weights = ops.reshape(ops.broadcast_to(weights, (rows, num_labels)), [-1])
    if rows is not None and rows > MAX_BATCH:
        raise ValueError(
            f"DPAUC on the JAX backend counts one batch in float32: at most 2^24 = {MAX_BATCH} "
            f"examples per update_state call, got {rows}; split the batch"
        )
    return y_true, y_pred, weights, groups


def _bad(y_true, y_pred, weights, from_logits: bool, integer_weights: bool, max_weight, unit=False):
    """A scalar bool (some rule broken); eagerly, a ``ValueError`` naming the first rule."""
    label_ok = ops.logical_or(ops.equal(y_true, 0.0), ops.equal(y_true, 1.0))
    if from_logits:
        checks = [(label_ok, core_counts.LABEL_MESSAGE)]
        checks.append((ops.logical_not(ops.isnan(y_pred)), core_counts.LOGIT_MESSAGE))
    else:  # NaN fails both comparisons
        score_ok = ops.logical_and(ops.greater_equal(y_pred, 0.0), ops.less_equal(y_pred, 1.0))
        checks = [(label_ok, core_counts.LABEL_MESSAGE), (score_ok, core_counts.SCORE_MESSAGE)]
    if weights is not None:
        upper = float("inf") if max_weight is None else float(max_weight)
        weight_ok = ops.logical_and(ops.greater_equal(weights, 0.0), ops.less_equal(weights, upper))
        if max_weight is None:
            weight_ok = ops.logical_and(weight_ok, ops.isfinite(weights))
        if unit:  # first: it names class_weight (see core.counts)
            checks.append((ops.equal(weights, 1.0), core_counts.UNIT_WEIGHT_MESSAGE))
        checks.append((weight_ok, core_counts.weight_message(max_weight)))
        if integer_weights:
            whole = ops.equal(weights, ops.round(weights))
            checks.append((whole, core_counts.INTEGER_WEIGHT_MESSAGE))
    oks = [ops.all(ok) for ok, _ in checks]
    if not is_traced(oks[0]):
        for ok, (_, message) in zip(oks, checks, strict=True):
            if not bool(ok):
                raise ValueError(message)
    all_ok = oks[0]
    for ok in oks[1:]:
        all_ok = ops.logical_and(all_ok, ok)
    return ops.logical_not(all_ok)


def batch_counts(
    thresholds: Thresholds,
    y_true,
    y_pred,
    sample_weight=None,
    *,
    from_logits: bool = False,
    integer_weights: bool = False,
    num_labels: int = 1,
    multi_label: bool = False,
    max_weight: float | None = 1.0,
    keras_shapes: bool = False,
    label_weights=None,
    unit_weights: bool = False,
):
    """One batch's counts, float32 ``[2, T + 1]`` (``[2, num_labels, T + 1]`` with
    ``multi_label``): ``[0]`` the positives, ``[1]`` the negatives, per bucket.

    ``max_weight``: the weights' bound (``None``: any finite weight >= 0, noise off);
    ``keras_shapes``: count every shape as ``tf.keras.metrics.AUC`` does (noise off), with
    ``label_weights`` along the last axis; ``unit_weights``: weights must be 1."""
    y_true, y_pred, weights, groups = _flatten(
        y_true, y_pred, sample_weight, num_labels, multi_label, keras_shapes, label_weights
    )
    bad = _bad(y_true, y_pred, weights, from_logits, integer_weights, max_weight, unit_weights)
    if from_logits:
        y_pred = ops.sigmoid(y_pred)
    buckets = thresholds.num_buckets
    segment = thresholds.segment_ids_with(ops, y_pred, y_true)
    labels = 1
    if groups is not None:
        labels = num_labels
        segment = segment + groups * (2 * buckets)
    if weights is None:
        weights = ops.ones_like(y_true)
    counts = ops.segment_sum(weights, segment, num_segments=2 * buckets * labels)
    counts = counts + ops.where(bad, float("nan"), 0.0)
    counts = ops.transpose(ops.reshape(counts, [labels, 2, buckets]), [1, 0, 2])
    return counts if multi_label else counts[:, 0]


def add_exactly(high, low, batch):
    """``(high, low) + batch`` without rounding: TwoSum, then renormalised (Fast2Sum)."""
    total = high + batch
    back = total - high
    error = (high - (total - back)) + (batch - back)
    low = low + error
    new_high = total + low
    return new_high, low - (new_high - total)


def read_counts(high, low) -> tuple[np.ndarray, np.ndarray]:
    """``(pos, neg)`` as float64 numpy arrays from the two float32 halves."""
    counts = np.asarray(high, np.float64) + np.asarray(low, np.float64)
    return counts[0], counts[1]


def host_value(compute, high, low, dtype: str):
    """``compute(pos, neg)`` (numpy float64 counts -> a float, on the host) as a scalar of
    ``dtype``: a ``jax.pure_callback`` when traced, a direct call otherwise."""
    if not is_traced(high):
        return ops.convert_to_tensor(np.asarray(compute(*read_counts(high, low)), dtype))
    import jax

    def on_host(high, low):
        return np.asarray(compute(*read_counts(high, low)), dtype)

    return jax.pure_callback(on_host, jax.ShapeDtypeStruct((), dtype), high, low)
