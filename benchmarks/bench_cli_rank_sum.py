"""Issue 32's figures from the command line: ``dpauc evaluate`` on the paper-sized score file.

Run (the TFF world, whose ``dpauc`` has every backend this needs):
``.venv/bin/python benchmarks/bench_cli_rank_sum.py`` (``--quick``: 20 releases, K = 10).

It writes ``dpauc reproduce table4``'s data (the paper-sized synthetic set of epoch 1:
458,407 examples, 117,317 positive, exact AUC 0.7665) to a CSV file (``--scores-file``,
default under ``/tmp``), then runs the command a user runs on it, as a subprocess,
``--format json --show-exact``, eps 1, and prints for each row the RMSE and bias of the
releases against the file's exact AUC (the command's ``exact_auc``), the ratio to central
``rank-sum``'s RMSE, the command's wall seconds and the load average when it ended:

- central ``rank-sum`` (``dpauc evaluate --scores FILE --mechanism rank-sum``);
- ``secure-rank-sum`` with ``--clients K`` on the default backend (``simulate``: it draws the
  summed release, whose law does not depend on K);
- ``secure-rank-sum`` with ``--clients K --backend tff``: both rounds of the protocol in TFF
  for every release, on the default grid (2^17 + 1 thresholds);
- (``--seconds``) TFF's seconds per evaluation: one command of 1 release and one of
  ``--seconds-repeats`` releases; the difference over the extra releases is the seconds of
  one evaluation (reading the file, importing TFF and starting its worker excluded).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

EPSILON = 1.0


def write_scores(path: Path) -> None:
    """The paper-sized set of epoch 1 as ``score,label`` rows (17 significant digits)."""
    from dpauc_tf.experiments.synthetic import paper_score_set

    data = paper_score_set(1)
    rows = np.column_stack([data.scores, data.labels.astype(np.float64)])
    np.savetxt(path, rows, fmt=("%.17g", "%d"), delimiter=",", header="score,label", comments="")


def run_cli(scores: Path, *options: str) -> tuple[dict, float]:
    """``dpauc evaluate`` as a subprocess: its JSON output and its wall seconds."""
    command = [sys.executable, "-m", "dpauc_tf", "evaluate", "--scores", str(scores)]
    command += ["--epsilon", str(EPSILON), "--format", "json", "--show-exact", "--no-progress"]
    command += list(options)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    out = done.stdout
    return json.loads(out[out.index("{") : out.rindex("}") + 1]), seconds


def rmse_bias(result: dict) -> tuple[float, float]:
    error = np.asarray(result["aucs"], np.float64) - float(result["exact_auc"])
    error = error[np.isfinite(error)]
    return float(np.sqrt(np.mean(error**2))), float(np.mean(error))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores-file", type=Path, default=Path("/tmp/dpauc_paper_scores.csv"))
    parser.add_argument("--repeats", type=int, default=300, help="releases per row")
    parser.add_argument("--clients", default="10,1000", help="the K, comma-separated")
    parser.add_argument(
        "--rows", default="central,simulate,tff", help="which rows: central, simulate, tff"
    )
    parser.add_argument("--tff-repeats", type=int, default=None, help="default: --repeats")
    parser.add_argument("--seconds", action="store_true", help="TFF's seconds per evaluation")
    parser.add_argument("--seconds-repeats", type=int, default=6)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 20 if args.quick else args.repeats
    tff_repeats = repeats if args.tff_repeats is None else args.tff_repeats
    clients = (10,) if args.quick else tuple(int(k) for k in args.clients.split(","))
    rows = args.rows.split(",")
    if not args.scores_file.exists():
        write_scores(args.scores_file)
    print(f"{args.scores_file}: eps {EPSILON}; dpauc evaluate --format json --show-exact")
    print(
        f"{'release':<31} {'K':>5} {'releases':>8} {'RMSE':>10} {'bias':>10} "
        f"{'/central':>8} {'wall s':>8} {'load':>5}"
    )
    central = None

    def show(name: str, k: int, options: list[str]) -> float:
        result, seconds = run_cli(args.scores_file, *options)
        rmse, bias = rmse_bias(result)
        ratio = "" if central is None else f"{rmse / central:8.2f}"
        print(
            f"{name:<31} {k:>5} {len(result['aucs']):>8} {rmse:10.3e} {bias:+10.2e} "
            f"{ratio:>8} {seconds:8.1f} {os.getloadavg()[0]:5.1f}",
            flush=True,
        )
        return rmse

    if "central" in rows:
        options = ["--mechanism", "rank-sum", "--repeats", str(repeats), "--seed", "1"]
        central = show("rank-sum (central)", 1, options)
    for k in clients:
        secure = ["--mechanism", "secure-rank-sum", "--clients", str(k)]
        if "simulate" in rows:
            options = ["--repeats", str(repeats), "--seed", str(10 + k)]
            show("secure-rank-sum, simulate", k, secure + options)
        if "tff" in rows:
            options = ["--backend", "tff", "--repeats", str(tff_repeats), "--seed", str(20 + k)]
            show("secure-rank-sum, --backend tff", k, secure + options)
    if args.seconds:
        print(
            f"\nTFF seconds per evaluation (--backend tff, default grid, "
            f"{args.seconds_repeats} releases minus 1 release)"
        )
        print(f"{'K':>5} {'1 release s':>12} {'per evaluation s':>17} {'load':>5}")
        for k in clients:
            options = ["--mechanism", "secure-rank-sum", "--clients", str(k), "--backend", "tff"]
            _, one = run_cli(args.scores_file, *options, "--repeats", "1", "--seed", "1")
            _, many = run_cli(
                args.scores_file, *options, "--repeats", str(args.seconds_repeats), "--seed", "2"
            )
            each = (many - one) / (args.seconds_repeats - 1)
            print(f"{k:>5} {one:12.1f} {each:17.2f} {os.getloadavg()[0]:5.1f}", flush=True)


if __name__ == "__main__":
    main()
