"""Every format of every command that releases states the total epsilon and delta it spent.

Before, ``dpauc evaluate --repeats 100`` printed "PLD epsilon 1 ... (one release)" in its
table (only the JSON had ``epsilon_total: 100``), and ``dpauc multiclass --format
markdown/csv`` and ``dpauc compare --format markdown/csv`` printed no epsilon at all
(issue 34).
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from tests.helpers.cli import run_cli

FORMATS = ("table", "markdown", "csv", "json")


@pytest.fixture(scope="module")
def scores_csv(tmp_path_factory):
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 600)
    z = rng.normal(size=600) + 1.5 * labels
    a = 1 / (1 + np.exp(-z))
    b = 1 / (1 + np.exp(-(z + rng.normal(size=600))))
    path = tmp_path_factory.mktemp("spent") / "scores.csv"
    rows = [
        f"{float(x)!r},{float(y)!r},{int(c)},{float(1 - x)!r},{float(x)!r}"  # NumPy 2: no np.float64(
        for x, y, c in zip(a, b, labels, strict=True)
    ]
    path.write_text("score,score_b,label,p0,p1\n" + "\n".join(rows) + "\n")
    return path


def _run(capsys, argv) -> str:
    return run_cli(capsys, *argv).out


def _total_in(text: str, fmt: str, epsilon_total: float) -> bool:
    if fmt == "json":
        return json.loads(text)["epsilon_total"] == epsilon_total
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        return bool(rows) and all(float(r["epsilon_total"]) == epsilon_total for r in rows)
    return f"epsilon {epsilon_total:g}, delta 0 in total" in text or (
        fmt == "markdown" and f"| {epsilon_total:g} |" in text and "epsilon_total" in text
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_evaluate_states_the_total_of_all_repeats(capsys, scores_csv, fmt):
    argv = ["evaluate", "--scores", str(scores_csv), "--epsilon", "0.5", "--repeats", "4"]
    out = _run(capsys, [*argv, "--seed", "0", "--format", fmt])
    assert _total_in(out, fmt, 2.0), out
    if fmt in ("table", "markdown"):
        assert "epsilon 2, delta 0 in total, for all 4 releases" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_compare_states_its_total(capsys, scores_csv, fmt):
    argv = ["compare", "--scores", str(scores_csv), "--score-column-b", "score_b"]
    out = _run(capsys, [*argv, "--epsilon", "0.5", "--seed", "0", "--format", fmt])
    if fmt == "json":
        data = json.loads(out)
        assert data["epsilon_total"] == 0.5 and data["delta_total"] == 0.0
    elif fmt == "csv":
        (row,) = csv.DictReader(io.StringIO(out))
        assert float(row["epsilon_total"]) == 0.5 and float(row["delta_total"]) == 0.0
    else:
        assert "epsilon_total" in out and "delta_total" in out and "privacy:" in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_multiclass_states_the_total_of_all_repeats(capsys, scores_csv, fmt):
    argv = ["multiclass", "--scores", str(scores_csv), "--score-columns", "p0,p1"]
    argv += ["--class-column", "label", "--epsilon", "0.5", "--repeats", "3", "--seed", "0"]
    out = _run(capsys, [*argv, "--format", fmt])
    assert _total_in(out, fmt, 1.5), out
    if fmt in ("table", "markdown"):
        assert "spent: epsilon 1.5, delta 0 in total, for all 3 releases" in out
