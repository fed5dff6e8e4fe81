"""``dpauc evaluate``: the private AUC of a file of scores (with ``--show-exact``, NOT
private, next to the exact and TF AUCs).

    >>> from dpauc_tf.cli.main import build_parser
    >>> args = build_parser().parse_args(["evaluate", "--scores", "s.csv", "--mechanism", "none"])
    >>> args.num_thresholds, args.format  # None: 200, or fitted to --calibration-bins
    (None, 'table')
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from typing import Any

import numpy as np

from dpauc_tf.backends import BackendName
from dpauc_tf.cli import evaluation_summaries  # metrics (issue 33)
from dpauc_tf.cli.arguments import (
    DEFAULT_CHUNK_ROWS,
    DEFAULT_FLOWER_ROUND_TIMEOUT,
    DEFAULT_MAX_ROWS_IN_MEMORY,
    MAX_CURVE_VALUES,
    MAX_NUM_THRESHOLDS,
    MIN_CHUNK_ROWS,
    PARTITION_NAMES,
    add_common_flags,
    chunk_rows,
    confidence,
    finite_float,
    int_at_least,
    mechanism_option,
    num_thresholds_or_auto,
    positive_int,
    positive_seconds,
    seed_int,
)
from dpauc_tf.cli.backends import (
    BACKENDS,
    ENGINE_BACKENDS,
    BackendRun,
    ScoreSource,
    evaluate_files_with_engine,
    kept_examples,
)
from dpauc_tf.cli.client_column import hint_client_column
from dpauc_tf.cli.default_mechanism import FEDERATED_BACKENDS, deployment_of
from dpauc_tf.cli.errors import CommandError
from dpauc_tf.cli.evaluate_output import format_evaluation
from dpauc_tf.cli.grids import auto_rule, warn_if_noise_dominates
from dpauc_tf.cli.intervals import check_confidence
from dpauc_tf.cli.progress import add_progress_flags, show_progress
from dpauc_tf.cli.release import ReleaseRequest, release_request
from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.vocabulary import ThresholdGrid
from dpauc_tf.mechanisms.laws import IntervalTarget
from dpauc_tf.mechanisms.registry import describe_mechanisms, list_mechanisms, mechanism_spec
from dpauc_tf.privacy.statement import check_label_free_keys


def mechanism_epilog() -> str:
    """The registry's mechanisms, one line each, under ``dpauc evaluate --help``."""
    width = max(len(row["name"]) for row in describe_mechanisms())
    lines = ["mechanisms (docs/mechanisms.md; python -m dpauc_tf.mechanisms.registry):"]
    lines += [f"  {row['name']:<{width}}  {row['summary']}" for row in describe_mechanisms()]
    return "\n".join(lines)


def register_cli(sub, common=add_common_flags) -> argparse.ArgumentParser:
    """Adds ``evaluate`` to ``dpauc``'s sub-commands: the one place its arguments are
    declared (``common`` adds ``--format``/``--debug``). Its handler runs on the
    [`EvaluateRequest`][] that ``prepare`` checks before TensorFlow is imported."""
    ev = sub.add_parser(
        "evaluate",
        help="private AUC of a file of scores",
        description="The private AUC (and ROC) of a file of scores; with --show-exact (NOT "
        "private) next to the exact and TensorFlow AUCs.",
        epilog=mechanism_epilog(),
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
        help="a mechanism from the registry (listed below); default for the AUC: rank-sum "
        "for one data holder (auc-only with --delta), rank-sum with local noise per client "
        "for --clients/--client-column, secure-rank-sum for --backend tff|flower; where a "
        "curve is asked for (--plot, the summaries): histogram, secure-histogram on "
        "tff|flower (docs/choosing_parameters.md)",
    )
    ev.add_argument(
        "--mechanism-option",
        dest="mechanism_options",
        type=mechanism_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the mechanism, repeatable (VALUE is JSON where it parses), e.g. "
        "positive_rate=0.25, budget=uniform, estimator=mann-whitney-smooth (docs/mechanisms.md)",
    )
    ev.add_argument("--epsilon", type=finite_float, help="total epsilon of one release")
    ev.add_argument(
        "--delta", type=finite_float, help="delta (paper-gaussian; Skellam for secure ones)"
    )
    ev.add_argument(
        "--num-thresholds",
        type=num_thresholds_or_auto,
        default=None,
        help=f"T (at most {MAX_NUM_THRESHOLDS}) or 'auto' (docs/small_test_sets.md) "
        f"(default: {DEFAULT_NUM_THRESHOLDS}); not given, --calibration-bins B "
        f"(B < {DEFAULT_NUM_THRESHOLDS}) takes the nearest larger grid whose buckets the bins "
        "are unions of (201 for 10 bins)",
    )
    ev.add_argument(
        "--threshold-grid", choices=ThresholdGrid.values(), default="tf", help="threshold grid"
    )
    ev.add_argument(
        "--thresholds",
        metavar="FILE",
        help="explicit thresholds, numbers separated by newlines or commas (e.g. quantiles "
        "of scores known in advance), taken as tf.keras.metrics.AUC(thresholds=...) takes "
        "them (both ends added); replaces --num-thresholds and --threshold-grid",
    )
    ev.add_argument(
        "--clients", type=positive_int, help="split the examples among K clients (--partition)"
    )
    ev.add_argument(
        "--partition", choices=tuple(PARTITION_NAMES), default="iid", help="how to split"
    )
    ev.add_argument("--repeats", type=positive_int, default=1, help="independent releases")
    ev.add_argument(
        "--confidence",
        type=confidence,
        help="e.g. 0.95: a confidence interval for every release, computed from the release "
        "alone (no privacy cost; docs/intervals.md): JSON gets a releases list with auc, "
        "ci_low, ci_high, ci_target, privacy_share",
    )
    ev.add_argument(
        "--ci-target",
        choices=IntervalTarget.values(),
        default="population",
        help="population (default: privacy noise and sampling error) or sample (the AUC of "
        "this test set: privacy noise only)",
    )
    ev.add_argument(
        "--seed",
        type=seed_int,
        help="integer seed in [0, 2^64 - 1] (reproducible); default: OS entropy",
    )
    common(ev)
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
        choices=[name.value for name in BackendName],
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
        type=positive_seconds,
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
    evaluation_summaries.add_summary_flags(ev)  # metrics (issue 33)
    ev.add_argument(
        "--max-rows-in-memory",
        type=int_at_least(0),
        default=DEFAULT_MAX_ROWS_IN_MEMORY,
        help="keep up to this many examples for the exact AUC, --clients partitions and "
        "score-noise; past it only counts are kept and the reference AUC comes from a fine "
        "histogram with its error bound (docs/streaming.md)",
    )
    ev.add_argument(
        "--chunk-rows",
        type=chunk_rows,
        default=DEFAULT_CHUNK_ROWS,
        help=f"examples read per chunk (at least {MIN_CHUNK_ROWS}: every chunk has a fixed "
        "cost, and memory is a few tens of bytes per example)",
    )
    ev.set_defaults(func=run_evaluate, prepare=prepare_evaluate)
    return ev


@dataclasses.dataclass(frozen=True)
class EvaluateRequest:
    """``dpauc evaluate``'s arguments, checked once before TensorFlow is imported
    ([`prepare_evaluate`][]): the release ([`ReleaseRequest`][dpauc_tf.cli.release.ReleaseRequest]),
    the file and how to read it, the backend and what the output holds."""

    release: ReleaseRequest
    source: ScoreSource
    backend: str = "simulate"
    clients: int | None = None
    partition: str = "iid"
    repeats: int = 1
    confidence: float | None = None
    ci_target: str = "population"
    show_exact: bool = False
    plot: str | None = None
    chunk_rows: int = 1 << 20
    max_rows_in_memory: int = 2_000_000
    progress: bool = False
    beam_options: str | None = None
    spark_master: str = "local[2]"
    round_timeout: float | None = None
    format: str = "table"
    summaries: Any = None  # metrics (issue 33): evaluation_summaries.SummaryRequest

    def backend_run(self, spec) -> BackendRun:
        """What the backend receives: the spec and how to run it."""
        return BackendRun(
            backend=self.backend,
            spec=spec,
            repeats=self.repeats,
            confidence=self.confidence,
            ci_target=self.ci_target,
            source=self.source,
            beam_options=self.beam_options,
            spark_master=self.spark_master,
            round_timeout=self.round_timeout,
        )


def prepare_evaluate(args) -> EvaluateRequest:
    """The refusals that need no TensorFlow, made before its import (seconds on a small
    machine), once: the release's arguments ([`dpauc_tf.cli.release.release_request`][]:
    ``dpauc evaluate`` without ``--epsilon`` and ``--mechanism``, an option, a thresholds
    file), what the backend cannot run, and a local score file that is not there."""
    # A URI (hdfs://, gs://, s3a://) is read by the engine's own file systems (Beam, Spark).
    # First: the release checks below read a mechanism's capabilities, which loads its
    # module (and TensorFlow).
    if "://" not in str(args.scores):
        from dpauc_tf.io.readers import score_files

        score_files(args.scores)
    try:  # clients made from the labels reveal them (the one rule of every face)
        check_label_free_keys(args.label_column, (), args.client_column, "--client-column")
    except ValueError as error:
        raise CommandError(str(error)) from None
    clients = (args.clients or 1) > 1 or bool(args.client_column)
    needs_curve = bool(args.plot) or evaluation_summaries.wanted(args)  # metrics (issue 33)
    # the default mechanism's deployment: secure on tff/flower, local noise per client on
    # the others with clients, else one data holder (cli/default_mechanism.deployment_of)
    deployment = deployment_of(args.backend, clients=clients)
    if args.num_thresholds is None:  # not given: the default, fitted to --calibration-bins
        grid = evaluation_summaries.default_num_thresholds(
            getattr(args, "calibration_bins", None), args.threshold_grid
        )
        args = argparse.Namespace(**{**vars(args), "num_thresholds": grid})
    release = release_request(args, needs_curve=needs_curve, deployment=deployment)
    _check_backend(args.backend, release.mechanism, args.round_timeout)
    return EvaluateRequest(
        release=release,
        source=ScoreSource(
            path=args.scores,
            score_column=args.score_column,
            label_column=args.label_column,
            client_column=args.client_column,
            from_logits=args.from_logits,
        ),
        backend=args.backend,
        clients=args.clients,
        partition=args.partition,
        repeats=args.repeats,
        confidence=args.confidence,
        ci_target=args.ci_target,
        show_exact=bool(args.show_exact),
        plot=args.plot,
        chunk_rows=args.chunk_rows,
        max_rows_in_memory=args.max_rows_in_memory,
        progress=show_progress(args),
        beam_options=args.beam_options,
        spark_master=args.spark_master,
        round_timeout=args.round_timeout,
        format=args.format,
        summaries=evaluation_summaries.summary_request(args),  # metrics (issue 33)
    )


def _client_ids(counted, request: EvaluateRequest) -> tuple[np.ndarray | None, int]:
    """Client ids of the kept examples (``None``: counted per client) and the client count."""
    from dpauc_tf.core import partitions

    clients = request.clients
    if clients is not None:
        if clients > counted.num_examples:
            raise CommandError(
                f"--clients {clients} exceeds the number of examples ({counted.num_examples})"
            )
        data = kept_examples(counted, f"--clients {clients} (a partition)")
        kind = PARTITION_NAMES[request.partition]
        seed = request.release.seed
        ids = partitions.partition(kind, data.scores, data.labels, clients, seed=seed)
        return np.asarray(ids, np.int64), clients
    return None, counted.num_clients


def _check_backend(backend: str, mechanism: str, round_timeout: float | None) -> None:
    """Refuses, before any work and naming the flags, what the backend cannot run."""
    capabilities = mechanism_spec(mechanism).capabilities
    if backend in FEDERATED_BACKENDS and (
        not capabilities.federated or capabilities.transforms_data
    ):
        raise CommandError(
            f"--backend {backend} cannot run --mechanism {mechanism}: its client "
            "step is not a release of bucket counts; use --backend simulate"
        )
    if round_timeout is not None and backend != "flower":
        raise CommandError("--round-timeout bounds Flower's round: only with --backend flower")


def count_scores(request: EvaluateRequest, grid, tf_grid, plot: bool):
    """Step 1, read and count: one chunked pass over ``--scores`` (bounded memory), on the
    release's ``grid``, TensorFlow's ``tf_grid`` and, for ``--plot``, a 1000-threshold grid."""
    from dpauc_tf.core.thresholds import Thresholds
    from dpauc_tf.io.streaming import count_score_file

    summed = {"tf": tf_grid}
    if plot:
        summed["plot"] = Thresholds.make(1000)
    source = request.source
    return count_score_file(
        source.path,
        grid,
        summed,
        score_column=source.score_column,
        label_column=source.label_column,
        client_column=source.client_column,  # client ids only from a named column
        from_logits=source.from_logits,
        per_client=request.clients is None,
        chunk_rows=request.chunk_rows,
        max_rows_in_memory=request.max_rows_in_memory,
        progress=request.progress,
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


def _resolve_grid(request: EvaluateRequest) -> tuple[int, str | None]:
    """``T``, and the rule that chose it for ``--num-thresholds auto``."""
    from dpauc_tf.core.thresholds import Thresholds
    from dpauc_tf.mechanisms.auto_grid import auto_num_thresholds

    release = request.release
    if release.num_thresholds != "auto":
        return release.num_thresholds, None
    two = Thresholds.make(2)
    n = count_scores(request, two, two, plot=False).num_examples
    num_thresholds = auto_num_thresholds(n, release.epsilon, release.mechanism)
    return num_thresholds, auto_rule(num_thresholds, n, release.epsilon)


def evaluate_scores(request: EvaluateRequest) -> dict[str, Any]:
    """Runs ``dpauc evaluate`` and returns the JSON-ready result.

    Three steps: read and count ([`count_scores`][], one chunked pass), the reference AUCs
    ([`reference_aucs`][]) and the release (``BACKENDS[backend]`` on the command's one
    [`ReleaseSpec`][dpauc_tf.mechanisms.release.ReleaseSpec]). The output is the release's
    own fields (``AUCResult.to_dict()``) and the command's.
    """
    from dpauc_tf.core.thresholds import Thresholds

    release = request.release
    num_thresholds, rule = _resolve_grid(request)
    if request.repeats * num_thresholds > MAX_CURVE_VALUES:
        raise CommandError(
            f"--repeats {request.repeats} x --num-thresholds {num_thresholds} keeps "
            f"{request.repeats * num_thresholds} ROC values per curve array; the limit is "
            f"{MAX_CURVE_VALUES}"
        )
    options = release.options()
    # the command's one ReleaseSpec (on the grid --num-thresholds auto chose)
    spec = dataclasses.replace(release, num_thresholds=num_thresholds).spec(options)
    thresholds = spec.thresholds
    grid = spec.count_grid()
    check_confidence(request.confidence, spec.build())
    evaluation_summaries.check_summary_flags(request, spec.build(), grid)  # metrics
    private = mechanism_spec(release.mechanism).capabilities.protects != "nothing"
    show_exact = request.show_exact
    run = request.backend_run(spec)
    read_by_engine = None
    # Beam and Spark read the files with their own IO (the driver holds no row), except where
    # the command needs the examples on the driver: a partition, the exact values, the plot.
    if request.backend in ENGINE_BACKENDS and not (
        request.clients is not None or show_exact or request.plot
    ):
        counted, read_by_engine = evaluate_files_with_engine(request.backend, run)
        client_ids, num_clients = None, counted.num_clients
    else:
        # TensorFlow's AUC: tf.keras.metrics.AUC(num_thresholds=T), or (thresholds=...) for
        # an explicit grid
        explicit = not isinstance(release.threshold_grid, str)
        tf_grid = thresholds if explicit else Thresholds.make(num_thresholds, "tf")
        counted = count_scores(request, grid, tf_grid, plot=bool(request.plot))
        client_ids, num_clients = _client_ids(counted, request)
    mechanism = spec.build(num_clients)
    # Whether the file has one class is itself an exact label statistic: a private release
    # without --show-exact runs whatever the labels are (its estimate may be undefined).
    undefined = _undefined_auc_reason(counted) if show_exact or not private else None
    if undefined is not None:
        result = None
        statement = mechanism.statement()
        reference = {key: None for key in REFERENCE_FIELDS}
    else:
        reference = reference_aucs(counted, num_thresholds) if show_exact else {}
        # the interval (--confidence) is the backend's finish's: never recomputed here
        result = read_by_engine or BACKENDS[request.backend](run, counted, client_ids, num_clients)
        statement = result.statement
    pld_delta = release.delta or PLD_DELTA
    pld = _pld_epsilon(mechanism, statement, pld_delta)
    # The release's own fields (AUCResult.to_dict(): epsilon_total, delta_total,
    # num_reporting, the AUCs, the curve, the intervals); the command's fields keep their 0.2
    # names and meaning (guaranteed_epsilon is the release's epsilon).
    released = {} if result is None else result.to_dict()
    output = {
        **{key: released[key] for key in RESULT_FIELDS if key in released},
        **reference,
        "mechanism": release.mechanism,
        "mechanism_options": options,
        "epsilon": release.epsilon,
        "delta": release.delta,
        "guaranteed_epsilon": released["epsilon"]
        if result is not None
        else _finite_or_none(statement.epsilon),
        "guaranteed_delta": released["delta"] if result is not None else statement.delta,
        # the same release by the PLD accountant (None where it does not apply: pld_note)
        "pld_epsilon": pld[0],
        "pld_delta": pld_delta,
        "privacy": released["privacy"] if result is not None else str(statement),
        "num_examples": counted.num_examples,
        **({"num_positives": counted.num_positives} if show_exact else {}),
        "num_clients": num_clients,
        "num_thresholds": num_thresholds,
        "threshold_grid": release.grid_name,
        # the grid the clients count on: the mechanism's own where it has one (auc-only)
        "count_thresholds": grid.num_thresholds,
        "repeats": request.repeats,
        "seed": release.seed,
        "backend": request.backend,
        # over the releases whose estimate is defined (see num_undefined)
        **{key: released.get(key) for key in ("auc_mean", "auc_std", "aucs")},
        # releases whose AUC estimate is undefined (noise left no positive or no negative)
        "num_undefined": released.get("num_undefined"),
        "roc": released.get("roc"),  # None: nothing released, or an AUC-only release
        **{key: released[key] for key in INTERVAL_FIELDS if key in released},
    }
    if rule is not None:
        output["num_thresholds_rule"] = rule
    if private and result is not None:
        warn_if_noise_dominates(mechanism, thresholds, counted.num_examples)
    # fields present only where they mean something
    if request.clients:
        output["partition"] = PARTITION_NAMES[request.partition]
    if release.thresholds_file:
        output["thresholds_file"] = release.thresholds_file
    if result is not None and result.num_undefined:
        output["undefined_note"] = mechanism.undefined_note
    if pld[1] is not None:
        output["pld_note"] = pld[1]
    if undefined is not None:
        output["auc_undefined"] = undefined
    if mechanism.roc_note:
        output["roc_note"] = mechanism.roc_note
    if request.plot and result is not None and output["roc"] is None:
        output["plot"] = None  # no curve to draw: roc_note says why
    elif request.plot and result is not None:
        from dpauc_tf.experiments import plots

        plot_pos, plot_neg = counted.summed["plot"]
        plots.roc_band(
            # the exact curve is an exact label statistic: drawn only with --show-exact
            _exact_roc(plot_pos[None], plot_neg[None]) if show_exact else None,
            {release.mechanism: (result.fpr, result.tpr)},
            request.plot,
            title=f"{release.mechanism}, "
            + ("no noise" if release.epsilon is None else f"epsilon {release.epsilon:g}")
            + f", {num_clients} client(s), {request.repeats} release(s)",
        )
        output["plot"] = str(request.plot)
    output["private_fields"] = [k for k in RELEASE_FIELDS if k in output] if private else []
    output["exact_fields"] = [k for k in (*REFERENCE_FIELDS, *EXACT_EXTRA_FIELDS) if k in output]
    if not private:
        output["exact_fields"] += [k for k in RELEASE_FIELDS if k in output]
    evaluation_summaries.add_summaries(output, request, mechanism, result, grid)  # metrics
    return output


# AUCResult.to_dict()'s fields that the command adds to its own (the cost of the whole output).
RESULT_FIELDS = ("epsilon_total", "delta_total", "num_reporting", "slices_per_example")
# AUCResult.to_dict()'s interval fields (with --confidence): confidence, ci_target, releases.
INTERVAL_FIELDS = ("confidence", "ci_target", "releases")


# Fields with exact label statistics (NOT private): in the output only with --show-exact.
REFERENCE_FIELDS = ("exact_auc", "exact_auc_method", "exact_auc_max_error", "tf_auc")
EXACT_EXTRA_FIELDS = ("num_positives", "auc_undefined")
# Fields computed from the mechanism's release only: label-DP when the mechanism is private.
RELEASE_FIELDS = ("auc_mean", "auc_std", "aucs", "num_undefined", "roc", "plot", "releases")


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


def run_evaluate(request: EvaluateRequest) -> int:
    """Runs ``dpauc evaluate`` on its checked arguments and prints the result."""
    result = evaluate_scores(request)
    if "auc_undefined" in result:
        print(
            f"dpauc: warning: AUC is undefined: {result['auc_undefined']}; "
            "no private AUC was computed",
            file=sys.stderr,
        )
    print(format_evaluation(result, request.format))
    source = request.source
    hint_client_column(source.path, source.client_column, request.clients)
    return 0
