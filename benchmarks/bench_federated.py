"""Benchmark of federated DP-AUC (TFF world): time/memory and AUC spread per mechanism.

Run: ``.venv/bin/python benchmarks/bench_federated.py > bench.log 2>&1; cat bench.log``
(write to a file, not a pipe: TFF's worker holds pipes open; it is shut down at exit anyway).

1. Wall time and peak memory of one ``dpauc_tf.federated.evaluate`` call (histogram, eps = 1,
   T = 100, IID) for K = 10, 100, 1,000 clients on 458,407 synthetic examples (117,317
   positives; binormal scores, AUC ~ 0.75). The first call of each K includes tracing.
2. Std of the AUC over 100 seeds at eps = 1, T = 100, K = 10 and 1,000 for ``paper``,
   ``histogram``, ``histogram-public-scores`` and ``secure-histogram``. Each client's bucket
   counts are computed once (``bucket_counts``); the 100 noisy releases of all K clients are
   drawn in one vectorised call per mechanism (``release(..., repeats=100)`` on the ``[K, T+1]``
   stack of client counts), summed over clients and turned into AUCs with the same
   ``to_confusion`` / ``dpauc_tf.core.curve`` functions the TFF server runs. This is the TFF
   computation's arithmetic without running it 100 times.
"""

from __future__ import annotations

import resource
import time

import numpy as np
import tensorflow as tf
from scipy import stats

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.curve import auc_from_histogram, auc_from_roc, roc_from_confusion
from dpauc_tf.core.partitions import client_slices, iid_partition
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.federated import client_data_from_partition, evaluate, register_atexit_shutdown
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.noise.seeds import make_seed

NUM_EXAMPLES, NUM_POSITIVES = 458_407, 117_317
EPSILON, NUM_THRESHOLDS, REPEATS = 1.0, 100, 100


def synthetic_scores(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = np.zeros(NUM_EXAMPLES, np.float32)
    labels[rng.choice(NUM_EXAMPLES, NUM_POSITIVES, replace=False)] = 1.0
    shift = np.sqrt(2.0) * stats.norm.ppf(0.75)  # binormal AUC = Phi(shift / sqrt 2) = 0.75
    logits = rng.normal(size=NUM_EXAMPLES) + shift * labels - 1.5
    return (1.0 / (1.0 + np.exp(-logits))).astype(np.float32), labels


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def time_federated(scores, labels) -> None:
    print("== one federated evaluation (histogram, eps=1, T=100, IID) ==")
    for k in (10, 100, 1000):
        clients = client_data_from_partition(
            scores, labels, iid_partition(scores.size, k, seed=k), k
        )
        for attempt in ("first", "second"):
            start = time.perf_counter()
            out = evaluate(
                clients,
                mechanism="histogram",
                epsilon=EPSILON,
                num_thresholds=NUM_THRESHOLDS,
                seed=0 if attempt == "first" else 1,
            )
            wall = time.perf_counter() - start
            print(
                f"K={k:5d} {attempt:6s} call: {wall:6.2f} s  auc={out.auc:.4f}  "
                f"reporting={out.num_reporting}  peak RSS (this process) {peak_rss_mib():.0f} MiB"
            )


def auc_spread(scores, labels) -> None:
    thresholds = Thresholds.make(NUM_THRESHOLDS)
    pos_all, neg_all = bucket_counts(labels, scores, thresholds, dtype=tf.float64)
    print(
        f"\n== std of the AUC over {REPEATS} seeds (eps=1, T=100); exact AUC on this grid "
        f"{float(auc_from_histogram(pos_all, neg_all)):.4f} =="
    )
    print(f"{'mechanism':26s} {'K=10':>10s} {'K=1000':>10s}")
    rows = {}
    for k in (10, 1000):
        ids = iid_partition(scores.size, k, seed=1)
        counts = [
            bucket_counts(labels[idx], scores[idx], thresholds, dtype=tf.float64)
            for idx in client_slices(ids, k)
        ]
        pos = tf.stack([c[0] for c in counts])
        neg = tf.stack([c[1] for c in counts])
        for name in ("paper", "histogram", "histogram-public-scores", "secure-histogram"):
            mechanism = get_mechanism(
                name, epsilon=EPSILON, num_thresholds=NUM_THRESHOLDS, num_clients=k
            )
            release = mechanism.release(pos, neg, seed=make_seed(k), repeats=REPEATS)
            summed = {key: tf.reduce_sum(value, axis=1) for key, value in release.items()}
            aucs = auc_from_roc(roc_from_confusion(mechanism.to_confusion(summed))).numpy()
            rows.setdefault(name, {})[k] = (aucs.mean(), aucs.std())
    for name, by_k in rows.items():
        cells = "  ".join(f"{by_k[k][1]:.5f} (mean {by_k[k][0]:.4f})" for k in (10, 1000))
        print(f"{name:26s} {cells}")


def main() -> None:
    register_atexit_shutdown()
    scores, labels = synthetic_scores()
    time_federated(scores, labels)
    auc_spread(scores, labels)


if __name__ == "__main__":
    main()
