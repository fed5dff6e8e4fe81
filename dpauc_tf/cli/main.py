"""The ``dpauc`` command line (also ``python -m dpauc_tf``).

Subcommands:

* ``dpauc evaluate --scores FILE --mechanism NAME --epsilon E ...``: the private AUC of a
  file of scores (CSV, Parquet or TFRecord, or a directory or glob of them, with ``score``,
  ``label`` and optionally ``client`` columns, read in chunks: docs/streaming.md),
  ``--repeats`` times; with ``--show-exact`` (NOT private: experiments only) the exact
  (scikit-learn, or a fine histogram with its error bound past ``--max-rows-in-memory``)
  and TensorFlow AUCs beside it.
* ``dpauc reproduce {table1,...,table5,all} --scores synthetic|DIR``: the DPAUC paper's
  tables with the paper's settings, plus rows for the project's mechanisms
  ([`dpauc_tf.experiments.tables`][]).
* ``dpauc audit ...``: the empirical privacy audit ([`dpauc_tf.analysis.audit`][]).
* ``dpauc compare --scores A --scores-b B --epsilon E``: private paired comparison of two
  models (`dpauc_tf.cli.compare`).

Bad input (a missing file or column, a ``--client-column`` given but absent, mixed-type or
missing client ids, labels other than 0/1, scores outside [0, 1], NaN, an empty file, more
clients than examples, an impossible mechanism setting, a seed outside [0, 2^64 - 1],
``--num-thresholds`` above 10^6 or ``--repeats`` x ``--num-thresholds`` above 5 x 10^7) prints
one line, ``dpauc: error: ...``, on stderr and exits with status 2.

With ``--show-exact`` (or the ``none`` mechanism), a file whose labels are all 0 or all 1
has no AUC (no ROC curve either): ``dpauc evaluate`` prints one line ``dpauc: warning: AUC
is undefined ...`` on stderr, runs no mechanism (nothing is released), writes ``null`` for
every AUC and the curve (the JSON stays valid JSON), and exits with status 0. Without it a
private mechanism releases whatever the labels are (that a file has one class is an exact
label statistic); a release whose estimate is undefined counts in ``num_undefined``.

Every subcommand takes ``--format table|json|markdown|csv`` and ``--debug`` (a traceback
instead of the one-line error). ``dpauc --help`` and each subcommand's ``--help`` answer
without importing TensorFlow; commands import it once, without its C++ start-up chatter
(`dpauc_tf.tf_startup`).

Example::

    dpauc evaluate --scores scores.csv --mechanism histogram --epsilon 1 \\
        --num-thresholds 100 --repeats 100 --seed 0 --format json
    dpauc reproduce table4 --scores synthetic --seeds 100 --plot plots/
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

from dpauc_tf.cli.formats import FORMATS
from dpauc_tf.cli.progress import add_progress_flags
from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.extras import install_hint
from dpauc_tf.mechanisms.registry import describe_mechanisms, list_mechanisms

# Mirrors of dpauc_tf.io.streaming's defaults (help imports no numpy; a test checks).
DEFAULT_MAX_ROWS_IN_MEMORY = 2_000_000
DEFAULT_CHUNK_ROWS = 1 << 20
# Mirror of dpauc_tf.flower.evaluate.DEFAULT_ROUND_TIMEOUT (help imports no Flower; a test checks).
DEFAULT_FLOWER_ROUND_TIMEOUT = 600.0
MIN_CHUNK_ROWS = 1000
PARTITION_NAMES = {"iid": "iid", "noniid": "non-iid", "non-iid": "non-iid"}
REPRODUCE_TARGETS = ("table1", "table2", "table3", "table4", "table5", "all")
MAX_NUM_THRESHOLDS = 10**6
MAX_CURVE_VALUES = 5 * 10**7  # repeats x thresholds kept in memory (two float64 arrays)
MAX_SEED = 2**64 - 1


class CommandError(Exception):
    """A user error: printed as one line, exit status 2."""


# -- argument parsing -------------------------------------------------------------------------
def _int_at_least(minimum: int, maximum: int | None = None):
    """An argparse type: an integer in ``[minimum, maximum]``, with a one-line error otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"expected an integer <= {maximum}, got {value}")
        return value

    return parse


_positive_int = _int_at_least(1)


def _chunk_rows(text: str) -> int:
    value = _positive_int(text)
    if value < MIN_CHUNK_ROWS:
        raise argparse.ArgumentTypeError(
            f"expected at least {MIN_CHUNK_ROWS} examples per chunk, got {value}: each chunk "
            "costs milliseconds whatever its size (a 10-million-row file in chunks of 1 would "
            f"take hours), and {MIN_CHUNK_ROWS} examples take well under 1 MB"
        )
    return value


_seed_int = _int_at_least(0, MAX_SEED)
_num_thresholds_int = _int_at_least(1, MAX_NUM_THRESHOLDS)


def _num_thresholds_or_auto(text: str):
    """``--num-thresholds``: an integer, or ``auto`` (a grid that suits the number of
    examples: dpauc_tf.mechanisms.auto_grid)."""
    return "auto" if text.strip().lower() == "auto" else _num_thresholds_int(text)


def _positive_seconds(text: str) -> float:
    value = _finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


# options that have their own flags
_RESERVED_OPTIONS = {
    "epsilon": "--epsilon",
    "delta": "--delta",
    "num_thresholds": "--num-thresholds or --thresholds",
    "num_clients": "--clients",
}


def _mechanism_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE``: VALUE as JSON where it parses (numbers, lists, true/false), else text."""
    key, sep, raw = text.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    if key in _RESERVED_OPTIONS:
        raise argparse.ArgumentTypeError(f"{key} is set by {_RESERVED_OPTIONS[key]}")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number for {key}, got {raw!r}")
    return key, value


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that shows every meaningful default and keeps the epilog's lines."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if "%(default)" in text or default in (None, False) or default is argparse.SUPPRESS:
            return text
        return f"{text} (default: %(default)s)"


class _OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump), exit status 2."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        raise CommandError(message)


def _confidence(text: str) -> float:
    """A confidence level strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), e.g. 0.95, got {text!r}")
    return value


def _common(parser: argparse.ArgumentParser, default_format: str = "table") -> None:
    """``--format`` and ``--debug``, the same for every subcommand."""
    parser.add_argument("--format", choices=FORMATS, default=default_format, help="output format")
    parser.add_argument(
        "--debug", action="store_true", help="show a traceback instead of the one-line error"
    )


def _mechanism_epilog() -> str:
    width = max(len(row["name"]) for row in describe_mechanisms())
    lines = ["mechanisms (docs/mechanisms.md; python -m dpauc_tf.mechanisms.registry):"]
    lines += [f"  {row['name']:<{width}}  {row['summary']}" for row in describe_mechanisms()]
    return "\n".join(lines)


def _lazy(module: str, function: str):
    """A handler imported when the command runs (so that ``--help`` imports nothing heavy)."""

    def run(args):
        import importlib

        return getattr(importlib.import_module(f"dpauc_tf.cli.{module}"), function)(args)

    return run


def build_parser() -> argparse.ArgumentParser:
    """The ``dpauc`` argument parser (subcommands ``evaluate``, ``reproduce``, maybe ``audit``)."""
    parser = _OneLineParser(
        prog="dpauc", description="AUC and ROC curves with label differential privacy."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)
    sub.required = True

    ev = sub.add_parser(
        "evaluate",
        help="private AUC of a file of scores",
        description="The private AUC (and ROC) of a file of scores; with --show-exact (NOT "
        "private) next to the exact and TensorFlow AUCs.",
        epilog=_mechanism_epilog(),
    )
    ev.add_argument(
        "--scores",
        required=True,
        help="CSV, Parquet or TFRecord file (or a directory or glob of them), one row per "
        "example: a score column (in [0, 1], or logits with --from-logits), a 0/1 label "
        "column and optionally a client column; read in chunks",
    )
    ev.add_argument("--score-column", default="score", help="column of scores")
    ev.add_argument("--label-column", default="label", help="column of 0/1 labels")
    ev.add_argument(
        "--from-logits",
        action="store_true",
        help="the scores are logits (mapped onto [0, 1] by 1/2 + arctan(logit)/pi: the AUC is "
        "unchanged and, unlike a sigmoid, the tails do not tie in the end buckets)",
    )
    ev.add_argument(
        "--client-column",
        metavar="NAME",
        help="column of client ids (each client releases its own noisy counts); must exist "
        "when given. Without it the file is one data holder's, whatever its columns are "
        "named (a column named 'client' is read only when named here)",
    )
    ev.add_argument(
        "--mechanism",
        choices=list_mechanisms(),
        metavar="NAME",
        help="a mechanism from the registry (listed below); default: rank-sum for one data "
        "holder's AUC (auc-only with --delta), histogram where a curve or clients are asked "
        "for (--plot, --clients, --client-column, --backend tff|flower; docs/rank_sum.md)",
    )
    ev.add_argument(
        "--mechanism-option",
        dest="mechanism_options",
        type=_mechanism_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the mechanism, repeatable (VALUE is JSON where it parses), e.g. "
        "positive_rate=0.25, budget=uniform, estimator=mann-whitney-smooth (docs/mechanisms.md)",
    )
    ev.add_argument("--epsilon", type=_finite_float, help="total epsilon of one release")
    ev.add_argument(
        "--delta", type=_finite_float, help="delta (paper-gaussian; Skellam for secure ones)"
    )
    ev.add_argument(
        "--num-thresholds",
        type=_num_thresholds_or_auto,
        default=DEFAULT_NUM_THRESHOLDS,
        help=f"T (at most {MAX_NUM_THRESHOLDS}) or 'auto' (docs/small_test_sets.md)",
    )
    ev.add_argument(
        "--threshold-grid", choices=("tf", "reference"), default="tf", help="threshold grid"
    )
    ev.add_argument(
        "--thresholds",
        metavar="FILE",
        help="explicit thresholds, numbers separated by newlines or commas (e.g. quantiles "
        "of scores known in advance), taken as tf.keras.metrics.AUC(thresholds=...) takes "
        "them (both ends added); replaces --num-thresholds and --threshold-grid",
    )
    ev.add_argument(
        "--clients", type=_positive_int, help="split the examples among K clients (--partition)"
    )
    ev.add_argument(
        "--partition", choices=tuple(PARTITION_NAMES), default="iid", help="how to split"
    )
    ev.add_argument("--repeats", type=_positive_int, default=1, help="independent releases")
    ev.add_argument(
        "--confidence",
        type=_confidence,
        help="e.g. 0.95: a confidence interval for every release, computed from the release "
        "alone (no privacy cost; docs/intervals.md): JSON gets a releases list with auc, "
        "ci_low, ci_high, ci_target, privacy_share",
    )
    ev.add_argument(
        "--ci-target",
        choices=("sample", "population"),
        default="population",
        help="population (default: privacy noise and sampling error) or sample (the AUC of "
        "this test set: privacy noise only)",
    )
    ev.add_argument(
        "--seed",
        type=_seed_int,
        help="integer seed in [0, 2^64 - 1] (reproducible); default: OS entropy",
    )
    _common(ev)
    ev.add_argument(
        "--show-exact",
        action="store_true",
        help="also print the exact values: exact_auc (and how it was computed), tf_auc, "
        "num_positives, a one-class warning, the exact curve in --plot. They are exact label "
        "statistics, NOT private: for experiments, never for a release. Without it the "
        "output holds the private release and public settings only; every format names "
        "its private fields (private_fields) and its exact ones (exact_fields)",
    )
    ev.add_argument("--plot", help='write the ROC band to this PNG (needs "dpauc-tf[plot]")')
    ev.add_argument(
        "--backend",
        choices=("simulate", "tff", "beam", "flower", "spark"),
        default="simulate",
        help="simulate (default; no TFF needed), tff (dpauc_tf.federated.evaluate), beam "
        '(an Apache Beam pipeline, dpauc_tf.beam; needs "dpauc-tf[beam]") or flower '
        '(dpauc_tf.flower.evaluate; needs "dpauc-tf[flower]") or spark (the file read by '
        'Spark, dpauc_tf.spark; needs "dpauc-tf[spark]")',
    )
    ev.add_argument(
        "--spark-master",
        default="local[2]",
        help="Spark master URL for --backend spark (docs/spark.md); an active SparkSession "
        "is used as it is",
    )
    ev.add_argument(
        "--round-timeout",
        type=_positive_seconds,
        metavar="SECONDS",
        help="--backend flower: seconds the server waits for the clients' replies in each "
        "exchange of the round (the fit, each SecAgg+ stage); clients that do not answer in "
        "time are left out and named (default: "
        f"{DEFAULT_FLOWER_ROUND_TIMEOUT:g})",
    )
    ev.add_argument(
        "--beam-options",
        help="Beam pipeline flags in one quoted string, e.g. '--runner=FlinkRunner "
        "--flink_master=HOST:8081' (docs/beam.md); default: the local runner, 2 processes",
    )
    add_progress_flags(ev)
    ev.add_argument(
        "--max-rows-in-memory",
        type=_int_at_least(0),
        default=DEFAULT_MAX_ROWS_IN_MEMORY,
        help="keep up to this many examples for the exact AUC, --clients partitions and "
        "score-noise; past it only counts are kept and the reference AUC comes from a fine "
        "histogram with its error bound (docs/streaming.md)",
    )
    ev.add_argument(
        "--chunk-rows",
        type=_chunk_rows,
        default=DEFAULT_CHUNK_ROWS,
        help=f"examples read per chunk (at least {MIN_CHUNK_ROWS}: every chunk has a fixed "
        "cost, and memory is a few tens of bytes per example)",
    )
    ev.set_defaults(func=_lazy("evaluate", "run_evaluate"))

    rp = sub.add_parser(
        "reproduce",
        help="the DPAUC paper's tables, next to the project's",
        description="The DPAUC paper's tables 1-5 with the paper's settings, plus rows for the "
        "project's mechanisms.",
    )
    rp.add_argument("target", choices=REPRODUCE_TARGETS, help="which table")
    rp.add_argument(
        "--scores",
        required=True,
        help="'synthetic' or a directory with scores_epoch<N>.parquet|csv (models.train)",
    )
    rp.add_argument("--seeds", type=_positive_int, default=100, help="repeats per setting")
    rp.add_argument("--seed", type=_seed_int, default=0, help="base seed")
    rp.add_argument(
        "--threshold-grid",
        choices=("tf", "reference"),
        default="reference",
        help="grid of the paper's rows (default: the reference code's)",
    )
    _common(rp, default_format="markdown")
    rp.add_argument("--plot", help='directory for PNG plots (needs "dpauc-tf[plot]")')
    rp.add_argument(
        "--all-rows",
        action="store_true",
        help="markdown/table: every row (every epoch, setting and mechanism) instead of the "
        "summary (the last epoch, one row per setting, one column per mechanism); json and "
        "csv always hold every row",
    )
    rp.add_argument(
        "--per-client-noise",
        action="store_true",
        help="draw every client's noise, as 0.2 did (slow at K = 1000); by default the "
        "server's sum of the clients' Laplace noise is drawn at once: the same distribution, "
        "other numbers for the same seed",
    )
    add_progress_flags(rp)
    rp.set_defaults(func=_lazy("reproduce", "run_reproduce"))

    from dpauc_tf.cli import audit as audit_cli

    audit_cli.register_cli(sub, common=_common)
    from dpauc_tf.cli import multiclass as multiclass_cli

    multiclass_cli.register_cli(sub, common=_common)
    from dpauc_tf.cli import compare as compare_cli

    compare_cli.register_cli(sub, common=_common)
    return parser


# -- entry point ------------------------------------------------------------------------------
def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    if hasattr(error, "message") and isinstance(error.message, str):  # tf.errors.OpError
        text = error.message.strip()
    first = text.splitlines()[0] if text else type(error).__name__
    return first


def _check_extras(args) -> None:
    """Fails before any work when an option needs an extra that is not installed."""
    if getattr(args, "plot", None) and importlib.util.find_spec("matplotlib") is None:
        raise CommandError(f"--plot needs matplotlib: {install_hint('plot')}")


# Subcommands whose score files are checked before TensorFlow is imported, with the attributes
# that name them.
SCORE_FILE_ARGUMENTS = {
    "evaluate": ("scores",),
    "compare": ("scores", "scores_b"),
    "multiclass": ("scores",),
}


def _check_before_tensorflow(args) -> None:
    """The refusals that need no TensorFlow, made before its import (seconds on a small
    machine): a local score file that is not there, and ``dpauc evaluate`` without
    ``--epsilon`` and ``--mechanism``."""
    command = getattr(args, "command", None)
    if command == "evaluate":
        from dpauc_tf.cli.default_mechanism import resolve_mechanism

        resolve_mechanism(args)
    # A URI (hdfs://, gs://, s3a://) is read by the engine's own file systems (Beam, Spark).
    paths = [getattr(args, name, None) for name in SCORE_FILE_ARGUMENTS.get(command, ())]
    paths = [str(path) for path in paths if path and "://" not in str(path)]
    if paths:
        from dpauc_tf.io.readers import score_files

        for path in paths:
            score_files(path)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``dpauc``; returns the exit status (0 ok, 2 bad input)."""
    args = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        _check_extras(args)
        _check_before_tensorflow(args)
        from dpauc_tf.tf_startup import import_tensorflow_quietly

        import_tensorflow_quietly()
        return int(args.func(args) or 0)
    except Exception:
        if args is not None and getattr(args, "debug", False):
            raise
        return _report(sys.exc_info()[1])


def _report(error: BaseException) -> int:
    """One line on stderr for a user error (exit 2); anything else is re-raised."""
    try:
        raise error
    except CommandError as error:
        print(f"dpauc: error: {_one_line(error)}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, KeyError, OSError) as error:
        print(f"dpauc: error: {_one_line(error)}", file=sys.stderr)
        return 2
    except Exception as error:
        tf = sys.modules.get("tensorflow")
        if tf is not None and isinstance(error, tf.errors.OpError):
            print(f"dpauc: error: {_one_line(error)}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
