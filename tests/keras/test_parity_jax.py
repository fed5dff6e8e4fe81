"""The parity cases (``parity_cases.py``) on Keras 3's JAX backend: one subprocess with
``KERAS_BACKEND=jax`` runs them against ``keras.metrics.AUC``. Skipped without jax or
Keras 3."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "parity_cases", Path(__file__).with_name("parity_cases.py")
)
parity_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(parity_cases)

if importlib.util.find_spec("jax") is None:
    pytest.skip('jax is not installed (pip install "dpauc-tf[jax]")', allow_module_level=True)
if int(importlib.metadata.version("keras").split(".")[0]) < 3:
    pytest.skip("the JAX backend needs Keras 3", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def report() -> dict:
    env = {
        **os.environ,
        "KERAS_BACKEND": "jax",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(Path(parity_cases.__file__))],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["backend"] == "jax" and out["prgain"]
    return out


@pytest.mark.parametrize("name", sorted(parity_cases.cases(prgain=True)))
def test_equals_keras_auc_on_jax(report, name):
    result = report["values"][name]
    assert not isinstance(result, dict), result["error"]
    theirs, ours = result
    assert ours == pytest.approx(theirs, abs=1e-6, nan_ok=True)


@pytest.mark.parametrize("argument", ["curve", "summation_method", "num_thresholds"])
def test_invalid_arguments_raise_value_error_on_jax(report, argument):
    kind, message = report["errors"][argument]
    assert kind == "ValueError" and f"`{argument}`" in message


def test_fit_on_jax_inferred_labels_and_own_releases(report):
    fit = report["fit"]
    inferred = fit["inferred"]
    assert inferred["dp"] == pytest.approx(inferred["auc"], abs=1e-6)
    assert inferred["val_dp"] == pytest.approx(inferred["val_auc"], abs=1e-6)
    assert fit["per_batch_all_nan"]
    drawn = fit["drawn"]
    assert [examples for examples, _ in drawn] == [256, 96, 256, 96]
    assert fit["noisy_history"]["dp_auc"] == pytest.approx([v for _, v in drawn[0::2]])
    assert fit["noisy_history"]["val_dp_auc"] == pytest.approx([v for _, v in drawn[1::2]])
