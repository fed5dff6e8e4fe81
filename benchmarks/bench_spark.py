"""Rows per second of ``dpauc_tf.spark.private_auc`` on a local Spark, and the driver's peak
memory.

    .venv-keras3/bin/python benchmarks/bench_spark.py [--rows 1000000] [--master local[2]]
        [--clients 1] [--slices 1] [--mechanism histogram] [--epsilon 1] [--calls 1]
        [--repeats 1] [--central rank-sum]

Synthetic scores and labels (``label ~ Bernoulli(score)``) are written by Spark to a Parquet
directory first (not timed), then read back with ``spark.read.parquet`` and released once
per slice (``--calls N``: N times, each timed: the first call also starts Spark's Python
workers). Prints the wall time of the release (the counting job on the executors, the
merge and the release on the driver), rows/s, the peak resident memory of the Python driver
and of the JVM driver (``VmHWM``), and the machine's load average, since the figures
depend on it.

``--repeats R`` draws R releases from each call's counting pass; with R > 1 the RMSE and
bias of the first call's R AUCs against the exact AUC (scikit-learn's, of the scores the
driver reads back for this only) are printed, and ``--central M`` adds those of M's
release of the whole file without clients (e.g. ``rank-sum``, the central floor), R
releases, not timed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time


def _jvm_peak_mb(session) -> float | None:
    process = getattr(session.sparkContext._gateway, "proc", None)
    try:
        with open(f"/proc/{process.pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (AttributeError, OSError):
        return None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--slices", type=int, default=1)
    parser.add_argument("--mechanism", default="histogram")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--num-thresholds", type=int, default=200)
    parser.add_argument("--driver-memory", default="1g")
    parser.add_argument("--calls", type=int, default=1, help="releases, each timed")
    parser.add_argument("--repeats", type=int, default=1, help="releases per counting pass")
    parser.add_argument("--central", default=None, help="a mechanism to compare (no clients)")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from dpauc_tf.spark import private_auc_by_slice
    from dpauc_tf.tf_startup import import_tensorflow_quietly

    import_tensorflow_quietly()
    session = (
        SparkSession.builder.master(args.master)
        .appName("bench_spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", args.driver_memory)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    directory = tempfile.mkdtemp(prefix="dpauc-bench-spark-")
    path = os.path.join(directory, "scores.parquet")
    try:
        score = F.rand(seed=0)
        (
            session.range(args.rows)
            .select(
                score.alias("score"),
                (F.rand(seed=1) < score).cast("int").alias("label"),
                (F.col("id") % args.clients).alias("client"),
                (F.col("id") % args.slices).cast("string").alias("slice"),
            )
            .write.parquet(path)
        )
        frame = session.read.parquet(path)
        walls = []
        for call in range(args.calls):
            start = time.perf_counter()
            results = private_auc_by_slice(
                frame,
                "slice" if args.slices > 1 else None,
                client_col="client" if args.clients > 1 else None,
                mechanism=args.mechanism,
                epsilon=args.epsilon,
                num_thresholds=args.num_thresholds,
                seed=call,
                repeats=args.repeats,
            )
            walls.append(time.perf_counter() - start)
            if call == 0:
                aucs = {args.mechanism: next(iter(results.values())).aucs}
        wall = walls[0]
        jvm = _jvm_peak_mb(session)
        if args.repeats > 1:
            from sklearn.metrics import roc_auc_score

            table = frame.select("score", "label").toArrow()
            exact = roc_auc_score(
                table.column("label").to_numpy(), table.column("score").to_numpy()
            )
            if args.central:
                central = private_auc_by_slice(
                    frame,
                    None,
                    mechanism=args.central,
                    epsilon=args.epsilon,
                    num_thresholds=args.num_thresholds,
                    seed=args.calls,
                    repeats=args.repeats,
                )
                aucs[f"{args.central} (central)"] = central[None].aucs
    finally:
        session.stop()
        shutil.rmtree(directory, ignore_errors=True)
    python_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    first = next(iter(results.values()))
    print(f"master            {args.master}")
    print(
        f"rows              {args.rows:,} ({args.clients} client(s), {args.slices} slice(s), "
        f"T={args.num_thresholds}, {args.mechanism}, epsilon={args.epsilon})"
    )
    print(f"release wall      {wall:.1f} s (read, count on executors, merge, release)")
    if len(walls) > 1:
        later = ", ".join(f"{w:.1f}" for w in walls[1:])
        print(f"later calls       {later} s (Python workers already started)")
    print(f"rows/s            {args.rows / wall:,.0f}")
    print(f"driver peak RSS   Python {python_peak:,.0f} MB, JVM {jvm or float('nan'):,.0f} MB")
    print(f"first slice AUC   {first.auc:.4f} (epsilon_total {first.epsilon_total})")
    if args.repeats > 1:
        import numpy as np

        print(f"exact AUC         {exact:.6f} (scikit-learn)")
        for name, values in aucs.items():
            error = np.asarray(values, np.float64) - exact
            rmse, bias = np.sqrt(np.mean(error**2)), np.mean(error)
            print(f"{name:<17} RMSE {rmse:.3g}, bias {bias:+.2g} ({error.size} releases)")
    print(f"load average      {os.getloadavg()[0]:.1f} (1 min)")


if __name__ == "__main__":
    main()
