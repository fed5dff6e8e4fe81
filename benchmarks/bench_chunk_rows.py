"""The cost of small ``chunk_rows`` in the streaming reader (issue 21): reading and counting.

Writes a CSV of ``--rows`` synthetic scores, reads it with
:func:`dpauc_tf.io.readers.iter_score_chunks` in chunks of ``--chunk-rows``,
counts the chunks with :func:`dpauc_tf.io.streaming.count_chunks` (a 1,000-threshold
grid and TensorFlow's), and prints the milliseconds per row of each step.

Usage (from the repository root, so that this checkout's ``dpauc_tf`` is imported)::

    PYTHONPATH=. python benchmarks/bench_chunk_rows.py --rows 5000 --chunk-rows 1
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.io.readers import iter_score_chunks
from dpauc_tf.io.streaming import count_chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--chunk-rows", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    path = Path(tempfile.mkdtemp()) / "scores.csv"
    frame = pd.DataFrame({"score": rng.random(args.rows), "label": rng.integers(0, 2, args.rows)})
    frame.to_csv(path, index=False)
    started = time.perf_counter()
    chunks = list(iter_score_chunks(path, chunk_rows=args.chunk_rows))
    read = time.perf_counter()
    count_chunks(chunks, Thresholds.make(1000), {"tf": Thresholds.make(1000, "tf")})
    counted = time.perf_counter()
    per_row = 1e3 / args.rows
    print(
        f"chunk_rows={args.chunk_rows}, {args.rows} rows: read {(read - started) * per_row:.3f} "
        f"ms/row, count {(counted - read) * per_row:.3f} ms/row"
    )


if __name__ == "__main__":
    main()
