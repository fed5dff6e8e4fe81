"""The audit's resources and its command line: memory bounded whatever --samples is, a
progress bar on request, its defaults in dpauc_tf.core.defaults (issue 21)."""

import argparse
import ast
import importlib.util
import inspect
import pathlib
import tracemalloc

import pytest

from dpauc_tf.analysis import audit, audit_cli
from dpauc_tf.analysis.audit import run_audit
from dpauc_tf.core import defaults
from dpauc_tf.mechanisms.histogram import HistogramLaplace

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow_federated") is not None,
    reason="world-independent; runs in the keras3 world",
)

# 2^22 float64 values (32 MiB): the most one call may draw (a bound that does not depend on
# --samples; the audit used to draw 100,000 releases at once whatever their size).
MAX_VALUES_PER_CALL = 2**22


class RecordingHistogram(HistogramLaplace):
    """The honest histogram mechanism, recording how many values each release call draws."""

    calls: list

    def release(self, pos, neg, seed=None, repeats=None):
        out = super().release(pos, neg, seed=seed, repeats=repeats)
        self.calls.append(sum(int(v.shape.num_elements()) for v in out.values()))
        return out


def _recorded(samples, num_thresholds=1023):
    mechanism = RecordingHistogram(epsilon=1.0, num_thresholds=num_thresholds)
    mechanism.calls = []
    result = run_audit(mechanism, samples=samples, seed=0)
    return result, mechanism.calls


def test_releases_are_drawn_in_chunks_of_bounded_size():
    """T = 1023: 2,048 values per release; 10,000 releases per neighbour used to be drawn
    as one chunk of 8,000 (16M values); now no call draws more than 2^22 values."""
    result, calls = _recorded(10_000)
    assert max(calls) <= MAX_VALUES_PER_CALL
    assert sum(calls) >= 2 * 10_000 * 2 * 1024  # every release was drawn
    assert not result.violated and result.epsilon_lower_bound > 0.5


def _numpy_peak(samples):
    mechanism = HistogramLaplace(epsilon=1.0, num_thresholds=1023)
    tracemalloc.start()
    try:
        run_audit(mechanism, samples=samples, seed=0)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_working_memory_does_not_grow_with_samples():
    """Peak of the audit's arrays at 5,000 and at 20,000 releases per neighbour: only the
    selection's statistics grow (32 bytes per selection release: 0.1 MB here). Before the
    fix, the chunks grew with --samples (about 200 MB more at 20,000)."""
    grown = _numpy_peak(20_000) - _numpy_peak(5_000)
    assert grown < 8 * 2**20, f"peak grew by {grown / 2**20:.1f} MiB"


def test_chunk_rows_bound():
    assert audit.chunk_rows(1) == 100_000
    assert audit.chunk_rows(2**22) == 1
    assert audit.chunk_rows(10**8) == 1  # one release when a release alone is larger
    for values in (6, 2_730, 20_004, 10**6):
        assert audit.chunk_rows(values) * values <= max(values, audit.MAX_CHUNK_VALUES)


# -- the command line: progress ---------------------------------------------------------------
def _cli(argv):
    parser = argparse.ArgumentParser()
    audit_cli.register_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


BASE = ["audit", "--mechanism", "histogram", "--epsilon", "1", "--samples", "2000", "--seed", "0"]


def test_progress_bar_on_request_only(capsys):
    assert _cli([*BASE, "--progress", "on"]) == 0
    assert "audit histogram" in capsys.readouterr().err
    for flags in ([], ["--progress", "off"], ["--no-progress"], ["--progress", "auto"]):
        assert _cli([*BASE, *flags]) == 0  # stderr is not a terminal under pytest
        assert capsys.readouterr().err == "", flags


def test_dpauc_audit_help_lists_the_progress_flags(capsys):
    from dpauc_tf.cli.main import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["audit", "--help"])
    out = capsys.readouterr().out
    assert "--progress {auto,on,off}" in out and "--no-progress" in out


# -- defaults: no import circle ---------------------------------------------------------------
def _imported_modules(module) -> set[str]:
    tree = ast.parse(pathlib.Path(inspect.getfile(module)).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_audit_takes_its_defaults_from_core_defaults():
    """audit.py and audit_pairs.py used to import their defaults from audit_cli (which imports
    the command line's formats): the library imported its own command line."""
    from dpauc_tf.analysis import audit_pairs

    for module in (audit, audit_pairs):
        imported = _imported_modules(module)
        assert not any(name.startswith("dpauc_tf.cli") for name in imported), module
        assert "dpauc_tf.analysis.audit_cli" not in imported, module
    signature = inspect.signature(run_audit).parameters
    assert signature["samples"].default == defaults.DEFAULT_AUDIT_SAMPLES == 4_000_000
    assert signature["num_thresholds"].default == defaults.DEFAULT_AUDIT_NUM_THRESHOLDS == 2
    # The audit's grid default is its own, not the metric's 200.
    assert defaults.DEFAULT_NUM_THRESHOLDS == 200
    # 0.2 names stay importable from audit_cli.
    assert audit_cli.DEFAULT_SAMPLES == defaults.DEFAULT_AUDIT_SAMPLES
    assert audit_cli.DEFAULT_NUM_THRESHOLDS == defaults.DEFAULT_AUDIT_NUM_THRESHOLDS
