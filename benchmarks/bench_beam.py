"""Rows per second of ``dpauc_tf.beam.PrivateAUC`` on Beam's local runners.

    .venv-keras3/bin/python benchmarks/bench_beam.py [--rows 1000000] [--clients 1]
        [--runner multi|inmemory] [--mechanism histogram] [--epsilon 1]

Synthetic scores and labels are shipped to the pipeline in batches of 65,536 examples
(:func:`dpauc_tf.beam.pipeline.client_batches`, as ``dpauc evaluate --backend beam`` does)
and released once. ``multi`` is the DirectRunner with 2 worker processes
(``direct_running_mode=multi_processing``), ``inmemory`` the in-process DirectRunner.
Prints the wall time of the whole pipeline (start-up included), rows/s, and the machine's
load average, since the figures depend on it.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--runner", choices=("multi", "inmemory"), default="multi")
    parser.add_argument("--mechanism", default="histogram")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--num-thresholds", type=int, default=200)
    args = parser.parse_args()

    started = time.perf_counter()
    import apache_beam  # noqa: F401

    from dpauc_tf.beam.pipeline import evaluate_with_beam
    from dpauc_tf.mechanisms.release import ReleaseSpec

    imported = time.perf_counter() - started
    rng = np.random.default_rng(0)
    scores = rng.random(args.rows)
    labels = (rng.random(args.rows) < scores).astype(np.int8)
    clients = rng.integers(0, args.clients, args.rows)
    options = None if args.runner == "multi" else ["--runner=DirectRunner"]
    start = time.perf_counter()
    out = evaluate_with_beam(
        scores,
        labels,
        clients,
        args.clients,
        ReleaseSpec.make(
            args.mechanism, epsilon=args.epsilon, num_thresholds=args.num_thresholds, seed=0
        ),
        beam_options=options,
    )
    wall = time.perf_counter() - start
    print(
        f"runner            {args.runner} ({'2 worker processes' if args.runner == 'multi' else 'in process'})"
    )
    print(f"rows              {args.rows:,} ({args.clients} client(s), T={args.num_thresholds})")
    print(f"import            {imported:.1f} s (apache_beam + dpauc_tf.beam)")
    print(f"pipeline wall     {wall:.1f} s (start-up included)")
    print(f"rows/s            {args.rows / wall:,.0f}")
    print(f"AUC               {out.auc_or_none:.6f} (epsilon {out.epsilon})")
    print(f"load average      {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
