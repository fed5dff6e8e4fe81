"""Benchmark of rank sums over clients (issue 32): secure-rank-sum against central rank-sum.

Run: ``.venv/bin/python benchmarks/bench_secure_rank_sum.py``
(``--repeats 300`` by default; ``--quick`` for 50 and K = 10 only.)

On the paper-sized synthetic score set (``dpauc reproduce table4``'s data: 458,407 examples,
117,317 positive, epoch 1, AUC ~ 0.75), eps = 1, it prints

1. RMSE and bias against the exact AUC over the releases, by K = 10, 100, 1000: central
   ``rank-sum``; ``secure-rank-sum`` (through ``simulate_examples``, the CLI's backend); ``rank-sum``
   with local noise per client (no secure aggregation); local ``histogram`` (T = 100, IID
   clients), the federated default without secure aggregation so far;
2. the grid of the totals: ``secure-rank-sum``'s RMSE at K = 10 by ``resolution``, with the
   bytes per client of round one (the totals, in SecAgg+ limbs of 4 bytes);
4. (``--sections 4``, TFF) RMSE, bias and seconds per evaluation of
   ``dpauc_tf.federated.evaluate`` (both rounds per release), by K (``--clients 10,1000``
   picks K; a running line every ``--tff-chunk`` releases).
3. the bytes per client of each round and the seconds of one evaluation of the real two-round
   protocol (one client's two reports, and the server's sums and finish; counting excluded),
   by K.
5. (``--sections 5``, TFF) where ``dpauc_tf.federated.evaluate``'s seconds go, on the default
   grid (the CLI's ``--backend tff``): per evaluation, the seconds in round one's and round
   two's TFF calls (every client's counting, reports and the secure sums), in building round
   two's computation, and the rest, over ``--tff-repeats`` releases after a warm-up, by K.
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.experiments.synthetic import paper_score_set
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.rank_sum import RankSum
from dpauc_tf.mechanisms.release import ReleaseSpec
from dpauc_tf.mechanisms.secure_rank_sum import ModularLayout, SecureRankSum
from dpauc_tf.simulation import client_histograms, simulate, simulate_examples, simulate_rank_sums

EPSILON = 1.0
CLIENTS = (10, 100, 1000)
LIMB_BYTES = 4  # SecAgg+ sums int32 limbs


def rmse_bias(aucs: np.ndarray, exact: float) -> tuple[float, float]:
    error = aucs[np.isfinite(aucs)] - exact
    return float(np.sqrt(np.mean(error**2))), float(np.mean(error))


def row(name: str, k, aucs, exact: float, central: float | None = None) -> None:
    rmse, bias = rmse_bias(aucs, exact)
    ratio = "" if central is None else f"{rmse / central:8.2f}x"
    print(f"{name:<34} {k!s:>5} {rmse:11.3e} {bias:+11.2e} {ratio}")


def protocol_seconds(labels, scores, k: int, resolution: int, seed: int = 0) -> tuple[float, float]:
    """Seconds of one evaluation by the real protocol, eagerly on one CPU: one client's
    round one and round two (the mean over the ``k``; clients run in parallel; their counts
    precomputed), and the server's sums, finish and estimate."""
    mechanism = SecureRankSum(epsilon=EPSILON, num_clients=k, resolution=resolution)
    grid = Thresholds.make(resolution)
    buckets = np.searchsorted(grid.as_array(), scores, side="left")  # the timing's buckets
    ids = np.random.default_rng(seed).integers(0, k, labels.size)
    size = resolution + 1
    counts = []
    for client in range(k):
        mine = ids == client
        counts.append(
            (
                np.bincount(buckets[mine], labels[mine] == 1, minlength=size),
                np.bincount(buckets[mine], labels[mine] == 0, minlength=size),
            )
        )
    start = time.perf_counter()
    totals = sum(mechanism.round_one_report(p, n) for p, n in counts)  # clients, then a sum
    reports = [mechanism.round_two_report(p, n, totals, seed=c) for c, (p, n) in enumerate(counts)]
    clients = time.perf_counter() - start
    start = time.perf_counter()
    summed = {key: sum(r[key] for r in reports) for key in reports[0]}
    float(mechanism.estimate_auc(mechanism.finish(summed, totals, num_reporting=k)))
    return clients / k, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sections", default="123", help="which sections to run, e.g. 34")
    parser.add_argument("--tff-repeats", type=int, default=30)
    parser.add_argument("--tff-resolution", type=int, default=1025)
    parser.add_argument("--tff-chunk", type=int, default=25, help="releases per TFF call")
    parser.add_argument(
        "--clients", default=None, help="the K to run, comma-separated (default 10,100,1000)"
    )
    args = parser.parse_args()
    repeats = 50 if args.quick else args.repeats
    clients = (10,) if args.quick else CLIENTS
    if args.clients:
        clients = tuple(int(k) for k in args.clients.split(","))
    data = paper_score_set(1)
    labels, scores, exact = data.labels.astype(np.int64), data.scores, float(data.auc)
    n = labels.size
    print(
        f"{n} examples, {int(labels.sum())} positive, exact AUC {exact:.6f}, eps {EPSILON}, "
        f"{repeats} releases each"
    )
    grid = Thresholds.make(200)  # the CLI's default grid (rank-sum counts on its own)
    rng = np.random.default_rng(0)

    total_bits = n.bit_length() + 1  # round one's totals: up to n, signed
    if "1" in args.sections:
        section_one(labels, scores, exact, grid, rng, repeats, clients)
    if "2" in args.sections:
        section_two(labels, scores, exact, repeats, total_bits)
    if "3" in args.sections:
        section_three(labels, scores, n, clients, total_bits)
    if "5" in args.sections:
        section_five(labels, scores, clients, args.tff_repeats)
    if "4" in args.sections:
        section_four(
            labels, scores, exact, clients, args.tff_repeats, args.tff_resolution, args.tff_chunk
        )


def section_one(labels, scores, exact, grid, rng, repeats, clients) -> None:
    n = labels.size
    print("\n1. RMSE and bias against the exact AUC")
    print(f"{'release':<34} {'K':>5} {'RMSE':>11} {'bias':>11} {'/central':>9}")
    spec = ReleaseSpec.make("rank-sum", epsilon=EPSILON, seed=1)
    central = simulate_examples(spec, labels, scores, grid, repeats=repeats)
    central_rmse, _ = rmse_bias(central.aucs, exact)
    row("rank-sum (central)", 1, central.aucs, exact, central_rmse)
    for k in clients:
        ids = rng.integers(0, k, n)
        secure = ReleaseSpec.make("secure-rank-sum", epsilon=EPSILON, seed=2 + k)
        result = simulate_examples(secure, labels, scores, grid, ids, k, repeats=repeats)
        row("secure-rank-sum", k, result.aucs, exact, central_rmse)
        fine = RankSum(epsilon=EPSILON)
        local = simulate_examples(fine, labels, scores, grid, ids, k, seed=3 + k, repeats=repeats)
        row("rank-sum, local noise per client", k, local.aucs, exact, central_rmse)
        histogram = get_mechanism("histogram", epsilon=EPSILON, num_thresholds=100)
        pos, neg = client_histograms(labels, scores, Thresholds.make(100), ids, k)
        hist = simulate(histogram, pos, neg, seed=4 + k, repeats=repeats, per_client_noise=False)
        row("histogram (T=100), local", k, hist.aucs, exact, central_rmse)


def section_two(labels, scores, exact, repeats, total_bits) -> None:
    print("\n2. the grid of round one's totals (secure-rank-sum, K = 10)")
    print(f"{'resolution':>10} {'RMSE':>11} {'bias':>11} {'round-one bytes/client':>23}")
    for resolution in (1025, 4097, 16385, 131073):
        mechanism = SecureRankSum(epsilon=EPSILON, num_clients=10, resolution=resolution)
        counts = client_histograms(labels, scores, Thresholds.make(resolution))
        result = simulate_rank_sums(
            None, mechanism, counts[0][0], counts[1][0], 10, seed=resolution, repeats=repeats
        )
        rmse, bias = rmse_bias(result.aucs, exact)
        limbs = ModularLayout.for_clients(total_bits, 10).num_limbs
        print(
            f"{resolution:>10} {rmse:11.3e} {bias:+11.2e} {(resolution + 1) * limbs * LIMB_BYTES:>23,}"
        )


def section_three(labels, scores, n, clients, total_bits) -> None:
    print("\n3. the protocol: bytes per client and seconds per evaluation (resolution 131073)")
    print(
        f"{'K':>5} {'width':>5} {'limbs':>5} {'round-1 bytes':>14} {'round-2 bytes':>14} "
        f"{'client s':>9} {'server s':>9}"
    )
    mechanism = SecureRankSum(epsilon=EPSILON)
    for k in clients:
        layout = mechanism.report_layout(n, k)
        one = ModularLayout.for_clients(total_bits, k).num_limbs * 131074 * LIMB_BYTES
        two = 3 * layout.num_limbs * LIMB_BYTES
        client, server = protocol_seconds(labels, scores, k, 131073)
        print(
            f"{k:>5} {layout.width:>5} {layout.num_limbs:>5} {one:>14,} {two:>14,} "
            f"{client:>9.3f} {server:>9.3f}"
        )


def section_four(labels, scores, exact, clients, repeats, resolution, chunk) -> None:
    """TFF (the .venv world): ``dpauc_tf.federated.evaluate`` runs both rounds per release,
    ``chunk`` releases per call (seed ``K * 100_000 + call``), with a running line per call."""
    from dpauc_tf.federated import evaluate, register_atexit_shutdown

    register_atexit_shutdown()
    print(f"\n4. TFF: dpauc_tf.federated.evaluate, resolution {resolution}, {repeats} releases")
    print(f"{'K':>5} {'RMSE':>11} {'bias':>11} {'s/evaluation':>13} {'releases':>9}")
    for k in clients:
        ids = np.random.default_rng(7 + k).integers(0, k, labels.size)
        order = np.argsort(ids, kind="stable")
        bounds = np.searchsorted(ids[order], np.arange(k + 1))
        data = [(scores[order[a:b]], labels[order[a:b]]) for a, b in itertools.pairwise(bounds)]
        options = {"resolution": resolution}
        evaluate(
            data, mechanism="secure-rank-sum", epsilon=EPSILON, seed=0, mechanism_options=options
        )  # warm-up: the computations are built and the worker started
        aucs, seconds = [], 0.0
        for call, done in enumerate(range(0, repeats, chunk)):
            size = min(chunk, repeats - done)
            start = time.perf_counter()
            out = evaluate(
                data, mechanism="secure-rank-sum", epsilon=EPSILON, seed=k * 100_000 + call,
                repeats=size, mechanism_options=options,
            )  # fmt: skip
            seconds += time.perf_counter() - start
            aucs.extend(out.aucs.tolist())
            rmse, bias = rmse_bias(np.asarray(aucs), exact)
            line = f"{k:>5} {rmse:11.3e} {bias:+11.2e} {seconds / len(aucs):13.2f} {len(aucs):>9}"
            print(line, flush=True)


def section_five(labels, scores, clients, repeats) -> None:
    """TFF's seconds per evaluation by part: the module's round runners and round two's
    builder timed where ``evaluate_rank_sum`` calls them."""
    from dpauc_tf.federated import evaluate, register_atexit_shutdown
    from dpauc_tf.federated import rank_sum as tff_rank_sum

    register_atexit_shutdown()
    spent = {"round one": 0.0, "round two": 0.0, "build round two": 0.0}

    def timed(part, function):
        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[part] += time.perf_counter() - start

        return run

    tff_rank_sum.run_round_one = timed("round one", tff_rank_sum.run_round_one)
    tff_rank_sum.run_round_two = timed("round two", tff_rank_sum.run_round_two)
    tff_rank_sum.build_round_two = timed("build round two", tff_rank_sum.build_round_two)
    print(f"\n5. TFF: where the seconds of one evaluation go (default grid, {repeats} releases)")
    print(
        f"{'K':>5} {'total':>7} {'round one':>10} {'round two':>10} {'build two':>10} {'rest':>6}"
    )
    for k in clients:
        ids = np.random.default_rng(7 + k).integers(0, k, labels.size)
        order = np.argsort(ids, kind="stable")
        bounds = np.searchsorted(ids[order], np.arange(k + 1))
        data = [(scores[order[a:b]], labels[order[a:b]]) for a, b in itertools.pairwise(bounds)]
        evaluate(data, mechanism="secure-rank-sum", epsilon=EPSILON, seed=0)  # warm-up
        spent.update(dict.fromkeys(spent, 0.0))
        start = time.perf_counter()
        evaluate(data, mechanism="secure-rank-sum", epsilon=EPSILON, seed=1, repeats=repeats)
        total = (time.perf_counter() - start) / repeats
        one, two, build = (spent[p] / repeats for p in spent)
        rest = total - one - two - build
        print(f"{k:>5} {total:7.2f} {one:10.2f} {two:10.2f} {build:10.2f} {rest:6.2f}", flush=True)


if __name__ == "__main__":
    main()
