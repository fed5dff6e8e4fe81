"""The parity cases (``parity_cases.py``) on Keras 3's JAX backend: one subprocess with
``KERAS_BACKEND=jax`` runs them against ``keras.metrics.AUC``. Skipped without jax or
Keras 3."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.jax import run_jax_script, skip_without_jax_and_keras3
from tests.keras import parity_cases

skip_without_jax_and_keras3()


@pytest.fixture(scope="module")
def report() -> dict:
    out = run_jax_script(Path(parity_cases.__file__))
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
