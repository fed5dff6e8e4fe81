"""``secure-rank-sum`` on Flower: seconds per evaluation and bytes per client in each exchange.

    PYTHONPATH=. .venv-keras3/bin/python benchmarks/bench_flower_rank_sum.py
        [--clients 10] [--examples 20000] [--repeats 3] [--resolution R]
        [--resolutions R1,R2,...]
    PYTHONPATH=. .venv-keras3/bin/python benchmarks/bench_flower_rank_sum.py --paper-releases 300

``--paper-releases N``: instead, the RMSE and bias against the exact AUC of ``N`` releases
on the paper-sized synthetic set (``dpauc reproduce table4``'s data: 458,407 examples,
epoch 1), eps 1, ``--clients`` IID clients: one evaluate round whose exchange two carries
``N`` noise shares per client (the releases differ only by their noise, as in
``benchmarks/bench_secure_rank_sum.py``), with its seconds.

One evaluation is one Flower evaluate round with two exchanges, SecAgg+ on both
(``dpauc_tf.flower.evaluate`` on the in-process grid: the real ``SecAggPlusWorkflow`` and
``secaggplus_mod``, no Ray). After a first evaluation timed apart (imports, TensorFlow
tracing), ``--repeats`` evaluations are timed; the median is printed. Bytes are those of
every message's content serialized as Flower's protobuf (``recorddict_to_proto``), per
client and per exchange, each way: server -> client (the release's settings; exchange two
also the aggregate totals) and client -> server (SecAgg+'s keys, shares and the masked
vector). Beside each figure, the bytes the same messages take zlib-compressed: what a
compressing (or sparse) transport could save; SecAgg+'s masked vectors are uniform modulo
its modulus, so they do not compress whatever the data. The load average before and after
is printed: on a shared machine the seconds are upper bounds.

``--resolutions`` sweeps the counting grid (one evaluation each): exchange one's bytes per
client against the grid's error (the exact AUC on the grid minus the exact AUC of the
scores, scikit-learn) and the release's privacy noise (the standard deviation of its AUC,
from the release's own interval at epsilon 1).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import zlib

from bench_flower import _clients  # benchmarks/ is on sys.path when run as a script


def _recording_grid(traffic: list):
    """Records ``(exchange, direction, node, serialized bytes)`` of every message the local grid
    delivers; a node's exchange is counted by SecAgg+'s setup stages (one per exchange)."""
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key, Stage
    from flwr.common.serde import recorddict_to_proto

    from dpauc_tf.flower import local
    from dpauc_tf.flower.rank_sum import RankSumExchange

    grid_class = local._local_grid_class()
    deliver = grid_class._deliver
    exchanges = [e.value for e in RankSumExchange]
    setups: dict = {}

    def recorded(self, message):
        node = message.metadata.dst_node_id
        configs = message.content.config_records.get(RECORD_KEY_CONFIGS)
        if configs is not None and configs.get(Key.STAGE) == Stage.SETUP:
            setups[node] = setups.get(node, 0) + 1
        exchange = exchanges[min(setups.get(node, 1), 2) - 1]
        sent = recorddict_to_proto(message.content).SerializeToString()
        traffic.append((exchange, "server->client", node, sent))  # compressed after timing
        reply = deliver(self, message)
        if reply.has_content():
            got = recorddict_to_proto(reply.content).SerializeToString()
            traffic.append((exchange, "client->server", node, got))
        return reply

    grid_class._deliver = recorded
    return setups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--examples", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--resolution", type=int, default=None)
    parser.add_argument("--resolutions", default=None, help="a sweep of grids, e.g. 1025,131073")
    parser.add_argument("--paper-releases", type=int, default=0)
    args = parser.parse_args()
    from dpauc_tf.flower import evaluate

    if args.paper_releases:
        paper_rmse(evaluate, args.clients, args.paper_releases, args.resolution)
        return

    clients = _clients(args.clients, args.examples)
    options = {} if args.resolution is None else {"resolution": args.resolution}
    traffic: list = []
    setups = _recording_grid(traffic)

    def once(seed):
        setups.clear()
        return evaluate(
            clients,
            mechanism="secure-rank-sum",
            epsilon=1.0,
            mechanism_options=options,
            seed=seed,
            engine="in-process",
        )

    print(f"load average before: {os.getloadavg()[0]:.1f}")
    start = time.perf_counter()
    first = once(0)
    print(f"first evaluation (imports, tracing): {time.perf_counter() - start:.1f} s")
    seconds = []
    for seed in range(1, args.repeats + 1):
        traffic.clear()
        start = time.perf_counter()
        out = once(seed)
        seconds.append(time.perf_counter() - start)
    print(
        f"K = {args.clients}, {args.examples} examples, resolution "
        f"{args.resolution or 'default (2^17 + 1)'}: AUC {first.auc:.4f} / {out.auc:.4f}, "
        f"{out.num_reporting} of {out.num_clients} clients"
    )
    print(f"seconds per evaluation (median of {args.repeats}): {statistics.median(seconds):.2f}")
    for exchange in ("totals", "rank-sum"):
        for direction in ("server->client", "client->server"):
            raw, packed = _per_client(traffic, exchange, direction)
            print(
                f"exchange {exchange!r} {direction}: {statistics.median(raw) / 1e3:,.1f} kB per "
                f"client (median; min {raw[0] / 1e3:,.1f}, max {raw[-1] / 1e3:,.1f}); "
                f"zlib {statistics.median(packed) / 1e3:,.1f} kB"
            )
    if args.resolutions:
        _sweep(clients, [int(r) for r in args.resolutions.split(",")], traffic, setups)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def _per_client(traffic, exchange, direction) -> tuple[list, list]:
    raw: dict = {}
    packed: dict = {}
    for ex, way, node, data in traffic:
        if ex == exchange and way == direction:
            raw[node] = raw.get(node, 0) + len(data)
            packed[node] = packed.get(node, 0) + len(zlib.compress(data))
    return sorted(raw.values()), sorted(packed.values())


def _sweep(clients, resolutions, traffic, setups) -> None:
    """Per grid: exchange one's bytes per client up, the grid's error, the privacy noise."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from dpauc_tf.flower.evaluate import evaluate_spec
    from dpauc_tf.mechanisms.release import ReleaseSpec

    scores = np.concatenate([s for s, _ in clients])
    labels = np.concatenate([y for _, y in clients])
    exact = roc_auc_score(labels, scores)
    print("resolution | exchange one up (kB/client) | grid error | privacy std (eps 1)")
    for resolution in resolutions:
        spec = ReleaseSpec.make(
            "secure-rank-sum", epsilon=1.0, options={"resolution": resolution}, seed=0
        )
        buckets = np.searchsorted(spec.count_grid().as_array(), scores, side="left")
        grid_error = roc_auc_score(labels, buckets) - exact  # midranks: the grid's ties
        traffic.clear()
        setups.clear()
        out = evaluate_spec(spec, clients, engine="in-process", confidence=0.95)
        raw, _ = _per_client(traffic, "totals", "client->server")
        privacy = float(np.sqrt(out.interval.privacy_variance[0]))
        print(
            f"{resolution} | {statistics.median(raw) / 1e3:,.1f} | {grid_error:+.2e} | "
            f"{privacy:.2e}"
        )


def paper_rmse(evaluate, num_clients: int, releases: int, resolution: int | None) -> None:
    """RMSE and bias of ``releases`` releases of one round on the paper-sized set."""
    import numpy as np

    from dpauc_tf.experiments.synthetic import paper_score_set

    data = paper_score_set(1)
    labels, scores, exact = data.labels.astype(np.int64), data.scores, float(data.auc)
    ids = np.random.default_rng(0).integers(0, num_clients, labels.size)
    clients = [(scores[ids == k], labels[ids == k]) for k in range(num_clients)]
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    start = time.perf_counter()
    out = evaluate(
        clients,
        mechanism="secure-rank-sum",
        epsilon=1.0,
        mechanism_options={} if resolution is None else {"resolution": resolution},
        seed=num_clients,
        repeats=releases,
        engine="in-process",
    )
    seconds = time.perf_counter() - start
    error = out.aucs[np.isfinite(out.aucs)] - exact
    print(
        f"{labels.size} examples, exact AUC {exact:.6f}, eps 1, K = {num_clients}, "
        f"{releases} releases in one round ({seconds:.1f} s, {out.num_reporting} reporting): "
        f"RMSE {np.sqrt(np.mean(error**2)):.3e}, bias {np.mean(error):+.1e}"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
