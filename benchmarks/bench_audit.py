"""Audited lower bound, power and claimed epsilon for every mechanism at several epsilons.

    .venv/bin/python benchmarks/bench_audit.py [--samples 2000000] [--seed 0]
        [--epsilons 0.5 1 2] [--match paper] [--json out.json]

Each row audits one mechanism on the worst-case neighbouring pair of
:func:`dpauc_tf.analysis.audit_pairs.worst_case_pair` (T = 2 thresholds unless stated) with ``--samples``
releases per neighbour. Negative controls (the flipped example given weight 2, i.e. the
sensitivity under-counted by half) and deliberately broken mechanisms (the noise scale
halved, among them ``paper`` at T = 10) follow; their bound must exceed the claim. All rows
form one family: each bound is at ``1 - 0.05 / m`` (Bonferroni), so the whole table holds
with 95% confidence.
"""

from __future__ import annotations

import argparse
import json
import time

from tqdm.auto import tqdm

from dpauc_tf.analysis.audit import (
    CONFIDENCE,
    auditable_mechanisms,
    format_table,
    per_audit_confidence,
    run_audit,
)
from dpauc_tf.core.defaults import DEFAULT_AUDIT_SAMPLES
from dpauc_tf.mechanisms.histogram import HistogramLaplace
from dpauc_tf.mechanisms.paper import PaperLaplace

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
    ("tree-histogram", {}),
    ("secure-tree-histogram", {}),
    ("rr", {}),
]


class HalvedNoiseHistogram(HistogramLaplace):
    """Broken on purpose: half the noise scale, the same claim."""

    @property
    def noise_scale(self) -> float:
        return super().noise_scale / 2


class HalvedNoisePaper(PaperLaplace):
    """Broken on purpose: half the noise scale, the same claim (true epsilon 2x the claim)."""

    @property
    def noise_scale(self) -> float:
        return super().noise_scale / 2


def _broken(epsilon: float) -> list[tuple[str, object]]:
    return [
        ("BROKEN histogram noise/2", HalvedNoiseHistogram(epsilon=epsilon, num_thresholds=2)),
        ("BROKEN paper noise/2 [T=2]", HalvedNoisePaper(epsilon=epsilon, num_thresholds=2)),
        ("BROKEN paper noise/2 [T=10]", HalvedNoisePaper(epsilon=epsilon, num_thresholds=10)),
    ]


def _label(name: str, options: dict) -> str:
    extras = ",".join(f"{k}={v}" for k, v in options.items() if k != "delta")
    return f"{name}[{extras}]" if extras else name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=DEFAULT_AUDIT_SAMPLES, help="per neighbour")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--match", default="", help="only the rows whose label contains this")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args()

    available = set(auditable_mechanisms())
    configs = [(n, o) for n, o in CONFIGS if n in available]
    # (label, mechanism name or instance, options, flip weight, expected violated)
    jobs = [
        (_label(n, o), n, {"epsilon": e, **o}, 1.0, False)
        for e in args.epsilons
        for n, o in configs
    ]
    jobs += [(_label(n, o), n, {"epsilon": 1.0, **o}, 2.0, True) for n, o in configs]
    jobs += [(label, m, {}, 1.0, True) for label, m in _broken(1.0)]
    jobs = [job for job in jobs if args.match in job[0]]
    family_size = len(jobs)
    rows, results = [], []
    for label, mechanism, options, flip_weight, _ in tqdm(jobs, desc="audits"):
        start = time.perf_counter()
        result = run_audit(
            mechanism,
            samples=args.samples,
            seed=args.seed,
            flip_weight=flip_weight,
            confidence=CONFIDENCE,
            family_size=family_size,
            **options,
        )
        results.append(result)
        rows.append(
            {"config": label, "seconds": round(time.perf_counter() - start, 2), **result.to_dict()}
        )

    each = per_audit_confidence(CONFIDENCE, family_size)
    print(
        f"samples per neighbour: {args.samples:,}; seed {args.seed}; {family_size} audits, "
        f"family-wise confidence {CONFIDENCE:.0%} (Bonferroni: each bound at {each:.4%})\n"
    )
    header = (
        f"{'config':<32} {'eps':>5} {'weight':>6} {'claimed':>8} {'lower bd':>9} "
        f"{'ratio':>6} {'detect x':>8}  verdict"
    )
    print(header + "\n" + "-" * len(header))
    failures = 0
    for row, r, job in zip(rows, results, jobs, strict=True):
        expected_violated = job[4]
        ratio = r.epsilon_lower_bound / r.claimed_epsilon
        if expected_violated:
            verdict = "caught" if r.violated else "MISSED"
        else:
            verdict = "VIOLATED" if r.violated else "ok"
        failures += r.violated != expected_violated
        print(
            f"{row['config']:<32} {r.epsilon:>5.2g} {r.flip_weight:>6g} {r.claimed_epsilon:>8.4g} "
            f"{r.epsilon_lower_bound:>9.4f} {ratio:>6.3f} {r.detectable_multiple:>8.3f}  {verdict}"
        )
    print("\nraw table:\n" + format_table(results))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    if failures:
        raise SystemExit(f"{failures} audit(s) did not come out as expected")


if __name__ == "__main__":
    main()
