"""Utility of the tree mechanisms against the paper's mechanism (issue 8), 100 seeds, one run.

Score set: the paper-sized synthetic stand-in (458,407 examples, 117,317 positives, AUC
0.7494; :func:`dpauc_tf.experiments.synthetic.paper_score_set`, epoch 0). Counting happens
once per client (:func:`dpauc_tf.simulation.client_histograms`); the repeats are
vectorised (the paper's and flat rows by :func:`dpauc_tf.simulation.simulate`, the
tree rows by :func:`_simulate_tree`): every client's noise is drawn independently
(``[R, K, nodes]`` in chunks) and summed over clients, the same distribution as ``R x K``
separate releases. Tree rows report the AUC of
:meth:`dpauc_tf.mechanisms.tree.TreeHistogram.estimate_auc` (least-squares leaves, no
projection) and, in two more columns, the trapezoid AUC of the monotone curve of
``to_confusion``. Secure-aggregation mechanisms are simulated by
their exact aggregate (one release of the summed counts with the total noise: the sum of the
``K`` Polya shares *is* one discrete Laplace draw per node).

Rows (epsilon = 1, IID clients unless ``--table4``):

* ``paper`` (DPAUC_Lap, the reference grid, |Theta| = 100), K = 10 and 1,000;
* ``histogram`` (flat, local Laplace, TensorFlow grid, |Theta| = 100);
* ``tree-histogram`` local (1,023 quantile thresholds), both classes noisy and with public
  scores; ``secure-tree-histogram`` (both variants, and the Skellam family at delta = 1e-6).

Usage::

    python benchmarks/bench_utility.py            # the eps = 1 comparison (about 30 s)
    python benchmarks/bench_utility.py --table4   # ratio to the paper, every Table 4 cell (~2 min)
    python benchmarks/bench_utility.py --design   # the variance table behind the defaults
    python benchmarks/bench_utility.py --families # Laplace vs Skellam over n evaluations
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import tensorflow as tf

from dpauc_tf.analysis.tree_design import auc_variance
from dpauc_tf.core import partitions
from dpauc_tf.core.adaptive_thresholds import quantile_thresholds
from dpauc_tf.core.curve import auc_from_confusion
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.core.tree import TreeLayout, auc_gradient
from dpauc_tf.experiments.synthetic import paper_score_set
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.tree import SecureTreeHistogram, TreeHistogram
from dpauc_tf.noise.seeds import make_seed, split_seed
from dpauc_tf.simulation import client_histograms, simulate

FINE = 1023  # 1,024 buckets: a complete 4-ary tree
MAX_CHUNK_ELEMENTS = 20_000_000  # noisy node values per chunk of repeats


def _clients(scores, partition: str, clients: int, seed: int) -> np.ndarray:
    if partition == "iid":
        return partitions.iid_partition(scores.size, clients, seed=seed)
    return partitions.non_iid_partition(scores, clients)


def _simulate_tree(mechanism, pos, neg, repeats, seed):
    """``repeats`` releases of every client, summed: (direct AUC estimates, curve AUCs)."""
    pos = tf.constant(pos, tf.float64)
    neg = tf.constant(neg, tf.float64)
    per_repeat = 2 * int(pos.shape[0]) * mechanism.layout.num_nodes
    chunk = max(1, min(repeats, MAX_CHUNK_ELEMENTS // per_repeat))
    sizes = [chunk] * (repeats // chunk) + ([repeats % chunk] if repeats % chunk else [])
    seeds = split_seed(make_seed(seed), len(sizes))
    direct, curve = [], []
    for i, size in enumerate(sizes):
        release = mechanism.release(pos, neg, seed=seeds[i], repeats=size)  # [r, K, nodes]
        summed = {key: tf.reduce_sum(value, axis=1) for key, value in release.items()}
        direct.append(mechanism.estimate_auc(summed).numpy())
        curve.append(auc_from_confusion(mechanism.to_confusion(summed)).numpy())
    return np.concatenate(direct), np.concatenate(curve)


def _run(label, mechanism, thresholds, data, partition, clients, repeats, seed, exact):
    ids = _clients(data.scores, partition, clients, seed)
    pos, neg = client_histograms(data.labels, data.scores, thresholds, ids, clients)
    if isinstance(mechanism, SecureTreeHistogram):  # exact aggregate of the secure sum
        pos, neg = pos.sum(0, keepdims=True), neg.sum(0, keepdims=True)
        mechanism = mechanism.aggregate()
    start = time.time()
    row = {"row": label, "partition": partition, "K": clients}
    if isinstance(mechanism, TreeHistogram):
        direct, curve = _simulate_tree(mechanism, pos, neg, repeats, seed)
        row.update(bias=direct.mean() - exact, std=direct.std())
        row.update(curve_bias=curve.mean() - exact, curve_std=curve.std())
    else:
        result = simulate(mechanism, pos, neg, seed=seed, repeats=repeats)
        row.update(bias=result.mean - exact, std=result.std)
    row["seconds"] = time.time() - start
    return row


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
            "secure tree, Skellam (delta=1e-6)",
            SecureTreeHistogram(epsilon, FINE, delta=1e-6, num_clients=clients, family="skellam"),
            quantiles,
        ),
        (
            "secure tree, public scores",
            SecureTreeHistogram(epsilon, FINE, public_scores=True, num_clients=clients),
            quantiles,
        ),
    ]


def _print(rows):
    print("| row | partition | K | bias | std | monotone-curve bias | monotone-curve std | s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        curve = f"{r['curve_bias']:+.2e} | {r['curve_std']:.2e}" if "curve_bias" in r else "- | -"
        print(
            f"| {r['row']} | {r['partition']} | {r['K']} | {r['bias']:+.2e} | {r['std']:.2e} "
            f"| {curve} | {r['seconds']:.0f} |"
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
        "| partition | K | eps | paper std | paper bias | secure tree pub. std (ratio) | "
        "secure tree pub. bias | local tree pub. std (ratio) | local tree pub. bias |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
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
                    f"| {s['std']:.2e} ({s['std'] / p['std']:.4f}) | {s['bias']:+.2e} "
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


def families() -> None:
    from dpauc_tf.analysis.noise_families import compare_noise_families

    data = paper_score_set(0)
    grid = Thresholds.explicit(quantile_thresholds(data.scores, FINE))
    pos, neg = client_histograms(data.labels, data.scores, grid)
    print("| evaluations | Laplace eps each (accountant) | Laplace AUC std | Skellam AUC std |")
    print("|---|---|---|---|")
    for n in (1, 3, 10, 100, 1000):
        c = compare_noise_families(n, 1.0, 1e-6, pos[0], neg[0])
        print(
            f"| {n} | {c.laplace_epsilon:.4g} ({c.laplace_accountant}) | "
            f"{c.laplace_auc_std:.2e} | {c.skellam_auc_std:.2e} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--table4", action="store_true")
    parser.add_argument("--design", action="store_true")
    parser.add_argument("--families", action="store_true")
    args = parser.parse_args()
    if args.design:
        design()
    elif args.families:
        families()
    elif args.table4:
        table4(args.repeats, args.seed)
    else:
        main_comparison(args.repeats, args.seed)


if __name__ == "__main__":
    main()
