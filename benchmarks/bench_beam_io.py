"""Rows per second and the driver's peak memory of a Beam pipeline that reads a Parquet
file with Beam's own IO (``ReadScores``) and releases once (``PrivateAUC(slicing=...)``).

    .venv-keras3/bin/python benchmarks/bench_beam_io.py [--rows 100000000]
        [--runner multi|inmemory] [--file PATH] [--slices 1]

The Parquet file (scores, labels and a group column, row groups of 1M rows) is written
first, in chunks, unless ``--file`` names an existing one. ``multi`` is the DirectRunner with
2 worker processes, ``inmemory`` the in-process DirectRunner (where the driver is also the
worker). Prints the pipeline's wall time, rows/s, the peak RSS of the driver process and of
its worker processes, and the load average (the figures depend on it).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time

import numpy as np

ROW_GROUP = 1_000_000


def write_file(path: str, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    schema = pa.schema([("score", pa.float64()), ("label", pa.int8()), ("group", pa.int8())])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, ROW_GROUP):
            size = min(ROW_GROUP, rows - start)
            scores = rng.random(size)
            labels = (rng.random(size) < scores).astype(np.int8)
            groups = rng.integers(0, 4, size).astype(np.int8)
            writer.write_table(
                pa.table({"score": scores, "label": labels, "group": groups}, schema=schema)
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--runner", choices=("multi", "inmemory"), default="multi")
    parser.add_argument("--file", default=None, help="an existing Parquet file to read")
    parser.add_argument(
        "--slices",
        type=int,
        choices=(1, 2),
        default=1,
        help="1: the overall slice; 2: overall and by group",
    )
    args = parser.parse_args()

    path = args.file or os.path.join(tempfile.mkdtemp(prefix="dpauc-bench-"), "scores.parquet")
    if args.file is None:
        started = time.perf_counter()
        write_file(path, args.rows)
        print(f"wrote             {args.rows:,} rows in {time.perf_counter() - started:.1f} s")
    import apache_beam as beam  # noqa: F401
    import pyarrow.parquet as pq

    from dpauc_tf.beam import PrivateAUC, ReadScores
    from dpauc_tf.beam.pipeline import pipeline_options, run_and_collect

    rows = pq.ParquetFile(path).metadata.num_rows
    slicing = [()] if args.slices == 1 else [(), ("group",)]
    columns = ["score", "label"] + (["group"] if args.slices == 2 else [])
    options = pipeline_options(None if args.runner == "multi" else ["--runner=DirectRunner"])
    start = time.perf_counter()
    results, releases = run_and_collect(
        lambda p: (
            p
            | ReadScores(path, columns)
            | PrivateAUC("histogram", epsilon=1.0, num_thresholds=200, slicing=slicing, seed=0)
        ),
        options,
    )
    wall = time.perf_counter() - start
    driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    counted = max(r.num_examples for r in results)
    print(f"runner            {args.runner}")
    print(
        f"rows              {rows:,} (counted {counted:,.0f}; {len(results)} slice(s), {releases} releases)"
    )
    print(f"pipeline wall     {wall:.1f} s ({rows / wall:,.0f} rows/s)")
    print(f"peak RSS          driver {driver:,.0f} MiB; largest worker process {children:,.0f} MiB")
    print(f"load average      {os.getloadavg()[0]:.1f} (2 cores)")


if __name__ == "__main__":
    main()
