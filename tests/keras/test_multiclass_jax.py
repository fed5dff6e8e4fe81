"""DPMultiClassAUC on Keras 3's JAX backend (one subprocess runs multiclass_jax_checks.py).
Skipped without jax or Keras 3."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.jax import run_jax_script, skip_without_jax_and_keras3

skip_without_jax_and_keras3()

SCRIPT = Path(__file__).with_name("multiclass_jax_checks.py")


@pytest.fixture(scope="module")
def checks() -> dict:
    out = run_jax_script(SCRIPT)
    assert out["backend"] == "jax"
    return out


def _check(checks, name):
    result = checks[name]
    assert not (isinstance(result, dict) and "error" in result), result
    return result


def test_eager_macro_equals_keras_multi_label_auc(checks):
    run = _check(checks, "eager")
    assert abs(run["one_hot"] - run["keras"]) < 1e-6
    assert abs(run["ids"] - run["keras"]) < 1e-6
    assert "class ids must be integers" in run["refused"]


@pytest.mark.parametrize("name", ["fit_jit", "fit_no_jit"])
def test_fit_noise_off_equals_keras_and_noisy_is_a_release(checks, name):
    history = _check(checks, name)
    for prefix in ("", "val_"):
        for ours, keras_value in zip(history[prefix + "mc"], history[prefix + "auc"], strict=True):
            assert abs(ours - keras_value) < 1e-6
        assert all(0.0 <= value <= 1.0 for value in history[prefix + "noisy"])


def test_num_classes_inferred_eagerly_equals_given(checks):
    run = _check(checks, "inferred_eager")
    assert abs(run["inferred"] - run["given"]) < 1e-12
    assert run["noisy"] == run["noisy_given"]  # same seed, same counts: the same release
    assert run["num_classes"] == 4 and run["config_classes"] == 4
    assert run["early_epsilon"] == 1.0 and "C = not known" in run["early_noise"]
    assert "(the same C in every batch)" in run["refused"]


@pytest.mark.parametrize("name", ["fit_inferred_jit", "fit_inferred_no_jit"])
def test_fit_with_num_classes_inferred(checks, name):
    test_fit_noise_off_equals_keras_and_noisy_is_a_release(checks, name)
