"""Epsilon of 100 and 1,000 releases, as booked before issue 21 and now (issue 21).

* continuous ``histogram`` (equal split): one Laplace event of L1 = 2 before, two unit
  Laplace events now (what a flip does: one count of each class moves by one);
* ``auc-only``: the basic sum before, the optimal composition of (epsilon, delta) releases
  now (PLD of the canonical pair);
* ``secure-histogram`` / ``secure-tree-histogram`` with Skellam noise: the Renyi bound
  before, the smaller of it and the PLD from the Skellam pmf now.

Prints ``before``, ``now`` and ``before / now`` at the ledger's delta.

Usage (from the repository root)::

    PYTHONPATH=. python benchmarks/bench_accounting.py
    PYTHONPATH=. python benchmarks/bench_accounting.py --epsilon 0.1 --delta 1e-6
"""

from __future__ import annotations

import argparse

import dp_accounting

from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.privacy.accounting import composed_epsilon


def rows(epsilon: float, delta: float, releases: list[int]):
    histogram = get_mechanism("histogram", epsilon=epsilon, num_thresholds=200)
    old_histogram = dp_accounting.LaplaceDpEvent(noise_multiplier=histogram.noise_scale / 2)
    for k in releases:
        before = composed_epsilon(old_histogram, k, delta).best
        yield "histogram (continuous)", k, before, histogram.privacy_spent(k, delta).best
    auc_only = get_mechanism("auc-only", epsilon=epsilon, num_thresholds=200, delta=delta / 1e4)
    for k in releases:
        spent = auc_only.privacy_spent(k, delta)
        yield f"auc-only (delta {delta / 1e4:g} each)", k, spent.basic, spent.best
    for name in ("secure-histogram", "secure-tree-histogram"):
        m = get_mechanism(name, epsilon=epsilon, num_thresholds=200, delta=delta)
        for k in releases:
            spent = m.privacy_spent(k, delta)
            yield f"{name} (Skellam)", k, spent.rdp, spent.best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epsilon", type=float, default=1.0, help="epsilon of one release")
    parser.add_argument("--delta", type=float, default=1e-6, help="the ledger's delta")
    parser.add_argument("--releases", type=int, nargs="+", default=[100, 1000])
    args = parser.parse_args()
    print(f"epsilon {args.epsilon:g} per release, delta {args.delta:g}")
    print(f"{'mechanism':<38} {'releases':>8} {'before':>10} {'now':>10} {'ratio':>6}")
    for name, k, before, now in rows(args.epsilon, args.delta, args.releases):
        print(f"{name:<38} {k:>8,} {before:>10.4f} {now:>10.4f} {before / now:>6.3f}", flush=True)


if __name__ == "__main__":
    main()
