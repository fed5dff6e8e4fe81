"""Coverage and width of the release intervals (issue 25), and the privacy share of the error.

Test sets are drawn from a binormal population whose AUC is known exactly
(:mod:`dpauc_tf.analysis.interval_coverage`: population AUC 0.75, 30% positives, bucket counts
drawn as multinomials, one release per test set). For every setting it prints the coverage of
the nominal 95% interval of both targets (``sample``: this test set's AUC on the counting
grid; ``population``: 0.75) and the mean width over the oracle's (``2 z`` times the measured
RMSE of the estimate around the target; for ``auc-only``, the exact Laplace law of each
release at its released scale, convolved with the measured sampling spread), the mean width
over the quantile oracle's (twice the measured 95% quantile of the estimate's distance to
the sample AUC) and the number of population intervals that are all of [0, 1].

* ``--coverage``: n in {1,000; 10,000; 100,000} x epsilon in {0.1, 1, 8} x the mechanisms
  histogram, secure-histogram (K = 10 real shares; K = 1,000 as the exact law of the sum of
  its shares, ``--real-shares`` to draw them), tree-histogram (1,023 thresholds),
  auc-only (delta 1e-6) and rank-sum (both counted on 4,097 thresholds for speed), rr, paper.
* ``--share``: privacy-noise std over the sampling standard error at epsilon 1 for the
  default Keras mechanisms (``rank-sum``; with a delta, ``auc-only``) and the curve default
  (``histogram``, 200 thresholds): the interval's estimate (median) and the measured ratio
  (``--mechanisms`` selects).
* ``--few-positives``: ``rank-sum`` at epsilon 1 with 0.5-5% positives (n = 2,000 and 500,
  population AUC 0.8 and 0.95): the coverage of both targets where the count's noise is
  large against the number of positives (issue 30).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_intervals.py --coverage --sets 2000
    PYTHONPATH=. python benchmarks/bench_intervals.py --share --sets 500
    PYTHONPATH=. python benchmarks/bench_intervals.py --few-positives --sets 2000
"""

from __future__ import annotations

import argparse
import time
import zlib

from dpauc_tf.analysis.interval_coverage import simulate_coverage

AUC_ONLY = {"delta": 1e-6, "options": {"resolution": 4097}}
RANK_SUM = {"options": {"resolution": 4097}}
# --share: the default Keras mechanisms (rank-sum without delta, auc-only with one) and
# the curve default (histogram)
SHARE = {
    "histogram": ("histogram (200 thresholds)", "histogram", {}),
    "auc-only": ("auc-only (delta 1e-6)", "auc-only", AUC_ONLY),
    "rank-sum": ("rank-sum (the default, pure epsilon)", "rank-sum", RANK_SUM),
}
MECHANISMS = {
    "histogram": ("histogram", {}),
    "secure-histogram K=10": ("secure-histogram", {"num_clients": 10}),
    "secure-histogram K=1000": ("secure-histogram", {"num_clients": 1000}),
    "tree-histogram": ("tree-histogram", {"num_thresholds": 1023}),
    "auc-only": ("auc-only", AUC_ONLY),
    "rank-sum": ("rank-sum", RANK_SUM),
    "rr": ("rr", {}),
    "paper": ("paper", {}),
}


def _cell(value: float, digits: int = 3) -> str:
    return "-" if value != value else f"{value:.{digits}f}"


def coverage(args) -> None:
    print(
        "| mechanism | n | epsilon | coverage sample | coverage population | width/oracle "
        "sample | width/oracle population | width/quantile oracle sample | [0, 1] intervals | "
        "undefined | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    names = args.mechanisms or list(MECHANISMS)
    for label in names:
        name, settings = MECHANISMS[label]
        for n in args.n:
            for epsilon in args.epsilon:
                start = time.time()
                # every setting draws its own test sets and noise
                cell = zlib.crc32(f"{label}/{n}/{epsilon:g}".encode()) % 100_000
                out = simulate_coverage(
                    name,
                    n=n,
                    epsilon=epsilon,
                    sets=args.sets,
                    seed=args.seed * 1000 + cell,
                    max_real_shares=1000 if args.real_shares else 100,
                    **settings,
                )
                print(
                    f"| {label} | {n:,} | {epsilon:g} | {_cell(out['coverage_sample'])} | "
                    f"{_cell(out['coverage_population'])} | {_cell(out['width_ratio_sample'], 2)} | "
                    f"{_cell(out['width_ratio_population'], 2)} | "
                    f"{_cell(out['width_ratio_quantile_sample'], 2)} | "
                    f"{out['whole_range_population']} | {out['undefined']} | "
                    f"{time.time() - start:.0f} |",
                    flush=True,
                )


def share(args) -> None:
    print(
        "| mechanism | n | privacy std / sampling SE (interval, median) | measured | "
        "privacy share of the variance (measured) | undefined |"
    )
    print("|---|---|---|---|---|---|")
    for key in args.mechanisms or list(SHARE):
        if key not in SHARE:
            continue
        label, name, settings = SHARE[key]
        for n in (500, 1000, 2000, 5000, 20000, 458407):
            out = simulate_coverage(
                name, n=n, epsilon=1.0, sets=args.sets, seed=args.seed, **settings
            )
            ratio = out["measured_privacy_ratio"]
            print(
                f"| {label} | {n:,} | {_cell(out['privacy_ratio'], 2)} | {_cell(ratio, 2)} | "
                f"{_cell(ratio**2 / (1 + ratio**2), 3)} | {out['undefined']} |",
                flush=True,
            )


def few_positives(args) -> None:
    print(
        "| n | positives | population AUC | coverage sample | coverage population | "
        "width/oracle sample | undefined |"
    )
    print("|---|---|---|---|---|---|---|")
    for n, rate in ((2000, 0.005), (2000, 0.01), (2000, 0.02), (2000, 0.05), (500, 0.05)):
        for auc in (0.8, 0.95):
            out = simulate_coverage(
                "rank-sum", n=n, epsilon=1.0, sets=args.sets, auc=auc, positive_rate=rate,
                seed=args.seed, **RANK_SUM,
            )  # fmt: skip
            print(
                f"| {n:,} | {rate:.1%} | {auc:g} | {_cell(out['coverage_sample'])} | "
                f"{_cell(out['coverage_population'])} | {_cell(out['width_ratio_sample'], 2)} | "
                f"{out['undefined']} |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coverage", action="store_true")
    parser.add_argument("--share", action="store_true")
    parser.add_argument("--few-positives", action="store_true")
    parser.add_argument("--sets", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 1.0, 8.0])
    parser.add_argument("--mechanisms", nargs="+", choices=list(MECHANISMS))
    parser.add_argument(
        "--real-shares", action="store_true", help="draw K = 1,000 shares one by one (slow)"
    )
    args = parser.parse_args()
    if args.share:
        share(args)
    if args.few_positives:
        few_positives(args)
    if args.coverage or not (args.share or args.few_positives):
        coverage(args)


if __name__ == "__main__":
    main()
