"""Benchmark of the rank sums over clients in Beam (issue 32): seconds per evaluation of
``secure-rank-sum`` (two passes) and ``rank-sum`` with local noise, against the exact AUC.

Run: ``.venv-keras3/bin/python benchmarks/bench_beam_rank_sum.py``
(``--clients 10 100``, ``--repeats 20``; ``--quick``: 45,840 examples, K = 10, 5 releases.)

On the paper-sized synthetic score set (``dpauc reproduce table4``'s data: 458,407 examples,
epoch 1), eps = 1, IID clients, it prints for every K and mechanism the seconds of one
pipeline (``dpauc_tf.beam.pipeline.evaluate_with_beam``: the examples shipped in batches,
counted per client on the mechanism's 2^17 + 1 buckets, both passes, ``repeats`` releases),
that time per release, and the RMSE and bias of the releases against the exact AUC (few
releases: a rough figure; ``benchmarks/bench_secure_rank_sum.py`` has the 300-release one).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpauc_tf.beam.pipeline import evaluate_with_beam
from dpauc_tf.experiments.synthetic import paper_score_set
from dpauc_tf.mechanisms.release import ReleaseSpec

EPSILON = 1.0
MECHANISMS = ("secure-rank-sum", "rank-sum")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--beam-options", default="--runner=DirectRunner")
    args = parser.parse_args()
    data = paper_score_set(1)
    labels, scores, exact = data.labels.astype(np.int64), data.scores, float(data.auc)
    clients, repeats = args.clients, args.repeats
    if args.quick:
        labels, scores, clients, repeats = labels[::10], scores[::10], [10], 5
        from sklearn.metrics import roc_auc_score

        exact = float(roc_auc_score(labels, scores))
    print(
        f"{labels.size} examples, exact AUC {exact:.6f}, eps {EPSILON}, {repeats} releases, "
        f"Beam options {args.beam_options!r}"
    )
    print(
        f"{'mechanism':<16} {'K':>5} {'s/pipeline':>11} {'s/release':>10} {'RMSE':>10} {'bias':>10}"
    )
    rng = np.random.default_rng(0)
    for k in clients:
        ids = rng.integers(0, k, labels.size)
        for name in MECHANISMS:
            spec = ReleaseSpec.make(name, epsilon=EPSILON, seed=k)
            start = time.perf_counter()
            out = evaluate_with_beam(
                scores, labels, ids, k, spec, repeats=repeats, beam_options=args.beam_options
            )
            seconds = time.perf_counter() - start
            error = out.aucs - exact
            rmse, bias = float(np.sqrt(np.mean(error**2))), float(np.mean(error))
            print(
                f"{name:<16} {k:>5} {seconds:11.1f} {seconds / repeats:10.2f} "
                f"{rmse:10.2e} {bias:+10.1e}"
            )


if __name__ == "__main__":
    main()
