"""update_state throughput of DPAUC vs tf.keras.metrics.AUC on the same batches.

Run in each world:

    .venv/bin/python benchmarks/bench_metric.py          # TF 2.14 / Keras 2
    .venv-keras3/bin/python benchmarks/bench_metric.py   # newest TF / Keras 3

Both metrics' ``update_state`` run inside a ``tf.function`` (as in ``model.fit``), on the
same pre-made batches, alternating in rounds so that machine noise hits both alike. Prints
examples per second for each and the ratio DPAUC / AUC (>= 1.0 means DPAUC is as fast).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

from dpauc_tf import DPAUC


def bench(
    num_thresholds: int,
    batch_size: int,
    examples: int,
    rounds: int,
    weighted: bool = False,
    mechanism: str | None = None,
) -> dict:
    rng = np.random.default_rng(0)
    # weights of 1 for the mechanisms that take no others (rank-sum, the default: issue 30)
    unit = DPAUC(epsilon=1.0, mechanism=mechanism).mechanism.capabilities.unit_weights
    num_batches = max(examples // batch_size, 4)
    batches = []
    for _ in range(num_batches):
        y = tf.constant((rng.uniform(size=batch_size) < 0.25).astype(np.float32))
        p = tf.constant(rng.beta(1.0, 3.0, size=batch_size).astype(np.float32))
        w = rng.uniform(size=batch_size).astype(np.float32) if weighted else None
        w = None if w is None else tf.constant(np.ones_like(w) if unit else w)
        batches.append((y, p, w))
    steps = {}
    for name, metric in (
        ("tf.keras.metrics.AUC", tf.keras.metrics.AUC(num_thresholds=num_thresholds)),
        (
            "DPAUC",
            DPAUC(epsilon=1.0, num_thresholds=num_thresholds, seed=0, mechanism=mechanism),
        ),
    ):

        @tf.function
        def step(y, p, w, metric=metric):
            metric.update_state(y, p, sample_weight=w)

        for y, p, w in batches[:2]:  # trace and warm up
            step(y, p, w)
        steps[name] = step
    best = dict.fromkeys(steps, np.inf)
    ratios = []
    names = list(steps)
    for index in range(rounds):  # alternating, so that machine noise hits both alike
        took = {}
        for name in names if index % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            for y, p, w in batches:
                steps[name](y, p, w)
            took[name] = time.perf_counter() - start
            best[name] = min(best[name], took[name])
        ratios.append(took["tf.keras.metrics.AUC"] / took["DPAUC"])
    out = {name: num_batches * batch_size / seconds for name, seconds in best.items()}
    # The median of the rounds' ratios: each round times both metrics back to back, so a
    # load that changes between rounds (a shared machine) cancels out of it.
    out["paired ratio"] = float(np.median(ratios))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2_000_000, help="examples per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--weighted",
        action="store_true",
        help="sample weights in [0, 1] (1 for mechanisms that take no others)",
    )
    parser.add_argument(
        "--batch-sizes", default="1000,64000", help="comma-separated batch sizes to time"
    )
    parser.add_argument(
        "--mechanism",
        help="DPAUC's mechanism (default: DPAUC's own, rank-sum for the ROC AUC, counted on "
        "2^17 + 1 buckets whatever T; 'histogram' counts on T + 1)",
    )
    args = parser.parse_args()
    keras_version = getattr(tf.keras, "__version__", tf.__version__)
    print(f"TensorFlow {tf.__version__}, Keras {keras_version}, {os.cpu_count()} cores")
    name = DPAUC(epsilon=1.0).mechanism.name if args.mechanism is None else args.mechanism
    print(f"DPAUC(epsilon=1.0, mechanism={name!r})")
    print(f"weighted: {args.weighted}; ratio = DPAUC / tf.keras.metrics.AUC (>= 1: as fast)")
    print("paired: the median over rounds of the ratio within a round (load-robust)")
    print(f"{'T':>5} {'batch':>7} {'AUC ex/s':>14} {'DPAUC ex/s':>14} {'ratio':>6} {'paired':>6}")
    for num_thresholds in (100, 1000):
        for batch_size in (int(size) for size in args.batch_sizes.split(",")):
            examples = args.examples if batch_size > 1000 else args.examples // 8
            r = bench(
                num_thresholds, batch_size, examples, args.rounds, args.weighted, args.mechanism
            )
            auc, dp = r["tf.keras.metrics.AUC"], r["DPAUC"]
            print(
                f"{num_thresholds:>5} {batch_size:>7} {auc:>14,.0f} {dp:>14,.0f} {dp / auc:>6.2f}"
                f" {r['paired ratio']:>6.2f}"
            )


if __name__ == "__main__":
    main()
