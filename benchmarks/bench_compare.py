"""Power and type-I error of the private paired comparison (``dpauc compare``, issue 25).

Binormal score pairs with a known population: ``n`` examples, 30 % positives, models A and
B with AUCs ``auc_a`` and ``auc_b`` (normal scores of unit variance, shifted by ``sqrt(2)
Phi^-1(AUC)`` for the positives, then a sigmoid) whose scores have correlation ``rho`` within
each class. Over ``--sets`` independent test sets it prints, at alpha 0.05 (two-sided):

* the rejection rate of the non-private paired DeLong test on the exact scores;
* the rejection rate of :func:`dpauc_tf.mechanisms.comparison.compare_models` (one release
  at ``--epsilon``) for each ``--buckets`` value, equal budget split and the split for the
  public prior 0.3, with the ratio to DeLong's power and the spread of its z under H0.

H1: AUCs 0.75 and 0.76; H0: both 0.75. Usage (repository root on ``PYTHONPATH``)::

    PYTHONPATH=. python benchmarks/bench_compare.py --sets 1000    # about 10 minutes
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from dpauc_tf.mechanisms.comparison import compare_models


def binormal_pair(rng, n, auc_a, auc_b, rho, rate=0.3):
    labels = rng.random(n) < rate
    z = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], size=n)
    shift_a, shift_b = (np.sqrt(2) * stats.norm.ppf(x) for x in (auc_a, auc_b))
    a = 1 / (1 + np.exp(-(z[:, 0] + shift_a * labels)))
    b = 1 / (1 + np.exp(-(z[:, 1] + shift_b * labels)))
    return labels, a, b


def delong_z(labels, a, b) -> float:
    """The exact paired DeLong statistic of AUC_B - AUC_A (non-private)."""
    num_pos, num_neg = labels.sum(), (~labels).sum()
    v10, v01 = [], []
    for s in (a, b):
        ranks = stats.rankdata(s)
        v10.append((ranks[labels] - stats.rankdata(s[labels])) / num_neg)
        v01.append(1 - (ranks[~labels] - stats.rankdata(s[~labels])) / num_pos)
    diff = v10[1].mean() - v10[0].mean()
    var = np.var(v10[1] - v10[0], ddof=1) / num_pos + np.var(v01[1] - v01[0], ddof=1) / num_neg
    return float(diff / np.sqrt(var))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=1000)
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--rho", type=float, default=0.8)
    parser.add_argument("--buckets", type=int, nargs="+", default=[4, 6, 8])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    configs = [(b, None) for b in args.buckets] + [(b, 0.3) for b in args.buckets]
    start = time.time()
    print(
        f"n={args.n}, epsilon={args.epsilon}, rho={args.rho}, {args.sets} sets per "
        "hypothesis, alpha 0.05, 30% positives"
    )
    z_scores = {}
    for name, auc_b in (("H1", 0.76), ("H0", 0.75)):
        rng = np.random.default_rng([args.seed, int(auc_b * 100)])
        z = {"delong": []} | {c: [] for c in configs}
        for i in range(args.sets):
            labels, a, b = binormal_pair(rng, args.n, 0.75, auc_b, args.rho)
            z["delong"].append(delong_z(labels, a, b))
            for buckets, rate in configs:
                r = compare_models(
                    labels, a, b, args.epsilon, num_buckets=buckets, positive_rate=rate,
                    seed=args.seed * 10**7 + i * 100 + buckets,
                )  # fmt: skip
                z[(buckets, rate)].append(r.z)
        z_scores[name] = {k: np.asarray(v) for k, v in z.items()}
    print()
    print("| test | buckets | split | power (H1) | power / DeLong's | type-I (H0) | std z (H0) |")
    print("|---|---|---|---|---|---|---|")
    base = np.mean(np.abs(z_scores["H1"]["delong"]) > 1.96)
    for key in ["delong", *configs]:
        power = np.mean(np.abs(z_scores["H1"][key]) > 1.96)
        size = np.mean(np.abs(z_scores["H0"][key]) > 1.96)
        spread = np.std(z_scores["H0"][key])
        if key == "delong":
            label, buckets, split = "DeLong, exact scores (not private)", "-", "-"
        else:
            label, buckets = "private paired", str(key[0])
            split = "equal" if key[1] is None else f"prior {key[1]}"
        print(
            f"| {label} | {buckets} | {split} | {power:.3f} | {power / base:.3f} | "
            f"{size:.3f} | {spread:.3f} |"
        )
    print(f"\n({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
