"""``dpauc evaluate``: the private AUC of a file of scores (with ``--show-exact``, NOT
private, next to the exact and TF AUCs).

    >>> from dpauc_tf.cli.main import build_parser
    >>> args = build_parser().parse_args(["evaluate", "--scores", "s.csv", "--mechanism", "none"])
    >>> args.num_thresholds, args.format
    (200, 'table')
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import numpy as np

from dpauc_tf.cli import evaluation_summaries  # metrics (issue 33)
from dpauc_tf.cli.backends import (
    BACKENDS,
    _evaluate_files_with_engine,
    _kept_examples,
    _reads_with_engine,
)
from dpauc_tf.cli.client_column import hint_client_column
from dpauc_tf.cli.default_mechanism import resolve_mechanism
from dpauc_tf.cli.formats import (
    format_rows,
    format_with_notes,
    json_safe,
    setting_notes,
    setting_row,
    spent_text,
)
from dpauc_tf.cli.grids import resolve_auto_thresholds, warn_if_noise_dominates
from dpauc_tf.cli.intervals import check_confidence, interval_fields, interval_lines
from dpauc_tf.cli.main import MAX_CURVE_VALUES, PARTITION_NAMES, CommandError
from dpauc_tf.cli.progress import show_progress
from dpauc_tf.mechanisms.registry import mechanism_spec, parse_options


def _client_ids(counted, args) -> tuple[np.ndarray | None, int]:
    """Client ids of the kept examples (``None``: counted per client) and the client count."""
    from dpauc_tf.core import partitions

    if args.clients is not None:
        if args.clients > counted.num_examples:
            raise CommandError(
                f"--clients {args.clients} exceeds the number of examples ({counted.num_examples})"
            )
        data = _kept_examples(counted, f"--clients {args.clients} (a partition)")
        kind = PARTITION_NAMES[args.partition]
        ids = partitions.partition(kind, data.scores, data.labels, args.clients, seed=args.seed)
        return np.asarray(ids, np.int64), args.clients
    return None, counted.num_clients


def _mechanism(args, num_clients: int):
    from dpauc_tf.cli.default_mechanism import require_epsilon
    from dpauc_tf.mechanisms import get_mechanism

    require_epsilon(args.mechanism, args.epsilon)
    options = mechanism_options(args)
    try:
        return get_mechanism(
            args.mechanism,
            epsilon=args.epsilon,
            num_thresholds=args.num_thresholds,
            delta=args.delta,
            num_clients=num_clients,
            **options,
        )
    except (TypeError, ValueError) as error:
        if not options:
            raise
        raise CommandError(f"--mechanism-option: {error}") from None


def mechanism_options(args) -> dict[str, Any]:
    """The ``--mechanism-option KEY=VALUE`` pairs as the options of ``get_mechanism``, each
    parsed by its declared type (``public_scores=no`` is ``False``; registry.parse_options)."""
    pairs = getattr(args, "mechanism_options", None) or []
    options = dict(pairs)
    if len(options) != len(pairs):
        raise CommandError("--mechanism-option: an option is given twice")
    if not options:
        return options
    try:
        return parse_options(args.mechanism, options)
    except ValueError as error:
        raise CommandError(f"--mechanism-option: {error}") from None


def release_settings(args) -> dict[str, Any]:
    """What every backend's evaluation function (TFF, Beam, Flower) takes from the
    command line to build the release: the mechanism, its budget, grid and options."""
    return {
        "mechanism": args.mechanism,
        "epsilon": args.epsilon,
        "delta": args.delta,
        "num_thresholds": args.num_thresholds,
        "threshold_grid": args.threshold_grid,
        "mechanism_options": mechanism_options(args),
    }


def release_spec(args):
    """The command's release as the protocol's [`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec]
    (mechanism, budget, grid, options and ``--seed``)."""
    from dpauc_tf.mechanisms.release import ReleaseSpec

    options = mechanism_options(args)
    try:
        return ReleaseSpec.make(
            args.mechanism,
            epsilon=args.epsilon,
            num_thresholds=args.num_thresholds,
            threshold_grid=args.threshold_grid,
            delta=args.delta,
            options=options,
            seed=args.seed,
        )
    except (TypeError, ValueError) as error:
        if not options:
            raise
        raise CommandError(f"--mechanism-option: {error}") from None


def _check_backend(args) -> None:
    """Refuses, before any work and naming the flags, what the backend cannot run."""
    capabilities = mechanism_spec(args.mechanism).capabilities
    if args.backend in ("tff", "flower") and (
        not capabilities.federated or capabilities.transforms_data
    ):
        raise CommandError(
            f"--backend {args.backend} cannot run --mechanism {args.mechanism}: its client "
            "step is not a release of bucket counts; use --backend simulate"
        )
    if getattr(args, "round_timeout", None) is not None and args.backend != "flower":
        raise CommandError("--round-timeout bounds Flower's round: only with --backend flower")


def count_scores(args, grid):
    """Step 1, read and count: one chunked pass over ``--scores`` (bounded memory)."""
    from dpauc_tf.core.thresholds import Thresholds
    from dpauc_tf.io.streaming import count_score_file

    # TensorFlow's AUC: tf.keras.metrics.AUC(num_thresholds=T), or (thresholds=...) for an
    # explicit grid
    explicit = not isinstance(args.threshold_grid, str)
    summed = {"tf": Thresholds.make(args.num_thresholds, args.threshold_grid if explicit else "tf")}
    if args.plot:
        summed["plot"] = Thresholds.make(1000)
    return count_score_file(
        args.scores,
        grid,
        summed,
        score_column=args.score_column,
        label_column=args.label_column,
        client_column=args.client_column,  # client ids only from a named column
        from_logits=args.from_logits,
        per_client=args.clients is None,
        chunk_rows=args.chunk_rows,
        max_rows_in_memory=args.max_rows_in_memory,
        progress=show_progress(args),
    )


def reference_aucs(counted, num_thresholds: int) -> dict[str, Any]:
    """The noise-free AUCs: exact (scikit-learn) when the examples were kept, else from the
    fine histogram with its error bound; TensorFlow's from its grid's counts."""
    import tensorflow as tf

    from dpauc_tf.core.curve import auc_from_histogram
    from dpauc_tf.experiments.ground_truth import exact_auc, histogram_auc
    from dpauc_tf.io.streaming import FINE_BUCKETS

    tf_pos, tf_neg = counted.summed["tf"]
    tf_value = float(
        auc_from_histogram(tf.constant(tf_pos, tf.float64), tf.constant(tf_neg, tf.float64))
    )
    if counted.examples is not None:
        value = exact_auc(counted.examples.labels, counted.examples.scores)
        method, bound = "exact (scikit-learn, all examples in memory)", 0.0
    else:
        value, bound = histogram_auc(counted.fine_pos, counted.fine_neg)
        method = (
            f"fine histogram ({FINE_BUCKETS} equal buckets over [0, 1]; more than "
            f"{counted.max_rows_in_memory} examples): |error| <= exact_auc_max_error"
        )
    return {
        "exact_auc": value,
        "exact_auc_method": method,
        "exact_auc_max_error": bound,
        "tf_auc": tf_value,
    }


def evaluate_scores(args) -> dict[str, Any]:
    """Runs ``dpauc evaluate`` and returns the JSON-ready result.

    Three steps: read and count ([`count_scores`][], one chunked pass), the reference AUCs
    ([`reference_aucs`][]) and the release (``BACKENDS[args.backend]``).
    """
    from dpauc_tf.core.thresholds import Thresholds

    args.mechanism = resolve_mechanism(args)
    if getattr(args, "thresholds", None):
        args.threshold_grid = read_thresholds(args.thresholds)  # as Keras takes them
        args.num_thresholds = Thresholds.make(threshold_grid=args.threshold_grid).num_thresholds
    auto_rule = resolve_auto_thresholds(args, count_scores)
    if args.repeats * args.num_thresholds > MAX_CURVE_VALUES:
        raise CommandError(
            f"--repeats {args.repeats} x --num-thresholds {args.num_thresholds} keeps "
            f"{args.repeats * args.num_thresholds} ROC values per curve array; the limit is "
            f"{MAX_CURVE_VALUES}"
        )
    thresholds = Thresholds.make(args.num_thresholds, args.threshold_grid)
    _check_backend(args)
    grid = _mechanism(args, 1).count_thresholds(thresholds)  # checks the options first
    private = mechanism_spec(args.mechanism).capabilities.protects != "nothing"
    show_exact = bool(getattr(args, "show_exact", False))
    read_by_engine = None
    if _reads_with_engine(args, show_exact):
        counted, read_by_engine = _evaluate_files_with_engine(args)
        client_ids, num_clients = None, counted.num_clients
    else:
        counted = count_scores(args, grid)
        client_ids, num_clients = _client_ids(counted, args)
    mechanism = _mechanism(args, num_clients)
    check_confidence(args, mechanism)
    evaluation_summaries.check_summary_flags(args, mechanism, grid)  # metrics (issue 33)
    # Whether the file has one class is itself an exact label statistic: a private release
    # without --show-exact runs whatever the labels are (its estimate may be undefined).
    undefined = _undefined_auc_reason(counted) if show_exact or not private else None
    if undefined is not None:
        result = None
        statement = mechanism.statement()
        reference = {key: None for key in REFERENCE_FIELDS}
    else:
        reference = reference_aucs(counted, args.num_thresholds) if show_exact else {}
        result = read_by_engine or BACKENDS[args.backend](
            args, mechanism, counted, client_ids, num_clients, thresholds
        )
        statement = result.statement
    pld = _pld_epsilon(mechanism, statement, args.delta or PLD_DELTA)
    # The release's own fields (AUCResult.to_dict(): epsilon_total, delta_total,
    # num_reporting, ...); the command's fields below keep their 0.2 names and meaning.
    released = {} if result is None else result.to_dict()
    intervals = interval_fields(args, mechanism, result, counted.num_examples, num_clients)
    output = {
        **{key: released[key] for key in RESULT_FIELDS if key in released},
        **reference,
        "mechanism": args.mechanism,
        "mechanism_options": mechanism_options(args),
        "epsilon": args.epsilon,
        "delta": args.delta,
        "guaranteed_epsilon": _finite_or_none(None if statement is None else statement.epsilon),
        "guaranteed_delta": None if statement is None else statement.delta,
        # the same release by the PLD accountant (None where it does not apply: pld_note)
        "pld_epsilon": pld[0],
        "pld_delta": args.delta or PLD_DELTA,
        "privacy": None if statement is None else str(statement),
        "num_examples": counted.num_examples,
        **({"num_positives": counted.num_positives} if show_exact else {}),
        "num_clients": num_clients,
        "num_thresholds": args.num_thresholds,
        "threshold_grid": args.threshold_grid
        if isinstance(args.threshold_grid, str)
        else "explicit",
        # the grid the clients count on: the mechanism's own where it has one (auc-only)
        "count_thresholds": grid.num_thresholds,
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
        if result is None or result.fpr.shape[1] == 0  # auc-only releases no curve
        else {"fpr": result.fpr[0].tolist(), "tpr": result.tpr[0].tolist()},
        **intervals,
    }
    if auto_rule is not None:
        output["num_thresholds_rule"] = auto_rule
    if private and result is not None:
        warn_if_noise_dominates(mechanism, thresholds, counted.num_examples)
    # fields present only where they mean something
    if args.clients:
        output["partition"] = PARTITION_NAMES[args.partition]
    if getattr(args, "thresholds", None):
        output["thresholds_file"] = args.thresholds
    if result is not None and result.num_undefined:
        output["undefined_note"] = mechanism.undefined_note
    if pld[1] is not None:
        output["pld_note"] = pld[1]
    if undefined is not None:
        output["auc_undefined"] = undefined
    if mechanism.roc_note:
        output["roc_note"] = mechanism.roc_note
    if args.plot and result is not None and output["roc"] is None:
        output["plot"] = None  # no curve to draw: roc_note says why
    elif args.plot and result is not None:
        from dpauc_tf.experiments import plots

        plot_pos, plot_neg = counted.summed["plot"]
        plots.roc_band(
            # the exact curve is an exact label statistic: drawn only with --show-exact
            _exact_roc(plot_pos[None], plot_neg[None]) if show_exact else None,
            {args.mechanism: (result.fpr, result.tpr)},
            args.plot,
            title=f"{args.mechanism}, "
            + ("no noise" if args.epsilon is None else f"epsilon {args.epsilon:g}")
            + f", {num_clients} client(s), {args.repeats} release(s)",
        )
        output["plot"] = str(args.plot)
    output["private_fields"] = [k for k in RELEASE_FIELDS if k in output] if private else []
    output["exact_fields"] = [k for k in (*REFERENCE_FIELDS, *EXACT_EXTRA_FIELDS) if k in output]
    if not private:
        output["exact_fields"] += [k for k in RELEASE_FIELDS if k in output]
    evaluation_summaries.add_summaries(output, args, mechanism, result, grid)  # metrics
    return output


# AUCResult.to_dict()'s fields that the command adds to its own (the cost of the whole output).
RESULT_FIELDS = ("epsilon_total", "delta_total", "num_reporting", "slices_per_example")


# Fields with exact label statistics (NOT private): in the output only with --show-exact.
REFERENCE_FIELDS = ("exact_auc", "exact_auc_method", "exact_auc_max_error", "tf_auc")
EXACT_EXTRA_FIELDS = ("num_positives", "auc_undefined")
# Fields computed from the mechanism's release only: label-DP when the mechanism is private.
RELEASE_FIELDS = ("auc_mean", "auc_std", "aucs", "num_undefined", "roc", "plot", "releases")


def read_thresholds(path: str) -> list[float]:
    """The numbers in ``path`` (separated by newlines, commas or spaces): finite, at most
    `MAX_NUM_THRESHOLDS` of them, at least one."""
    from dpauc_tf.cli.main import MAX_NUM_THRESHOLDS

    text = _read_text(path)
    values = []
    for token in text.replace(",", " ").split():
        try:
            value = float(token)
        except ValueError:
            raise CommandError(
                f"--thresholds {path}: not a number: {token!r}{_invisible(token)}"
            ) from None
        if not math.isfinite(value):
            raise CommandError(f"--thresholds {path}: not a finite number: {token!r}")
        values.append(value)
    if not values:
        raise CommandError(f"--thresholds {path}: no thresholds in the file")
    if len(values) + 2 > MAX_NUM_THRESHOLDS:
        raise CommandError(
            f"--thresholds {path}: {len(values)} thresholds; at most {MAX_NUM_THRESHOLDS - 2}"
        )
    return values


def _read_text(path: str) -> str:
    """The text of a thresholds file: UTF-8 (a byte-order mark, as editors on Windows write,
    is dropped), or UTF-16 where its byte-order mark says so."""
    import codecs

    from dpauc_tf.cli.main import MAX_NUM_THRESHOLDS
    from dpauc_tf.io.paths import read_regular_bytes
    from dpauc_tf.io.scores import ScoreFileError

    try:  # room for every allowed threshold in full (24 characters, twice in UTF-16)
        raw = read_regular_bytes(path, 64 * MAX_NUM_THRESHOLDS, "--thresholds")
    except ScoreFileError as error:  # a pipe, a device, a directory, too large, missing
        raise CommandError(str(error)) from None
    utf16 = raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    try:
        return raw.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as error:
        raise CommandError(
            f"--thresholds {path}: cannot read it: not {'UTF-16' if utf16 else 'UTF-8'} text "
            f"(byte {error.object[error.start]:#04x} at offset {error.start}); save it as UTF-8 "
            "text, numbers separated by commas, spaces or newlines"
        ) from None


def _invisible(token: str) -> str:
    """`` (it holds U+200B ZERO WIDTH SPACE, ...)`` for characters one cannot see, else ``""``."""
    import unicodedata

    hidden = sorted(
        {c for c in token if unicodedata.category(c) in ("Cc", "Cf", "Co", "Cn", "Zs", "Zl")}
    )
    if not hidden:
        return ""
    names = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in hidden)
    return f" (it holds {names}: characters that do not show; remove them)"


def _undefined_auc_reason(data) -> str | None:
    """Why the AUC of ``data`` is undefined (one class only), or ``None``."""
    if data.num_positives == 0:
        return f"all {data.num_examples} labels are 0 (no positive example)"
    if data.num_positives == data.num_examples:
        return f"all {data.num_examples} labels are 1 (no negative example)"
    return None


PLD_DELTA = 1e-6  # delta of the PLD figure for pure-DP mechanisms


def _pld_epsilon(mechanism, statement, delta: float) -> tuple[float | None, str | None]:
    """Epsilon of one release by dp-accounting's PLD accountant at ``delta``, and a note
    where there is none.

    The accountant knows the mechanism's full noise; a release whose statement states a
    larger epsilon than the mechanism's (fewer shares of a secure mechanism's noise arrived:
    a Flower dropout) is not that event, so it gets no PLD figure; ``guaranteed_epsilon``
    is the one its arrived reports achieve."""
    if mechanism.epsilon is None:
        return None, None
    target = mechanism.statement()
    if statement is not None and (statement.epsilon, statement.delta) != (
        target.epsilon,
        target.delta,
    ):
        return None, (
            f"not computed: the arrived reports achieve epsilon {statement.epsilon:g}, not the "
            f"mechanism's {target.epsilon:g} (fewer noise shares than it was sized for), and "
            "the PLD accountant covers only the full noise; guaranteed_epsilon is the "
            "achieved figure"
        )
    from dpauc_tf.privacy.accounting import pld_note

    figure = mechanism.privacy_spent(1, delta=delta).pld
    return figure, None if figure is not None else pld_note(mechanism.dp_event())


def _finite_or_none(value: float | None) -> float | None:
    """JSON has no infinity: the ``none`` mechanism's epsilon becomes ``null``."""
    return value if value is not None and math.isfinite(value) else None


def _exact_roc(pos, neg) -> tuple[np.ndarray, np.ndarray]:
    from dpauc_tf.core.curve import confusion_from_histogram, roc_from_confusion

    pos, neg = (np.asarray(c, np.float64).sum(0) for c in (pos, neg))
    roc = roc_from_confusion(confusion_from_histogram(pos, neg))
    return roc.fpr.numpy(), roc.tpr.numpy()


def _format_auc(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.6f}"


def _format_pld(result: dict[str, Any]) -> str:
    if result.get("pld_note"):
        return result["pld_note"]
    if result["pld_epsilon"] is None:
        return "not available (no noise, or not covered by the PLD accountant)"
    return f"{result['pld_epsilon']:.4g} at delta {result['pld_delta']:g} (one release)"


def _exact_note(result: dict[str, Any]) -> str:
    bound = result.get("exact_auc_max_error")
    if not bound:
        return "(scikit-learn)"
    return f"+- {bound:.2g} at most (fine histogram: more examples than fit in memory)"


def _format_thresholds(result: dict[str, Any]) -> str:
    text = f"{result['num_thresholds']} ({result['threshold_grid']} grid"
    text += f" from {result['thresholds_file']})" if result.get("thresholds_file") else ")"
    if result["count_thresholds"] != result["num_thresholds"]:
        text += f"; {result['mechanism']} counts on its own {result['count_thresholds']}"
    return text


def fields_note(result: dict[str, Any]) -> str:
    """One line saying which fields are private and which hold exact label statistics."""
    private = result["private_fields"]
    exact = result["exact_fields"]
    text = (
        f"private (label DP): {', '.join(private)}"
        if private
        else "nothing is private (mechanism 'none')"
    )
    if exact:
        return f"{text}; NOT private, exact label statistics: {', '.join(exact)}"
    return f"{text}; exact values hidden (--show-exact adds them, NOT private)"


def _format_evaluation(result: dict[str, Any]) -> str:
    undefined = result.get("num_undefined") or 0
    if result["auc_mean"] is None:
        private = "undefined"
    elif undefined == result["repeats"]:
        private = f"undefined in every release ({result['undefined_note']})"
    elif result["repeats"] == 1:  # one release: its value (a std over one is no error bar)
        private = f"{result['auc_mean']:.6f}"
    else:
        private = (
            f"{result['auc_mean']:.6f} +- {result['auc_std']:.6f} "
            f"(std over {result['repeats'] - undefined} repeats)"
        )
        if undefined:
            private += f" ({undefined} release(s) undefined: {result['undefined_note']})"
    positives = f" ({result['num_positives']} positive)" if "num_positives" in result else ""
    lines = [
        f"mechanism        {result['mechanism']}",
        f"privacy          {result['privacy']}",
        f"spent            {spent_text(result)}",
        f"PLD epsilon      {_format_pld(result)}",
        f"examples         {result['num_examples']}{positives}, {result['num_clients']} client(s)",
        f"thresholds       {_format_thresholds(result)}",
    ]
    if "exact_auc" in result:
        lines += [
            f"exact AUC        {_format_auc(result['exact_auc'])} {_exact_note(result)} "
            "NOT private",
            f"TensorFlow AUC   {_format_auc(result['tf_auc'])} "
            + (
                f"(thresholds from {result['thresholds_file']})"
                if result.get("thresholds_file")
                else f"(num_thresholds={result['num_thresholds']})"
            )
            + " NOT private",
        ]
    lines.append(f"private AUC      {private}")
    if result.get("releases"):
        lines += interval_lines(result)
    if result.get("roc_note"):
        lines.append(f"ROC curve        {result['roc_note']}")
    if result.get("plot"):
        lines.append(f"plot             {result['plot']}")
    lines += evaluation_summaries.summary_lines(result)  # metrics (issue 33)
    lines.append(f"fields           {fields_note(result)}")
    return "\n".join(lines)


# the columns of a release's row that come from the release (label DP when private)
_ROW_RELEASE_COLUMNS = (
    "auc",
    "auc_mean",
    "auc_std",
    "num_undefined",
    "plot",
    "ci_low",
    "ci_high",
    "privacy_share",
)
_ROW_INTERVAL_COLUMNS = ("ci_low", "ci_high", "ci_target", "privacy_share")


def _evaluation_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per release (csv): the AUC and the setting's scalar fields, and
    which of the row's columns are private and which exact."""
    scalars = {k: v for k, v in result.items() if not isinstance(v, (list, dict))}
    private = bool(result["private_fields"])
    interval = ("ci_low", "ci_high", "privacy_share") if result.get("releases") else ()
    release = [k for k in _ROW_RELEASE_COLUMNS if k in ("auc", *interval) or k in scalars]
    marks = {
        "private_fields": " ".join(release) if private else "",
        "exact_fields": " ".join(
            [k for k in result["exact_fields"] if k in scalars] + ([] if private else ["auc"])
        ),
    }
    aucs = result["aucs"] or [None]
    releases = result.get("releases") or [{}] * len(aucs)
    intervals = [
        {key: release[key] for key in _ROW_INTERVAL_COLUMNS if key in release}
        for release in releases
    ]
    return [
        {"repeat": i, "auc": auc, **intervals[i], **scalars, **marks} for i, auc in enumerate(aucs)
    ]


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
    elif args.format == "markdown":
        notes = setting_notes(result, _format_pld(result), fields_note(result))
        print(format_with_notes([setting_row(result)], "markdown", notes))
    else:  # csv: one row per release, for tools
        rows = evaluation_summaries.summary_rows(_evaluation_rows(result), result)  # metrics
        print(format_rows(rows, args.format))
    hint_client_column(args)
    return 0
