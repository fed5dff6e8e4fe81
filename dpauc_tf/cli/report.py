"""``dpauc report --scores F --out report.html``: one self-contained page of a private
evaluation: the ROC curve with its interval band, the precision-recall curve, the reliability
diagram, the numbers with their intervals, the privacy statement and the budget spent.

Everything on the page comes from one release (``dpauc evaluate`` with the same flags, plus
``--max-fpr 0.1 --tpr-at-fpr 0.05 --calibration-bins 10 --confidence 0.95`` unless given, on a grid of
201 thresholds so that ten bins are unions of its buckets). The plots are inline SVG: the
page loads nothing from the network and runs no script.

    >>> from dpauc_tf.cli.main import build_parser
    >>> args = build_parser().parse_args(
    ...     ["report", "--scores", "s.csv", "--epsilon", "1", "--out", "r.html"])
    >>> args.num_thresholds, args.calibration_bins, args.max_fpr
    (201, 10, 0.1)
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import html
import math
from pathlib import Path
from typing import Any

import numpy as np

REPORT_DEFAULTS = {
    "num_thresholds": 201,
    "max_fpr": 0.1,
    "tpr_at_fpr": 0.05,
    "calibration_bins": 10,
    "confidence": 0.95,
}


def add_report_command(sub, evaluate: argparse.ArgumentParser) -> None:
    """``dpauc report``: ``dpauc evaluate``'s flags (the same release) and ``--out``."""
    rp = sub.add_parser(
        "report",
        help="one self-contained HTML page: ROC with interval band, PR, reliability, numbers",
        description=__doc__.split("\n\n")[0],
    )
    for action in evaluate._actions:
        if isinstance(action, argparse._HelpAction) or action.dest == "plot":
            continue
        rp._add_action(copy.copy(action))  # a copy: set_defaults below must not reach evaluate
    rp.add_argument("--out", required=True, help="the HTML file to write")
    rp.set_defaults(
        func=run_report, prepare=prepare_report, command="report", plot=None, **REPORT_DEFAULTS
    )


def prepare_report(args):
    """``dpauc evaluate``'s checked request (before TensorFlow) and the page's path."""
    from dpauc_tf.cli.evaluate import prepare_evaluate

    return args.out, prepare_evaluate(args)


def run_report(prepared) -> int:
    from dpauc_tf.cli.errors import CommandError
    from dpauc_tf.cli.evaluate import evaluate_scores

    out, request = prepared
    contexts = []  # the summaries' context, handed over by `dpauc evaluate` (one release)
    summaries = dataclasses.replace(request.summaries, on_summary=contexts.append)
    output = evaluate_scores(dataclasses.replace(request, summaries=summaries))
    if not contexts:
        raise CommandError("report: no release to draw (the AUC is undefined: see --show-exact)")
    context = contexts[-1]
    from dpauc_tf.mechanisms.release_summaries import curve_bands

    bands = curve_bands(
        context.result,
        context.mechanism,
        confidence=request.confidence or 0.95,
        target=request.ci_target,
    )
    page = render_report(output, bands)
    Path(out).write_text(page, encoding="utf-8")
    if request.format == "json":  # the numbers on the page, for tools
        import json

        from dpauc_tf.cli.formats import json_safe

        print(json.dumps(json_safe({"report": str(out), **output}), allow_nan=False))
    else:
        print(f"dpauc: wrote {out}")
    return 0


# -- SVG ----------------------------------------------------------------------------------
_SIZE, _PAD = 320, 44


def _xy(x: float, y: float) -> tuple[float, float]:
    inner = _SIZE - 2 * _PAD
    return _PAD + x * inner, _SIZE - _PAD - y * inner


def _path(xs, ys) -> str:
    points = [
        _xy(float(x), float(y))
        for x, y in zip(xs, ys, strict=True)
        if math.isfinite(x) and math.isfinite(y)
    ]
    return " ".join(
        f"{'M' if i == 0 else 'L'}{px:.1f},{py:.1f}" for i, (px, py) in enumerate(points)
    )


def _frame(plot_id: str, title: str, xlabel: str, ylabel: str, body: str) -> str:
    x0, y0 = _xy(0, 0)
    x1, y1 = _xy(1, 1)
    ticks = []
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        tx, _ = _xy(t, 0)
        _, ty = _xy(0, t)
        ticks.append(
            f'<text x="{tx:.1f}" y="{y0 + 14:.1f}" text-anchor="middle">{t:g}</text>'
            f'<text x="{x0 - 6:.1f}" y="{ty + 4:.1f}" text-anchor="end">{t:g}</text>'
        )
    return (
        f'<svg id="{plot_id}" class="plot" xmlns="http://www.w3.org/2000/svg" '
        f'width="{_SIZE}" height="{_SIZE}" viewBox="0 0 {_SIZE} {_SIZE}" role="img" '
        f'aria-label="{html.escape(title)}">'
        f"<title>{html.escape(title)}</title>"
        f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" fill="white" '
        'stroke="#444"/>'
        f"{''.join(ticks)}{body}"
        f'<text x="{(x0 + x1) / 2:.1f}" y="{_SIZE - 8}" text-anchor="middle">'
        f"{html.escape(xlabel)}</text>"
        f'<text x="12" y="{(y0 + y1) / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {(y0 + y1) / 2:.1f})">{html.escape(ylabel)}</text>'
        f'<text x="{(x0 + x1) / 2:.1f}" y="16" text-anchor="middle" font-weight="bold">'
        f"{html.escape(title)}</text></svg>"
    )


def roc_svg(bands) -> str:
    """The ROC curve and the pointwise band of the recall at fixed thresholds."""
    fpr, tpr = bands.fpr, bands.tpr
    x = fpr[bands.cuts]
    ok = np.isfinite(x) & np.isfinite(bands.tpr_low) & np.isfinite(bands.tpr_high)
    band = ""
    if ok.any():
        upper = _path(x[ok], bands.tpr_high[ok])
        lower = _path(x[ok][::-1], bands.tpr_low[ok][::-1]).replace("M", "L", 1)
        band = f'<path class="band" d="{upper} {lower} Z" fill="#f4a261" fill-opacity="0.35"/>'
    body = (
        f'<path d="{_path([0, 1], [0, 1])}" stroke="#999" stroke-dasharray="4 3" fill="none"/>'
        f"{band}"
        f'<path class="curve" d="{_path(fpr, tpr)}" stroke="#d9480f" stroke-width="2" '
        'fill="none"/>'
    )
    return _frame("roc-plot", "ROC (private) with interval band", "false-positive rate",
                  "true-positive rate", body)  # fmt: skip


def pr_svg(bands) -> str:
    """The precision-recall curve of the cuts (step, as average precision sums it)."""
    recall, precision = bands.tpr, bands.precision
    keep = np.isfinite(precision) & np.isfinite(recall)
    body = (
        f'<path class="curve" d="{_path(recall[keep], precision[keep])}" stroke="#1971c2" '
        'stroke-width="2" fill="none"/>'
    )
    return _frame("pr-plot", "Precision-recall (private)", "recall", "precision", body)


def reliability_svg(bins: list[dict[str, Any]]) -> str:
    """Each bin's private positive rate against its mean score, with its interval."""
    marks = []
    for b in bins:
        if b["mean_score"] is None or b["positive_rate"] is None:
            continue
        cx, cy = _xy(b["mean_score"], b["positive_rate"])
        if b["ci_low"] is not None:
            _, lo = _xy(0, b["ci_low"])
            _, hi = _xy(0, b["ci_high"])
            marks.append(
                f'<line x1="{cx:.1f}" y1="{lo:.1f}" x2="{cx:.1f}" y2="{hi:.1f}" stroke="#2f9e44"/>'
            )
        marks.append(f'<circle class="bin" cx="{cx:.1f}" cy="{cy:.1f}" r="3.5" fill="#2f9e44"/>')
    body = (
        f'<path d="{_path([0, 1], [0, 1])}" stroke="#999" stroke-dasharray="4 3" fill="none"/>'
        + "".join(marks)
    )
    return _frame("reliability-plot", "Reliability (private)", "mean score in bin",
                  "positive rate in bin", body)  # fmt: skip


# -- the page -------------------------------------------------------------------------------
def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "undefined"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return html.escape(str(value))


def _interval(output: dict[str, Any], name: str) -> str:
    low, high = output.get(f"{name}_ci_low"), output.get(f"{name}_ci_high")
    return "" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"


def _numbers(output: dict[str, Any]) -> list[tuple[str, str, str]]:
    rows = []
    releases = output.get("releases") or []
    auc_ci = ""
    if releases and releases[0].get("ci_low") is not None:
        auc_ci = f"[{releases[0]['ci_low']:.4f}, {releases[0]['ci_high']:.4f}]"
    aucs = output.get("aucs") or [None]
    rows.append(("AUC", _fmt(aucs[0]), auc_ci))
    if "partial_auc" in output:
        rows.append((f"partial AUC (FPR &le; {output['partial_auc_max_fpr']:g}, McClish)",
                     _fmt(output["partial_auc"]), _interval(output, "partial_auc")))  # fmt: skip
    if "tpr_at_fpr" in output:
        rows.append((
            f"TPR at FPR {output['tpr_at_fpr_target']:g} (score &gt; "
            f"{_fmt(output['tpr_at_fpr_threshold'])}; achieved FPR "
            f"{_fmt(output['tpr_at_fpr_achieved_fpr'])})",
            _fmt(output["tpr_at_fpr"]), _interval(output, "tpr_at_fpr"),
        ))  # fmt: skip
    if "fpr_at_tpr" in output:
        rows.append((
            f"FPR at TPR {output['fpr_at_tpr_target']:g} (score &gt; "
            f"{_fmt(output['fpr_at_tpr_threshold'])})",
            _fmt(output["fpr_at_tpr"]), _interval(output, "fpr_at_tpr"),
        ))  # fmt: skip
    if "average_precision" in output:
        rows.append(("average precision", _fmt(output["average_precision"]),
                     _interval(output, "average_precision")))  # fmt: skip
    if "ece" in output:
        rows.append((f"ECE ({output['ece_bins']} bins)", _fmt(output["ece"]),
                     _interval(output, "ece")))  # fmt: skip
    return rows


def render_report(output: dict[str, Any], bands) -> str:
    """The page's HTML (one string, nothing external)."""
    from dpauc_tf.cli.formats import spent_text

    level = output.get("summary_confidence") or 0.95
    target = output.get("summary_ci_target") or "population"
    table = "".join(
        f"<tr><td>{name}</td><td>{value}</td><td>{interval}</td></tr>"
        for name, value, interval in _numbers(output)
    )
    reliability = output.get("reliability") or []
    private = output.get("private_fields") or []
    sentence = "private (label DP)" if private else "NOT private (no noise: mechanism 'none')"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dpauc report</title>
<link rel="icon" href="data:,">
<style>
body {{ font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1100px; }}
.plots {{ display: flex; flex-wrap: wrap; gap: 1em; }}
.plot text {{ font-size: 11px; font-family: sans-serif; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }}
.privacy {{ background: #f1f3f5; padding: 0.8em; border-left: 4px solid #1971c2; }}
</style></head>
<body>
<h1>Private evaluation report</h1>
<p class="privacy" id="privacy"><b>Privacy:</b> {html.escape(str(output.get("privacy")))}<br>
<b>Budget spent:</b> {html.escape(spent_text(output))}<br>
<b>Mechanism:</b> {html.escape(str(output.get("mechanism")))}, {output.get("num_examples")}
examples, {output.get("num_clients")} client(s), {output.get("num_thresholds")} thresholds.
Every number and plot below is {sentence}; intervals are {100 * level:g}% ({target} target),
computed from the release alone.</p>
<h2>Numbers</h2>
<table id="numbers"><tr><th>number</th><th>value</th><th>{100 * level:g}% interval</th></tr>
{table}</table>
<h2>Plots</h2>
<div class="plots">
{roc_svg(bands)}
{pr_svg(bands)}
{reliability_svg(reliability)}
</div>
<p>The ROC band is pointwise: the recall's interval at each fixed threshold. The
reliability diagram shows each bin's private positive rate against its (public) mean score.
Made by dpauc_tf (docs/evaluation_metrics.md).</p>
</body></html>
"""
