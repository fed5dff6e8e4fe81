"""Output formats shared by every ``dpauc`` subcommand: table, json, markdown, csv.

Every subcommand produces rows (a list of flat dicts); [`format_rows`][] renders them.
Pure Python: no TensorFlow.

    >>> print(format_rows([{"name": "a", "value": 0.5}, {"name": "bb", "value": None}], "table"))
    name  value
    ----  -----
    a       0.5
    bb        -
    >>> print(format_rows([{"x": 1}], "csv").strip())
    x
    1
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

FORMATS = ("table", "json", "markdown", "csv")


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
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
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


def _is_number(text: str) -> bool:
    if text == "-":
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True
