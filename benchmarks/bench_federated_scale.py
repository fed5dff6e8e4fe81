"""Benchmark of ``dpauc_tf.federated.evaluate`` with many clients, streamed in cohorts.

Run (write to a file, not a pipe)::

    .venv/bin/python benchmarks/bench_federated_scale.py > scale.log 2>&1; cat scale.log
    .venv/bin/python benchmarks/bench_federated_scale.py --clients 1000 10000 \
        --mechanism secure-histogram --cohort-size 1000 > scale.log 2>&1

The paper's synthetic score set (458,407 examples, 117,317 positives:
``dpauc_tf.experiments.synthetic.paper_score_set(2)``) is split IID over K clients, and the
clients are handed to ``evaluate`` as a generator (``iter_client_data``): no list of every
client's data is built. For each K it prints the wall time and the CPU time (this process, its children and its
live TFF workers; on a shared machine the CPU time is the steadier figure) of each
evaluation (eps = 1, T = 100; by default two at the first K, the first including tracing and
the worker's start, and one at the next) and the peak resident
memory: this process (``getrusage`` maxrss), TFF's ``worker_binary`` children (their
``VmHWM`` from ``/proc``: a live child is not in ``RUSAGE_CHILDREN``), finished children
(``RUSAGE_CHILDREN``), and their sum. The worker is shut down at the end.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from dpauc_tf.core.partitions import iid_partition
from dpauc_tf.experiments.synthetic import paper_score_set
from dpauc_tf.federated import evaluate, iter_client_data, shutdown_tff_workers
from dpauc_tf.federated.process import _child_workers


def _worker_peak_mib() -> float:
    total = 0.0
    for pid in _child_workers():
        try:
            with open(f"/proc/{pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1]) / 1024.0
        except OSError:
            continue
    return total


def cpu_seconds() -> float:
    """CPU time (user + system) of this process, its finished children and its live TFF
    workers: a measure of the work that a loaded machine's wall time hides."""
    own = time.process_time()
    finished = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own + finished.ru_utime + finished.ru_stime
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in _child_workers():
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
        except (OSError, IndexError, ValueError):
            continue
    return total


def peak_memory_mib() -> dict[str, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    finished = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    worker = _worker_peak_mib()
    return {
        "self": own,
        "worker": worker,
        "finished children": finished,
        "sum": own + worker + finished,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--mechanism", default="histogram")
    parser.add_argument("--cohort-size", type=int, default=1000)
    parser.add_argument(
        "--evaluations", type=int, nargs="+", default=[2, 1], help="evaluations per K"
    )
    args = parser.parse_args()
    score_set = paper_score_set(2)
    scores = np.asarray(score_set.scores, np.float32)
    labels = np.asarray(score_set.labels, np.float32)
    print(
        f"{scores.size:,} examples, {int(labels.sum()):,} positives; mechanism "
        f"{args.mechanism}, eps=1, T=100, cohort size {args.cohort_size}; "
        f"load average {os.getloadavg()[0]:.2f} at start",
        flush=True,
    )
    try:
        for index, k in enumerate(args.clients):
            ids = iid_partition(scores.size, k, seed=k)
            repeats = args.evaluations[min(index, len(args.evaluations) - 1)]
            for attempt in range(repeats):
                start, cpu_start = time.perf_counter(), cpu_seconds()
                out = evaluate(
                    iter_client_data(scores, labels, ids, k),
                    mechanism=args.mechanism,
                    epsilon=1.0,
                    num_thresholds=100,
                    seed=attempt,
                    num_clients=k,
                    cohort_size=args.cohort_size,
                )
                wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
                memory = peak_memory_mib()
                print(
                    f"K={k:6,d} evaluation {attempt + 1}: wall {wall:7.2f} s, CPU {cpu:7.2f} s  "
                    f"auc={out.auc:.4f}  "
                    f"reporting={out.num_reporting:,}  epsilon={out.epsilon:g}  peak RSS MiB: "
                    + ", ".join(f"{key} {value:.0f}" for key, value in memory.items())
                    + f"  (load {os.getloadavg()[0]:.2f})",
                    flush=True,
                )
    finally:
        shutdown_tff_workers()


if __name__ == "__main__":
    main()
