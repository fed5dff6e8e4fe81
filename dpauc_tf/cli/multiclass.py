"""``dpauc multiclass``: the one-vs-rest private AUC of a file with a class column and score columns.

``dpauc multiclass --scores FILE --class-column y --score-columns p0,p1,p2 --epsilon 1``
reads a CSV or Parquet file (one row per example: the class, as an id in ``[0, C)`` or as
the name of its score column, and one score column per class), counts every class's
one-vs-rest histogram and releases them once
([`dpauc_tf.mechanisms.multiclass_release.evaluate_multiclass`][]): centrally, or with
``--clients K`` as ``K`` simulated clients (IID, or by ``--client-column``) that each release
their own counts (``--mechanism secure-histogram``: noise shares summed by secure
aggregation). ``--backend tff`` or ``--backend flower`` runs the same release on a real
federated engine (``dpauc_tf.federated.evaluate_multiclass`` in TFF,
``dpauc_tf.flower.evaluate_multiclass`` in one Flower round, SecAgg+ for the secure
mechanisms; ``DPAUC_FLOWER_ENGINE=in-process`` runs Flower without Ray), every client
being one ``--client-column`` value (or one of ``--clients K`` IID, default one client).
The output is one row per class plus the three averages; ``--format json`` prints the
whole result (curves, guarantee, cost).
"""

from __future__ import annotations

import argparse

from dpauc_tf.backends import BackendName
from dpauc_tf.cli import arguments
from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.mechanisms.laws import Average

# The backends that release one-vs-rest counts.
BACKEND_CHOICES = tuple(
    b.value for b in (BackendName.SIMULATE, BackendName.TFF, BackendName.FLOWER)
)


def register_cli(subparsers, common=None) -> argparse.ArgumentParser:
    """Adds ``multiclass`` to ``dpauc``'s sub-commands (``common`` adds --format/--debug)."""
    parser = subparsers.add_parser(
        "multiclass",
        help="private one-vs-rest AUC of a file with a class column and score columns",
        description="The one-vs-rest private AUC (macro, weighted and micro averages, and "
        "every class's AUC and ROC) of a file with a class column and one score column per "
        "class; a class change moves counts in two classes, and the noise is sized for that "
        "(docs/multiclass.md).",
    )
    parser.add_argument("--scores", required=True, help="CSV or Parquet file, one row per example")
    parser.add_argument(
        "--class-column",
        default="label",
        help="column of classes: ids in [0, C) or names of score columns",
    )
    parser.add_argument(
        "--score-columns",
        required=True,
        help="comma-separated score columns, one per class, in class order",
    )
    parser.add_argument(
        "--from-logits", action="store_true", help="the scores are logits (a softmax maps them)"
    )
    parser.add_argument(
        "--epsilon", type=arguments.finite_float, help="total epsilon of one release of all classes"
    )
    parser.add_argument("--delta", type=arguments.finite_float, help="for mechanisms with a delta")
    parser.add_argument(
        "--mechanism",
        default="histogram",
        help="the binary mechanism of every class: a curve mechanism (histogram, ...), or "
        "rank-sum / secure-rank-sum (per-class rank sums: 2C noisy numbers, no curves)",
    )
    parser.add_argument(
        "--confidence",
        type=arguments.confidence,
        help="e.g. 0.95: every class's interval (rank-sum mechanisms)",
    )
    parser.add_argument(
        "--mechanism-option",
        dest="mechanism_options",
        type=arguments.mechanism_option,
        action="append",
        metavar="KEY=VALUE",
        help="an option of the mechanism, repeatable",
    )
    parser.add_argument(
        "--num-thresholds",
        type=arguments.num_thresholds_int,
        default=DEFAULT_NUM_THRESHOLDS,
        help="thresholds of the grid",
    )
    parser.add_argument(
        "--average", choices=Average.values(), default="macro", help="the headline average"
    )
    parser.add_argument(
        "--clients",
        type=arguments.positive_int,
        help="simulate K clients that each release their own counts (default: central)",
    )
    parser.add_argument(
        "--client-column", help="column of client ids in [0, K) (with --clients; default IID)"
    )
    parser.add_argument(
        "--repeats", type=arguments.positive_int, default=1, help="independent releases"
    )
    parser.add_argument(
        "--backend",
        choices=BACKEND_CHOICES,
        default="simulate",
        help="where the clients release: in this process (simulate), in TFF or in one Flower "
        "round (each needs its own extra installed)",
    )
    parser.add_argument(
        "--seed", type=arguments.seed_int, help="integer seed (reproducible); default: OS entropy"
    )
    if common is not None:
        common(parser)
    parser.set_defaults(func=run_multiclass)
    return parser


def read_table(path: str, columns: list[str]):
    """The named columns of the file(s) at ``path`` as a pandas DataFrame, read by
    [`dpauc_tf.io.readers.iter_column_chunks`][] (the readers and path rule of ``dpauc
    evaluate``: CSV, compressed CSV, Parquet, TFRecord, a directory or a glob; one-line
    errors naming the file for a missing, empty, truncated or corrupt file or a missing
    column); an empty cell is an error naming the file and the row."""
    import numpy as np
    import pandas as pd

    from dpauc_tf.io.readers import iter_column_chunks
    from dpauc_tf.io.scores import ScoreFileError

    parts = []
    for source, first_row, values in iter_column_chunks(path, columns):
        frame = pd.DataFrame(values, columns=columns)
        empty = frame.isna().to_numpy().any(axis=1)
        if empty.any():
            at = int(np.argmax(empty))
            missing = [c for c in columns if pd.isna(frame[c].iloc[at])]
            raise ScoreFileError(
                f"{source}: row {first_row + at}: empty cell in {', '.join(map(repr, missing))}"
            )
        parts.append(frame)
    if not parts:
        raise ScoreFileError(f"{path}: no examples")
    return pd.concat(parts, ignore_index=True)


def score_column_names(text: str) -> list[str]:
    """The ``--score-columns`` list: at least two names, none twice (a repeated name would
    give two classes the same scores and shift every later class's name)."""
    from dpauc_tf.cli.errors import CommandError

    names = [c.strip() for c in text.split(",") if c.strip()]
    if len(names) < 2:
        raise CommandError("--score-columns needs at least two columns (one per class)")
    repeated = sorted({c for c in names if names.count(c) > 1}, key=names.index)
    if repeated:
        raise CommandError(
            f"--score-columns names {', '.join(map(repr, repeated))} more than once; each "
            "class needs its own score column, in class order"
        )
    return names


def class_ids(values, score_columns: list[str]):
    """Class ids in ``[0, C)`` from ids or from score-column names."""
    import numpy as np

    values = np.asarray(values)
    if values.dtype.kind in "OUS":  # names of score columns
        index = {name: i for i, name in enumerate(score_columns)}
        unknown = sorted({str(v) for v in values if str(v) not in index})
        if unknown:
            raise ValueError(
                f"classes {unknown[:5]} are neither ids in [0, {len(score_columns)}) nor score "
                f"columns {score_columns}"
            )
        return np.array([index[str(v)] for v in values])
    return values


def run_multiclass(args: argparse.Namespace) -> int:
    """Runs ``dpauc multiclass``; prints the result in ``--format``."""
    import numpy as np

    from dpauc_tf.cli.default_mechanism import require_epsilon
    from dpauc_tf.cli.formats import format_rows, json_safe, spent_text
    from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass

    score_columns = score_column_names(args.score_columns)
    require_epsilon(args.mechanism, args.epsilon)  # no epsilon is no result, as in evaluate
    if args.client_column and args.clients is None:
        raise ValueError("--client-column needs --clients K (the number of clients)")
    columns = list(dict.fromkeys([args.class_column, *score_columns]))
    if args.client_column:
        columns = list(dict.fromkeys([*columns, args.client_column]))
    backend = getattr(args, "backend", "simulate")
    if backend != "simulate":
        _require_backend(backend)
        if getattr(args, "confidence", None) is not None:
            raise ValueError("--confidence is given by --backend simulate only")
        _require_one_round(args, len(score_columns))
    frame = read_table(args.scores, columns)
    labels = class_ids(frame[args.class_column].to_numpy(), score_columns)
    scores = frame[score_columns].to_numpy(np.float64)
    if backend != "simulate":
        result = _federated(args, backend, labels, scores, frame)
    else:
        result = evaluate_multiclass(
            labels,
            scores,
            epsilon=args.epsilon,
            mechanism=args.mechanism,
            num_thresholds=args.num_thresholds,
            delta=args.delta,
            average=args.average,
            options=dict(args.mechanism_options or []),
            num_clients=args.clients,
            client_ids=frame[args.client_column].to_numpy() if args.client_column else None,
            repeats=args.repeats,
            seed=args.seed,
            from_logits=args.from_logits,
            confidence=getattr(args, "confidence", None),
        )
    if args.format == "json":
        import json

        print(json.dumps(json_safe({**result.to_dict(), "backend": backend}), indent=2))
        return 0
    rows = [
        {"class": name, "auc": _value(result.class_aucs[0, i]), "support": result.support[0, i]}
        for i, name in enumerate(score_columns)
    ]
    rows += [
        {"class": f"{avg} average", "auc": _value(getattr(result, avg)[0]), "support": None}
        for avg in Average.values()
    ]
    if args.format == "csv":  # one table: the total spent on every row
        totals = {"epsilon_total": result.epsilon_total, "delta_total": result.delta_total}
        rows = [row | totals for row in rows]
    print(format_rows(rows, args.format))
    if args.format in ("table", "markdown"):
        if result.epsilon is None:
            cost = "not private (no noise)"
        else:
            totals = {
                "epsilon_total": result.epsilon_total,
                "delta_total": result.delta_total,
                "repeats": result.aucs.shape[0],
            }
            cost = f"{spent_text(totals)} (epsilon {result.epsilon:g} each)"
        gap = "\n\n" if args.format == "markdown" else "\n"  # Markdown: paragraphs
        print(f"\nspent: {cost}{gap}guarantee: {result.statement}")
    return 0


def _value(value: float) -> float | None:
    return None if value != value else float(value)  # NaN: undefined


def _require_one_round(args, num_classes: int) -> None:
    """Refuses a two-round release (the one-vs-rest rank sums) where the backend sums one
    round: local rank sums on Flower (its two exchanges run the secure ones only); TFF runs
    both rounds (docs/multiclass.md)."""
    from dpauc_tf.mechanisms.arguments import ReleaseArguments

    if args.backend == "tff":  # dpauc_tf.federated.evaluate_multiclass: two TFF rounds
        return

    built = ReleaseArguments(
        args.epsilon,
        args.mechanism,
        delta=args.delta,
        mechanism_options=dict(args.mechanism_options or []),
        num_classes=num_classes,
        average=args.average,
    ).build()
    if not built.releases_from_summed_counts:
        return
    if args.backend == "flower" and built.capabilities.secure:
        return  # two exchanges under SecAgg+ (dpauc_tf.flower.rank_sum)
    works = (
        "--mechanism secure-rank-sum (two exchanges under SecAgg+) or --backend simulate"
        if args.backend == "flower"
        else "--backend simulate or tff"
    )
    raise ValueError(
        f"one-vs-rest {args.mechanism} needs two rounds (ranks from round one's totals): "
        f"--backend {args.backend} sums one round here; use {works}"
    )


def _require_backend(backend: str) -> None:
    """The backend's world is installed, or one line saying what to install."""
    import importlib.util

    from dpauc_tf.cli.errors import CommandError
    from dpauc_tf.core.extras import install_hint

    if backend == "tff" and importlib.util.find_spec("tensorflow_federated") is None:
        raise CommandError(
            "--backend tff needs TensorFlow Federated, which runs on Python 3.11 with "
            f"TensorFlow 2.14: {install_hint('federated')} in a Python 3.11 environment "
            "of its own (it does not go with the keras3, beam, flower or spark extras)"
        )
    if backend == "flower":
        from dpauc_tf.flower.evaluate import require_flower

        try:
            require_flower()
        except ImportError as error:
            raise CommandError(str(error)) from None


def _federated(args, backend: str, labels, scores, frame):
    """The release on TFF or Flower: one client per ``--client-column`` value (or ``--clients
    K`` IID clients, else one); the one-vs-rest ``AUCResult``."""
    import os

    import numpy as np

    from dpauc_tf.cli.flower import ENGINE_VARIABLE
    from dpauc_tf.mechanisms.multiclass_release import _client_ids

    num_clients = args.clients or 1
    given = frame[args.client_column].to_numpy() if args.client_column else None
    ids = _client_ids(given, num_clients, scores.shape[0], args.seed)
    clients = [(scores[ids == k], labels[ids == k]) for k in range(num_clients)]
    settings = dict(
        epsilon=args.epsilon,
        mechanism=args.mechanism,
        num_classes=scores.shape[1],
        num_thresholds=args.num_thresholds,
        delta=args.delta,
        average=args.average,
        mechanism_options=dict(args.mechanism_options or []),
        seed=args.seed,
        repeats=args.repeats,
    )
    if backend == "tff":
        from dpauc_tf.federated import evaluate_multiclass as tff_evaluate

        return tff_evaluate(clients, from_logits=args.from_logits, **settings)
    from dpauc_tf.flower import evaluate_multiclass as flower_evaluate

    if args.from_logits:  # the clients' softmax, before the scores leave this process
        shifted = scores - scores.max(axis=1, keepdims=True)
        probabilities = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        clients = [(probabilities[ids == k], labels[ids == k]) for k in range(num_clients)]
    engine = os.environ.get(ENGINE_VARIABLE, "simulation")
    return flower_evaluate(clients, engine=engine, **settings)
