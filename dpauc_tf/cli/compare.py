"""``dpauc compare``: private paired comparison of two models on one labelled test set.

``dpauc compare --scores a.csv --scores-b b.csv --epsilon 1`` (the two files hold the same
examples in the same order, with the same labels), or ``--score-column-b`` for a second score
column of the one ``--scores`` file. One release
([`dpauc_tf.mechanisms.comparison_release.compare_models`][]; by default the rank-sum
difference, ``--method histogram`` the joint class histograms): the difference ``AUC_B -
AUC_A``, its interval and a two-sided p-value, paired as DeLong's test. Building the parser imports
neither TensorFlow nor NumPy.

Examples:
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> _ = register_cli(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["compare", "--scores", "a.csv", "--score-column-b", "s2",
    ...                           "--epsilon", "1"])
    >>> args.method, args.num_buckets, args.confidence
    ('rank-sum', None, 0.95)
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from dpauc_tf.cli.arguments import (
    int_at_least,
    number_between,
    positive_float,
    positive_int,
    seed_int,
)
from dpauc_tf.cli.formats import OutputFormat, format_rows

DEFAULT_BUCKETS = 6  # mirror of dpauc_tf.mechanisms.comparison.DEFAULT_COMPARISON_BUCKETS


def register_cli(subparsers, common=None) -> argparse.ArgumentParser:
    """Adds ``compare`` to an ``argparse`` sub-command set; the handler is ``args.func(args)``."""
    parser = subparsers.add_parser(
        "compare",
        help="private paired comparison of two models' AUCs on one test set",
        description="Is model B's AUC different from model A's? One label-DP release (by "
        "default the rank-sum difference of the two models; --method histogram: the joint "
        "class histograms of their score buckets): the difference AUC_B - AUC_A, its interval "
        "and a two-sided p-value, paired as DeLong's test (docs/comparison.md).",
    )
    parser.add_argument("--scores", required=True, help="model A's score file (CSV or Parquet)")
    parser.add_argument(
        "--scores-b", help="model B's score file: the same examples in the same order"
    )
    parser.add_argument("--score-column", default="score", help="model A's score column")
    parser.add_argument(
        "--score-column-b",
        help="model B's score column (in --scores-b, or in --scores without --scores-b)",
    )
    parser.add_argument("--label-column", default="label", help="the label column")
    parser.add_argument("--epsilon", type=positive_float, required=True, help="of the release")
    parser.add_argument(
        "--method",
        choices=("rank-sum", "histogram"),
        default="rank-sum",
        help="rank-sum (default): four noisy numbers (the rank-sum difference, whose "
        "sensitivity is the largest rank difference of the two models); histogram: noise on "
        "the joint class histogram of quantile buckets (docs/comparison.md)",
    )
    parser.add_argument(
        "--num-buckets",
        type=int_at_least(2, 64),
        default=None,
        help=f"--method histogram: buckets per model, at quantiles of its scores (default "
        f"{DEFAULT_BUCKETS})",
    )
    parser.add_argument(
        "--confidence",
        type=number_between(0.0, 1.0),
        default=0.95,
        help="confidence of the interval",
    )
    parser.add_argument(
        "--positive-rate",
        type=number_between(0.0, 1.0),
        default=None,
        help="--method histogram: a PUBLIC prior of the fraction of positives (splits the "
        "budget between the classes; never the test set's own rate)",
    )
    parser.add_argument(
        "--clients",
        type=positive_int,
        default=None,
        help="--method rank-sum: K simulated IID clients in two rounds (each adds its own "
        "noise, or a share of it with --secure); default: central",
    )
    parser.add_argument(
        "--secure",
        action="store_true",
        help="with --clients: the clients' noise shares are summed by secure aggregation",
    )
    parser.add_argument("--seed", type=seed_int, default=None, help="default: OS entropy")
    if common is not None:
        common(parser)
    else:
        parser.add_argument("--format", choices=OutputFormat.values(), default="table")
        parser.add_argument("--debug", action="store_true")
    parser.set_defaults(func=run_compare)
    return parser


def _read(path, score_column, label_column):
    from dpauc_tf.io.scores import read_score_file

    return read_score_file(path, score_column=score_column, label_column=label_column)


def read_pair(args):
    """Labels and the two models' scores from the command line's files and columns."""
    import numpy as np

    from dpauc_tf.cli.errors import CommandError

    if args.scores_b is None and args.score_column_b is None:
        raise CommandError("give model B's scores: --scores-b FILE or --score-column-b COLUMN")
    data_a = _read(args.scores, args.score_column, args.label_column)
    if args.scores_b is None:
        if args.score_column_b == args.score_column:
            raise CommandError("--score-column-b names model A's own column")
        data_b = _read(args.scores, args.score_column_b, args.label_column)
    else:
        column_b = args.score_column_b or args.score_column
        data_b = _read(args.scores_b, column_b, args.label_column)
        if data_b.num_examples != data_a.num_examples:
            raise CommandError(
                f"{args.scores_b} has {data_b.num_examples} examples, {args.scores} has "
                f"{data_a.num_examples}: the two files must hold the same examples in order"
            )
        if not np.array_equal(data_a.labels, data_b.labels):
            # no count of the differing rows: with a placeholder label column in one file
            # it would be an exact class count
            raise CommandError(
                f"the labels of {args.scores} and {args.scores_b} differ: the two files "
                "must hold the same examples in the same order, with the same labels"
            )
    return data_a.labels, data_a.scores, data_b.scores


def run_compare(args) -> int:
    from dpauc_tf.mechanisms.comparison_release import compare_models

    labels, scores_a, scores_b = read_pair(args)
    result = compare_models(
        labels,
        scores_a,
        scores_b,
        args.epsilon,
        num_buckets=args.num_buckets,
        confidence=args.confidence,
        positive_rate=args.positive_rate,
        seed=args.seed,
        method=getattr(args, "method", "rank-sum"),
        num_clients=getattr(args, "clients", None),
        secure=getattr(args, "secure", False),
    )
    out = result.to_dict()
    # One release: what the command spent in all (every format states it).
    out["epsilon_total"], out["delta_total"] = out["epsilon"], out["delta"]
    if args.format == "json":
        print(json.dumps(out, indent=2))
    else:
        keys = ("auc_a", "auc_b", "difference", "ci_low", "ci_high", "p_value", "privacy_share")
        totals = {"epsilon_total": out["epsilon_total"], "delta_total": out["delta_total"]}
        rows = [{key: out[key] for key in keys} | totals]
        print(format_rows(rows, args.format), end="")
        if args.format in ("table", "markdown"):  # Markdown: a paragraph after the table
            gap = "\n\n" if args.format == "markdown" else "\n"
            print(f"{gap}privacy: {out['privacy']}", file=sys.stdout)
    if result.warning is not None:
        print(f"dpauc: warning: {result.warning}", file=sys.stderr)
    if math.isnan(result.difference):
        print(
            "dpauc: warning: the comparison is undefined (a noisy class count below 2)",
            file=sys.stderr,
        )
    return 0
