"""Time ``dpauc reproduce all --scores synthetic`` and report its peak memory.

    python benchmarks/bench_reproduce.py --seeds 100

Prints one JSON line: wall seconds for building the synthetic score sets and for running all
tables, the number of rows, and the peak resident memory of the process (``ru_maxrss``). The
issue's targets: under 2 minutes on 2 cores and under 4 GB for ``--seeds 100``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--tables", default="all", help="comma-separated, or all")
    parser.add_argument(
        "--per-client-noise", action="store_true", help="every client's noise (0.2's way)"
    )
    args = parser.parse_args()

    start = time.perf_counter()
    from dpauc_tf.experiments import tables
    from dpauc_tf.experiments.synthetic import paper_score_sets

    imported = time.perf_counter()
    score_sets = paper_score_sets()
    built = time.perf_counter()
    names = list(tables.TABLES) if args.tables == "all" else args.tables.split(",")
    runner = tables.TableRunner(
        score_sets, repeats=args.seeds, seed=0, per_client_noise=args.per_client_noise
    )
    rows = runner.run(names, progress=False)
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "seeds": args.seeds,
                "per_client_noise": args.per_client_noise,
                "tables": names,
                "rows": len(rows),
                "cpus": os.cpu_count(),
                "import_s": round(imported - start, 2),
                "synthetic_s": round(built - imported, 2),
                "tables_s": round(done - built, 2),
                "total_s": round(done - start, 2),
                "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
