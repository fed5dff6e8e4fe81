"""Preprocessing throughput and peak memory: the real Criteo sample and synthetic rows.

    python benchmarks/bench_data_prep.py [--rows 1000000] [--workdir DIR]

Each case runs ``python -m data_prep`` in a fresh process; its peak resident memory comes from
``os.wait4``. Throughput is rows / the run's own processing time (``metadata.json``'s
``seconds``: both passes, excluding interpreter start-up). Cases:

* ``real``: the 19,532-row combined Criteo file in ``../shared`` (skipped when absent);
* ``synthetic-tsv``: ROWS synthetic rows written as raw TSV first, then prepared like a file
  (parsing included: the figure to compare with real files);
* ``synthetic-direct``: ``--synthetic ROWS`` (generation instead of parsing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_FILE = (
    REPO_ROOT.parent / "shared" / "data" / "criteo" / "kaggle_dac" / "combined"
    / "criteo_dac_labelled_dedup.tsv"
)  # fmt: skip


def run_case(args: list[str], output: Path) -> dict:
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "data_prep", *args, "--output", str(output), "--no-progress"],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stderr = process.stderr.read().decode()
    process.stdout.close()
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"data_prep failed: {stderr}")
    metadata = json.loads((output / "metadata.json").read_text())
    rows = metadata["read_report"]["rows"]
    return {
        "rows": rows,
        "seconds": metadata["seconds"],
        "rows_per_second": rows / metadata["seconds"],
        "wall_seconds_with_startup": round(wall, 2),
        "peak_rss_mib": usage.ru_maxrss / 1024,  # Linux reports KiB
        "output_mib": sum(p.stat().st_size for p in output.iterdir()) / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workdir", default=None, help="default: a temporary directory")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO_ROOT))
    from data_prep.synthetic import SyntheticCriteo

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        results = {}
        if REAL_FILE.is_file():
            results["real"] = run_case(["--input", str(REAL_FILE)], work / "real")
        else:
            print(f"real Criteo rows not found at {REAL_FILE}: skipped")
        tsv = work / "synthetic.txt"
        started = time.perf_counter()
        SyntheticCriteo(seed=0).write_tsv(tsv, args.rows)
        generate_seconds = time.perf_counter() - started
        results["synthetic-tsv"] = run_case(["--input", str(tsv)], work / "synthetic-tsv")
        results["synthetic-tsv"]["input_mib"] = tsv.stat().st_size / 2**20
        results["synthetic-tsv"]["tsv_generation_seconds"] = round(generate_seconds, 2)
        tsv.unlink()
        results["synthetic-direct"] = run_case(
            ["--synthetic", str(args.rows)], work / "synthetic-direct"
        )
    print(f"{'case':<17} {'rows':>10} {'seconds':>8} {'rows/s':>10} {'peak RSS MiB':>13}")
    for name, r in results.items():
        print(
            f"{name:<17} {r['rows']:>10,} {r['seconds']:>8.2f} {r['rows_per_second']:>10,.0f} "
            f"{r['peak_rss_mib']:>13,.0f}"
        )
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
