"""Time and peak memory of ``dpauc evaluate`` on a large score file, start-up included.

    .venv-keras3/bin/python benchmarks/bench_streaming.py [--rows 100000000] [--format parquet]
        [--path /tmp/dpauc_bench_100000000.parquet] [--clients 0] [--mechanism histogram]

Writes the file if it is absent (under /tmp unless ``--path`` says otherwise; never in the
repository): ``score`` (float32, as models emit), ``label`` (int8, about 3% positives, the
scores of positives shifted up) and, with ``--clients K``, an int64 ``client`` column. Then
runs ``python -m dpauc_tf evaluate --format json`` on it as a subprocess and prints the
rows per second and the child's peak resident memory (``os.wait4``'s rusage of that child alone;
the generator's memory is not counted), plus the AUC fields of the
output. Figures and their commands: docs/streaming.md.
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

GENERATE = r"""
import sys
import numpy as np
rows, path, fmt, clients = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
rng = np.random.default_rng(0)
step = 5_000_000
def block(n):
    labels = (rng.random(n) < 0.03).astype(np.int8)
    logits = rng.normal(size=n) + 1.5 * labels - 3.0
    scores = (1 / (1 + np.exp(-logits))).astype(np.float32)
    columns = {"score": scores, "label": labels}
    if clients:
        columns["client"] = rng.integers(0, clients, n)
    return columns
if fmt == "parquet":
    import pyarrow as pa
    import pyarrow.parquet as pq
    writer = None
    for start in range(0, rows, step):
        table = pa.table(block(min(step, rows - start)))
        writer = writer or pq.ParquetWriter(path + ".part", table.schema)
        writer.write_table(table, row_group_size=1 << 20)
    writer.close()
else:
    import pandas as pd
    for start in range(0, rows, step):
        pd.DataFrame(block(min(step, rows - start))).to_csv(
            path + ".part", mode="a", header=start == 0, index=False)
import os
os.replace(path + ".part", path)
"""


def _command(args, path: Path) -> list[str]:
    command = [sys.executable, "-m", "dpauc_tf", "evaluate", "--scores", str(path)]
    command += ["--mechanism", args.mechanism, "--format", "json", "--seed", "0"]
    command += ["--progress", "off", "--show-exact"]
    if args.mechanism != "none":
        command += ["--epsilon", args.epsilon]
    return command + args.extra


def _evaluate(args, path: Path, repo: Path, env: dict) -> tuple[float, object, dict]:
    """Seconds, the child's own rusage (``os.wait4``: peak RSS, CPU) and its JSON output."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        child = subprocess.Popen(
            _command(args, path), stdout=stdout, stderr=stderr, cwd=repo, env=env
        )
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the generator's
        child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        stdout.seek(0)
        stderr.seek(0)
        if child.returncode:
            sys.exit(f"dpauc evaluate failed ({child.returncode}): {stderr.read().strip()}")
        return seconds, usage, json.loads(stdout.read())


def _generate(rows: int, path: Path, args) -> None:
    start = time.perf_counter()
    command = [sys.executable, "-c", GENERATE, str(rows), str(path), args.format]
    subprocess.run([*command, str(args.clients)], check=True)
    seconds = time.perf_counter() - start
    size = path.stat().st_size / 1e6
    print(f"wrote {path} ({size:.0f} MB) in {seconds:.0f} s", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    parser.add_argument("--path", help="score file (written if absent)")
    parser.add_argument("--clients", type=int, default=0, help="add a client column of K ids")
    parser.add_argument("--mechanism", default="histogram")
    parser.add_argument("--epsilon", default="1")
    parser.add_argument(
        "--pycache-prefix",
        help="let the children cache bytecode there (PYTHONPYCACHEPREFIX), e.g. /tmp/pycache; "
        "without a cache every start compiles TensorFlow's Python files",
    )
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="more CLI options")
    args = parser.parse_args()
    suffix = f"_{args.clients}clients" if args.clients else ""
    path = Path(args.path or f"/tmp/dpauc_bench_{args.rows}{suffix}.{args.format}")
    repo = Path(__file__).resolve().parents[1]
    if path.resolve().is_relative_to(repo):
        sys.exit(f"{path}: refusing to write benchmark data inside the repository")
    if not path.exists():
        _generate(args.rows, path, args)
    tiny = path.with_name(f"dpauc_bench_tiny{suffix}.{args.format}")
    if not tiny.exists():
        _generate(1000, tiny, args)
    env = dict(os.environ)
    if args.pycache_prefix:  # a bytecode cache outside the repository and the environment
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = args.pycache_prefix
    if args.pycache_prefix:
        _evaluate(args, tiny, repo, env)  # fills the bytecode cache
    startup, startup_usage, _ = _evaluate(args, tiny, repo, env)
    seconds, usage, out = _evaluate(args, path, repo, env)
    rows = out["num_examples"]
    print(f"command      {' '.join(_command(args, path))}")
    print(f"file         {path} ({path.stat().st_size / 1e6:.0f} MB, {rows} rows)")
    print(f"time         {seconds:.1f} s, {rows / seconds / 1e6:.2f} M rows/s (start-up included)")
    print(f"start-up     {startup:.1f} s (the same command on a 1000-row file)")
    net = max(seconds - startup, 1e-9)
    print(f"reading      {rows / net / 1e6:.2f} M rows/s (time minus start-up)")
    print(
        f"peak RSS     {usage.ru_maxrss / 1024:.0f} MiB "
        f"({startup_usage.ru_maxrss / 1024:.0f} MiB on 1000 rows)"
    )
    cpu, startup_cpu = (u.ru_utime + u.ru_stime for u in (usage, startup_usage))
    print(f"CPU time     {cpu:.1f} s user+sys, {startup_cpu:.1f} s on 1000 rows")
    print(f"load         {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} CPUs)")
    for key in ("exact_auc", "exact_auc_method", "exact_auc_max_error", "tf_auc", "auc_mean"):
        print(f"{key:<12} {out[key]}")


if __name__ == "__main__":
    main()
