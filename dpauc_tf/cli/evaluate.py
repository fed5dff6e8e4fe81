"""``dpauc evaluate``: the private AUC of a file of scores, next to the exact and TF AUCs.

>>> from dpauc_tf.cli.main import build_parser
>>> args = build_parser().parse_args(["evaluate", "--scores", "s.csv", "--mechanism", "none"])
>>> args.num_thresholds, args.format
(200, 'table')
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from typing import Any

import numpy as np

from dpauc_tf.cli.formats import format_rows, json_safe
from dpauc_tf.cli.main import MAX_CURVE_VALUES, PARTITION_NAMES, CommandError
from dpauc_tf.mechanisms.registry import mechanism_spec


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
    elif args.backend == "flower":
        from dpauc_tf.flower.cli import evaluate_with_flower

        result = evaluate_with_flower(args, data, client_ids, num_clients)
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
