"""The Keras metric's input, setting and environment checks ([`dpauc_tf.keras.metric`][]):
shapes, labels, distribution strategies, TFF's server-side finalizer, and the marking that
lets DPAUC's own errors through Keras 2's AutoGraph unchanged."""

from __future__ import annotations

import os
import sys

import tensorflow as tf

KERAS_MAJOR = int(getattr(tf.keras, "__version__", getattr(tf, "__version__", "2")).split(".")[0])
SUPPORTED_BACKENDS = ("tensorflow", "jax")

# TFF's default metrics aggregation finalizes Keras metrics in these modules (at the server).
_TFF_FINALIZER_FILES = (
    os.path.join("tensorflow_federated", "python", "learning", "metrics", ""),
    os.path.join("tensorflow_federated", "python", "learning", "models", "functional.py"),
)


def refuse_tff_server_finalizer(metric) -> None:
    """Raises when TFF's default aggregation would finalize a noisy DPAUC at the server.

    TFF (``SumThenFinalizeFactory``, the default of ``tff.learning.algorithms.build_fed_eval``
    and of training algorithms) sums the clients' exact counts, rebuilds the metric at the
    server and calls ``result()`` in a graph, where no release is drawn: the value would be
    NaN, and any noise would be central noise added by a server that saw the exact counts.
    """
    if "tensorflow_federated" not in sys.modules:
        return
    frame = sys._getframe(2)
    while frame is not None:
        if any(part in frame.f_code.co_filename for part in _TFF_FINALIZER_FILES):
            raise ValueError(
                f"DPAUC metric {metric.name!r} (epsilon={metric.epsilon}) is being finalized by "
                "TFF's default metrics aggregation, which sums the clients' exact counts and "
                "finalizes them at the server: that would be central noise from a server that "
                "has seen the labels' counts (and result() cannot draw a release inside a TFF "
                "computation: it would be NaN). Pass metrics_aggregation_process="
                "dpauc_tf.federated.build_dpauc_metrics_aggregation_process(model_fn) to "
                "tff.learning.algorithms.build_fed_eval for client-side noise, or use "
                "DPAUC(epsilon=None) for a non-private AUC."
            )
        frame = frame.f_back


def check_distributed(counts) -> None:
    """Counts updated on several replicas must be the strategy's sync-on-read sums: a metric
    built outside ``strategy.scope()`` would count, and release, one worker's share only."""
    context = tf.distribute.get_replica_context()  # None in a cross-replica context
    if context is None or context.num_replicas_in_sync == 1:
        return
    variable = counts if isinstance(counts, tf.Variable) else getattr(counts, "value", counts)
    if not isinstance(variable, tf.distribute.DistributedValues):
        raise ValueError(
            "DPAUC was created outside the distribution strategy's scope: its counts would "
            "hold one replica's examples only. Create it inside `with strategy.scope():`."
        )


def as_it_is(error: Exception) -> Exception:
    """``error``, marked so that AutoGraph passes it through unchanged: Keras 2 runs a
    metric's ``update_state`` and ``result`` through AutoGraph, even eagerly, and re-raises
    what they raise with its own traceback in the message (or as a ``StagingError``)."""
    error.ag_pass_through = True
    if hasattr(error, "ag_error_metadata"):
        del error.ag_error_metadata
    return error


def drop_unit_dims(values):
    """``[N, 1, 1, ...]`` as ``[N]``: one value per example with unit dimensions after the
    first (as ``tf.keras.metrics.AUC`` takes them). Other shapes are left to the counting's
    own check, which refuses several values per example."""
    values = tf.convert_to_tensor(values)
    dims = values.shape.as_list() if values.shape.rank is not None else None
    if dims is not None and len(dims) > 2 and all(d == 1 for d in dims[1:]):
        return tf.reshape(values, [-1])
    return values


def check_num_thresholds(num_thresholds, thresholds) -> None:
    """``num_thresholds`` as ``tf.keras.metrics.AUC`` checks it (when no ``thresholds``)."""
    if thresholds is not None or isinstance(num_thresholds, str):
        return  # explicit thresholds win; a named choice is the grid's to check
    try:
        whole = int(num_thresholds) == num_thresholds and not isinstance(num_thresholds, bool)
    except (TypeError, ValueError):
        whole = False
    if not whole or num_thresholds <= 1:
        raise ValueError(
            "Argument `num_thresholds` must be an integer > 1. "
            f"Received: num_thresholds={num_thresholds!r}"
        )


def check_labels(multi_label, num_labels, label_weights, private: bool = True) -> int | None:
    """The number of labels (None: inferred at the first ``update_state``, as Keras does;
    only without noise, where the cost of a release needs no number of labels)."""
    if not multi_label:
        if num_labels not in (None, 1):
            raise ValueError("`num_labels` is needed only when `multi_label` is True.")
        if label_weights is not None and private:
            raise ValueError(
                "DPAUC with noise takes label_weights only with multi_label=True: without it "
                "Keras flattens several labels per example into one curve, which counts each "
                "example several times (no privacy guarantee covers that). Use "
                "multi_label=True with num_labels, or epsilon=None for a non-private AUC."
            )
        return 1
    if num_labels is None and not private:
        if label_weights is not None:
            _check_label_weights(label_weights, None)
        return None
    if isinstance(num_labels, bool) or not isinstance(num_labels, int) or num_labels < 1:
        raise ValueError(
            "DPAUC(multi_label=True) with noise needs num_labels, a positive int (each label "
            "is a release: the privacy cost of one value must be known before the first), "
            f"got {num_labels!r}; without noise (epsilon=None) it is inferred as in Keras"
        )
    if label_weights is not None:
        _check_label_weights(label_weights, num_labels)
    return num_labels


def _check_label_weights(label_weights, num_labels: int | None) -> None:
    weights = [float(w) for w in label_weights]
    if (num_labels is not None and len(weights) != num_labels) or any(not w >= 0 for w in weights):
        count = "" if num_labels is None else f"{num_labels} "
        raise ValueError(
            f"label_weights must be {count}non-negative numbers, got {label_weights!r}"
        )


def not_one_per_example(what: str, shape) -> ValueError:
    """With noise: several values per example are refused, saying what to do."""
    return ValueError(
        f"DPAUC with noise counts one score and one 0/1 label per example (shape [N] or "
        f"[N, 1]); {what} of shape {tuple(shape)} hold more than one value per example, which "
        "would count each example several times, beyond the privacy guarantee. For several labels use "
        "multi_label=True with num_labels (each label a release); for Keras' flattening "
        "use epsilon=None (not private)."
    )


def keras_flatten(xp, y_true, y_pred, weights, label_weights=None):
    """Flat ``y_true, y_pred, weights`` as ``tf.keras.metrics.AUC(multi_label=False)``
    counts them (noise off): ranks made equal by dropping or adding a last unit
    dimension, weights broadcast to the predictions (scaled by ``label_weights`` along the
    last axis), then every value counted as one example. ``xp`` is ``tf`` or ``keras.ops``."""
    y_true, y_pred = _one_column(xp, y_true), _one_column(xp, y_pred)
    if weights is not None:
        weights = _one_column(xp, weights)
    true_rank, pred_rank = len(y_true.shape), len(y_pred.shape)
    if pred_rank - true_rank == 1 and y_pred.shape[-1] == 1:
        y_pred, pred_rank = xp.squeeze(y_pred, -1), pred_rank - 1
    elif true_rank - pred_rank == 1 and y_true.shape[-1] == 1:
        y_true, true_rank = xp.squeeze(y_true, -1), true_rank - 1
    known = [
        (a, b)
        for a, b in zip(y_true.shape, y_pred.shape, strict=False)
        if a is not None and b is not None
    ]
    if true_rank != pred_rank or any(a != b for a, b in known):
        raise ValueError(
            f"DPAUC: labels of shape {tuple(y_true.shape)} and predictions of shape "
            f"{tuple(y_pred.shape)} are incompatible"
        )
    if label_weights is not None:
        label_weights = xp.reshape(label_weights, [1] * max(pred_rank - 1, 0) + [-1])
        weights = label_weights if weights is None else _with_rank(xp, weights, pred_rank)
        if weights is not label_weights:
            weights = weights * label_weights
    elif weights is not None:
        weights = _with_rank(xp, weights, pred_rank)
    if weights is not None:
        weights = xp.reshape(xp.broadcast_to(weights, xp.shape(y_pred)), [-1])
    return xp.reshape(y_true, [-1]), xp.reshape(y_pred, [-1]), weights


def _one_column(xp, values):
    """``[N, 1, 1, ...]`` as ``[N]`` (one value per example, however many unit dims)."""
    shape = tuple(values.shape)
    if len(shape) > 1 and all(dim == 1 for dim in shape[1:]):
        return xp.reshape(values, [-1])
    return values


def _with_rank(xp, weights, rank: int):
    """Keras' ``squeeze_or_expand_dimensions`` for sample weights."""
    weight_rank = len(weights.shape)
    if weight_rank == 0:
        return weights
    if weight_rank - rank == 1 and weights.shape[-1] == 1:
        return xp.squeeze(weights, -1)
    if rank - weight_rank == 1:
        return xp.expand_dims(weights, -1)
    return weights


def in_training_fit() -> bool:
    """Whether we run inside a Keras ``Model.fit`` but not inside its validation (or any
    ``Model.evaluate``): where an eager ``result()`` is the epoch-end training value."""
    model_type = tf.keras.Model
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_name
        if name in ("fit", "evaluate") and isinstance(frame.f_locals.get("self"), model_type):
            return name == "fit"
        frame = frame.f_back
    return False


def check_backend() -> str:
    """Keras' backend: TensorFlow or JAX; the others (PyTorch, ...) are refused."""
    if KERAS_MAJOR < 3:
        return "tensorflow"
    import keras

    backend = keras.backend.backend()
    if backend not in SUPPORTED_BACKENDS:
        raise ValueError(
            f"DPAUC does not support KERAS_BACKEND={backend!r} yet (untested: PyTorch cannot "
            "be installed in this project's CI); it supports the tensorflow and jax backends."
        )
    return backend
