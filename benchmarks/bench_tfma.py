"""Wall time of a TFMA evaluation with ``DPAUCMetric`` on a Parquet or TFRecord file.

    .venv-keras3/bin/python benchmarks/bench_tfma.py [--rows 1000000]
        [--format parquet|tfrecord] [--slices 1|2]

Writes synthetic examples (``prediction``, ``label``, ``group``) to a temporary file, then
runs ``dpauc_tf.beam.tfma_metric.run_model_analysis`` (TFMA's own reader for TFRecord; Beam's
IO and an in-pipeline conversion to ``tf.train.Example`` for Parquet) on the in-process
DirectRunner, with ``histogram`` at epsilon 1 and T = 200. Prints the wall time, examples/s,
the peak RSS and the load average (the figures depend on it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time

import numpy as np


def write(path: str, rows: int, fmt: str) -> None:
    rng = np.random.default_rng(0)
    scores = rng.random(rows)
    labels = (rng.random(rows) < scores).astype(np.int64)
    groups = np.where(rng.random(rows) < 0.5, "a", "b")
    if fmt == "parquet":
        import pandas as pd

        pd.DataFrame({"prediction": scores, "label": labels, "group": groups}).to_parquet(
            path, index=False, row_group_size=100_000
        )
        return
    import tensorflow as tf

    with tf.io.TFRecordWriter(path) as writer:
        for score, label, group in zip(scores, labels, groups, strict=True):
            feature = {
                "prediction": tf.train.Feature(float_list=tf.train.FloatList(value=[score])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                "group": tf.train.Feature(bytes_list=tf.train.BytesList(value=[group.encode()])),
            }
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--format", choices=("parquet", "tfrecord"), default="parquet")
    parser.add_argument("--slices", type=int, choices=(1, 2), default=1)
    args = parser.parse_args()

    from tensorflow_model_analysis.proto import config_pb2

    from dpauc_tf.beam.tfma_metric import run_model_analysis

    directory = tempfile.mkdtemp(prefix="dpauc-tfma-bench-")
    path = os.path.join(directory, f"examples.{args.format}")
    started = time.perf_counter()
    write(path, args.rows, args.format)
    print(f"wrote             {args.rows:,} examples in {time.perf_counter() - started:.1f} s")
    metric = config_pb2.MetricConfig(
        class_name="DPAUCMetric",
        module="dpauc_tf.beam.tfma_metric",
        config=json.dumps({"mechanism": "histogram", "epsilon": 1.0, "num_thresholds": 200}),
    )
    slicing = [config_pb2.SlicingSpec()]
    if args.slices == 2:
        slicing.append(config_pb2.SlicingSpec(feature_keys=["group"]))
    eval_config = config_pb2.EvalConfig(
        model_specs=[config_pb2.ModelSpec(label_key="label", prediction_key="prediction")],
        metrics_specs=[config_pb2.MetricsSpec(metrics=[metric])],
        slicing_specs=slicing,
    )
    start = time.perf_counter()
    result = run_model_analysis(eval_config, path, os.path.join(directory, "out"))
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"input             {args.format}, {len(result.slicing_metrics)} slice(s)")
    print(f"evaluation wall   {wall:.1f} s ({args.rows / wall:,.0f} examples/s)")
    print(f"peak RSS          {peak:,.0f} MiB")
    print(f"load average      {os.getloadavg()[0]:.1f} (2 cores)")


if __name__ == "__main__":
    main()
