"""``dpauc audit`` says how long it will take before it starts, and refuses past
``--time-limit`` (issue 35: ``--num-thresholds 1000000`` took 529 s for 1,000 samples, so the
default 4,000,000 samples would have run for weeks with no warning)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dpauc_tf.analysis.audit_time import estimate_audit_seconds
from dpauc_tf.cli.audit import format_duration
from dpauc_tf.cli.main import main


def test_a_run_of_weeks_is_refused_at_once_with_its_estimate():
    """Before: it started and ran (weeks); the child is stopped after 240 s."""
    argv = ["audit", "--mechanism", "histogram", "--epsilon", "1", "--num-thresholds", "1000000"]
    code = f"from dpauc_tf.cli.main import main; raise SystemExit(main({argv!r}))"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=240
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the audit started a run of weeks instead of refusing it")
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1, done.stderr
    assert (
        "4,000,000 samples per neighbour at --num-thresholds 1,000,000 would take about" in err[0]
    )
    assert "raise --time-limit to run it" in err[0]
    assert "days" in err[0] or "years" in err[0]


def test_the_estimate_is_said_before_a_long_run(capsys, monkeypatch):
    import dpauc_tf.analysis.audit_time as audit

    monkeypatch.setattr(audit, "estimate_audit_seconds", lambda *a, **k: 95.0)
    argv = ["audit", "--mechanism", "histogram", "--epsilon", "1", "--samples", "2000"]
    assert main([*argv, "--seed", "0", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "2,000 samples per neighbour at --num-thresholds 2: about 1.6 min" in err
    monkeypatch.setattr(audit, "estimate_audit_seconds", lambda *a, **k: 7200.0)
    assert main([*argv, "--seed", "0"]) == 2
    assert "about 2.0 h on this machine" in capsys.readouterr().err
    assert main([*argv, "--seed", "0", "--time-limit", "8000", "--no-progress"]) == 0


def test_the_estimate_grows_with_the_work():
    small = estimate_audit_seconds("histogram", 1.0, num_thresholds=10, samples=10_000)
    large = estimate_audit_seconds("histogram", 1.0, num_thresholds=10, samples=1_000_000)
    assert 0 < small < large
    assert format_duration(5.3e5) == "6.1 days" and format_duration(42) == "42 s"
