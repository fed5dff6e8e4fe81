"""DPAUC on Keras 3's JAX backend. ``KERAS_BACKEND`` must be set before Keras is imported,
so one subprocess runs ``jax_backend_checks.py`` (every check, one import of TensorFlow, JAX
and Keras) and these tests assert on the JSON it prints. Skipped without jax or Keras 3."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.helpers.jax import run_jax_script, skip_without_jax_and_keras3

skip_without_jax_and_keras3()

SCRIPT = Path(__file__).with_name("jax_backend_checks.py")


@pytest.fixture(scope="module")
def checks() -> dict:
    out = run_jax_script(SCRIPT)
    assert out["backend"] == "jax"
    print({key: round(value, 1) for key, value in out.items() if key.endswith("seconds")})
    return out


def _check(checks: dict, name: str):
    result = checks[name]
    assert not (isinstance(result, dict) and "error" in result), result.get("error")
    return result


@pytest.mark.parametrize("jit", ["fit_jit", "fit_no_jit"])
def test_fit_and_evaluate_noise_off_equal_keras_auc(checks, jit):
    """Sample weights, validation, evaluate: DPAUC(epsilon=None) equals keras.metrics.AUC."""
    run = _check(checks, jit)
    history = run["history"]
    for key in ("exact", "val_exact"):
        auc = history[key.replace("exact", "auc")]
        assert history[key] == pytest.approx(auc, abs=1e-6)
    assert run["evaluate"]["exact"] == pytest.approx(run["evaluate"]["auc"], abs=1e-6)
    for row in run["per_batch"]:  # the noise-free value is live in every step
        assert row["exact"] == pytest.approx(row["auc"], abs=1e-6)


@pytest.mark.parametrize("jit", ["fit_jit", "fit_no_jit"])
def test_releases_are_the_published_values_only(checks, jit):
    """One release per epoch-end training value, per validation value, per evaluate; the
    per-batch values are NaN (reset_state forgets the last release): no value of another
    data set, no uncounted release, and the budget callback charges each release."""
    run = _check(checks, jit)
    epochs = len(run["epoch_values"])
    assert run["releases_after_fit"] == 2 * epochs
    assert run["ledger_entries"] == 2 * epochs
    assert run["releases_after_evaluate"] == 2 * epochs + 1
    history = run["history"]
    assert history["noisy"] == pytest.approx(run["epoch_values"])
    # per batch: NaN, never the previous epoch's validation release (issue 23)
    assert run["per_batch"] and all(math.isnan(row["noisy"]) for row in run["per_batch"])
    noisy = run["evaluate"]["noisy"]
    assert 0.0 <= noisy <= 1.0 and noisy != run["evaluate"]["auc"]
    assert run["released_value"] == pytest.approx(noisy, abs=1e-6)


def test_keras_file_reloads_with_the_metric(checks):
    reload = _check(checks, "fit_jit")["reload"]
    assert reload["type"] == "DPAUC" and reload["same_config"]  # seed 0 included
    got = reload["evaluate"]
    assert got["exact"] == pytest.approx(got["auc"], abs=1e-6)
    assert 0.0 <= got["noisy"] <= 1.0 and got["noisy"] != got["auc"]


def test_every_option_equals_keras_auc_with_noise_off(checks):
    rows = _check(checks, "options")
    assert len(rows) == 13  # with (N, 3) and (N, 1) multi-label weights, (N, 1, 1) scores
    for row in rows:
        assert row["dpauc"] == pytest.approx(row["keras"], abs=1e-6), row


def test_keras_ops_buckets_equal_tensorflow_buckets(checks):
    rows = _check(checks, "buckets")
    assert {row["grid"] for row in rows} == {"tf", "reference", "keras"}
    assert all(row["equal"] for row in rows), rows


def test_counts_past_2_24_stay_exact_without_float64(checks):
    wide = _check(checks, "wide")
    assert not checks["x64"]  # JAX's default: no float64
    pos, neg = wide["expected"]
    assert wide["counts"] == [pos, neg]  # a float32 count would stop at 2^24 + 8
    assert wide["result"] == 1.0


def test_noise_is_the_mechanisms_and_the_seed_replays_it(checks):
    noise = _check(checks, "noise")
    assert noise["values"][0] == noise["values"][1]  # same seed, same counts: same value
    assert noise["first_release"] == pytest.approx(noise["library"], abs=1e-12)
    assert noise["second"] != noise["values"][1] and noise["releases"] == 2
    assert noise["spread_distinct"] == 60  # every eager result() is a fresh release
    # the releases' spread is the mechanism's: a halved or doubled noise scale fails
    assert noise["spread_std"] == pytest.approx(noise["library_std"], rel=0.35)
    error = abs(noise["spread_mean"] - noise["exact"])
    assert error < 4 * noise["spread_std"] / math.sqrt(60) + 1e-3


def test_bad_batches_raise_eagerly_and_give_nan_under_jit(checks):
    bad = _check(checks, "bad")
    assert bad["label"] == "DPAUC: labels must be 0 or 1."
    assert "in [0, 1]" in bad["score"] and "in [0, 1]" in bad["nan"]
    assert "sample weights must be in [0, 1]" in bad["weight"]
    assert "sample weights of 1 only" in bad["unit_weight"] and "class_weight" in bad["unit_weight"]
    assert "more than one value per example" in bad["one_hot"]
    assert "more than one value per example" in bad["two_by_one"]
    assert "[N], [N, 1] or [N, 2]" in bad["label_weights"]
    assert math.isnan(bad["jit_result"])


@pytest.mark.parametrize("mode", ["jit", "run_eagerly"])
def test_a_refused_release_reaches_no_one(checks, mode):
    """Refused training, validation and evaluate values: no callback listed before the budget
    callback, CSV file, History, progress bar or later step shows them (issue 21)."""
    run = _check(checks, "refusal")[mode]
    assert run["refused"] == ["train", "validation", "evaluation"]
    assert run["problems"] == []
    assert run["csv_rows"] > 0
