"""Rank-sum releases of the other estimands: error of one-vs-rest against the exact AUCs, and
the paired comparison's size and power against the non-private DeLong test.

    python benchmarks/bench_estimands_rank_sum.py            # about 2-3 minutes on 2 cores
    python benchmarks/bench_estimands_rank_sum.py --quick    # a smoke run
    .venv/bin/python benchmarks/bench_estimands_rank_sum.py --backend tff   # part 1 in TFF
    python benchmarks/bench_estimands_rank_sum.py --comparison-only --sets 4000 --shifts 0 0.1
                                    # part 2 only: the size over enough sets (docs/comparison.md)

Part 1 (one-vs-rest, synthetic softmax scores, ``n`` examples, ``C`` classes, epsilon 1):
RMSE and bias of the macro and micro averages and of one class's AUC against scikit-learn's
exact values, over ``R`` releases of one data set, for ``histogram`` (the curve default, 200
thresholds), ``rank-sum`` (central), ``rank-sum`` with ``K`` clients (local noise) and
``secure-rank-sum`` with ``K`` clients (noise shares, two rounds).

Part 2 (paired comparison, binormal pairs, 30% positives): the reject rate of H0 (equal
AUCs) at alpha 0.05 over ``D`` data sets per setting, for DeLong (no privacy) and
``compare_models`` with ``method="histogram"`` and ``"rank-sum"`` at epsilon 1; ``shift 0``
is the size (the two models have equal population AUCs), the others the power; and the
ratio of the rank-sum release's sampling variance to DeLong's.

Part 3 (``--clients-comparison``: the paired comparison over clients, the same pairs): the
rank-sum difference central, over ``K`` IID clients with local noise and with secure shares
(``compare_models(..., num_clients=K, secure=...)``, two rounds): the RMSE and bias of the
released difference against the data's exact difference (DeLong's, the noise-free
statistic: the privacy error), and the reject rates at alpha 0.05 against DeLong's.

    python benchmarks/bench_estimands_rank_sum.py --clients-comparison --sets 300 --clients 10 100
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats
from sklearn.metrics import roc_auc_score


def _softmax_data(n: int, classes: int, seed: int):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    logits = rng.normal(size=(n, classes)) + 1.2 * np.eye(classes)[labels]
    return labels, np.exp(logits) / np.exp(logits).sum(1, keepdims=True)


def _exact(labels, scores, classes):
    one_hot = np.eye(classes)[labels]
    return {
        "macro": roc_auc_score(labels, scores, multi_class="ovr"),
        "micro": roc_auc_score(one_hot, scores, average="micro"),
        "class 0": roc_auc_score(one_hot[:, 0], scores[:, 0]),
    }


def _print_errors(name: str, average: str, out, exact, seconds: float) -> None:
    rows = [(average, getattr(out, average))]
    if average != "micro":
        rows.append(("class 0", out.class_aucs[:, 0]))
    for key, values in rows:
        error = values - exact[key]
        print(
            f"{name:50s} {key:8s} {np.sqrt(np.nanmean(error**2)):10.2e} "
            f"{np.nanmean(error):10.2e} {seconds:8.2f}"
        )


def one_vs_rest(n: int, classes: int, repeats: int, clients: int) -> None:
    from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass

    labels, scores = _softmax_data(n, classes, 0)
    exact = _exact(labels, scores, classes)
    print(f"one-vs-rest: n={n}, C={classes}, epsilon 1, {repeats} releases; exact {exact}")
    print(f"{'release':50s} {'average':8s} {'RMSE':>10s} {'bias':>10s} {'seconds':>8s}")
    runs = [
        ("histogram (200 thresholds), central", "histogram", None),
        ("rank-sum, central", "rank-sum", None),
        (f"rank-sum, {clients} clients (local noise)", "rank-sum", clients),
        (f"secure-rank-sum, {clients} clients (shares)", "secure-rank-sum", clients),
    ]
    for name, mechanism, k in runs:
        for average in ("macro", "micro"):
            start = time.perf_counter()
            out = evaluate_multiclass(
                labels,
                scores,
                epsilon=1.0,
                mechanism=mechanism,
                average=average,
                num_clients=k,
                repeats=repeats,
                seed=11,
            )
            _print_errors(name, average, out, exact, time.perf_counter() - start)


def one_vs_rest_tff(n: int, classes: int, repeats: int, clients: int) -> None:
    """The federated rank sums on the simulate backend and through TFF's two rounds
    (``dpauc_tf.federated.evaluate_multiclass``), on the same IID clients; independent seeds
    (seeded alike, the two releases are equal: tests/federated)."""
    from dpauc_tf.federated import evaluate_multiclass as tff_evaluate
    from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass

    labels, scores = _softmax_data(n, classes, 0)
    exact = _exact(labels, scores, classes)
    ids = np.random.default_rng(3).integers(0, clients, n)
    data = [(scores[ids == k], labels[ids == k]) for k in range(clients)]
    print(
        f"one-vs-rest over {clients} IID clients: n={n}, C={classes}, epsilon 1, {repeats} "
        f"releases; simulate seed 11, TFF seed 12; exact {exact}"
    )
    print(f"{'release':50s} {'average':8s} {'RMSE':>10s} {'bias':>10s} {'seconds':>8s}")
    for mechanism, noise in (("rank-sum", "local noise"), ("secure-rank-sum", "shares")):
        for backend in ("simulate", "tff"):
            name = f"{mechanism}, {clients} clients ({noise}), {backend}"
            for average in ("macro", "micro"):
                start = time.perf_counter()
                if backend == "simulate":
                    out = evaluate_multiclass(
                        labels, scores, epsilon=1.0, mechanism=mechanism, average=average,
                        num_clients=clients, client_ids=ids, repeats=repeats, seed=11,
                    )  # fmt: skip
                else:
                    out = tff_evaluate(
                        data, epsilon=1.0, mechanism=mechanism, average=average,
                        repeats=repeats, seed=12,
                    )  # fmt: skip
                _print_errors(name, average, out, exact, time.perf_counter() - start)


def _pair(n: int, shift: float, rho: float, rng):
    labels = (rng.random(n) < 0.3).astype(int)
    z1 = rng.normal(size=n)
    z2 = rho * z1 + np.sqrt(1 - rho**2) * rng.normal(size=n)
    a = 1 / (1 + np.exp(-(labels + z1)))
    b = 1 / (1 + np.exp(-((1 + shift) * labels + z2)))
    return labels, a, b


def delong(labels, a, b) -> tuple[float, float]:
    """DeLong's paired test: ``(difference, variance)``."""
    pos = labels == 1
    num_pos, num_neg = pos.sum(), (~pos).sum()
    parts = []
    for s in (a, b):
        r, rp, rn = stats.rankdata(s), stats.rankdata(s[pos]), stats.rankdata(s[~pos])
        v10, v01 = (r[pos] - rp) / num_neg, 1 - (r[~pos] - rn) / num_pos
        parts.append((v10, v01, v10.mean()))
    d10, d01 = parts[1][0] - parts[0][0], parts[1][1] - parts[0][1]
    return parts[1][2] - parts[0][2], d10.var(ddof=1) / num_pos + d01.var(ddof=1) / num_neg


def comparison(
    n: int, datasets: int, rho: float, shifts=(0.0, 0.1, 0.2, 0.3), epsilon: float = 1.0
) -> None:
    from dpauc_tf.mechanisms.comparison_release import compare_models

    print(
        f"\npaired comparison: n={n} (30% positives), rho={rho}, epsilon {epsilon:g}, {datasets} "
        "data sets per row; reject rate of H0 at alpha 0.05 (standard error of the rate in "
        "brackets) and the spread (std) of the rank-sum z under H0"
    )
    header = f"{'shift':>6s} {'true diff':>9s} {'DeLong':>7s} {'histogram':>9s} {'rank-sum':>8s}"
    print(f"{header} {'rank-sum var / DeLong var':>26s} {'std z':>6s} {'seconds':>8s}")
    for shift in shifts:
        rng = np.random.default_rng(int(shift * 100) + 7)
        rejects = {"delong": 0, "histogram": 0, "rank-sum": 0}
        ratios, diffs, zs = [], [], []
        start = time.perf_counter()
        for i in range(datasets):
            labels, a, b = _pair(n, shift, rho, rng)
            diff, var = delong(labels, a, b)
            diffs.append(diff)
            rejects["delong"] += abs(diff) / np.sqrt(var) > 1.959964
            for method in ("histogram", "rank-sum"):
                out = compare_models(labels, a, b, epsilon=epsilon, method=method, seed=i)
                rejects[method] += out.p_value < 0.05
                if method == "rank-sum":
                    ratios.append(out.sampling_variance / var)
                    zs.append(out.z)
        seconds = time.perf_counter() - start
        rate = {key: value / datasets for key, value in rejects.items()}
        error = np.sqrt(rate["rank-sum"] * (1 - rate["rank-sum"]) / datasets)
        print(
            f"{shift:6.2f} {np.mean(diffs):9.4f} {rate['delong']:7.3f} {rate['histogram']:9.3f} "
            f"{rate['rank-sum']:8.3f} ({error:.3f}) {np.median(ratios):17.3f} {np.std(zs):6.3f} "
            f"{seconds:8.1f}"
        )


def comparison_clients(
    n: int, datasets: int, rho: float, shifts, clients, epsilon: float = 1.0, local: bool = True
) -> None:
    """Part 3: the rank-sum comparison central and over clients, against DeLong."""
    from dpauc_tf.mechanisms.comparison_release import compare_models

    runs = [("rank-sum, central", {})]
    for k in clients:
        if local:
            runs.append((f"rank-sum, {k} clients, local noise", {"num_clients": k}))
        runs.append((f"rank-sum, {k} clients, secure shares", {"num_clients": k, "secure": True}))
    print(
        f"\npaired comparison over clients: n={n} (30% positives), rho={rho}, epsilon "
        f"{epsilon:g}, {datasets} data sets per row (the same sets for every row); RMSE and bias "
        "of the released difference against the exact one; reject rate at alpha 0.05"
    )
    print(
        f"{'shift':>5s} {'release':38s} {'RMSE':>9s} {'bias':>10s} {'reject':>7s} "
        f"{'DeLong':>7s} {'/ DeLong':>8s} {'seconds':>8s}"
    )
    for shift in shifts:
        rng = np.random.default_rng(int(shift * 100) + 7)
        sets = [_pair(n, shift, rho, rng) for _ in range(datasets)]
        exact = [delong(*pair) for pair in sets]
        delong_rate = np.mean([abs(d) / np.sqrt(v) > 1.959964 for d, v in exact])
        for name, options in runs:
            start = time.perf_counter()
            outs = [
                compare_models(*pair, epsilon=epsilon, seed=i, **options)
                for i, pair in enumerate(sets)
            ]
            error = np.array([o.difference - d for o, (d, _) in zip(outs, exact, strict=True)])
            rate = np.mean([o.p_value < 0.05 for o in outs])
            ratio = rate / delong_rate if delong_rate > 0 else float("nan")
            print(
                f"{shift:5.2f} {name:38s} {np.sqrt(np.mean(error**2)):9.2e} "
                f"{np.mean(error):+10.2e} {rate:7.3f} {delong_rate:7.3f} {ratio:8.2f} "
                f"{time.perf_counter() - start:8.1f}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (small sizes)")
    parser.add_argument(
        "--backend",
        choices=("simulate", "tff"),
        default="simulate",
        help="tff: part 1's federated rank sums on simulate and through TFF (needs the "
        "federated environment, .venv), no part 2",
    )
    parser.add_argument("--repeats", type=int, default=200, help="releases per row of part 1")
    parser.add_argument(
        "--comparison-only", action="store_true", help="part 2 only, with the options below"
    )
    parser.add_argument("--sets", type=int, default=200, help="data sets per row (part 2)")
    parser.add_argument("--n", type=int, default=2000, help="examples per data set (part 2)")
    parser.add_argument("--rho", type=float, default=0.7, help="the models' noise correlation")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument(
        "--shifts",
        type=float,
        nargs="+",
        default=None,
        help="0: the size (default: 0 0.1 0.2 0.3; part 3: 0 0.1)",
    )
    parser.add_argument(
        "--clients-comparison", action="store_true", help="part 3 only (--sets, --n, --clients)"
    )
    parser.add_argument("--clients", type=int, nargs="+", default=[10, 100], help="part 3's K")
    parser.add_argument("--no-local", action="store_true", help="part 3: secure rows only")
    args = parser.parse_args()
    if args.clients_comparison:
        shifts = (0.0, 0.1) if args.shifts is None else tuple(args.shifts)
        comparison_clients(
            args.n, args.sets, args.rho, shifts, args.clients, args.epsilon, not args.no_local
        )
        return
    if args.comparison_only:
        shifts = (0.0, 0.1, 0.2, 0.3) if args.shifts is None else tuple(args.shifts)
        comparison(args.n, args.sets, args.rho, shifts, args.epsilon)
        return
    if args.backend == "tff":
        if args.quick:
            one_vs_rest_tff(n=2000, classes=3, repeats=20, clients=4)
        else:
            one_vs_rest_tff(n=20000, classes=4, repeats=args.repeats, clients=10)
        return
    if args.quick:
        one_vs_rest(n=2000, classes=3, repeats=20, clients=4)
        comparison(n=1000, datasets=10, rho=0.7)
        return
    one_vs_rest(n=20000, classes=4, repeats=args.repeats, clients=10)
    comparison(n=2000, datasets=200, rho=0.7)


if __name__ == "__main__":
    main()
