"""Coverage of the intervals of the partial AUC, the recall at a false-positive rate, the
average precision, the ECE and every reliability bin (issue 33).

Test sets are drawn from a binormal population whose bucket probabilities are exact (scores
``sigmoid(z)``, ``z ~ N(0.95 y - 0.5, 1)``, 30% positives; on a grid of 101 thresholds, i.e.
100 buckets and 10 calibration bins): class sizes binomial, bucket counts multinomial, one
``histogram`` release per test set, the numbers and their 95% intervals from
[`dpauc_tf.mechanisms.release_summaries.summarize_release`][]. For each setting it prints the
share of test sets whose interval covers

* ``population``: the population's value of the number on the same grid (for the recall at
  FPR: the population's recall at the threshold the release chose; for a bin: its
  population positive rate);
* ``sample``: this test set's exact value (``--ci-target sample``: privacy noise only; for
  the recall at FPR the test set's recall at the chosen threshold).

Bins are reported as the mean, the lowest and the median coverage over the bins that hold
at least 20 examples in expectation (a bin with a handful of examples has a rate whose
interval is not informative). The lowest of ten shares of ``--sets`` test sets sits below
the nominal level by chance alone: about 1.5 standard errors of one share (93.1% for ten
bins that each cover exactly 95% of 300 sets).

``--per-bin`` adds a table of every bin's coverage (the bin's expected examples in
brackets; a set where the bin is empty does not count); ``--exact-bins`` prints instead the
exact coverage of every bin's interval without noise (a sum over the binomial laws of the
bin's examples and of its positives: no simulation, no chance spread), next to that of
Jeffreys' and Clopper-Pearson's intervals for comparison. ``--noise-spread R`` prints, for one
test set and ``R`` releases, each bin's rate of the projected counts (what the bins read in
0.3.0's first measurements, when near-empty bins over-covered), its reported rate and the
unclipped rate of the released positives (why a bin reads the release before the
projection).

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_evaluation_metrics.py --sets 400
    PYTHONPATH=. python benchmarks/bench_evaluation_metrics.py --exact-bins --n 1000 10000
    PYTHONPATH=. python benchmarks/bench_evaluation_metrics.py --noise-spread 400 --n 1000 --epsilons 1
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from dpauc_tf.core import curve_summaries
from dpauc_tf.core.calibration import BucketScores, calibration_bins, reliability
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.release import ReleaseSpec
from dpauc_tf.mechanisms.release_summaries import rate_interval, summarize_release
from dpauc_tf.simulation import simulate

PI, SHIFT, CENTER = 0.3, 0.95, -0.5
NUM_THRESHOLDS, NUM_BINS = 101, 10
MAX_FPR, AT_FPR = 0.1, 0.1


def population(grid: Thresholds):
    """Exact bucket probabilities ``p1, p0 [T + 1]`` and the mean score of every bucket."""
    values = grid.as_array()
    inner = np.clip(values, 1e-12, 1 - 1e-12)
    edges = np.concatenate([[-np.inf], np.log(inner / (1 - inner)), [np.inf]])
    edges[1], edges[-2] = -np.inf, np.inf  # the tf grid's end thresholds hold nothing
    p1 = np.diff(stats.norm.cdf(edges, loc=CENTER + SHIFT))
    p0 = np.diff(stats.norm.cdf(edges, loc=CENTER))
    middle = np.concatenate([[0.0], (values[:-1] + values[1:]) / 2, [1.0]])
    return p1, p0, np.clip(middle, 0.0, 1.0)


def run(n: int, epsilon: float | None, sets: int, seed: int) -> dict[str, float]:
    grid = Thresholds.make(NUM_THRESHOLDS)
    p1, p0, middle = population(grid)
    bins = calibration_bins(grid, NUM_BINS)
    truth_pauc = float(curve_summaries.partial_auc(PI * p1, (1 - PI) * p0, MAX_FPR))
    truth_ap = float(curve_summaries.average_precision(PI * p1, (1 - PI) * p0))
    bin_pos = np.bincount(bins, PI * p1, NUM_BINS)
    bin_all = bin_pos + np.bincount(bins, (1 - PI) * p0, NUM_BINS)
    truth_rate = bin_pos / bin_all
    truth_mean = np.bincount(bins, (PI * p1 + (1 - PI) * p0) * middle, NUM_BINS) / bin_all
    truth_ece = float(np.sum(bin_all * np.abs(truth_mean - truth_rate)))
    informative = bin_all * n >= 20
    mechanism = "none" if epsilon is None else "histogram"
    rng = np.random.default_rng(seed)
    hits = {k: {"population": [], "sample": []} for k in ("pauc", "tpr", "ap", "ece")}
    bin_hits = {"population": [], "sample": []}
    for s in range(sets):
        num_pos = rng.binomial(n, PI)
        pos = rng.multinomial(num_pos, p1).astype(np.float64)
        neg = rng.multinomial(n - num_pos, p0).astype(np.float64)
        spec = ReleaseSpec.make(mechanism, epsilon=epsilon, num_thresholds=NUM_THRESHOLDS)
        result = simulate(spec, pos[None], neg[None], seed=seed * 100_000 + s)
        scores = BucketScores(pos + neg, (pos + neg) * middle)
        exact_table = reliability(pos, scores, bins, NUM_BINS)
        for target in ("population", "sample"):
            summary = summarize_release(
                result, spec.build(1), grid, max_fpr=MAX_FPR, tpr_at_fpr=AT_FPR,
                calibration_bins=NUM_BINS, bucket_scores=scores, target=target,
            )  # fmt: skip
            point = summary.tpr_at_fpr
            top = np.arange(pos.size) >= pos.size - int(point.cut[0])  # the chosen cut
            if target == "population":
                want = {
                    "pauc": truth_pauc,
                    "tpr": p1[top].sum(),
                    "ap": truth_ap,
                    "ece": truth_ece,
                }
                rates = truth_rate
            else:
                want = {
                    "pauc": float(curve_summaries.partial_auc(pos, neg, MAX_FPR)),
                    "tpr": pos[top].sum() / max(pos.sum(), 1.0),
                    "ap": float(curve_summaries.average_precision(pos, neg)),
                    "ece": float(exact_table.ece[0]),
                }
                rates = exact_table.positive_rate[0]
            numbers = {
                "pauc": summary.partial_auc,
                "tpr": point.tpr,
                "ap": summary.average_precision,
                "ece": summary.calibration.ece,
            }
            for key, number in numbers.items():
                low, high = number.low[0], number.high[0]
                if np.isfinite(low):
                    hits[key][target].append(low - 1e-12 <= want[key] <= high + 1e-12)
            cal = summary.calibration
            covered = (cal.rate_low[0] - 1e-12 <= rates) & (rates <= cal.rate_high[0] + 1e-12)
            bin_hits[target].append(np.where(np.isfinite(cal.rate_low[0]), covered, np.nan))
    out: dict = {}
    for key, by_target in hits.items():
        for target, values in by_target.items():
            out[f"{key}_{target}"] = float(np.mean(values)) if values else float("nan")
    for target, rows in bin_hits.items():
        rows = np.array(rows, np.float64)  # NaN where the bin was empty in that set
        defined = np.sum(np.isfinite(rows), 0)
        covered = np.nansum(rows, 0)
        out[f"each_bin_{target}"] = np.where(defined > 0, covered / np.maximum(defined, 1), np.nan)
        per_bin = out[f"each_bin_{target}"][informative]
        out[f"bins_{target}_mean"] = float(per_bin.mean())
        out[f"bins_{target}_min"] = float(per_bin.min())
        out[f"bins_{target}_median"] = float(np.median(per_bin))
    out["bin_examples"] = bin_all * n
    return out


def _jeffreys(hits: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = hits + 0.5, m - hits + 0.5
    low = np.where(hits > 0, stats.beta.ppf(0.025, a, b), 0.0)
    return low, np.where(hits < m, stats.beta.ppf(0.975, a, b), 1.0)


def _clopper_pearson(hits: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    low = np.where(hits > 0, stats.beta.ppf(0.025, np.maximum(hits, 1), m - hits + 1), 0.0)
    high = np.where(hits < m, stats.beta.ppf(0.975, hits + 1, np.maximum(m - hits, 1)), 1.0)
    return low, high


def _wilson(hits: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    ci = rate_interval(hits / m, 0.0, float(m), 0.95)  # the library's (no noise)
    return ci.low, ci.high


BIN_INTERVALS = {
    "Wilson (used)": _wilson,
    "Jeffreys": _jeffreys,
    "Clopper-Pearson": _clopper_pearson,
}


def exact_bin_coverage(n: int, interval=_wilson) -> tuple[np.ndarray, np.ndarray]:
    """Without noise, the exact coverage of every bin's rate interval (no simulation): the
    bin's examples ``m ~ Binomial(n, w_k)``, its positives ``~ Binomial(m, p_k)``, summed
    over both (given a non-empty bin). Returns the expected examples ``n w_k`` and the
    coverage of every bin."""
    grid = Thresholds.make(NUM_THRESHOLDS)
    p1, p0, _ = population(grid)
    bins = calibration_bins(grid, NUM_BINS)
    bin_pos = np.bincount(bins, PI * p1, NUM_BINS)
    bin_all = bin_pos + np.bincount(bins, (1 - PI) * p0, NUM_BINS)
    coverage = np.zeros(NUM_BINS)
    for k in range(NUM_BINS):
        rate = bin_pos[k] / bin_all[k]
        sizes = np.arange(1, n + 1)
        weights = stats.binom.pmf(sizes, n, bin_all[k])
        keep = weights > 1e-12
        for m, weight in zip(sizes[keep], weights[keep], strict=True):
            hits = np.arange(m + 1.0)
            low, high = interval(hits, int(m))
            inside = (low <= rate) & (rate <= high)
            coverage[k] += weight * np.sum(stats.binom.pmf(hits, m, rate) * inside)
        coverage[k] /= weights[keep].sum()
    return bin_all * n, coverage


def noise_spread(n: int, epsilon: float, releases: int, seed: int) -> list[dict[str, float]]:
    """Why a bin's rate reads the release before the projection: one test set of ``n``
    examples, ``releases`` ``histogram`` releases of it; per bin, the rate of the projected,
    non-negative counts (what the bins read at first, clipped to [0, 1]), the reported
    rate (the released positives before the projection, clipped to [0, 1]) and the unclipped
    rate of the released positives (whose spread is the mechanism's stated law, the one the
    delta method propagates and the interval reads): means and standard deviations over the
    releases."""
    grid = Thresholds.make(NUM_THRESHOLDS)
    p1, p0, middle = population(grid)
    bins = calibration_bins(grid, NUM_BINS)
    rng = np.random.default_rng(seed)
    num_pos = rng.binomial(n, PI)
    pos = rng.multinomial(num_pos, p1).astype(np.float64)
    neg = rng.multinomial(n - num_pos, p0).astype(np.float64)
    spec = ReleaseSpec.make("histogram", epsilon=epsilon, num_thresholds=NUM_THRESHOLDS)
    result = simulate(spec, pos[None], neg[None], seed=seed, repeats=releases)
    scores = BucketScores(pos + neg, (pos + neg) * middle)
    summary = summarize_release(
        result, spec.build(1), grid, calibration_bins=NUM_BINS, bucket_scores=scores,
        average_precision=False, target="sample",
    )  # fmt: skip
    reported = summary.calibration.table.positive_rate  # [releases, bins]
    released = np.asarray(result.noisy_counts["pos"], np.float64).reshape(releases, -1)
    projected = np.asarray(spec.build(1).projected_counts(result.noisy_counts)[0], np.float64)
    projected = projected.reshape(releases, -1)
    examples = np.bincount(bins, pos + neg, NUM_BINS)
    rows = []
    for k in range(NUM_BINS):
        size = max(examples[k], 1.0)
        unprojected = released[:, bins == k].sum(-1) / size
        projected_rate = np.clip(projected[:, bins == k].sum(-1) / size, 0.0, 1.0)
        rows.append(
            {
                "examples": examples[k],
                "rate": np.bincount(bins, pos, NUM_BINS)[k] / size,
                "projected_mean": float(projected_rate.mean()),
                "projected_sd": float(projected_rate.std()),
                "reported_mean": float(np.nanmean(reported[:, k])),
                "reported_sd": float(np.nanstd(reported[:, k])),
                "unprojected_mean": float(unprojected.mean()),
                "unprojected_sd": float(unprojected.std()),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=400, help="test sets per setting")
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument(
        "--epsilons", nargs="+", default=["1", "8", "none"], help="'none': sampling error only"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--per-bin", action="store_true", help="also every bin's coverage (a second table)"
    )
    parser.add_argument(
        "--exact-bins",
        action="store_true",
        help="only the exact coverage of every bin without noise (no simulation)",
    )
    parser.add_argument(
        "--noise-spread",
        type=int,
        metavar="RELEASES",
        help="only the bins' projected, reported and unclipped rates over RELEASES releases of one test "
        "set (the first --n and --epsilons)",
    )
    args = parser.parse_args()
    if args.noise_spread:
        n, epsilon = args.n[0], float(args.epsilons[0])
        print(f"n = {n:,}, epsilon {epsilon:g}, {args.noise_spread} releases of one test set")
        print(
            "| bin | examples | rate | projected: mean | sd | reported: mean | sd "
            "| unclipped: mean | sd |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for k, row in enumerate(noise_spread(n, epsilon, args.noise_spread, args.seed)):
            print(
                f"| {k} | {row['examples']:.0f} | {row['rate']:.3f}"
                f" | {row['projected_mean']:.3f} | {row['projected_sd']:.3f}"
                f" | {row['reported_mean']:.3f} | {row['reported_sd']:.3f}"
                f" | {row['unprojected_mean']:.3f} | {row['unprojected_sd']:.3f} |"
            )
        return
    if args.exact_bins:
        print("| n | interval | " + " | ".join(f"bin {k}" for k in range(NUM_BINS)) + " |")
        print("|---|---|" + "---|" * NUM_BINS)
        for n in args.n:
            for name, interval in BIN_INTERVALS.items():
                examples, coverage = exact_bin_coverage(n, interval)
                cells = " | ".join(
                    f"{100 * c:.2f}% ({e:,.0f})" for c, e in zip(coverage, examples, strict=True)
                )
                print(f"| {n:,} | {name} | {cells} |", flush=True)
        return
    per_bin_rows = []
    columns = ("pauc", "tpr", "ap", "ece")
    print(
        "| n | epsilon | target | partial AUC | TPR at FPR 0.1 | avg precision | ECE | "
        "bins (mean / min / median) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for n in args.n:
        for text in args.epsilons:
            epsilon = None if text == "none" else float(text)
            start = time.perf_counter()
            out = run(n, epsilon, args.sets, args.seed)
            for target in ("population", "sample"):
                if epsilon is None and target == "sample":
                    continue  # no noise: the sample interval is a point
                cells = " | ".join(f"{100 * out[f'{c}_{target}']:.1f}%" for c in columns)
                bins = " / ".join(
                    f"{100 * out[f'bins_{target}_{stat}']:.1f}%"
                    for stat in ("mean", "min", "median")
                )
                print(f"| {n:,} | {text} | {target} | {cells} | {bins} |")
                per_bin_rows.append((n, text, target, out))
            print(f"<!-- {time.perf_counter() - start:.0f} s -->", flush=True)
    if args.per_bin:
        print()
        print("| n | epsilon | target | " + " | ".join(f"bin {k}" for k in range(NUM_BINS)) + " |")
        print("|---|---|---|" + "---|" * NUM_BINS)
        for n, text, target, out in per_bin_rows:
            cells = " | ".join(
                f"{100 * c:.1f}% ({e:,.0f})"
                for c, e in zip(out[f"each_bin_{target}"], out["bin_examples"], strict=True)
            )
            print(f"| {n:,} | {text} | {target} | {cells} |")


if __name__ == "__main__":
    main()
