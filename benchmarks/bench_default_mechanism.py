"""Benchmark behind the default mechanism per deployment (issue 32 item 6).

Run: ``.venv/bin/python benchmarks/bench_default_mechanism.py``
(300 releases per row: ``--repeats`` at epsilon 1, ``--other-repeats`` at the others;
``--quick`` for 30 releases, K = 10 and epsilon 1 only; about 1 minute on 2 cores.)

On the paper-sized synthetic score set (``dpauc reproduce table4``'s data: 458,407 examples,
117,317 positive, epoch 1, AUC ~ 0.77), for epsilon 0.1, 1 and 8 and K = 10, 100, 1000 IID
clients, it prints the RMSE and bias of the released ROC AUC against the exact AUC, and the
ratio to central ``rank-sum`` at the same epsilon, for each deployment
([`dpauc_tf.mechanisms.laws.Deployment`][]):

* CENTRAL (one data holder): ``rank-sum``; ``auc-only`` at delta 1e-6;
* SECURE (secure aggregation): ``secure-rank-sum`` (discrete Laplace; and Skellam at delta
  1e-6), ``secure-histogram`` and ``secure-tree-histogram`` at the default grid (200
  thresholds);
* FEDERATED (each client adds its own noise, the server sees every report): ``rank-sum`` with
  local noise (round one's totals in the clear, then each client's noisy rank sum with the
  global ranks) and ``histogram`` with local noise at the default grid.

The row marked ``*`` is what ``default_mechanism(deployment=...)`` picks for the ROC AUC
(``delta`` rows: what it picks with a delta). Every release runs through the simulation
(``simulate_examples`` / ``simulate``), the backend of ``dpauc evaluate``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.experiments.synthetic import paper_score_set
from dpauc_tf.mechanisms.laws import Deployment
from dpauc_tf.mechanisms.registry import default_mechanism
from dpauc_tf.mechanisms.release import ReleaseSpec
from dpauc_tf.simulation import client_histograms, simulate, simulate_examples

EPSILONS = (1.0, 0.1, 8.0)
CLIENTS = (10, 100, 1000)
DELTA = 1e-6


def rmse_bias(aucs: np.ndarray, exact: float) -> tuple[float, float, int]:
    aucs = np.asarray(aucs, np.float64)
    finite = np.isfinite(aucs)
    error = aucs[finite] - exact
    return float(np.sqrt(np.mean(error**2))), float(np.mean(error)), int((~finite).sum())


class Bench:
    def __init__(self, repeats: int, other_repeats: int):
        data = paper_score_set(1)
        self.labels = data.labels.astype(np.int64)
        self.scores = data.scores
        self.exact = float(data.auc)
        self.repeats = repeats
        self.other_repeats = other_repeats
        self.grid = Thresholds.make(DEFAULT_NUM_THRESHOLDS)
        self._ids: dict[int, np.ndarray] = {}
        self._hist: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.central: dict[float, float] = {}

    def ids(self, k: int) -> np.ndarray:
        if k not in self._ids:
            self._ids[k] = np.random.default_rng(k).integers(0, k, self.labels.size)
        return self._ids[k]

    def histograms(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        if k not in self._hist:
            self._hist[k] = client_histograms(self.labels, self.scores, self.grid, self.ids(k), k)
        return self._hist[k]

    def release(self, name: str, eps: float, k: int, delta: float | None, seed: int):
        repeats = self.repeats if eps == 1.0 else self.other_repeats
        spec = ReleaseSpec.make(name, epsilon=eps, delta=delta, seed=seed)
        if spec.build().releases_from_summed_counts or k == 1:  # rank sums: from the examples
            ids = None if k == 1 else self.ids(k)
            return simulate_examples(
                spec, self.labels, self.scores, self.grid, ids, k, repeats=repeats
            ).aucs
        pos, neg = self.histograms(k)
        # local histogram: the server's sum of the K Laplace draws at once (the same law)
        return simulate(spec, pos, neg, repeats=repeats, per_client_noise=False).aucs

    def row(self, deployment: str, name: str, eps: float, k: int, delta=None, chosen=False):
        start = time.perf_counter()
        seed = int(np.random.SeedSequence([k, int(eps * 1000), len(name)]).generate_state(1)[0])
        aucs = self.release(name, eps, k, delta, seed)
        rmse, bias, undefined = rmse_bias(aucs, self.exact)
        if name == "rank-sum" and k == 1:
            self.central[eps] = rmse
        ratio = rmse / self.central[eps]
        label = name + ("" if delta is None else f" (delta {delta:g})")
        mark = "*" if chosen else " "
        print(
            f"{deployment:<9} {eps:>4g} {k:>5} {mark}{label:<34} {rmse:10.3e} {bias:+10.2e} "
            f"{ratio:8.2f}x {undefined:>5} {time.perf_counter() - start:6.1f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=300, help="releases per row at eps 1")
    parser.add_argument("--other-repeats", type=int, default=300, help="at the other eps")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--epsilons", type=float, nargs="*", default=list(EPSILONS))
    parser.add_argument("--clients", type=int, nargs="*", default=list(CLIENTS))
    parser.add_argument("--deployments", default="central,secure,federated")
    args = parser.parse_args()
    if args.quick:
        args.repeats = args.other_repeats = 30
        args.epsilons, args.clients = [1.0], [10]
    bench = Bench(args.repeats, args.other_repeats)
    deployments = args.deployments.split(",")
    print(
        f"{bench.labels.size} examples, {int(bench.labels.sum())} positive, exact AUC "
        f"{bench.exact:.6f}; {args.repeats} releases per row at eps 1, {args.other_repeats} "
        f"at the others; grid of the histograms: {DEFAULT_NUM_THRESHOLDS} thresholds"
    )
    print(
        f"{'deploy':<9} {'eps':>4} {'K':>5} {'release':<35} {'RMSE':>10} {'bias':>10} "
        f"{'/central':>9} {'undef':>5} {'s':>6}"
    )
    for eps in args.epsilons:
        picked = default_mechanism()
        bench.row("central", "rank-sum", eps, 1, chosen=picked == "rank-sum")
        if "central" in deployments:
            picked_delta = default_mechanism(delta=DELTA)
            bench.row("central", "auc-only", eps, 1, DELTA, chosen=picked_delta == "auc-only")
        for k in args.clients:
            if "secure" in deployments:
                picked = default_mechanism(deployment=Deployment.SECURE)
                picked_delta = default_mechanism(delta=DELTA, deployment=Deployment.SECURE)
                for name in ("secure-rank-sum", "secure-histogram", "secure-tree-histogram"):
                    bench.row("secure", name, eps, k, chosen=picked == name)
                bench.row(
                    "secure", "secure-rank-sum", eps, k, DELTA, picked_delta == "secure-rank-sum"
                )
            if "federated" in deployments:
                picked = default_mechanism(deployment=Deployment.FEDERATED)
                for name in ("rank-sum", "histogram"):
                    bench.row("federated", name, eps, k, chosen=picked == name)


if __name__ == "__main__":
    main()
