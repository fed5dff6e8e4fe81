"""The command line as a user meets it: fast help, every format, --debug, --from-logits,
extras named before any work, Parquet errors whole, no TensorFlow start-up chatter."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dpauc_tf.cli import main
from dpauc_tf.tf_startup import CHATTER

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def scores_csv(tmp_path):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 400)
    logits = rng.normal(size=400) + 1.5 * labels
    path = tmp_path / "scores.csv"
    rows = "\n".join(
        f"{float(1 / (1 + np.exp(-z)))!r},{y},{float(z)!r}"
        for z, y in zip(logits, labels, strict=True)
    )
    path.write_text("score,label,logit\n" + rows + "\n")
    return path


def _run(*args, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "dpauc_tf", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=timeout,
    )


def test_help_is_fast_and_imports_no_tensorflow():
    code = (
        "import sys, time; t = time.perf_counter(); "
        "from dpauc_tf.cli.main import build_parser; build_parser(); "
        "print(time.perf_counter() - t, 'tensorflow' in sys.modules, 'dp_accounting' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    _seconds, tf_loaded, dp_loaded = out.stdout.split()
    assert tf_loaded == "False" and dp_loaded == "False"
    started = time.perf_counter()
    result = _run("--help")
    elapsed = time.perf_counter() - started
    assert result.returncode == 0 and "evaluate" in result.stdout
    assert elapsed < 10  # the goal is 2 s on an idle machine (measured in the closing note)


def test_evaluate_help_lists_every_mechanism_defaults_and_columns():
    from dpauc_tf.mechanisms import list_mechanisms

    text = _run("evaluate", "--help").stdout
    for name in list_mechanisms():
        assert f"  {name} " in text
    assert "(default: 200)" in text and "0/1 label column" in text and "--from-logits" in text


@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "csv"])
def test_evaluate_speaks_every_format(capsys, scores_csv, fmt):
    status = main(
        [
            "evaluate",
            "--scores",
            str(scores_csv),
            "--mechanism",
            "histogram",
            "--epsilon",
            "1",
            "--repeats",
            "3",
            "--seed",
            "0",
            "--num-thresholds",
            "20",
            "--format",
            fmt,
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    if fmt == "json":
        assert len(json.loads(out)["aucs"]) == 3
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == 3 and {"repeat", "auc", "mechanism"} <= set(rows[0])
    elif fmt == "markdown":
        # one row for the setting, the statement once below it (issue 24)
        assert out.startswith("| mechanism | epsilon |") and out.count("neighbours:") == 1
    else:
        assert "private AUC" in out


@pytest.mark.parametrize("fmt", ["table", "json", "markdown", "csv"])
def test_audit_speaks_every_format(capsys, fmt):
    status = main(
        [
            "audit",
            "--mechanism",
            "histogram",
            "--epsilon",
            "1",
            "--samples",
            "2000",
            "--seed",
            "0",
            "--format",
            fmt,
        ]
    )
    out = capsys.readouterr().out
    assert status == 0 and "histogram" in out
    if fmt == "json":
        assert json.loads(out)[0]["mechanism"] == "histogram"


def test_from_logits_counts_the_one_map_of_logits(capsys, scores_csv, tmp_path):
    """--from-logits counts logit_scores(logit) (1/2 + arctan/pi, no saturated end buckets):
    the release equals that of a file of those scores, and the exact AUC is the sigmoid
    scores' (both maps keep the ranks)."""
    import pandas as pd

    from dpauc_tf.core.logit_scale import logit_scores

    common = ["--mechanism", "none", "--num-thresholds", "50", "--format", "json"]
    assert main(["evaluate", "--scores", str(scores_csv), *common, "--show-exact"]) == 0
    plain = json.loads(capsys.readouterr().out)
    args = ["--score-column", "logit", "--from-logits"]
    assert main(["evaluate", "--scores", str(scores_csv), *args, *common, "--show-exact"]) == 0
    logits = json.loads(capsys.readouterr().out)
    assert logits["exact_auc"] == pytest.approx(plain["exact_auc"], abs=1e-12)
    frame = pd.read_csv(scores_csv)
    mapped = tmp_path / "mapped.csv"
    frame.assign(score=logit_scores(frame["logit"].to_numpy())).to_csv(mapped, index=False)
    assert main(["evaluate", "--scores", str(mapped), *common]) == 0
    assert logits["aucs"][0] == json.loads(capsys.readouterr().out)["aucs"][0]
    # without --from-logits the logits are refused as scores outside [0, 1]
    assert main(["evaluate", "--scores", str(scores_csv), "--score-column", "logit", *common]) == 2


def test_debug_shows_the_traceback(capsys, tmp_path):
    args = ["evaluate", "--scores", str(tmp_path / "missing.csv"), "--mechanism", "none"]
    assert main(args) == 2
    assert capsys.readouterr().err.count("\n") == 1
    with pytest.raises(ValueError, match="no such file"):
        main([*args, "--debug"])


def test_plot_without_matplotlib_names_the_extra_before_any_work(capsys, scores_csv, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "matplotlib" else real(name, *a),
    )
    status = main(
        ["evaluate", "--scores", str(scores_csv), "--mechanism", "none", "--plot", "x.png"]
    )
    assert status == 2
    assert 'pip install ".[plot]"' in capsys.readouterr().err


def test_parquet_errors_are_whole_on_one_line(capsys, tmp_path):
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1 this is not a parquet file at all")
    assert main(["evaluate", "--scores", str(path), "--mechanism", "none"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "broken.parquet: cannot read" in err


def test_no_tensorflow_start_up_chatter_reaches_the_terminal(scores_csv):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_CPP")}
    result = _run(
        "evaluate",
        "--scores",
        str(scores_csv),
        "--mechanism",
        "histogram",
        "--epsilon",
        "1",
        "--seed",
        "0",
        "--num-thresholds",
        "20",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    noisy = [line for line in result.stderr.splitlines() if CHATTER.search(line)]
    assert not noisy, noisy


@pytest.mark.parametrize(
    "argv, message",
    [
        (["evaluate", "--scores", "missing.csv", "--epsilon", "1"], "missing.csv: no such file"),
        (["evaluate", "--scores", "{scores}"], "give --epsilon"),
        (["compare", "--scores", "{scores}", "--scores-b", "gone.csv", "--epsilon", "1"], "gone"),
        (
            ["multiclass", "--scores", "missing.csv", "--epsilon", "1", "--score-columns", "a,b"],
            "missing.csv: no such file",
        ),
    ],
)
def test_refusals_that_need_no_tensorflow_come_before_its_import(scores_csv, argv, message):
    """A missing file or --epsilon is refused without importing TensorFlow (it took 4-8 s)."""
    argv = [arg.replace("{scores}", str(scores_csv)) for arg in argv]
    code = (
        "import sys; from dpauc_tf.cli.main import main; status = main(sys.argv[1:]); "
        "print(status, 'tensorflow' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert out.stdout.split() == ["2", "False"], out.stdout + out.stderr
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1
