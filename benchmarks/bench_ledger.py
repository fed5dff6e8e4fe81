"""Time to record many releases of one data set in a file ledger (issue 21).

Each size starts a fresh ledger file (``PrivacyLedger(budget=..., delta=..., path=...)``) and
records the release of one mechanism (``get_mechanism(NAME, epsilon=...).dp_event()``, the
event ``DPAUCBudgetCallback`` records once per epoch) ``N`` times into data set
``"validation"``, as a long ``fit`` with validation does. It prints the seconds for each
``N``, the composed epsilon at the end (``ledger.spent(...)``) and whether the ledger
refused before ``N``. A size that takes longer than ``--time-limit`` stops and says how far
it got. The import of TensorFlow (to build the mechanism) is not timed.

Usage (from the repository root, so that this checkout's ``dpauc_tf`` is imported)::

    PYTHONPATH=. python benchmarks/bench_ledger.py                        # 400, 2,000, 10,000
    PYTHONPATH=. python benchmarks/bench_ledger.py --sizes 400 --delta 0   # pure DP
    PYTHONPATH=. python benchmarks/bench_ledger.py --mechanism secure-histogram --delta 1e-6
    PYTHONPATH=. python benchmarks/bench_ledger.py --not-durable       # without the disk flushes
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.privacy.ledger import BudgetExceededError, PrivacyLedger


def run(event, size, budget, delta, limit, directory, durable=True):
    path = os.path.join(directory, f"ledger-{size}.json")
    ledger = PrivacyLedger(budget=budget, delta=delta, path=path, durable=durable)
    start = time.perf_counter()
    recorded, refused = 0, False
    for i in range(size):
        try:
            ledger.record(event, dataset="validation", description=f"epoch {i} validation")
        except BudgetExceededError:
            refused = True
            break
        recorded += 1
        if time.perf_counter() - start > limit:
            break
    seconds = time.perf_counter() - start
    spent = PrivacyLedger(path=path).spent("validation")  # read back from the file
    finished = recorded == size or refused
    status = "refused at the budget" if refused else ("" if finished else "did NOT finish")
    print(
        f"{size:>7,} releases: {seconds:8.2f} s for {recorded:,} recorded "
        f"({1e3 * seconds / max(recorded, 1):.2f} ms each); epsilon {spent.best:.6g} "
        f"(method {spent.method}, basic {spent.basic:.6g}) {status}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[400, 2_000, 10_000])
    parser.add_argument("--mechanism", default="histogram")
    parser.add_argument("--epsilon", type=float, default=0.01, help="epsilon of one release")
    parser.add_argument("--delta", type=float, default=1e-6, help="the ledger's delta")
    parser.add_argument("--budget", type=float, default=10.0, help="0: no budget")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds per size")
    parser.add_argument(
        "--not-durable",
        action="store_true",
        help="PrivacyLedger(durable=False): no fdatasync per release (measures the rest)",
    )
    args = parser.parse_args()
    options = {"delta": args.delta} if args.mechanism in ("auc-only",) else {}
    if args.mechanism.startswith("secure") and args.delta > 0:
        options = {"delta": args.delta, "family": "skellam"}
    mechanism = get_mechanism(args.mechanism, epsilon=args.epsilon, num_thresholds=200, **options)
    event = mechanism.dp_event()
    budget = args.budget or None
    print(
        f"{args.mechanism}, epsilon {args.epsilon:g} per release, ledger delta {args.delta:g}, "
        f"budget {budget}, durable {not args.not_durable}; event {event}"
    )
    with tempfile.TemporaryDirectory() as directory:
        for size in args.sizes:
            if args.not_durable:
                run(event, size, budget, args.delta, args.time_limit, directory, False)
            else:  # the earlier versions have no durable option (they always synced)
                run(event, size, budget, args.delta, args.time_limit, directory)


if __name__ == "__main__":
    main()
