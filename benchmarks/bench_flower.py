"""Time per Flower evaluation at K = 10 and K = 100 clients, and peak memory.

    PYTHONPATH=. .venv-keras3/bin/python benchmarks/bench_flower.py [--clients 10 100]
        [--examples 20000] [--mechanisms histogram secure-histogram secure-tree-histogram]
        [--engine in-process|simulation] [--repeats 3] [--num-shares K] [--threshold T]

Every (mechanism, K) setting runs in a fresh Python process: ``--repeats`` evaluations of
``dpauc_tf.flower.evaluate`` (one Flower evaluate round each, through the same
``evaluate_round`` that ``DPAUCStrategy`` runs every round of a ``flwr run`` app, and the
clients' ``evaluate_reply`` / ``secagg_evaluate_mod``; secure mechanisms through SecAgg+
with the neighbourhoods of ``SecAggSettings.for_clients(K)``, or ``--num-shares`` and
``--threshold``, e.g. ``--num-shares 1.0`` for every client a neighbour of every other),
after a first evaluation timed apart (imports, TensorFlow tracing, Ray start-up for
``--engine simulation``). It prints the median wall time per evaluation and the peak
resident memory of that process and of its largest child (Ray's workers), from
``getrusage``, so each setting's peak is its own (the in-process engine has no workers:
its child column is ``-``). The load average before and after is
printed too: on a shared machine the wall times are upper bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np


def _clients(num_clients: int, num_examples: int, seed: int = 0):
    from dpauc_tf.core.partitions import client_slices, iid_partition

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, num_examples)
    scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0.0, 1.0)
    ids = iid_partition(num_examples, num_clients, seed=seed)
    return [(scores[idx], labels[idx]) for idx in client_slices(ids, num_clients)]


def _number(text: str | None) -> int | float | None:
    if text is None:
        return None
    return float(text) if "." in text else int(text)


def run_one(args) -> dict:
    """One setting in this process; returns its figures."""
    from dpauc_tf.flower import evaluate

    clients = _clients(args.one_clients, args.examples)
    from dpauc_tf.mechanisms.registry import get_mechanism

    secagg = {}
    mechanism = get_mechanism(
        args.one_mechanism, epsilon=1.0, num_thresholds=args.num_thresholds, num_clients=2
    )
    if not mechanism.capabilities.secure:
        pass
    elif args.num_shares is not None:
        secagg["num_shares"] = _number(args.num_shares)
    if args.threshold is not None and mechanism.capabilities.secure:
        secagg["reconstruction_threshold"] = _number(args.threshold)
    times, out = [], None
    for i in range(args.repeats + 1):
        start = time.perf_counter()
        out = evaluate(
            clients,
            mechanism=args.one_mechanism,
            epsilon=1.0,
            num_thresholds=args.num_thresholds,
            seed=i,
            engine=args.engine,
            **secagg,
        )
        times.append(time.perf_counter() - start)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if args.engine == "in-process":
        # no workers; a short-lived fork (a library calling a subprocess) would show the
        # pages it inherited from this process, not memory of its own
        children = float("nan")
    return {
        "first": times[0],
        "median": statistics.median(times[1:]) if args.repeats else float("nan"),
        "reporting": out.num_reporting,
        "secagg": None
        if out.secagg is None
        else [out.secagg.num_shares, out.secagg.reconstruction_threshold],
        "peak_mib": own,
        "children_peak_mib": children,
    }


def _mib(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument(
        "--mechanisms",
        nargs="+",
        default=["histogram", "secure-histogram", "secure-tree-histogram"],
    )
    parser.add_argument("--engine", default="in-process", choices=("in-process", "simulation"))
    parser.add_argument("--num-thresholds", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-shares", help="SecAgg+ num_shares (int, or a fraction: 1.0)")
    parser.add_argument("--threshold", help="SecAgg+ reconstruction_threshold")
    parser.add_argument("--one-clients", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--one-mechanism", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.one_mechanism is not None:
        print("RESULT " + json.dumps(run_one(args)), flush=True)
        return

    print(
        f"engine={args.engine}, {args.examples} examples, T={args.num_thresholds}, "
        f"{args.repeats} evaluations after a first one; load average before: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(
        "| mechanism | K | SecAgg+ k, t | first (s) | per evaluation (s, median) "
        "| peak RSS (MiB) | largest child (MiB) | reporting |"
    )
    print("|---|---|---|---|---|---|---|---|")
    passthrough = ["--examples", str(args.examples), "--engine", args.engine]
    passthrough += ["--num-thresholds", str(args.num_thresholds), "--repeats", str(args.repeats)]
    if args.num_shares is not None:
        passthrough += ["--num-shares", args.num_shares]
    if args.threshold is not None:
        passthrough += ["--threshold", args.threshold]
    for num_clients in args.clients:
        for name in args.mechanisms:
            command = [sys.executable, __file__, "--one-clients", str(num_clients)]
            command += ["--one-mechanism", name, *passthrough]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
            if done.returncode or not lines:
                tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"| {name} | {num_clients} | failed: {tail} |", flush=True)
                continue
            r = json.loads(lines[-1][len("RESULT ") :])
            secagg = "-" if r["secagg"] is None else f"{r['secagg'][0]}, {r['secagg'][1]}"
            print(
                f"| {name} | {num_clients} | {secagg} | {r['first']:.2f} | {r['median']:.2f} "
                f"| {r['peak_mib']:.0f} | {_mib(r['children_peak_mib'])} | {r['reporting']} |",
                flush=True,
            )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
