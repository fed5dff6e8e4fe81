"""The audit's resources and its command line: memory bounded whatever --samples is, a
progress bar on request, its defaults in dpauc_tf.core.defaults (issue 21)."""

import argparse
import ast
import importlib.util
import inspect
import pathlib
import tracemalloc

import pytest

from dpauc_tf.analysis import audit
from dpauc_tf.analysis.audit import run_audit
from dpauc_tf.cli import audit as audit_cli
from dpauc_tf.core import defaults
from dpauc_tf.mechanisms.histogram import HistogramLaplace

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow_federated") is not None,
    reason="world-independent; runs in the keras3 world",
)

# The audit draws at most audit.MAX_CHUNK_VALUES values per call (2^22, 32 MiB of float64),
# a bound that does not depend on --samples; it used to draw up to 100,000 releases at once
# whatever their size. The tests lower the cap to 2^18 to stay fast (raising=False: the
# former code had no cap, and then fails the assertions, not the set-up).
SMALL_CAP = 2**18


class RecordingHistogram(HistogramLaplace):
    """The honest histogram mechanism, recording how many values each release call draws."""

    calls: list

    def release(self, pos, neg, seed=None, repeats=None):
        out = super().release(pos, neg, seed=seed, repeats=repeats)
        self.calls.append(sum(int(v.shape.num_elements()) for v in out.values()))
        return out


def test_releases_are_drawn_in_chunks_of_bounded_size(monkeypatch):
    """T = 255: 512 values per release; 4,000 releases per neighbour used to be drawn in
    chunks of 800 and 3,200 (1.6M values); no call may draw more than the cap."""
    monkeypatch.setattr(audit, "MAX_CHUNK_VALUES", SMALL_CAP, raising=False)
    mechanism = RecordingHistogram(epsilon=1.0, num_thresholds=255)
    mechanism.calls = []
    result = run_audit(mechanism, samples=4_000, seed=0)
    assert max(mechanism.calls) <= SMALL_CAP
    assert sum(mechanism.calls) >= 2 * 4_000 * 512  # every release was drawn
    assert not result.violated and result.epsilon_lower_bound > 0.3


def _numpy_peak(samples):
    mechanism = HistogramLaplace(epsilon=1.0, num_thresholds=255)
    tracemalloc.start()
    try:
        run_audit(mechanism, samples=samples, seed=0)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_working_memory_does_not_grow_with_samples(monkeypatch):
    """Peak of the audit's arrays at 2,000 and at 8,000 releases per neighbour (T = 255):
    only the selection's statistics grow (64 bytes per selection release at the peak: 77 kB
    here). Before the fix the chunks grew with --samples (38 MiB more at 8,000)."""
    monkeypatch.setattr(audit, "MAX_CHUNK_VALUES", SMALL_CAP, raising=False)
    grown = _numpy_peak(8_000) - _numpy_peak(2_000)
    assert grown < 2 * 2**20, f"peak grew by {grown / 2**20:.1f} MiB"


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
        assert "dpauc_tf.cli.audit" not in imported, module
    signature = inspect.signature(run_audit).parameters
    assert signature["samples"].default == defaults.DEFAULT_AUDIT_SAMPLES == 4_000_000
    assert signature["num_thresholds"].default == defaults.DEFAULT_AUDIT_NUM_THRESHOLDS == 2
    # The audit's grid default is its own, not the metric's 200.
    assert defaults.DEFAULT_NUM_THRESHOLDS == 200


def test_selection_is_capped(monkeypatch):
    """The selection's statistics are kept (32 bytes per release of both neighbours), so
    their number is capped: past MAX_SELECTION_SAMPLES the other releases evaluate."""
    assert audit.MAX_SELECTION_SAMPLES == 2**22
    monkeypatch.setattr(audit, "MAX_SELECTION_SAMPLES", 300)
    result = run_audit("histogram", epsilon=1.0, samples=4_000, seed=0)
    assert result.evaluation_samples == 4_000 - 300
    assert not result.violated and result.epsilon_lower_bound > 0.3
