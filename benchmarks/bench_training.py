"""Training throughput and test AUC per epoch: the real Criteo sample and synthetic data.

    python benchmarks/bench_training.py [--synthetic-rows 200000] [--epochs 3] [--batch-size 512]

Runs ``models.train.train`` (the same code as ``python -m models.train``) on the 19,532-row
combined Criteo file in ``../shared`` (skipped when absent) and on synthetic rows, and prints
per epoch: training examples/s, exact / TF / DP AUC on the test split.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_FILE = (
    REPO_ROOT.parent / "shared" / "data" / "criteo" / "kaggle_dac" / "combined"
    / "criteo_dac_labelled_dedup.tsv"
)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic-rows", type=int, default=200_000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO_ROOT))
    from models.train import TrainConfig, train

    cases = {}
    if REAL_FILE.is_file():
        cases["real Criteo sample"] = str(REAL_FILE)
    else:
        print(f"real Criteo rows not found at {REAL_FILE}: skipped")
    cases[f"synthetic {args.synthetic_rows:,}"] = f"synthetic:{args.synthetic_rows}"
    summary = []
    for name, data in cases.items():
        with tempfile.TemporaryDirectory() as out:
            print(f"== {name}")
            config = TrainConfig(
                data=data,
                out=out,
                epochs=args.epochs,
                batch_size=args.batch_size,
                seed=args.seed,
                verbose=0,
                progress=False,
            )
            report = train(config)
            for row in report["epochs"]:
                summary.append((name, row))
    print(f"\n{'data':<22} {'epoch':>5} {'examples/s':>10} {'exact':>7} {'TF':>7} {'DP':>7}")
    for name, row in summary:
        print(
            f"{name:<22} {row['epoch']:>5} {row['examples_per_second']:>10,.0f} "
            f"{row['exact_auc']:>7.4f} {row['tf_auc']:>7.4f} {row['dp_auc']:>7.4f}"
        )


if __name__ == "__main__":
    main()
