"""Small test sets (issue 25, item 3): grids, ``auc-only`` and the default mechanism.

Binormal score sets: ``n`` examples, 30 % positives, latent AUC 0.8 (positives shifted by
``sqrt(2) Phi^-1(0.8)``), scores ``sigmoid(z - 1)`` (they crowd below 0.5, as click scores
do), rounded to float32. Three sets per ``n``; ``--repeats`` releases per set at epsilon 1;
RMSE against each set's exact AUC (privacy error only), beside the sampling standard error
(Hanley-McNeil) of the set. Sections:

* ``--grids``: the curve mechanisms' RMSE for fixed TensorFlow grids against
  ``num_thresholds="auto"`` (:func:`dpauc_tf.mechanisms.auto_grid.auto_num_thresholds`) at
  n = 500, 2,000 and 20,000.
* ``--default``: what ``DPAUC(epsilon=1.0)`` could release when the user wants a number:
  ``rank-sum`` (the default without delta from 0.3), ``histogram`` (200 thresholds, the
  default before), ``histogram`` with the
  auto grid, ``tree-histogram`` with the auto grid and ``auc-only`` (delta 1e-6) with the
  share that suits n and with the old fixed share 0.05, at n = 500 ... 20,000 and 458,407.

Usage (repository root on ``PYTHONPATH``; a few minutes each)::

    PYTHONPATH=. python benchmarks/bench_small_n.py --grids
    PYTHONPATH=. python benchmarks/bench_small_n.py --default
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import tensorflow as tf
from scipy import stats
from sklearn.metrics import roc_auc_score

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.auto_grid import auto_num_thresholds, sampling_std

EPSILON = 1.0
DELTA = 1e-6


def score_sets(n: int, count: int = 3, seed: int = 0):
    rng = np.random.default_rng([seed, n])
    out = []
    for _ in range(count):
        labels = rng.random(n) < 0.3
        z = rng.normal(size=n) + math.sqrt(2) * stats.norm.ppf(0.8) * labels
        scores = (1 / (1 + np.exp(-(z - 1.0)))).astype(np.float32)
        out.append((labels, scores, roc_auc_score(labels, scores)))
    return out


def rmse(name: str, num_thresholds: int, sets, repeats: int, **options) -> tuple[float, float]:
    """(RMSE, share of undefined releases) over the sets."""
    mechanism = get_mechanism(name, epsilon=EPSILON, num_thresholds=num_thresholds, **options)
    grid = mechanism.count_thresholds(Thresholds.make(num_thresholds))
    errors, undefined = [], 0
    for i, (labels, scores, exact) in enumerate(sets):
        buckets = grid.bucketize_numpy(scores)
        size = grid.num_buckets
        pos = np.bincount(buckets[labels], minlength=size).astype(np.float64)
        neg = np.bincount(buckets[~labels], minlength=size).astype(np.float64)
        release = mechanism.release(tf.constant(pos), tf.constant(neg), seed=i, repeats=repeats)
        aucs = np.asarray(mechanism.estimate_auc(release))
        undefined += int(np.isnan(aucs).sum())
        errors.append(aucs[np.isfinite(aucs)] - exact)
    errors = np.concatenate(errors)
    total = repeats * len(sets)
    value = float(np.sqrt(np.mean(errors**2))) if errors.size else math.nan
    return value, undefined / total


def _sampling(sets) -> float:
    return float(np.mean([sampling_std(e, y.sum(), (~y).sum()) for y, _, e in sets]))


def grids(repeats: int) -> None:
    fixed = (5, 10, 20, 50, 100, 200)
    for name in ("histogram", "tree-histogram"):
        print(f"\n{name}, epsilon {EPSILON}: RMSE of the release (privacy error only)\n")
        head = " | ".join(f"T={t}" for t in fixed)
        print(f"| n | sampling std | {head} | auto (T) | auto / best fixed |")
        print("|---" * (len(fixed) + 4) + "|")
        for n in (500, 2000, 20000):
            sets = score_sets(n)
            values = [rmse(name, t, sets, repeats)[0] for t in fixed]
            t_auto = auto_num_thresholds(n, EPSILON, name)
            auto = rmse(name, t_auto, sets, repeats)[0]
            cells = " | ".join(f"{v:.4f}" for v in values)
            print(
                f"| {n:,} | {_sampling(sets):.4f} | {cells} | {auto:.4f} ({t_auto}) | "
                f"{auto / min(values):.2f} |",
                flush=True,
            )


def default(repeats: int, only: str | None = None) -> None:
    rows = [
        ("rank-sum (default without delta, pure epsilon)", "rank-sum", lambda n: 200, {}),
        ("histogram, T=200 (the default before 0.3)", "histogram", lambda n: 200, {}),
        ("histogram, auto grid", "histogram", lambda n: auto_num_thresholds(n, EPSILON), {}),
        (
            "tree-histogram, auto grid",
            "tree-histogram",
            lambda n: auto_num_thresholds(n, EPSILON),
            {},
        ),
        ("auc-only, delta 1e-6, share suits n", "auc-only", lambda n: 200, {"delta": DELTA}),
        (
            "auc-only, delta 1e-6, fixed share 0.05 (before)",
            "auc-only",
            lambda n: 200,
            {"delta": DELTA, "count_share": 0.05},
        ),
    ]
    sizes = (500, 1000, 2000, 5000, 20000, 458407)
    print(f"\nepsilon {EPSILON}: RMSE / sampling std (undefined releases in brackets)\n")
    print("| mechanism | " + " | ".join(f"n={n:,}" for n in sizes) + " |")
    print("|---" * (len(sizes) + 1) + "|")
    cache = {n: score_sets(n, count=1 if n > 100000 else 3) for n in sizes}
    print("| sampling std | " + " | ".join(f"{_sampling(cache[n]):.4f}" for n in sizes) + " |")
    for label, name, grid_for, options in rows:
        if only and only not in label:
            continue
        cells = []
        for n in sizes:
            value, undefined = rmse(name, grid_for(n), cache[n], repeats, **options)
            ratio = value / _sampling(cache[n])
            cells.append(f"{ratio:.2f}" + (f" ({undefined:.0%})" if undefined else ""))
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grids", action="store_true")
    parser.add_argument("--default", action="store_true")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--rows", help="--default: only the rows whose label contains this")
    args = parser.parse_args()
    if args.grids or not args.default:
        grids(args.repeats)
    if args.default:
        default(args.repeats, args.rows)


if __name__ == "__main__":
    main()
