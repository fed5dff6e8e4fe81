"""Command line: prepare a Criteo file or synthetic rows for the Wide & Deep model.

python -m data_prep --input PATH --output DIR [--test-fraction 0.1] [--seed 0] [--min-count N]
python -m data_prep --synthetic ROWS --output DIR [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
import time

from data_prep.pipeline import prepare_criteo, prepare_synthetic
from data_prep.preprocess import INTEGER_TRANSFORMS
from data_prep.reader import DEFAULT_CHUNK_ROWS, MalformedInputError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m data_prep",
        description="Prepare Criteo data (raw TSV, Kaggle CSV or DeepCTR CSV, gzip or not) or "
        "synthetic Criteo-like rows: missing values, vocabularies, min-max scaling, a seeded "
        "train/test split, NumPy shards plus metadata.json.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", metavar="PATH", help="a Criteo file")
    source.add_argument(
        "--synthetic", metavar="ROWS", type=_positive_int, help="generate ROWS synthetic rows"
    )
    parser.add_argument("--output", metavar="DIR", required=True, help="the prepared directory")
    parser.add_argument("--test-fraction", type=float, default=0.1, help="default: 0.1")
    parser.add_argument(
        "--seed",
        type=_seed,
        default=0,
        help="split (and synthetic data) seed; 'none' draws a fresh one (default: 0)",
    )
    parser.add_argument(
        "--min-count",
        type=_positive_int,
        default=1,
        help="categorical values seen fewer times in the training part get the "
        "out-of-vocabulary id (default: 1, keep all)",
    )
    parser.add_argument(
        "--integer-transform",
        choices=INTEGER_TRANSFORMS,
        default="identity",
        help="applied to integer features before min-max scaling (default: identity, the paper)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="stop at the first malformed line (default: skip)"
    )
    parser.add_argument("--chunk-rows", type=_positive_int, default=DEFAULT_CHUNK_ROWS)
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seed(text: str) -> int | None:
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be an integer or 'none': {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = time.perf_counter()
    common = {
        "test_fraction": args.test_fraction,
        "seed": args.seed,
        "min_count": args.min_count,
        "integer_transform": args.integer_transform,
        "progress": not args.no_progress,
    }
    try:
        if args.synthetic is not None:
            metadata = prepare_synthetic(args.synthetic, args.output, **common)
        else:
            metadata = prepare_criteo(
                args.input, args.output, strict=args.strict, chunk_rows=args.chunk_rows, **common
            )
    except (OSError, ValueError, MalformedInputError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - started
    report = metadata["read_report"]
    splits = metadata["splits"]
    rows = report["rows"]
    print(
        f"prepared {rows:,} rows in {seconds:.1f} s ({rows / max(seconds, 1e-9):,.0f} rows/s): "
        f"train {splits['train']['rows']:,} ({splits['train']['positives']:,} positive), "
        f"test {splits['test']['rows']:,} ({splits['test']['positives']:,} positive) -> "
        f"{args.output}"
    )
    print(
        f"vocabulary sizes (OOV id included): {metadata['vocab_sizes']} "
        f"(total {sum(metadata['vocab_sizes']):,})"
    )
    if report["padded_lines"]:
        print(f"{report['padded_lines']:,} short lines were padded with empty fields")
    if report["malformed_lines"]:
        print(f"{report['malformed_lines']:,} malformed lines skipped:", file=sys.stderr)
        for bad in report["malformed_examples"][:10]:
            print(f"  line {bad['line']}: {bad['reason']}", file=sys.stderr)
        if report["malformed_lines"] > 10:
            print(f"  ... (up to 100 listed in {args.output}/metadata.json)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
