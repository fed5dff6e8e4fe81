"""TFMA's inputs for the ``DPAUCMetric`` tests: TFRecord files of ``tf.train.Example`` rows and
an ``EvalConfig`` that asks for the metric. Import only where TFMA is installed."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import numpy as np
import tensorflow as tf
from tensorflow_model_analysis.proto import config_pb2


def _floats(value) -> tf.train.Feature:
    return tf.train.Feature(float_list=tf.train.FloatList(value=np.atleast_1d(value)))


def write_examples(path, predictions, labels, groups: Iterable | None = None) -> str:
    """Writes one Example per row (``prediction`` and ``label`` float lists, and a ``group``
    bytes feature ``g<k>`` where ``groups`` is given); returns the path."""
    path = str(path)
    groups = [None] * len(labels) if groups is None else groups
    rows = zip(predictions, labels, groups, strict=True)
    with tf.io.TFRecordWriter(path) as writer:
        for prediction, label, group in rows:
            feature = {"prediction": _floats(prediction), "label": _floats(label)}
            if group is not None:
                value = [b"g%d" % group]
                feature["group"] = tf.train.Feature(bytes_list=tf.train.BytesList(value=value))
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return path


def metric_config(
    options: dict, slicing: Sequence[Sequence[str]] = ((),), **eval_options
) -> config_pb2.EvalConfig:
    """An ``EvalConfig`` for ``DPAUCMetric(**options)`` over ``label`` and ``prediction``, one
    ``SlicingSpec`` per tuple of feature keys in ``slicing`` (``()``: the whole data)."""
    metric = config_pb2.MetricConfig(
        class_name="DPAUCMetric", module="dpauc_tf.beam.tfma_metric", config=json.dumps(options)
    )
    return config_pb2.EvalConfig(
        model_specs=[config_pb2.ModelSpec(label_key="label", prediction_key="prediction")],
        metrics_specs=[config_pb2.MetricsSpec(metrics=[metric])],
        slicing_specs=[config_pb2.SlicingSpec(feature_keys=list(keys)) for keys in slicing],
        **({"options": config_pb2.Options(**eval_options)} if eval_options else {}),
    )
