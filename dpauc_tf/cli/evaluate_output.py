"""The output of ``dpauc evaluate`` in every format: a table, JSON, a Markdown row with its
notes, or CSV (one row per release). Pure Python: no TensorFlow.

Examples:
    >>> fields_note({"private_fields": ["auc_mean"], "exact_fields": []})
    'private (label DP): auc_mean; exact values hidden (--show-exact adds them, NOT private)'
"""

from __future__ import annotations

import json
from typing import Any

from dpauc_tf.cli import evaluation_summaries  # metrics (issue 33)
from dpauc_tf.cli.formats import (
    format_rows,
    format_with_notes,
    json_safe,
    setting_notes,
    setting_row,
    spent_text,
)
from dpauc_tf.cli.intervals import interval_lines


def format_evaluation(result: dict[str, Any], fmt: str) -> str:
    """``result`` (``dpauc evaluate``'s JSON-ready output) in ``fmt``: ``json``, ``table``,
    ``markdown`` (one row for the setting and its notes) or ``csv`` (one row per release)."""
    if fmt == "json":
        return json.dumps(json_safe(result), allow_nan=False)
    if fmt == "table":
        return _format_table(result)
    if fmt == "markdown":
        notes = setting_notes(result, _format_pld(result), fields_note(result))
        return format_with_notes([setting_row(result)], "markdown", notes)
    rows = evaluation_summaries.summary_rows(_evaluation_rows(result), result)  # metrics
    return format_rows(rows, fmt)  # csv: one row per release, for tools


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


def _format_table(result: dict[str, Any]) -> str:
    undefined = result.get("num_undefined") or 0
    if undefined and undefined == result["repeats"]:
        private = f"undefined in every release ({result['undefined_note']})"
    elif result["auc_mean"] is None:
        private = "undefined"
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
