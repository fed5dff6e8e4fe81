"""Utility of the tree mechanisms against the paper's mechanism (issue 8), 100 seeds, one run.

Score set: the paper-sized synthetic stand-in (458,407 examples, 117,317 positives, AUC
0.7494; :func:`dpauc_tf.experiments.synthetic.paper_score_set`, epoch 0). Counting happens
once per client (:func:`dpauc_tf.experiments.simulation.client_histograms`); the repeats are
vectorised by :func:`dpauc_tf.experiments.simulation.simulate`, which draws every client's
noise independently (``[R, K, nodes]`` in chunks) and sums over clients: the same
distribution as ``R x K`` separate releases. Secure-aggregation mechanisms are simulated by
their exact aggregate (one release of the summed counts with the total noise: the sum of the
``K`` Polya shares *is* one discrete Laplace draw per node).

Rows (epsilon = 1, IID clients unless ``--table4``):

* ``paper`` (DPAUC_Lap, the reference grid, |Theta| = 100), K = 10 and 1,000;
* ``histogram`` (flat, local Laplace, TensorFlow grid, |Theta| = 100);
* ``tree-histogram`` local (1,023 quantile thresholds), both classes noisy and with public
  scores; ``secure-tree-histogram`` (both variants).

Usage::

    python benchmarks/bench_utility.py            # the eps = 1 comparison (about 5 minutes)
    python benchmarks/bench_utility.py --table4   # ratio to the paper for every Table 4 cell
    python benchmarks/bench_utility.py --design   # the variance table behind the defaults
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpauc_tf import partitions
from dpauc_tf.adaptive_thresholds import quantile_thresholds
from dpauc_tf.experiments.simulation import client_histograms, simulate
from dpauc_tf.experiments.synthetic import paper_score_set
from dpauc_tf.hierarchical import (
    SecureTreeHistogram,
    TreeHistogram,
    TreeLayout,
    auc_gradient,
    auc_variance,
)
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.thresholds import Thresholds

FINE = 1023  # 1,024 buckets: a complete 4-ary tree


def _clients(scores, partition: str, clients: int, seed: int) -> np.ndarray:
    if partition == "iid":
        return partitions.iid_partition(scores.size, clients, seed=seed)
    return partitions.non_iid_partition(scores, clients)


def _run(label, mechanism, thresholds, data, partition, clients, repeats, seed, exact):
    ids = _clients(data.scores, partition, clients, seed)
    pos, neg = client_histograms(data.labels, data.scores, thresholds, ids, clients)
    if isinstance(mechanism, SecureTreeHistogram):  # exact aggregate of the secure sum
        pos, neg = pos.sum(0, keepdims=True), neg.sum(0, keepdims=True)
        mechanism = mechanism.aggregate()
    start = time.time()
    result = simulate(mechanism, pos, neg, seed=seed, repeats=repeats)
    return {
        "row": label,
        "partition": partition,
        "K": clients,
        "bias": result.mean - exact,
        "std": result.std,
        "seconds": time.time() - start,
    }


def _settings(epsilon: float, clients: int, quantiles: Thresholds):
    paper_grid = Thresholds.make(100, "reference")
    tf_grid = Thresholds.make(100, "tf")
    return [
        (
            "paper (|Theta|=100)",
            get_mechanism("paper", epsilon=epsilon, num_thresholds=100),
            paper_grid,
        ),
        (
            "histogram local (T=100)",
            get_mechanism("histogram", epsilon=epsilon, num_thresholds=100),
            tf_grid,
        ),
        ("tree local", TreeHistogram(epsilon, FINE), quantiles),
        ("tree local, public scores", TreeHistogram(epsilon, FINE, public_scores=True), quantiles),
        ("secure tree", SecureTreeHistogram(epsilon, FINE, num_clients=clients), quantiles),
        (
            "secure tree, public scores",
            SecureTreeHistogram(epsilon, FINE, public_scores=True, num_clients=clients),
            quantiles,
        ),
    ]


def _print(rows):
    print("| row | partition | K | bias | std | s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['row']} | {r['partition']} | {r['K']} | {r['bias']:+.2e} | {r['std']:.2e} "
            f"| {r['seconds']:.0f} |"
        )


def main_comparison(repeats: int, seed: int) -> None:
    data = paper_score_set(0)
    exact = data.auc
    quantiles = Thresholds.explicit(quantile_thresholds(data.scores, FINE))
    print(f"score set: n={data.labels.size}, P={int(data.labels.sum())}, exact AUC={exact:.6f}")
    rows = []
    for clients in (10, 1000):
        for label, mechanism, grid in _settings(1.0, clients, quantiles):
            rows.append(_run(label, mechanism, grid, data, "iid", clients, repeats, seed, exact))
            print(rows[-1], flush=True)
    _print(rows)


def table4(repeats: int, seed: int) -> None:
    data = paper_score_set(0)
    exact = data.auc
    quantiles = Thresholds.explicit(quantile_thresholds(data.scores, FINE))
    print(
        "| partition | K | eps | paper std | paper bias | secure tree std (ratio) | "
        "local tree pub. std (ratio) | local tree pub. bias |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for partition in ("iid", "non-iid"):
        for clients in (10, 1000):
            for epsilon in (8.0, 4.0, 2.0, 1.0):
                paper = get_mechanism("paper", epsilon=epsilon, num_thresholds=100)
                p = _run(
                    "paper",
                    paper,
                    Thresholds.make(100, "reference"),
                    data,
                    partition,
                    clients,
                    repeats,
                    seed,
                    exact,
                )
                s = _run(
                    "secure",
                    SecureTreeHistogram(epsilon, FINE, public_scores=True, num_clients=clients),
                    quantiles,
                    data,
                    partition,
                    clients,
                    repeats,
                    seed,
                    exact,
                )
                t = _run(
                    "local",
                    TreeHistogram(epsilon, FINE, public_scores=True),
                    quantiles,
                    data,
                    partition,
                    clients,
                    repeats,
                    seed,
                    exact,
                )
                print(
                    f"| {partition} | {clients} | {epsilon:g} | {p['std']:.2e} | {p['bias']:+.2e} "
                    f"| {s['std']:.2e} ({s['std'] / p['std']:.4f}) "
                    f"| {t['std']:.2e} ({t['std'] / p['std']:.4f}) | {t['bias']:+.2e} |",
                    flush=True,
                )


def design() -> None:
    data = paper_score_set(0)
    for name, grid in (
        ("quantile", Thresholds.explicit(quantile_thresholds(data.scores, FINE))),
        ("tf", Thresholds.make(FINE, "tf")),
    ):
        pos, neg = client_histograms(data.labels, data.scores, grid)
        pos, neg = pos[0].astype(np.float64), neg[0].astype(np.float64)
        grad_pos, grad_neg = auc_gradient(pos, neg)
        flat = np.sqrt(8.0 * (np.sum(grad_pos**2) + np.sum(grad_neg**2)))
        print(f"{name} grid, {FINE + 1} buckets: flat histogram AUC std {flat:.3e}")
        for branching in (2, 4, 8, 16):
            depth = TreeLayout.for_buckets(FINE + 1, branching).depth
            cells = []
            for ratio in (0.55, 0.8, 1.0, 1.25):
                weights = list(ratio ** np.arange(depth + 1))
                both = np.sqrt(auc_variance(pos, neg, 1.0, branching, weights))
                public = np.sqrt(auc_variance(pos, neg, 1.0, branching, weights, True))
                cells.append(f"r={ratio}: {both:.2e} / pub {public:.2e}")
            print(f"  b={branching}: " + "; ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--table4", action="store_true")
    parser.add_argument("--design", action="store_true")
    args = parser.parse_args()
    if args.design:
        design()
    elif args.table4:
        table4(args.repeats, args.seed)
    else:
        main_comparison(args.repeats, args.seed)


if __name__ == "__main__":
    main()
