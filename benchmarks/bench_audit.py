"""Audited 95% lower bound vs claimed epsilon for every mechanism at epsilon in {0.5, 1, 2}.

    .venv/bin/python benchmarks/bench_audit.py [--samples 1000000] [--seed 0] [--json out.json]

Each row audits one mechanism on the worst-case neighbouring pair of
:func:`dpauc_tf.analysis.audit.worst_case_pair` (T = 2 thresholds unless stated) with ``--samples``
releases per neighbour. Negative controls (the flipped example given weight 2, i.e. the
sensitivity under-counted by half) follow; their bound must exceed the claim.
"""

from __future__ import annotations

import argparse
import json
import time

from tqdm.auto import tqdm

from dpauc_tf.analysis.audit import auditable_mechanisms, format_table, run_audit

EPSILONS = (0.5, 1.0, 2.0)
DELTA = 1e-5

CONFIGS = [
    ("histogram", {}),
    ("histogram", {"noise": "discrete"}),
    ("histogram-public-scores", {}),
    ("histogram-public-scores", {"noise": "discrete"}),
    ("paper", {}),
    ("paper", {"num_thresholds": 10}),
    ("paper-gaussian", {"delta": DELTA}),
    ("secure-histogram", {}),
    ("secure-histogram", {"num_clients": 10}),
    ("secure-histogram", {"family": "skellam", "delta": DELTA}),
]


def _label(name: str, options: dict) -> str:
    extras = ",".join(f"{k}={v}" for k, v in options.items() if k != "delta")
    return f"{name}[{extras}]" if extras else name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=1_000_000, help="per neighbour")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args()

    available = set(auditable_mechanisms())
    configs = [(n, o) for n, o in CONFIGS if n in available]
    jobs = [(n, o, eps, 1.0) for eps in EPSILONS for n, o in configs]
    jobs += [(n, o, 1.0, 2.0) for n, o in configs]
    rows, results = [], []
    for name, options, epsilon, flip_weight in tqdm(jobs, desc="audits"):
        start = time.perf_counter()
        result = run_audit(
            name,
            epsilon=epsilon,
            samples=args.samples,
            seed=args.seed,
            flip_weight=flip_weight,
            **options,
        )
        results.append(result)
        rows.append(
            {
                "config": _label(name, options),
                "seconds": round(time.perf_counter() - start, 2),
                **result.to_dict(),
            }
        )

    honest = [r for r in results if r.flip_weight == 1.0]
    controls = [r for r in results if r.flip_weight != 1.0]
    print(f"samples per neighbour: {args.samples:,}; seed {args.seed}; 95% Clopper-Pearson\n")
    print(f"{'config':<44} {'eps':>5} {'claimed':>8} {'lower bd':>9} {'ratio':>6}  verdict")
    for row, r in zip(rows, results, strict=True):
        if r.flip_weight != 1.0:
            continue
        ratio = r.epsilon_lower_bound / r.claimed_epsilon
        verdict = "VIOLATED" if r.violated else "ok"
        print(
            f"{row['config']:<44} {r.epsilon:>5.2g} {r.claimed_epsilon:>8.4g} "
            f"{r.epsilon_lower_bound:>9.4f} {ratio:>6.3f}  {verdict}"
        )
    print("\nnegative controls (flipped example of weight 2: sensitivity under-counted):")
    for row, r in zip(rows, results, strict=True):
        if r.flip_weight == 1.0:
            continue
        verdict = "caught" if r.violated else "MISSED"
        print(
            f"{row['config']:<44} {r.epsilon:>5.2g} {r.claimed_epsilon:>8.4g} "
            f"{r.epsilon_lower_bound:>9.4f}  {verdict}"
        )
    print("\nraw table:\n" + format_table(results))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    failures = [r for r in honest if r.violated] + [r for r in controls if not r.violated]
    if failures:
        raise SystemExit(f"{len(failures)} audit(s) did not come out as expected")


if __name__ == "__main__":
    main()
