"""The ``dpauc`` command line (also ``python -m dpauc_tf``).

Subcommands:

* ``dpauc evaluate --scores FILE --mechanism NAME --epsilon E ...``: the private AUC of a
  file of scores (CSV or Parquet with ``score``, ``label`` and optionally ``client``
  columns), ``--repeats`` times, with the exact (scikit-learn) and TensorFlow AUCs beside it.
* ``dpauc reproduce {table1,...,table5,all} --scores synthetic|DIR``: the DPAUC paper's
  tables with the paper's settings, plus rows for the project's mechanisms
  (:mod:`dpauc_tf.experiments.tables`).
* ``dpauc audit ...``: the empirical privacy audit (:mod:`dpauc_tf.analysis.audit`).

Bad input (a missing file or column, a ``--client-column`` given but absent, mixed-type or
missing client ids, labels other than 0/1, scores outside [0, 1], NaN, an empty file, more
clients than examples, an impossible mechanism setting, a seed outside [0, 2^64 - 1],
``--num-thresholds`` above 10^6 or ``--repeats`` x ``--num-thresholds`` above 5 x 10^7) prints
one line, ``dpauc: error: ...``, on stderr and exits with status 2.

A file whose labels are all 0 or all 1 has no AUC (no ROC curve either): ``dpauc evaluate``
prints one line ``dpauc: warning: AUC is undefined ...`` on stderr, runs no mechanism (nothing
is released), writes ``null`` for every AUC and the curve (the JSON stays valid JSON), and
exits with status 0.

Every subcommand takes ``--format table|json|markdown|csv`` and ``--debug`` (a traceback
instead of the one-line error). ``dpauc --help`` and each subcommand's ``--help`` answer
without importing TensorFlow; commands import it once, without its C++ start-up chatter
(:mod:`dpauc_tf.tf_startup`).

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
from pathlib import Path
from typing import Any

import numpy as np

from dpauc_tf.cli.formats import FORMATS, format_rows, json_safe
from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.mechanisms.registry import describe_mechanisms, list_mechanisms, mechanism_spec

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
_seed_int = _int_at_least(0, MAX_SEED)
_num_thresholds_int = _int_at_least(1, MAX_NUM_THRESHOLDS)


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


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
        description="The private AUC (and ROC) of a file of scores, next to the exact and "
        "TensorFlow AUCs.",
        epilog=_mechanism_epilog(),
    )
    ev.add_argument(
        "--scores",
        required=True,
        help="CSV or Parquet file, one row per example: a score column (in [0, 1], or logits "
        "with --from-logits), a 0/1 label column and optionally a client column",
    )
    ev.add_argument("--score-column", default="score", help="column of scores")
    ev.add_argument("--label-column", default="label", help="column of 0/1 labels")
    ev.add_argument(
        "--from-logits", action="store_true", help="the scores are logits (a sigmoid maps them)"
    )
    ev.add_argument(
        "--client-column",
        help="column of client ids; must exist when given (default: 'client', used when present)",
    )
    ev.add_argument(
        "--mechanism",
        required=True,
        choices=list_mechanisms(),
        metavar="NAME",
        help="a mechanism from the registry (listed below)",
    )
    ev.add_argument("--epsilon", type=_finite_float, help="total epsilon of one release")
    ev.add_argument(
        "--delta", type=_finite_float, help="delta (paper-gaussian; Skellam for secure ones)"
    )
    ev.add_argument(
        "--num-thresholds",
        type=_num_thresholds_int,
        default=DEFAULT_NUM_THRESHOLDS,
        help=f"T, at most {MAX_NUM_THRESHOLDS}",
    )
    ev.add_argument(
        "--threshold-grid", choices=("tf", "reference"), default="tf", help="threshold grid"
    )
    ev.add_argument(
        "--clients", type=_positive_int, help="split the examples among K clients (--partition)"
    )
    ev.add_argument(
        "--partition", choices=tuple(PARTITION_NAMES), default="iid", help="how to split"
    )
    ev.add_argument("--repeats", type=_positive_int, default=1, help="independent releases")
    ev.add_argument(
        "--seed",
        type=_seed_int,
        help="integer seed in [0, 2^64 - 1] (reproducible); default: OS entropy",
    )
    _common(ev)
    ev.add_argument("--plot", help='write the ROC band to this PNG (needs "dpauc-tf[plot]")')
    ev.add_argument(
        "--backend",
        choices=("simulate", "tff"),
        default="simulate",
        help="simulate (default; no TFF needed) or tff (dpauc_tf.federated.evaluate)",
    )
    ev.set_defaults(func=run_evaluate)

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
    rp.add_argument("--no-progress", action="store_true", help="no progress bar")
    rp.set_defaults(func=run_reproduce)

    from dpauc_tf.analysis import audit_cli

    audit_cli.register_cli(sub, common=_common)
    return parser


# -- evaluate ---------------------------------------------------------------------------------
def _client_ids(data, args) -> tuple[np.ndarray, int]:
    from dpauc_tf.core import partitions

    if args.clients is not None:
        if args.clients > data.num_examples:
            raise CommandError(
                f"--clients {args.clients} exceeds the number of examples ({data.num_examples})"
            )
        kind = PARTITION_NAMES[args.partition]
        ids = partitions.partition(kind, data.scores, data.labels, args.clients, seed=args.seed)
        return np.asarray(ids, np.int64), args.clients
    if data.clients is not None:
        return data.clients, data.num_file_clients
    return np.zeros(data.num_examples, np.int64), 1


def _mechanism(args, num_clients: int):
    from dpauc_tf.mechanisms import get_mechanism

    private = mechanism_spec(args.mechanism).capabilities.protects != "nothing"
    if not private and args.epsilon is not None:
        raise CommandError(f"mechanism {args.mechanism!r} adds no noise: leave --epsilon unset")
    if private and args.epsilon is None:
        raise CommandError(f"mechanism {args.mechanism!r} needs --epsilon")
    return get_mechanism(
        args.mechanism,
        epsilon=args.epsilon,
        num_thresholds=args.num_thresholds,
        delta=args.delta,
        num_clients=num_clients,
    )


def evaluate_scores(args) -> dict[str, Any]:
    """Runs ``dpauc evaluate`` and returns the JSON-ready result."""
    from dpauc_tf.core.thresholds import Thresholds
    from dpauc_tf.experiments.ground_truth import exact_auc, tf_auc
    from dpauc_tf.experiments.score_files import read_score_file
    from dpauc_tf.experiments.simulation import client_histograms, simulate_examples

    if args.repeats * args.num_thresholds > MAX_CURVE_VALUES:
        raise CommandError(
            f"--repeats {args.repeats} x --num-thresholds {args.num_thresholds} keeps "
            f"{args.repeats * args.num_thresholds} ROC values per curve array; the limit is "
            f"{MAX_CURVE_VALUES}"
        )
    data = read_score_file(
        args.scores,
        score_column=args.score_column,
        label_column=args.label_column,
        client_column=args.client_column or "client",
        client_column_optional=args.client_column is None,
        from_logits=args.from_logits,
    )
    client_ids, num_clients = _client_ids(data, args)
    mechanism = _mechanism(args, num_clients)
    thresholds = Thresholds.make(args.num_thresholds, args.threshold_grid)
    undefined = _undefined_auc_reason(data)
    if undefined is not None:
        result = None
        statement = mechanism.statement()
    elif args.backend == "tff":
        result = _evaluate_with_tff(args, data, client_ids, num_clients)
        statement = result.statement
    else:
        result = simulate_examples(
            mechanism,
            data.labels,
            data.scores,
            thresholds,
            client_ids,
            num_clients,
            seed=args.seed,
            repeats=args.repeats,
        )
        statement = result.statement
    output = {
        "exact_auc": None if undefined else exact_auc(data.labels, data.scores),
        "tf_auc": None if undefined else tf_auc(data.labels, data.scores, args.num_thresholds),
        "mechanism": args.mechanism,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "guaranteed_epsilon": _finite_or_none(None if statement is None else statement.epsilon),
        "guaranteed_delta": None if statement is None else statement.delta,
        "privacy": None if statement is None else str(statement),
        "num_examples": data.num_examples,
        "num_positives": data.num_positives,
        "num_clients": num_clients,
        "partition": (PARTITION_NAMES[args.partition] if args.clients else None),
        "num_thresholds": args.num_thresholds,
        "threshold_grid": args.threshold_grid,
        "repeats": args.repeats,
        "seed": args.seed,
        "backend": args.backend,
        # over the releases whose estimate is defined (see num_undefined)
        "auc_mean": None if result is None else result.mean,
        "auc_std": None if result is None else result.std,
        "aucs": None if result is None else [float(a) for a in result.aucs],
        # releases whose AUC estimate is undefined (noise left no positive or no negative)
        "num_undefined": None if result is None else result.num_undefined,
        "roc": None
        if result is None
        else {"fpr": result.fpr[0].tolist(), "tpr": result.tpr[0].tolist()},
    }
    if undefined is not None:
        output["auc_undefined"] = undefined
    if mechanism.roc_note:
        output["roc_note"] = mechanism.roc_note
    if args.plot and result is not None:
        from dpauc_tf.experiments import plots

        exact = client_histograms(data.labels, data.scores, Thresholds.make(1000))
        plots.roc_band(
            _exact_roc(*exact),
            {args.mechanism: (result.fpr, result.tpr)},
            args.plot,
            title=f"{args.mechanism}, epsilon={args.epsilon}, {num_clients} client(s), "
            f"{args.repeats} repeat(s)",
        )
        output["plot"] = str(args.plot)
    return output


def _undefined_auc_reason(data) -> str | None:
    """Why the AUC of ``data`` is undefined (one class only), or ``None``."""
    if data.num_positives == 0:
        return f"all {data.num_examples} labels are 0 (no positive example)"
    if data.num_positives == data.num_examples:
        return f"all {data.num_examples} labels are 1 (no negative example)"
    return None


def _finite_or_none(value: float | None) -> float | None:
    """JSON has no infinity: the ``none`` mechanism's epsilon becomes ``null``."""
    return value if value is not None and math.isfinite(value) else None


def _exact_roc(pos, neg) -> tuple[np.ndarray, np.ndarray]:
    from dpauc_tf.core.curve import confusion_from_histogram, roc_from_confusion

    roc = roc_from_confusion(confusion_from_histogram(pos.sum(0), neg.sum(0)))
    return roc.fpr.numpy(), roc.tpr.numpy()


def _evaluate_with_tff(args, data, client_ids, num_clients):
    """``--backend tff``: :func:`dpauc_tf.federated.evaluate`, one TFF evaluation per repeat."""
    if importlib.util.find_spec("tensorflow_federated") is None:
        raise CommandError("--backend tff needs tensorflow-federated (the .venv environment)")
    from dpauc_tf import federated
    from dpauc_tf.experiments.simulation import SimulationResult

    evaluate = getattr(federated, "evaluate", None)
    if evaluate is None:
        raise CommandError("--backend tff: dpauc_tf.federated.evaluate is not available")
    clients = federated.client_data_from_partition(
        data.scores, data.labels, client_ids, num_clients
    )
    seeds = (
        [None] * args.repeats
        if args.seed is None
        else np.random.SeedSequence(args.seed).generate_state(args.repeats).tolist()
    )
    aucs, fprs, tprs, statement = [], [], [], None
    for seed in seeds:
        out = evaluate(
            clients,
            mechanism=args.mechanism,
            epsilon=args.epsilon,
            num_thresholds=args.num_thresholds,
            delta=args.delta,
            threshold_grid=args.threshold_grid,
            seed=None if seed is None else int(seed),
        )
        aucs.append(float(out.auc))
        fprs.append(np.asarray(out.roc.fpr))
        tprs.append(np.asarray(out.roc.tpr))
        statement = out.statement
    return SimulationResult(np.asarray(aucs), np.stack(fprs), np.stack(tprs), statement)


def _format_auc(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.6f}"


def _format_evaluation(result: dict[str, Any]) -> str:
    undefined = result.get("num_undefined") or 0
    if result["auc_mean"] is None or undefined == result["repeats"]:
        private = "undefined"
    else:
        private = (
            f"{result['auc_mean']:.6f} +- {result['auc_std']:.6f} "
            f"over {result['repeats'] - undefined} repeat(s)"
        )
        if undefined:
            private += f" ({undefined} release(s) undefined: noise left no positive or negative)"
    lines = [
        f"mechanism        {result['mechanism']}",
        f"privacy          {result['privacy']}",
        f"examples         {result['num_examples']} ({result['num_positives']} positive), "
        f"{result['num_clients']} client(s)",
        f"thresholds       {result['num_thresholds']} ({result['threshold_grid']} grid)",
        f"exact AUC        {_format_auc(result['exact_auc'])} (scikit-learn)",
        f"TensorFlow AUC   {_format_auc(result['tf_auc'])} "
        f"(num_thresholds={result['num_thresholds']})",
        f"private AUC      {private}",
    ]
    if "plot" in result:
        lines.append(f"plot             {result['plot']}")
    return "\n".join(lines)


def _evaluation_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per release (markdown, csv): the AUC and the setting's scalar fields."""
    scalars = {k: v for k, v in result.items() if not isinstance(v, (list, dict))}
    aucs = result["aucs"] or [None]
    return [{"repeat": i, "auc": auc, **scalars} for i, auc in enumerate(aucs)]


def run_evaluate(args) -> int:
    result = evaluate_scores(args)
    if "auc_undefined" in result:
        print(
            f"dpauc: warning: AUC is undefined: {result['auc_undefined']}; "
            "no private AUC was computed",
            file=sys.stderr,
        )
    if args.format == "json":
        print(json.dumps(json_safe(result), allow_nan=False))
    elif args.format == "table":
        print(_format_evaluation(result))
    else:
        print(format_rows(_evaluation_rows(result), args.format))
    return 0


# -- reproduce --------------------------------------------------------------------------------
def load_score_sets(source: str) -> dict:
    """``{epoch: ScoreSet}`` from ``"synthetic"`` or a directory of ``scores_epoch<N>`` files."""
    from dpauc_tf.experiments.score_files import epoch_files, read_score_file

    if source == "synthetic":
        from dpauc_tf.experiments.synthetic import paper_score_sets

        return paper_score_sets()
    return {epoch: read_score_file(path) for epoch, path in epoch_files(source).items()}


def run_reproduce(args) -> int:
    from dpauc_tf.experiments import tables

    targets = list(tables.TABLES) if args.target == "all" else [args.target]
    score_sets = load_score_sets(args.scores)
    runner = tables.TableRunner(score_sets, repeats=args.seeds, seed=args.seed)
    last_epoch = max(score_sets)
    rows = runner.run(
        targets,
        paper_grid=args.threshold_grid,
        progress=not args.no_progress,
        keep=(lambda table, epoch, setting: epoch == last_epoch) if args.plot else None,
    )
    formatter = {
        "markdown": tables.format_markdown,
        "csv": tables.format_csv,
        "json": tables.format_json,
        "table": lambda rows: format_rows(rows, "table"),
    }[args.format]
    print(formatter(rows))
    if args.plot:
        from dpauc_tf.experiments import plots

        written = plots.table_plots(runner, rows, Path(args.plot), epoch=last_epoch)
        for path in written:
            print(f"wrote {path}", file=sys.stderr)
    return 0


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
        raise CommandError('--plot needs matplotlib: pip install "dpauc-tf[plot]"')


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``dpauc``; returns the exit status (0 ok, 2 bad input)."""
    args = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        _check_extras(args)
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
