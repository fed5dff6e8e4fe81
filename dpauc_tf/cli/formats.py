"""Output formats shared by every ``dpauc`` subcommand: table, json, markdown, csv.

Every subcommand produces rows (a list of flat dicts); [`format_rows`][] renders them.
Pure Python: no TensorFlow.

Examples:
    >>> print(format_rows([{"name": "a", "value": 0.5}, {"name": "bb", "value": None}], "table"))
    name  value
    ----  -----
    a       0.5
    bb        -
    >>> print(format_rows([{"x": 1}], "csv").strip())
    x
    1
    >>> print(format_with_notes([{"eps": 1.0, "auc": 0.75}], "markdown", ["privacy: 1-label-DP"]))
    | eps | auc |
    |---|---|
    | 1 | 0.75 |
    <BLANKLINE>
    privacy: 1-label-DP
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

from dpauc_tf.core.vocabulary import Vocabulary


class OutputFormat(Vocabulary):
    """The output formats of the commands (``--format``)."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"
    CSV = "csv"

    @classmethod
    def argument(cls) -> str:
        return "format"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.6g}"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return str(value)


def _columns(rows: Sequence[dict]) -> list[str]:
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    return columns


def json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by ``None`` (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def format_rows(rows: Sequence[dict], fmt: str) -> str:
    """Renders ``rows`` as an aligned text table, JSON (valid: no NaN), Markdown or CSV."""
    fmt = OutputFormat(fmt)
    if fmt == "json":
        return json.dumps(json_safe(list(rows)), allow_nan=False)
    columns = _columns(rows)
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row.get(k) is None else _cell(row.get(k))) for k in columns})
        return buffer.getvalue()
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    if fmt == "markdown":
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(lines)
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]

    def line(values, numeric_right=True):
        parts = []
        for value, width in zip(values, widths, strict=True):
            right = numeric_right and _is_number(value)
            parts.append(value.rjust(width) if right else value.ljust(width))
        return "  ".join(parts).rstrip()

    out = [line(columns, numeric_right=False), line(["-" * w for w in widths], False)]
    out += [line(row) for row in cells]
    return "\n".join(out)


def format_with_notes(rows: Sequence[dict], fmt: str, notes: Sequence[str] = ()) -> str:
    """A compact Markdown or text table (one row per setting) with the lines that are the
    same for every row (a privacy statement, which fields are private) printed once below."""
    if fmt not in ("markdown", "table"):
        raise ValueError(f"notes go with the markdown or table format, got {fmt!r}")
    text = format_rows(rows, fmt)
    if not notes:
        return text
    separator = "\n\n" if fmt == "markdown" else "\n"  # Markdown: one paragraph per note
    return text + "\n\n" + separator.join(notes)


def setting_row(result: dict[str, Any]) -> dict[str, Any]:
    """``dpauc evaluate --format markdown``: one row for the setting (the AUC over all repeats); columns
    only where they mean something."""
    row: dict[str, Any] = {"mechanism": result["mechanism"], "epsilon": result["epsilon"]}
    if result["delta"] is not None:
        row["delta"] = result["delta"]
    if "epsilon_total" in result:  # what all the repeats cost together
        row["epsilon_total"] = result["epsilon_total"]
        if result.get("delta_total"):
            row["delta_total"] = result["delta_total"]
    row["clients"] = result["num_clients"]
    if "partition" in result:
        row["partition"] = result["partition"]
    row["examples"] = result["num_examples"]
    row["thresholds"] = result["num_thresholds"]
    row["repeats"] = result["repeats"]
    row["auc_mean"] = result["auc_mean"]
    if result["repeats"] > 1:
        row["auc_std"] = result["auc_std"]
    if result.get("num_undefined"):
        row["num_undefined"] = result["num_undefined"]
    if result.get("releases"):  # --confidence: the (first) release's interval
        first = result["releases"][0]
        for key in ("ci_low", "ci_high", "ci_target", "privacy_share"):
            row[key] = first[key]
    for key in ("exact_auc", "tf_auc"):
        if key in result:
            row[key] = result[key]
    return row


def spent_text(result: dict[str, Any]) -> str:
    """The total privacy cost of everything a command printed: ``epsilon_total`` and
    ``delta_total`` of all its releases (every format states it, not only JSON)."""
    total = result.get("epsilon_total")
    if total is None:
        return "nothing released"
    if not math.isfinite(total):
        return "no privacy guarantee (no noise: NOT private)"
    releases = result.get("repeats", 1)
    count = f"all {releases} releases" if releases != 1 else "its one release"
    return f"epsilon {total:g}, delta {result.get('delta_total') or 0:g} in total, for {count}"


def setting_notes(result: dict[str, Any], pld: str, fields: str) -> list[str]:
    """What is the same for the whole setting, printed once under the row."""
    notes = [
        f"privacy: {result['privacy']}",
        f"spent: {spent_text(result)}",
        f"PLD epsilon: {pld}",
    ]
    if result.get("undefined_note"):
        notes.append(f"undefined releases: {result['undefined_note']}")
    if result.get("releases"):
        notes.append(
            f"interval: {100 * result['confidence']:g}% for the {result['ci_target']} AUC"
            + (
                ", of the first release (JSON and CSV give every release's)"
                if len(result["releases"]) > 1
                else ""
            )
        )
    if result.get("roc_note"):
        notes.append(f"ROC curve: {result['roc_note']}")
    if result.get("plot"):
        notes.append(f"plot: {result['plot']}")
    notes.append(f"fields: {fields}")
    return notes


def _is_number(text: str) -> bool:
    if text == "-":
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True
