"""Where the curve is released (issue 15, part 2): the class split and the grid, measured.

Score set: the paper-sized synthetic stand-in (458,407 examples, 117,317 positives, AUC
0.7494; :func:`dpauc_tf.experiments.synthetic.paper_score_set`, epoch 0), epsilon = 1, IID
clients. Every row states its repeats; RMSE and bias are against the exact AUC (ties
counted one half), std over the repeats; ``lin. std`` is the linearised std of the tree
estimate (:func:`dpauc_tf.analysis.tree_design.mechanism_auc_variance`, times ``K`` in local
mode), a check on the measured one.

Secure rows are simulated by their exact aggregate (one release of the summed counts with
the total noise: the sum of ``K`` shares *is* one draw), so ``K`` changes only the seed.
Local rows draw every client's noise (``[R, K, nodes]``) and sum it.

The split comes from a **public prior** ``positive_rate=0.25`` (e.g. the training set's
rate), not from the test labels (whose rate is 0.2559): it costs no budget. ``smooth`` rows
use ``estimator="mann-whitney-smooth"`` (the within-bucket correction for continuous scores,
:func:`dpauc_tf.core.postprocessing.within_bucket_correction`; post-processing).

Usage::

    python benchmarks/bench_curve_noise.py                  # 1,000 repeats secure, 200 local
    python benchmarks/bench_curve_noise.py --secure-repeats 200 --local-repeats 50   # quicker
    python benchmarks/bench_curve_noise.py --design   # linearised std: grid x fan-out x split
    python benchmarks/bench_curve_noise.py --shares   # the best secure row, every share drawn
    python benchmarks/bench_curve_noise.py --ramp     # design study: tree + a ramp per class
    python benchmarks/bench_curve_noise.py --rows cliff   # 61 / 63 / 65 quantiles, K = 10
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import tensorflow as tf
from bench_utility import (  # benchmarks/ is on sys.path when run as a script
    FINE,
    _clients,
    _run,
    _simulate_tree,
)

from dpauc_tf.analysis.tree_design import mechanism_auc_variance
from dpauc_tf.core.adaptive_thresholds import quantile_thresholds
from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.core.postprocessing import mann_whitney_auc
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.core.tree import TreeLayout, auc_gradient, least_squares_leaves
from dpauc_tf.experiments.synthetic import paper_score_set
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.tree import TreeHistogram
from dpauc_tf.simulation import client_histograms

EPSILON = 1.0
DELTA = 1e-6
PRIOR = 0.25  # public prior of the positive rate


def _secure_rows(clients: int):
    tree = "secure-tree-histogram"
    split = {"positive_rate": PRIOR}
    skellam = {"family": "skellam", "delta": DELTA}
    coarse = {**split, "budget": "uniform"}
    smooth = {**coarse, "estimator": "mann-whitney-smooth"}
    return [
        ("secure tree, T=1023 (old default)", tree, FINE, "q", {}),
        ("secure tree Skellam, T=1023 (old)", tree, FINE, "q", skellam),
        ("secure tree, T=1023, split", tree, FINE, "q", split),
        ("secure tree Skellam, T=1023, split", tree, FINE, "q", {**skellam, **split}),
        ("secure tree, T=255, split", tree, 255, "q", split),
        ("secure tree Skellam, T=255, split", tree, 255, "q", {**skellam, **split}),
        ("secure histogram, T=100 tf grid (old)", "secure-histogram", 100, "tf", {}),
        ("secure tree, T=63 uniform, split", tree, 63, "q", coarse),
        ("secure tree, T=63 uniform, split, smooth", tree, 63, "q", smooth),
        ("secure tree Skellam, T=63 uniform, split, smooth", tree, 63, "q", {**skellam, **smooth}),
        ("secure tree, T=63 tf grid, uniform, split, smooth", tree, 63, "tf", smooth),
        (
            "secure tree Skellam, T=63 binary uniform, split, smooth",
            tree,
            63,
            "q",
            {**skellam, **smooth, "branching": 2},
        ),
        (
            "secure tree, T=255, split, smooth",
            tree,
            255,
            "q",
            {**split, "estimator": "mann-whitney-smooth"},
        ),
    ]


def _cliff_rows():
    """63 and 65 thresholds (61 and 63 inner quantiles plus the two ends: 64 and 66
    buckets), the best secure configuration: 66 buckets once paid a whole 5th tree level."""
    smooth = {"positive_rate": PRIOR, "budget": "uniform", "estimator": "mann-whitney-smooth"}
    tree = "secure-tree-histogram"
    return [
        ("secure tree, T=63 (61 quantiles) uniform, split, smooth", tree, 63, "q", smooth),
        ("secure tree, T=65 (63 quantiles) uniform, split, smooth", tree, 65, "q", smooth),
        ("secure tree, T=67 (65 quantiles) uniform, split, smooth", tree, 67, "q", smooth),
    ]


def _local_rows():
    split = {"positive_rate": PRIOR}
    uniform = {"budget": "uniform"}
    return [
        ("local histogram, T=100 tf grid (old)", "histogram", 100, "tf", {}),
        ("local histogram, T=63 quantiles, split", "histogram", 63, "q", split),
        ("local tree, T=63 uniform, split", "tree-histogram", 63, "q", {**uniform, **split}),
        ("local tree, T=255, split", "tree-histogram", 255, "q", split),
        ("local tree, T=1023 (old)", "tree-histogram", FINE, "q", {}),
        ("local tree, T=1023, split", "tree-histogram", FINE, "q", split),
    ]


def _grid(data, num_thresholds: int, kind: str) -> Thresholds:
    if kind == "tf":
        return Thresholds.make(num_thresholds, "tf")
    return Thresholds.explicit(quantile_thresholds(data.scores, num_thresholds))


def _linearised_std(data, mechanism, grid, clients: int) -> float:
    if not isinstance(mechanism, TreeHistogram):
        return math.nan
    pos, neg = client_histograms(data.labels, data.scores, grid)
    variance = mechanism_auc_variance(pos[0].astype(float), neg[0].astype(float), mechanism)
    local = not mechanism.name.startswith("secure")
    return math.sqrt(variance * (clients if local else 1))


def design() -> None:
    """Linearised std of the central Laplace tree (both classes noisy, epsilon 1) for each
    grid, fan-out and level-budget ratio, with the equal split, the split for the prior, and
    the split with the smooth estimator; the discretisation bias of the grid beside it (of
    the bucketed AUC, and of the smooth one). Local mode at K clients: times sqrt(K)."""
    data = paper_score_set(0)
    print(
        "| T | bucketed AUC - exact | smooth - exact | branching | ratio | std, equal split "
        "| std, split | std, split, smooth |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for num_thresholds in (31, 63, 127, 255, 1023):
        grid = _grid(data, num_thresholds, "q")
        pos, neg = client_histograms(data.labels, data.scores, grid)
        pos, neg = pos[0].astype(float), neg[0].astype(float)
        confusion = confusion_from_histogram(tf.constant(pos), tf.constant(neg))
        bucketed = float(mann_whitney_auc(confusion))
        smooth = float(mann_whitney_auc(confusion, within_bucket="linear"))
        for branching in (4, 8):
            for ratio in (0.8, 1.0):
                depth = TreeLayout.for_buckets(num_thresholds + 1, branching).depth
                budget = list(ratio ** np.arange(depth + 1))
                stds = []
                for options in (
                    {},
                    {"positive_rate": PRIOR},
                    {"positive_rate": PRIOR, "estimator": "mann-whitney-smooth"},
                ):
                    tree = TreeHistogram(
                        EPSILON, num_thresholds, branching=branching, budget=budget, **options
                    )
                    stds.append(math.sqrt(mechanism_auc_variance(pos, neg, tree)))
                print(
                    f"| {num_thresholds} | {bucketed - data.auc:+.1e} | {smooth - data.auc:+.1e} "
                    f"| {branching} | {ratio} | {stds[0]:.2e} | {stds[1]:.2e} | {stds[2]:.2e} |",
                    flush=True,
                )


def shares(repeats: int, seed: int) -> None:
    """The best secure row with every client's Polya share drawn and summed (``[R, K,
    nodes]``), a check on the exact-aggregate simulation of the other rows."""
    data = paper_score_set(0)
    num_thresholds = 63
    grid = _grid(data, num_thresholds, "q")
    options = {"positive_rate": PRIOR, "budget": "uniform", "estimator": "mann-whitney-smooth"}
    label = "secure tree, T=63 uniform, split, smooth, every share drawn"
    print("| configuration | K | repeats | RMSE | bias | std | lin. std |")
    print("|---|---|---|---|---|---|---|")
    for clients in (10, 1000):
        mechanism = get_mechanism(
            "secure-tree-histogram",
            epsilon=EPSILON,
            num_thresholds=num_thresholds,
            num_clients=clients,
            **options,
        )
        ids = _clients(data.scores, "iid", clients, seed)
        pos, neg = client_histograms(data.labels, data.scores, grid, ids, clients)
        start = time.time()
        direct, _ = _simulate_tree(mechanism, pos, neg, repeats, seed)
        error = direct - data.auc
        rmse = math.sqrt(np.mean(error**2))
        lin = _linearised_std(data, mechanism, grid, clients)
        print(
            f"| {label} | {clients} | {repeats} | {rmse:.2e} | {error.mean():+.2e} "
            f"| {error.std():.2e} | {lin:.2e} | ({time.time() - start:.0f} s)",
            flush=True,
        )


def _ramp_leaves(tree: TreeHistogram, release, ramp_releases, ramp_variances, ramp):
    """Joint least squares of the leaves from a class's tree nodes and its ramp release: the
    tree's leaves plus a rank-one update (the BLUE given one more linear observation)."""
    out = []
    leaves = tree.leaves(release)
    for noisy_class, (x, y, ramp_var) in enumerate(
        zip(leaves, ramp_releases, ramp_variances, strict=True)
    ):
        level_var = np.asarray(tree.class_level_variances[noisy_class])
        layout = tree.layout
        basis = tf.eye(layout.num_nodes, dtype=tf.float64)
        operator = least_squares_leaves(basis, layout, level_var).numpy()  # [nodes, buckets]
        node_var = level_var[layout.node_levels()] * layout.real_nodes
        cov_ramp = operator.T @ (node_var * (operator @ ramp))  # Cov(x_tree) r
        gain = cov_ramp / (ramp @ cov_ramp + ramp_var)
        x = x.numpy()
        out.append(x + (y - x @ ramp)[:, None] * gain[None, :])
    return out


def ramp_study(repeats: int, seed: int) -> None:
    """Design study (idea (b) of issue 15): the secure tree at ``(1 - rho) epsilon`` plus one
    integer ramp query ``q . x`` per class, ``q_b = 2 b - T`` (so ``|q_b| <= T``: a flip
    moves it by at most ``T`` in each class), with discrete Laplace noise of scale ``T / (rho
    s epsilon)`` (positives) and ``T / (rho (1 - s) epsilon)`` (negatives): by basic
    composition ``(1 - rho) epsilon + rho s epsilon + rho (1 - s) epsilon = epsilon``. The
    leaves are the joint least squares (:func:`_ramp_leaves`), the AUC the smooth estimator
    of them. Not a registered mechanism: the figures say whether it is worth one."""
    from dpauc_tf.noise import samplers
    from dpauc_tf.noise.exact import discrete_laplace_variance
    from dpauc_tf.noise.seeds import make_seed, split_seed

    data = paper_score_set(0)
    print("| T | branching | ratio | rho | repeats | RMSE | bias | std | lin. std |")
    print("|---|---|---|---|---|---|---|---|---|")
    for num_thresholds, ratio in ((63, 1.0), (255, 0.8)):
        grid = _grid(data, num_thresholds, "q")
        pos, neg = client_histograms(data.labels, data.scores, grid)
        pos, neg = pos[0].astype(float), neg[0].astype(float)
        ramp = 2.0 * np.arange(num_thresholds + 1) - num_thresholds
        for rho in (0.0, 0.3, 0.4, 0.5):
            depth = TreeLayout.for_buckets(num_thresholds + 1, 4).depth
            tree = get_mechanism(
                "secure-tree-histogram",
                epsilon=EPSILON * (1 - rho),
                num_thresholds=num_thresholds,
                budget=list(ratio ** np.arange(depth + 1)),
                positive_rate=PRIOR,
                estimator="mann-whitney-smooth",
            )
            share = tree.positive_share
            seeds = split_seed(
                make_seed(seed * 100_000 + num_thresholds * 100 + round(rho * 100)), 3
            )
            release = tree.release(pos, neg, seed=seeds[0], repeats=repeats)
            if rho == 0.0:
                leaves = [x.numpy() for x in tree.leaves(release)]
                ramp_var = [math.inf, math.inf]
            else:
                scales = [num_thresholds / (rho * c * EPSILON) for c in (share, 1 - share)]
                ramp_var = [discrete_laplace_variance(scale) for scale in scales]
                noisy = [
                    counts @ ramp
                    + samplers.discrete_laplace([repeats], scale, seeds[1 + c], tf.float64).numpy()
                    for c, (counts, scale) in enumerate(zip((pos, neg), scales, strict=True))
                ]
                leaves = _ramp_leaves(tree, release, noisy, ramp_var, ramp)
            confusion = confusion_from_histogram(tf.constant(leaves[0]), tf.constant(leaves[1]))
            error = mann_whitney_auc(confusion, within_bucket="linear").numpy() - data.auc
            lin = _ramp_linearised_std(tree, pos, neg, ramp, ramp_var)
            print(
                f"| {num_thresholds} | 4 | {ratio} | {rho} | {repeats} "
                f"| {math.sqrt(np.mean(error**2)):.2e} | {error.mean():+.2e} | {error.std():.2e} "
                f"| {lin:.2e} |",
                flush=True,
            )


def _ramp_linearised_std(tree, pos, neg, ramp, ramp_variances) -> float:
    """``sqrt(sum_class g^T (A^T W A)^-1 g)`` with ``A`` the tree's nodes and the ramp."""
    layout = tree.layout
    basis = tf.eye(layout.num_buckets, dtype=tf.float64)
    nodes = layout.node_counts(basis).numpy().T[layout.real_nodes]  # [real nodes, buckets]
    levels = layout.node_levels()[layout.real_nodes]
    total = 0.0
    gradients = auc_gradient(pos, neg, "linear")
    for noisy_class, gradient in enumerate(gradients):
        variances = np.asarray(tree.class_level_variances[noisy_class])[levels]
        rows, weights = nodes, 1.0 / variances
        if math.isfinite(ramp_variances[noisy_class]):
            rows = np.vstack([nodes, ramp])
            weights = np.append(weights, 1.0 / ramp_variances[noisy_class])
        information = rows.T @ (rows * weights[:, None])
        total += float(gradient @ np.linalg.solve(information, gradient))
    return math.sqrt(total)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--secure-repeats", type=int, default=1000)
    parser.add_argument("--local-repeats", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--design", action="store_true")
    parser.add_argument("--shares", action="store_true")
    parser.add_argument("--ramp", action="store_true")
    parser.add_argument("--rows", choices=("all", "secure", "local", "cliff"), default="all")
    args = parser.parse_args()
    if args.design:
        design()
        return
    if args.shares:
        shares(args.secure_repeats, args.seed)
        return
    if args.ramp:
        ramp_study(args.secure_repeats, args.seed)
        return
    data = paper_score_set(0)
    exact = data.auc
    print(f"score set: n={data.labels.size}, P={int(data.labels.sum())}, exact AUC={exact:.6f}")
    plan = []
    if args.rows in ("all", "secure"):
        plan += [(10, r, args.secure_repeats) for r in _secure_rows(10)]
        plan += [(1000, r, args.secure_repeats) for r in _secure_rows(1000)]
    if args.rows in ("all", "local"):
        plan += [(1000, r, args.local_repeats) for r in _local_rows()]
    if args.rows == "cliff":
        plan += [(10, r, args.secure_repeats) for r in _cliff_rows()]
    lines = []
    for clients, (label, name, num_thresholds, kind, options), repeats in plan:
        options = dict(options)
        delta = options.pop("delta", None)
        mechanism = get_mechanism(
            name,
            epsilon=EPSILON,
            num_thresholds=num_thresholds,
            delta=delta,
            num_clients=clients,
            **options,
        )
        grid = _grid(data, num_thresholds, kind)
        start = time.time()
        row = _run(label, mechanism, grid, data, "iid", clients, repeats, args.seed, exact)
        rmse = math.hypot(row["bias"], row["std"])
        lin = _linearised_std(data, mechanism, grid, clients)
        line = (
            f"| {label} | {clients} | {repeats} | {rmse:.2e} | {row['bias']:+.2e} "
            f"| {row['std']:.2e} | {lin:.2e} |"
        )
        lines.append(line)
        print(line, f"({time.time() - start:.0f} s)", flush=True)
    print()
    print(f"epsilon = {EPSILON}, Skellam delta = {DELTA}, split from the public prior {PRIOR}")
    print("| configuration | K | repeats | RMSE | bias | std | lin. std |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(lines))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
