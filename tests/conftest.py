"""Test-session hooks shared by the whole suite."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers.criteo import COMBINED_FILE


@pytest.fixture(scope="session")
def criteo_combined_file() -> Path:
    """The combined file of real Criteo rows; the test is skipped where it is absent."""
    if not COMBINED_FILE.is_file():
        pytest.skip(f"real Criteo rows not available ({COMBINED_FILE})")
    return COMBINED_FILE


@pytest.fixture(scope="session", autouse=True)
def _shutdown_tff_workers_at_session_end():
    """Stops TFF's worker_binary after the session, if any test imported TFF.

    Never imports TFF itself (the keras3 world has none): it only looks in ``sys.modules``.
    """
    yield
    if "tensorflow_federated" in sys.modules:
        from dpauc_tf.federated.process import shutdown_tff_workers

        shutdown_tff_workers()
