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
import sys
from collections.abc import Sequence

from dpauc_tf.cli import audit as audit_cli
from dpauc_tf.cli import compare as compare_cli
from dpauc_tf.cli import evaluate as evaluate_cli
from dpauc_tf.cli import multiclass as multiclass_cli
from dpauc_tf.cli import report as report_cli
from dpauc_tf.cli import reproduce as reproduce_cli
from dpauc_tf.cli.arguments import OneLineParser, add_common_flags
from dpauc_tf.cli.errors import CommandError
from dpauc_tf.core.extras import install_hint


def build_parser() -> argparse.ArgumentParser:
    """The ``dpauc`` argument parser: every subcommand's module declares its own arguments
    (``register_cli``); this function only wires them together."""
    parser = OneLineParser(
        prog="dpauc", description="AUC and ROC curves with label differential privacy."
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True

    ev = evaluate_cli.register_cli(sub, common=add_common_flags)
    report_cli.add_report_command(sub, ev)  # metrics (issue 33): `dpauc report`
    reproduce_cli.register_cli(sub, common=add_common_flags)
    audit_cli.register_cli(sub, common=add_common_flags)
    multiclass_cli.register_cli(sub, common=add_common_flags)
    compare_cli.register_cli(sub, common=add_common_flags)
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


# Subcommands without a prepare step whose score files are checked before TensorFlow is
# imported, with the attributes that name them.
SCORE_FILE_ARGUMENTS = {
    "compare": ("scores", "scores_b"),
    "multiclass": ("scores",),
}


def _check_before_tensorflow(args):
    """The refusals that need no TensorFlow, made before its import (seconds on a small
    machine), once: the subcommand's own ``prepare`` step (``dpauc evaluate``: its checked
    request, which its handler then runs), else a local score file that is not there."""
    prepare = getattr(args, "prepare", None)
    if prepare is not None:
        return prepare(args)
    # A URI (hdfs://, gs://, s3a://) is read by the engine's own file systems (Beam, Spark).
    paths = [getattr(args, name, None) for name in SCORE_FILE_ARGUMENTS.get(args.command, ())]
    paths = [str(path) for path in paths if path and "://" not in str(path)]
    if paths:
        from dpauc_tf.io.readers import score_files

        for path in paths:
            score_files(path)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``dpauc``; returns the exit status (0 ok, 2 bad input)."""
    args = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        _check_extras(args)
        from dpauc_tf.tf_startup import import_tensorflow_quietly, quiet_tensorflow_start_up

        with quiet_tensorflow_start_up():  # a mechanism's capabilities load its module
            prepared = _check_before_tensorflow(args)

        import_tensorflow_quietly()
        return int(args.func(prepared) or 0)
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
