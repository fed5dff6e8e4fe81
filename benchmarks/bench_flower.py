"""Time per Flower evaluation at K = 10 and K = 100 clients, and peak memory.

    PYTHONPATH=. .venv-keras3/bin/python benchmarks/bench_flower.py [--clients 10 100]
        [--examples 20000] [--mechanisms histogram secure-histogram]
        [--engine in-process|simulation] [--repeats 3]

Each setting runs ``--repeats`` evaluations of ``dpauc_tf.flower.evaluate`` (one Flower
round each; secure mechanisms go through SecAgg+ with every client a neighbour of every
other) and prints the median wall time per evaluation. The first evaluation of a setting
(imports, TensorFlow tracing, Ray start-up for ``--engine simulation``) is timed apart.
Peak memory is the largest resident set of this process and, separately, of its children
(Ray's workers), from ``getrusage``.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import numpy as np


def _clients(num_clients: int, num_examples: int, seed: int = 0):
    from dpauc_tf.core.partitions import client_slices, iid_partition

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, num_examples)
    scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0.0, 1.0)
    ids = iid_partition(num_examples, num_clients, seed=seed)
    return [(scores[idx], labels[idx]) for idx in client_slices(ids, num_clients)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--mechanisms", nargs="+", default=["histogram", "secure-histogram"])
    parser.add_argument("--engine", default="in-process", choices=("in-process", "simulation"))
    parser.add_argument("--num-thresholds", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from dpauc_tf.flower import evaluate

    print(f"engine={args.engine}, {args.examples} examples, T={args.num_thresholds}")
    print("| mechanism | K | first (s) | per evaluation (s, median) | reporting |")
    print("|---|---|---|---|---|")
    for num_clients in args.clients:
        clients = _clients(num_clients, args.examples)
        for name in args.mechanisms:
            times = []
            for i in range(args.repeats + 1):
                start = time.perf_counter()
                out = evaluate(
                    clients,
                    mechanism=name,
                    epsilon=1.0,
                    num_thresholds=args.num_thresholds,
                    seed=i,
                    engine=args.engine,
                )
                times.append(time.perf_counter() - start)
            print(
                f"| {name} | {num_clients} | {times[0]:.2f} | "
                f"{statistics.median(times[1:]):.2f} | {out.num_reporting} |",
                flush=True,
            )
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak memory: {own:.0f} MiB (this process), {children:.0f} MiB (largest child)")


if __name__ == "__main__":
    main()
