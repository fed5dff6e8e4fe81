"""Apache Spark: count per score bucket on the executors, release once per slice.

Needs PySpark (the ``spark`` extra: ``pip install ".[spark]"`` in a clone; and Java 17 or newer); importing this
package without it raises a one-line ``ImportError`` naming the extra. The pieces:

* [`private_auc`][dpauc_tf.spark.evaluation.private_auc] and
  [`private_auc_by_slice`][dpauc_tf.spark.evaluation.private_auc_by_slice]: a DataFrame with score and label
  columns (optional weight, client and slice columns) -> one
  [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult] (per slice), through the release protocol.
* [`DPAUCEvaluator`][dpauc_tf.spark.evaluation.DPAUCEvaluator]: the same in the shape of
  ``pyspark.ml.evaluation.BinaryClassificationEvaluator`` (``evaluate(df) -> float``).
* [`count_partition`][dpauc_tf.spark.counting.count_partition]: what the executors run
  (``mapInArrow``; NumPy, no TensorFlow).

See ``docs/spark.md``.
"""

from __future__ import annotations

from dpauc_tf.core.extras import install_hint

try:
    import pyspark  # noqa: F401
except ImportError:  # pragma: no cover - the keras3 world has PySpark
    raise ImportError(f"dpauc_tf.spark needs PySpark: {install_hint('spark')}") from None

# Loaded on first use: the executors import dpauc_tf.spark.counting (NumPy and PyArrow only)
# and must not pay for TensorFlow, which the release on the driver needs.
_PUBLIC = {
    "DPAUCEvaluator": "dpauc_tf.spark.evaluation",
    "count_buckets": "dpauc_tf.spark.evaluation",
    "private_auc": "dpauc_tf.spark.evaluation",
    "private_auc_by_slice": "dpauc_tf.spark.evaluation",
    "release_counts": "dpauc_tf.spark.evaluation",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'dpauc_tf.spark' has no attribute {name!r}")
