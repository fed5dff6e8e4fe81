"""The audit of the other rank-sum estimands: one-vs-rest rank sums and the paired comparison,
central and through the federated rounds with secure noise shares (the server's sum).

    python benchmarks/bench_audit_estimands.py                  # 100,000 releases per neighbour
    python benchmarks/bench_audit_estimands.py --samples 20000  # quicker

Every target is audited honestly (flipped weight 1) and as its negative control (weight 2,
the privacy loss doubled); ``ratio`` is the lower bound over the claim. The deliberately
broken releases (halved noise, the naive one-vs-rest design) are in
``tests/analysis/test_audit_estimands.py``.
"""

from __future__ import annotations

import argparse
import time

from dpauc_tf.analysis.audit import run_audit
from dpauc_tf.analysis.audit_targets import PairedComparisonTarget, SummedShares
from dpauc_tf.mechanisms.comparison_rank_sum import RankSumComparison
from dpauc_tf.mechanisms.multiclass_rank_sum import OneVsRestRankSum, SecureOneVsRestRankSum


def targets(clients: int):
    return {
        "one-vs-rest rank-sum, C=3": OneVsRestRankSum(1.0, 3),
        "one-vs-rest rank-sum, C=3, micro": OneVsRestRankSum(1.0, 3, micro=True),
        f"one-vs-rest secure-rank-sum, C=3, {clients} clients": SummedShares(
            SecureOneVsRestRankSum(1.0, 3, num_clients=clients)
        ),
        "comparison rank-sum, central": PairedComparisonTarget(RankSumComparison(1.0)),
        f"comparison rank-sum, {clients} clients, secure": PairedComparisonTarget(
            RankSumComparison(1.0, num_clients=clients, secure=True)
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"epsilon 1, {args.samples:,} releases per neighbour, seed {args.seed}, 95% per bound")
    header = f"{'release':48s} {'weight':>6s} {'claimed':>7s} {'lower bd':>8s} {'ratio':>6s}"
    print(f"{header} {'detect x':>8s} {'verdict':>8s} {'seconds':>7s}")
    for name, target in targets(args.clients).items():
        for weight in (1.0, 2.0):
            start = time.perf_counter()
            r = run_audit(target, samples=args.samples, seed=args.seed, flip_weight=weight)
            verdict = "VIOLATED" if r.violated else "ok"
            print(
                f"{name:48s} {weight:6g} {r.claimed_epsilon:7.3g} {r.epsilon_lower_bound:8.4f} "
                f"{r.epsilon_lower_bound / r.claimed_epsilon:6.3f} {r.detectable_multiple:8.3f} "
                f"{verdict:>8s} {time.perf_counter() - start:7.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
