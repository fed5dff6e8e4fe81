"""The Keras metric's input, setting and environment checks ([`dpauc_tf.keras.metric`][]):
shapes, labels, distribution strategies, TFF's server-side finalizer, and the marking that
lets DPAUC's own errors through Keras 2's AutoGraph unchanged."""

from __future__ import annotations

import os
import sys

import tensorflow as tf

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


def check_labels(multi_label, num_labels, label_weights) -> int:
    if not multi_label:
        if num_labels not in (None, 1) or label_weights is not None:
            raise ValueError("num_labels and label_weights need multi_label=True")
        return 1
    if isinstance(num_labels, bool) or not isinstance(num_labels, int) or num_labels < 1:
        raise ValueError(
            f"DPAUC(multi_label=True) needs num_labels, a positive int, got {num_labels!r}"
        )
    if label_weights is not None:
        weights = [float(w) for w in label_weights]
        if len(weights) != num_labels or any(not w >= 0 for w in weights):
            raise ValueError(
                f"label_weights must be {num_labels} non-negative numbers, got {label_weights!r}"
            )
    return num_labels
