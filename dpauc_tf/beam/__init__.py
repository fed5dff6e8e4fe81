"""Apache Beam: count per score bucket in parallel, merge, release once per slice.

Needs Apache Beam (the ``beam`` extra: ``pip install ".[beam]"`` in a clone); importing this package without it
raises a one-line ``ImportError`` naming the extra. The pieces:

* [`CountBuckets`][]: a ``CombineFn`` whose accumulator is the
  per-bucket ``pos, neg`` counts of [`dpauc_tf.core.counts.bucket_counts`][] (float64,
  exact integers up to 2^53), merged by addition.
* [`PrivateAUC`][]: a ``PTransform`` from keyed examples to one
  release per slice through a mechanism of the registry (central noise at extraction), or
  the sum of clients' reports when the input is per client, with the epsilon of every slice
  and of the whole.
* [`ReadScores`][]: score files (Parquet, TFRecord, CSV, globs, any
  file system Beam knows) read by Beam's own sources into column batches, which
  ``PrivateAUC(slicing=...)`` slices inside the transform.
* [`evaluate_with_beam`][dpauc_tf.beam.pipeline.evaluate_with_beam]: the pipeline behind
  ``dpauc evaluate --backend beam``.

See ``docs/beam.md`` (runners and their flags) and ``docs/tfma.md`` (TFMA).
"""

from __future__ import annotations

from dpauc_tf.core.extras import install_hint

try:
    import apache_beam  # noqa: F401
except ImportError:  # pragma: no cover - the keras3 world has Beam
    raise ImportError(f"dpauc_tf.beam needs Apache Beam: {install_hint('beam')}") from None

from dpauc_tf.tf_startup import import_tensorflow_quietly

# Beam's workers import this package when they unpickle a transform: TensorFlow's C++
# start-up chatter stays out of every worker's log.
import_tensorflow_quietly()

from dpauc_tf.beam.counting import BucketCounts, CountBuckets  # noqa: E402
from dpauc_tf.beam.io import ReadScores  # noqa: E402
from dpauc_tf.beam.release import PrivateAUC  # noqa: E402

__all__ = ["BucketCounts", "CountBuckets", "PrivateAUC", "ReadScores"]
