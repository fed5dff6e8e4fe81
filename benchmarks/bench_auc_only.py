"""``auc-only`` against its goals (issue 15) and every Keras mechanism's error against n.

Score sets (synthetic, binormal on the logit scale, :mod:`dpauc_tf.experiments.synthetic`):
the demo-sized set (20,089 examples, 4,992 positives, AUC 0.77) and the paper-sized set
(458,407 examples, 117,317 positives, epoch 2, AUC 0.7702). Scores are rounded to float32,
as a Keras model gives them. Errors are against the exact AUC of those scores (scikit-learn),
so they include each mechanism's grid error.

* ``--goals`` (default): RMSE and bias of ``auc-only`` at epsilon 1, delta 1e-6 over
  ``--repeats`` releases, beside the floor (scalar Laplace with the true sensitivity
  ``1 / min(P, N)`` and the whole epsilon: unattainable, the counts are private) and the
  RMSE at other budget splits (``count_share``).
* ``--table``: RMSE of every Keras-metric mechanism (one data holder) at epsilon 0.5 / 1 / 2
  for n = 1,000 / 10,000 / 100,000 (25% positives, AUC 0.77).

Usage (from the repository root, so that this checkout's ``dpauc_tf`` is imported)::

    PYTHONPATH=. python benchmarks/bench_auc_only.py --goals    # under a minute
    PYTHONPATH=. python benchmarks/bench_auc_only.py --table    # a few minutes
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.experiments.ground_truth import exact_auc
from dpauc_tf.experiments.synthetic import binormal_score_set, paper_score_set
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.auc_only import auc_flip_sensitivity
from dpauc_tf.simulation import simulate_examples

DELTA = 1e-6


def _score_sets():
    demo = binormal_score_set(20_089, 4_992, target_auc=0.77, seed=0)
    paper = paper_score_set(2)
    return {"demo (20,089)": demo, "paper (458,407)": paper}


def _errors(mechanism, labels, scores, truth, repeats, seed, num_thresholds=200):
    out = simulate_examples(
        mechanism, labels, scores, Thresholds.make(num_thresholds), seed=seed, repeats=repeats
    )
    aucs = out.aucs
    defined = aucs[np.isfinite(aucs)]
    rmse = float(np.sqrt(np.mean((defined - truth) ** 2))) if defined.size else math.nan
    bias = float(np.mean(defined) - truth) if defined.size else math.nan
    return rmse, bias, aucs.size - defined.size


def goals(repeats: int, seed: int) -> None:
    print(f"auc-only, epsilon 1, delta {DELTA:g}, {repeats} releases per row")
    header = f"{'score set':<18} {'share':>6} {'RMSE':>10} {'bias':>11} {'floor':>10} {'NaN':>4}"
    print(header)
    print("-" * len(header))
    for name, data in _score_sets().items():
        scores = data.scores.astype(np.float32)
        truth = exact_auc(data.labels, scores)
        num_pos = int(data.labels.sum())
        num_neg = data.labels.size - num_pos
        floor = math.sqrt(2.0) * auc_flip_sensitivity(num_pos, num_neg) / 1.0
        for share in (0.02, 0.05, 0.1, 0.2):
            mechanism = get_mechanism(
                "auc-only", epsilon=1.0, num_thresholds=200, delta=DELTA, count_share=share
            )
            rmse, bias, undefined = _errors(mechanism, data.labels, scores, truth, repeats, seed)
            print(
                f"{name:<18} {share:>6.2f} {rmse:>10.3e} {bias:>11.2e} {floor:>10.3e} "
                f"{undefined:>4d}"
            )


TABLE_MECHANISMS = [
    # (label, name, num_thresholds, options)
    ("auc-only (delta 1e-6)", "auc-only", 200, {"delta": DELTA}),
    ("histogram T=200", "histogram", 200, {}),
    ("histogram T=30", "histogram", 30, {}),
    ("histogram-public-scores T=200", "histogram-public-scores", 200, {}),
    ("tree-histogram T=1023", "tree-histogram", 1023, {}),
    ("rr T=200", "rr", 200, {}),
    ("paper T=100", "paper", 100, {}),
]


def table(repeats: int, seed: int) -> None:
    sizes = (1_000, 10_000, 100_000)
    epsilons = (0.5, 1.0, 2.0)
    data = {n: binormal_score_set(n, n // 4, target_auc=0.77, seed=0) for n in sizes}
    columns = [f"eps {e:g}, n={n:,}" for e in epsilons for n in sizes]
    print(f"RMSE of the released AUC, {repeats} releases per cell, one data holder")
    print("| mechanism | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for label, name, num_thresholds, options in TABLE_MECHANISMS:
        cells = []
        for epsilon in epsilons:
            for n in sizes:
                scores = data[n].scores.astype(np.float32)
                labels = data[n].labels
                truth = exact_auc(labels, scores)
                mechanism = get_mechanism(
                    name, epsilon=epsilon, num_thresholds=num_thresholds, **options
                )
                rmse, _, undefined = _errors(
                    mechanism, labels, scores, truth, repeats, seed, num_thresholds
                )
                cell = f"{rmse:.2e}" if math.isfinite(rmse) else "NaN"
                cells.append(cell + (f" ({undefined} NaN)" if undefined else ""))
        print(f"| {label} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--goals", action="store_true")
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.time()
    if args.table:
        table(args.repeats or 200, args.seed)
    if args.goals or not args.table:
        goals(args.repeats or 20_000, args.seed)
    print(f"({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
