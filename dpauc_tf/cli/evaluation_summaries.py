"""``dpauc evaluate --max-fpr F --tpr-at-fpr F --fpr-at-tpr T --calibration-bins B``: partial
AUC, operating points, average precision and calibration of the same release as the AUC.

Post-processing of that release
([`dpauc_tf.mechanisms.release_summaries.summarize_release`][]): no extra epsilon, which
the output's privacy sentence states. The calibration bins must be unions of the release's
buckets (``--num-thresholds N`` with ``N - 1`` a multiple of ``B`` on the default grid);
their mean scores come from a second, label-free pass over the scores.

    >>> from dpauc_tf.cli.main import build_parser
    >>> args = build_parser().parse_args(
    ...     ["evaluate", "--scores", "s.csv", "--mechanism", "none", "--max-fpr", "0.1"])
    >>> args.max_fpr, args.calibration_bins
    (0.1, None)
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dpauc_tf.cli.arguments import positive_int

SUMMARY_SENTENCE = (
    "partial AUC, operating points, average precision and calibration are post-processing "
    "of this same release: no extra epsilon"
)


def _fraction(text: str, *, interval: str = "[0, 1]") -> float:
    """A rate in [0, 1] (finite); argparse's one-line error otherwise."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in {interval}, got {text!r}") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in {interval}, got {text!r}")
    return value


def _max_fpr(text: str) -> float:
    """A partial AUC's bound in (0, 1]: the same message for 0, NaN and out of range."""
    value = _fraction(text, interval="(0, 1]")
    if value == 0.0:
        raise argparse.ArgumentTypeError(
            f"expected a number in (0, 1], got {text!r}: a maximum FPR of 0 leaves no area"
        )
    return value


def add_summary_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of ``dpauc evaluate`` (and ``dpauc report``) for the summaries."""
    group = parser.add_argument_group(
        "summaries of the same release (no extra epsilon; docs/evaluation_metrics.md)"
    )
    group.add_argument(
        "--max-fpr",
        type=_max_fpr,
        help="partial AUC over FPR in [0, F], McClish-standardised as scikit-learn's "
        "roc_auc_score(max_fpr=F)",
    )
    group.add_argument(
        "--tpr-at-fpr",
        type=_fraction,
        metavar="F",
        help="the recall at false-positive rate F on the private curve and its threshold",
    )
    group.add_argument(
        "--fpr-at-tpr",
        type=_fraction,
        metavar="T",
        help="the false-positive rate at recall T on the private curve and its threshold",
    )
    group.add_argument(
        "--calibration-bins",
        type=positive_int,
        metavar="B",
        help="ECE and reliability table over B equal-width bins (each a union of the grid's "
        "buckets: --num-thresholds N with N - 1 a multiple of B)",
    )


@dataclasses.dataclass(frozen=True)
class SummaryRequest:
    """The summary flags of ``dpauc evaluate`` (checked by argparse), as the command's
    request carries them.

    Examples:
        >>> SummaryRequest(max_fpr=0.1).wanted
        True
    """

    max_fpr: float | None = None
    tpr_at_fpr: float | None = None
    fpr_at_tpr: float | None = None
    calibration_bins: int | None = None
    # called with the SummaryContext once the summaries are computed (`dpauc report` draws
    # from it); not a flag
    on_summary: Callable[[SummaryContext], None] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )

    @property
    def wanted(self) -> bool:
        return any(
            value is not None
            for value in (self.max_fpr, self.tpr_at_fpr, self.fpr_at_tpr, self.calibration_bins)
        )


def summary_request(args) -> SummaryRequest:
    """The flags of ``args`` as a [`SummaryRequest`][]."""
    return SummaryRequest(
        max_fpr=getattr(args, "max_fpr", None),
        tpr_at_fpr=getattr(args, "tpr_at_fpr", None),
        fpr_at_tpr=getattr(args, "fpr_at_tpr", None),
        calibration_bins=getattr(args, "calibration_bins", None),
    )


def default_num_thresholds(calibration_bins: int | None, threshold_grid: str) -> int:
    """``T`` where ``--num-thresholds`` is not given: the default, or with
    ``--calibration-bins B`` (``B`` at most the default grid's buckets) on TensorFlow's grid
    the smallest grid from the default up whose buckets ``B`` equal-width bins are unions of
    (``T - 1`` a multiple of ``B``, less than twice the default), so that ``dpauc evaluate
    --calibration-bins 10`` works without a grid flag. A given ``--num-thresholds`` is never
    changed, nor is the default for more bins than its buckets (both refused, with a hint).

        >>> default_num_thresholds(None, "tf"), default_num_thresholds(10, "tf")
        (200, 201)
        >>> default_num_thresholds(7, "tf"), default_num_thresholds(10, "reference")
        (204, 200)
        >>> default_num_thresholds(5000, "tf")
        200
    """
    from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS

    if (
        calibration_bins is None
        or threshold_grid != "tf"
        or calibration_bins > DEFAULT_NUM_THRESHOLDS - 1
    ):
        return DEFAULT_NUM_THRESHOLDS
    return DEFAULT_NUM_THRESHOLDS + (-(DEFAULT_NUM_THRESHOLDS - 1)) % calibration_bins


def wanted(args) -> bool:
    """Whether any summary was asked for (average precision comes with any of them)."""
    summaries = getattr(args, "summaries", None)
    if summaries is not None:  # the command's checked request
        return summaries.wanted
    return summary_request(args).wanted


def check_summary_flags(request, mechanism, grid) -> None:
    """Refuses, before any work and naming the flag, what the release cannot give."""
    if not wanted(request):
        return
    args = request.summaries
    from dpauc_tf.cli.errors import CommandError
    from dpauc_tf.core.calibration import calibration_bins
    from dpauc_tf.mechanisms.release_summaries import check_summarizable

    try:
        check_summarizable(mechanism, "--max-fpr, --tpr-at-fpr, --fpr-at-tpr, --calibration-bins")
    except ValueError as error:
        raise CommandError(str(error)) from None
    if args.calibration_bins is not None:
        try:
            calibration_bins(grid, args.calibration_bins)
        except ValueError as error:
            bins = args.calibration_bins
            hint = ""
            if grid.grid == "tf":
                fit = grid.num_thresholds + (-(grid.num_thresholds - 1)) % bins
                hint = f" (e.g. --num-thresholds {fit})"
            raise CommandError(f"--calibration-bins {bins}: {error}{hint}") from None


def bucket_scores(request, grid):
    """Label-free per-bucket counts and score sums on ``grid``: one more pass over the
    scores (labels are read by the file reader but not used)."""
    from dpauc_tf.core.calibration import BucketScores
    from dpauc_tf.io.readers import iter_score_chunks

    source = request.source
    total = BucketScores(np.zeros(grid.num_buckets), np.zeros(grid.num_buckets))
    for chunk in iter_score_chunks(
        source.path,
        score_column=source.score_column,
        label_column=source.label_column,
        from_logits=source.from_logits,
        chunk_rows=request.chunk_rows,
    ):
        total = total + BucketScores.of(chunk.scores, grid)
    return total


def summarize(request, mechanism, result, grid, num_examples=None):
    """The release's summaries ([`ReleaseSummaries`][dpauc_tf.mechanisms.release_summaries.ReleaseSummaries]),
    or ``None`` when none was asked or there is no release."""
    if result is None:
        return None
    from dpauc_tf.cli.errors import CommandError
    from dpauc_tf.mechanisms.release_summaries import summarize_release

    args = request.summaries
    scores = bucket_scores(request, grid) if args.calibration_bins is not None else None
    try:
        return summarize_release(
            result,
            mechanism,
            grid,
            num_examples=num_examples,
            max_fpr=args.max_fpr,
            tpr_at_fpr=args.tpr_at_fpr,
            fpr_at_tpr=args.fpr_at_tpr,
            calibration_bins=args.calibration_bins,
            bucket_scores=scores,
            confidence=request.confidence or 0.95,
            target=request.ci_target,
        )
    except ValueError as error:
        raise CommandError(f"summaries: {error}") from None


def _flat(name: str, number: dict[str, Any]) -> dict[str, Any]:
    """One number with its interval as scalar fields: ``name``, ``name_ci_low``,
    ``name_ci_high``."""
    return {
        name: number["value"],
        f"{name}_ci_low": number["ci_low"],
        f"{name}_ci_high": number["ci_high"],
    }


def flat_fields(summary) -> dict[str, Any]:
    """The first release's summaries as output fields: a scalar per number and bound (so
    that csv carries them) and ``reliability``, a list of bins."""
    nested = summary.to_dict(0)
    out: dict[str, Any] = {}
    if "partial_auc" in nested:
        out.update(_flat("partial_auc", nested["partial_auc"]))
        out["partial_auc_max_fpr"] = nested["partial_auc"]["max_fpr"]
    for name, achieved, other in (("tpr_at_fpr", "tpr", "fpr"), ("fpr_at_tpr", "fpr", "tpr")):
        if name in nested:
            point = nested[name]
            out.update(_flat(name, point[achieved]))
            out[f"{name}_target"] = point["target"]
            out[f"{name}_threshold"] = point["threshold"]
            out.update(_flat(f"{name}_achieved_{other}", point[other]))
    if "average_precision" in nested:
        out.update(_flat("average_precision", nested["average_precision"]))
    if "ece" in nested:
        out.update(_flat("ece", nested["ece"]))
        out["ece_bins"] = nested["ece"]["num_bins"]
        out["reliability"] = nested["reliability"]
    out["summary_confidence"] = nested["summary_confidence"]
    out["summary_ci_target"] = nested["summary_ci_target"]
    return out


def null_fields(args: SummaryRequest) -> dict[str, Any]:
    """The fields [`flat_fields`][] would give, every number ``None``: what the output
    carries where no release was drawn (the asked numbers are there, and undefined).

        >>> sorted(null_fields(SummaryRequest(calibration_bins=5)).items())[:3]
        [('average_precision', None), ('average_precision_ci_high', None), ('average_precision_ci_low', None)]
    """
    null = {"value": None, "ci_low": None, "ci_high": None}
    out: dict[str, Any] = {}
    if args.max_fpr is not None:
        out.update(_flat("partial_auc", null))
        out["partial_auc_max_fpr"] = args.max_fpr
    for name, other in (("tpr_at_fpr", "fpr"), ("fpr_at_tpr", "tpr")):
        target = getattr(args, name)
        if target is not None:
            out.update(_flat(name, null))
            out[f"{name}_target"] = target
            out[f"{name}_threshold"] = None
            out.update(_flat(f"{name}_achieved_{other}", null))
    out.update(_flat("average_precision", null))
    if args.calibration_bins is not None:
        out.update(_flat("ece", null))
        out["ece_bins"] = args.calibration_bins
        out["reliability"] = None
    return out


@dataclasses.dataclass(frozen=True)
class SummaryContext:
    """What ``dpauc report`` draws besides the output's fields: the summaries and the
    release (with its mechanism) they are of.

    Attributes:
      summary: the [`ReleaseSummaries`][dpauc_tf.mechanisms.release_summaries.ReleaseSummaries].
      mechanism: the mechanism the release was drawn with.
      result: the release's ``AUCResult``.
    """

    summary: Any
    mechanism: Any
    result: Any


def add_summaries(
    output: dict[str, Any], request, mechanism, result, grid
) -> SummaryContext | None:
    """Adds the summaries to ``dpauc evaluate``'s output (fields, privacy sentence, the
    private or exact field lists, ``--plot``'s reliability diagram) and hands their
    [`SummaryContext`][] to the request's ``on_summary`` (``dpauc report``)."""
    if not wanted(request):
        return None
    if result is None:  # no release (a one-class file, exact: auc_undefined says why)
        fields = null_fields(request.summaries)
        target = "private_fields" if output.get("private_fields") else "exact_fields"
        output.update(fields)
        output.setdefault(target, []).extend(k for k, v in fields.items() if v is None)
        return None
    summary = summarize(request, mechanism, result, grid, output.get("num_examples"))
    fields = flat_fields(summary)
    if summary.num_releases > 1:  # --repeats: every release's numbers, as "aucs" has its AUC
        fields["release_summaries"] = summary.to_dicts()
    output.update(fields)
    if output.get("privacy"):
        output["privacy"] = f"{output['privacy']}; {SUMMARY_SENTENCE}"
    settings = ("summary_confidence", "summary_ci_target", "partial_auc_max_fpr", "ece_bins")
    names = [k for k in fields if k not in settings and not k.endswith("_target")]
    if output.get("private_fields"):
        output["private_fields"] += names
    else:
        output.setdefault("exact_fields", []).extend(names)
    if request.plot and summary.calibration is not None:
        path = reliability_plot_path(request.plot)
        title = f"{request.release.mechanism} reliability"
        reliability_png(summary.calibration, path, title=title)
        output["reliability_plot"] = str(path)
        if output.get("private_fields"):
            output["private_fields"].append("reliability_plot")
    context = SummaryContext(summary=summary, mechanism=mechanism, result=result)
    if request.summaries.on_summary is not None:
        request.summaries.on_summary(context)
    return context


def reliability_plot_path(plot: str) -> Path:
    """``roc.png`` -> ``roc-reliability.png`` (beside the ROC plot)."""
    path = Path(plot)
    return path.with_name(f"{path.stem}-reliability{path.suffix or '.png'}")


def reliability_png(calibration, path, title: str = "") -> str:
    """The reliability diagram of the first release (with each bin's interval) as a PNG."""
    from dpauc_tf.experiments.plots import _pyplot

    plt = _pyplot()
    bins = calibration.bins(0)
    fig, ax = plt.subplots(figsize=(4.5, 4.5), layout="constrained")
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--", label="perfect calibration")
    shown = [b for b in bins if b["mean_score"] is not None and b["positive_rate"] is not None]
    x = np.array([b["mean_score"] for b in shown])
    y = np.array([b["positive_rate"] for b in shown])
    low = np.array([b["ci_low"] if b["ci_low"] is not None else b["positive_rate"] for b in shown])
    high = np.array(
        [b["ci_high"] if b["ci_high"] is not None else b["positive_rate"] for b in shown]
    )
    ax.errorbar(x, y, yerr=[y - low, high - y], fmt="o-", color="tab:orange", capsize=3,
                label="private positive rate")  # fmt: skip
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("mean score in bin")
    ax.set_ylabel("positive rate in bin")
    ax.set_title(title)
    ax.legend(loc="upper left", fontsize=8)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def _number(value: Any) -> str:
    return "undefined" if value is None else f"{value:.6f}"


def _bounds(result: dict[str, Any], name: str) -> str:
    low, high = result.get(f"{name}_ci_low"), result.get(f"{name}_ci_high")
    if low is None or high is None:
        return ""
    level = f"{100 * result['summary_confidence']:g}%"
    return f" [{low:.6f}, {high:.6f}] ({level}, {result['summary_ci_target']})"


def summary_lines(result: dict[str, Any]) -> list[str]:
    """The table format's lines for the summaries (first release)."""
    lines = []
    if "partial_auc" in result:
        lines.append(
            f"partial AUC      {_number(result['partial_auc'])}{_bounds(result, 'partial_auc')} "
            f"(FPR <= {result['partial_auc_max_fpr']:g}, McClish)"
        )
    if "tpr_at_fpr" in result:
        lines.append(
            f"TPR at FPR {result['tpr_at_fpr_target']:<5g} {_number(result['tpr_at_fpr'])}"
            f"{_bounds(result, 'tpr_at_fpr')} at score > {result['tpr_at_fpr_threshold']} "
            f"(achieved FPR {_number(result['tpr_at_fpr_achieved_fpr'])})"
        )
    if "fpr_at_tpr" in result:
        lines.append(
            f"FPR at TPR {result['fpr_at_tpr_target']:<5g} {_number(result['fpr_at_tpr'])}"
            f"{_bounds(result, 'fpr_at_tpr')} at score > {result['fpr_at_tpr_threshold']} "
            f"(achieved TPR {_number(result['fpr_at_tpr_achieved_tpr'])})"
        )
    if "average_precision" in result:
        lines.append(
            f"avg precision    {_number(result['average_precision'])}"
            f"{_bounds(result, 'average_precision')}"
        )
    if "ece" in result:
        lines.append(
            f"ECE ({result['ece_bins']} bins)    {_number(result['ece'])}{_bounds(result, 'ece')}"
        )
        for b in result["reliability"] or []:  # None: no release
            rate = "empty" if b["count"] == 0 else _number(b["positive_rate"])
            bounds = "" if b["ci_low"] is None else f" [{b['ci_low']:.4f}, {b['ci_high']:.4f}]"
            mean = "" if b["mean_score"] is None else f", mean score {b['mean_score']:.4f}"
            lines.append(
                f"  bin ({b['low']:.2f}, {b['high']:.2f}]  rate {rate}{bounds}{mean}, "
                f"{int(b['count'])} examples"
            )
    if result.get("reliability_plot"):
        lines.append(f"reliability plot {result['reliability_plot']}")
    return lines


def summary_rows(rows: list[dict[str, Any]], result: dict[str, Any]) -> list[dict[str, Any]]:
    """csv: every row gets the reliability bins as flat columns (the scalar summaries are
    already there)."""
    if "reliability" not in result:
        return rows
    columns: dict[str, Any] = {}
    for k, b in enumerate(result["reliability"] or []):  # None: no release
        for key in ("mean_score", "positive_rate", "ci_low", "ci_high", "count"):
            columns[f"reliability_{k}_{key}"] = b[key]
    private = [k for k in columns if k.endswith(("positive_rate", "ci_low", "ci_high"))]
    out = []
    for row in rows:
        row = {**row, **columns}
        if row.get("private_fields"):
            row["private_fields"] = " ".join([row["private_fields"], *private])
        out.append(row)
    return out
