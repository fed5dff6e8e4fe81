"""Keras 3's JAX backend: ``KERAS_BACKEND`` must be set before Keras is imported, so each JAX
test file runs one script in a subprocess and asserts on the JSON it prints last."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def skip_without_jax_and_keras3() -> None:
    """At module level: skips the whole file without jax or Keras 3."""
    if importlib.util.find_spec("jax") is None:
        pytest.skip('jax is not installed (pip install "dpauc-tf[jax]")', allow_module_level=True)
    if int(importlib.metadata.version("keras").split(".")[0]) < 3:
        pytest.skip("the JAX backend needs Keras 3", allow_module_level=True)


def run_jax_script(script: Path, timeout: int = 900) -> dict:
    """Runs ``script`` with ``KERAS_BACKEND=jax`` from the repository root; returns the JSON of
    its last line of output (the run must succeed)."""
    env = {
        **os.environ,
        "KERAS_BACKEND": "jax",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
