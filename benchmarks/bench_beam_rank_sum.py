"""Benchmark of the rank sums over clients in Beam (issue 32): RMSE and bias of
``secure-rank-sum`` (two passes) and ``rank-sum`` with local noise against the exact AUC, by
K, with the seconds of one pipeline and the bytes of every client's report in each pass.

Run: ``.venv-keras3/bin/python benchmarks/bench_beam_rank_sum.py``
(``--clients 10 100 1000``, ``--repeats 300``; ``--quick``: 45,840 examples, K = 10, 20
releases.)

On the paper-sized synthetic score set (``dpauc reproduce table4``'s data: 458,407 examples,
25.6% positive, epoch 1), eps = 1, IID clients, it prints for every K and mechanism:

* the seconds of one pipeline (``dpauc_tf.beam.pipeline.evaluate_with_beam``: the examples
  shipped in batches, counted per client on the mechanism's 2^17 + 1 buckets, both passes,
  ``repeats`` releases: the noise is drawn ``repeats`` times from the one pass's counts, so
  the releases differ only by their noise, as releases of the same data do);
* the RMSE and bias of those releases against the exact AUC;
* ``secure-rank-sum``: the bytes of one client's element in pass one (its label-free bucket
  totals, int64) and in pass two per release (``2 S_k``, ``P_k`` and ``n_k`` in the limbs of
  the mechanism's ``report_layout``, int64), measured on client 0's report as the pipeline
  builds it (``dpauc_tf.beam.rank_sums.round_one`` / ``round_two``). ``rank-sum`` with local
  noise ships no per-client report in Beam (the slice's release is drawn from the summed
  counts by the same law), so it has no such figure.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpauc_tf.beam.counting import BucketCounts
from dpauc_tf.beam.pipeline import evaluate_with_beam
from dpauc_tf.beam.rank_sums import round_one, round_two
from dpauc_tf.experiments.synthetic import paper_score_set
from dpauc_tf.mechanisms.release import ReleaseSpec
from dpauc_tf.simulation import client_histograms

EPSILON = 1.0
MECHANISMS = ("secure-rank-sum", "rank-sum")


def report_bytes(spec: ReleaseSpec, labels, scores, ids, k: int) -> tuple[int, int]:
    """Bytes of client 0's pass-one element and of its pass-two element per release."""
    grid = spec.count_grid()
    mine = ids == 0
    counts = BucketCounts(*(c[0] for c in client_histograms(labels[mine], scores[mine], grid)))
    everyone = BucketCounts(*(c[0] for c in client_histograms(labels, scores, grid)))
    _, totals = round_one((("s", 0), everyone), spec)  # pass one's sum over the clients
    _, first = round_one((("s", 0), counts), spec)
    _, (limbs, _) = round_two((("s", 0), counts), spec, 1, {"s": totals}, {"s": k})
    return first.nbytes, sum(value.nbytes for value in limbs.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--beam-options", default="--runner=DirectRunner")
    args = parser.parse_args()
    data = paper_score_set(1)
    labels, scores, exact = data.labels.astype(np.int64), data.scores, float(data.auc)
    clients, repeats = args.clients, args.repeats
    if args.quick:
        labels, scores, clients, repeats = labels[::10], scores[::10], [10], 20
        from sklearn.metrics import roc_auc_score

        exact = float(roc_auc_score(labels, scores))
    print(
        f"{labels.size} examples, {int(labels.sum())} positive, exact AUC {exact:.6f}, "
        f"eps {EPSILON}, {repeats} releases per pipeline, Beam options {args.beam_options!r}"
    )
    print(
        f"{'mechanism':<16} {'K':>5} {'s/pipeline':>11} {'RMSE':>10} {'bias':>10} "
        f"{'pass-1 B':>10} {'pass-2 B':>9}"
    )
    rng = np.random.default_rng(0)
    for k in clients:
        ids = rng.integers(0, k, labels.size)
        for name in args.mechanisms:
            spec = ReleaseSpec.make(name, epsilon=EPSILON, seed=k)
            start = time.perf_counter()
            out = evaluate_with_beam(
                scores, labels, ids, k, spec, repeats=repeats, beam_options=args.beam_options
            )
            seconds = time.perf_counter() - start
            error = out.aucs[np.isfinite(out.aucs)] - exact
            rmse, bias = float(np.sqrt(np.mean(error**2))), float(np.mean(error))
            sizes = ("-", "-")
            if spec.capabilities.secure:
                sizes = tuple(f"{b:,}" for b in report_bytes(spec, labels, scores, ids, k))
            print(
                f"{name:<16} {k:>5} {seconds:11.1f} {rmse:10.3e} {bias:+10.1e} "
                f"{sizes[0]:>10} {sizes[1]:>9}",
                flush=True,
            )


if __name__ == "__main__":
    main()
