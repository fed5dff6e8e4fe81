import json

import dp_accounting
import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import DPAUC, BudgetExceededError, DPAUCBudgetCallback, PrivacyLedger


def test_ledger_composes_per_dataset_and_refuses_past_the_budget():
    ledger = PrivacyLedger(budget=1.0)
    event = dp_accounting.LaplaceDpEvent(noise_multiplier=4.0)  # epsilon 0.25
    for _ in range(4):
        ledger.record(event, dataset="a")
    ledger.record(event, dataset="b")
    assert ledger.spent("a").basic == pytest.approx(1.0)
    assert ledger.remaining("b") == pytest.approx(0.75)
    with pytest.raises(BudgetExceededError, match=r"would spend epsilon 1\.25"):
        ledger.record(event, dataset="a")
    assert ledger.releases("a") == 4  # the refused release is not recorded


def test_ledger_refuses_non_private_releases_under_a_budget():
    ledger = PrivacyLedger(budget=10.0)
    with pytest.raises(BudgetExceededError):
        ledger.record(dp_accounting.NonPrivateDpEvent(), dataset="a")


def test_ledger_uses_tight_composition_with_delta():
    ledger = PrivacyLedger(budget=0.5, delta=1e-6)
    event = dp_accounting.LaplaceDpEvent(noise_multiplier=100.0)
    for _ in range(100):  # basic 1.0 would exceed the budget; PLD gives about 0.39
        ledger.record(event, dataset="a")
    assert ledger.spent("a").basic == pytest.approx(1.0)
    assert ledger.spent("a").best < 0.45


def test_ledger_survives_a_restart(tmp_path):
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger(budget=1.0, path=str(path))
    ledger.record(dp_accounting.LaplaceDpEvent(noise_multiplier=2.0), dataset="test")
    state = json.loads(path.read_text())
    assert len(state["entries"]) == 1
    again = PrivacyLedger(budget=1.0, path=str(path))
    assert again.spent("test").basic == pytest.approx(0.5)
    with pytest.raises(BudgetExceededError):
        again.record(dp_accounting.LaplaceDpEvent(noise_multiplier=1.0), dataset="test")
    assert not list(tmp_path.glob("*.tmp"))


def _model():
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [tf.keras.Input((3,)), tf.keras.layers.Dense(1, activation="sigmoid")]
    )
    model.compile(
        "adam",
        "binary_crossentropy",
        metrics=[DPAUC(epsilon=0.25, num_thresholds=50, seed=0, name="dp_auc")],
    )
    return model


def _xy(n=512):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype("float32")
    return x, (x[:, 0] > 0).astype("float32")


def test_callback_charges_published_values_only():
    x, y = _xy()
    ledger = PrivacyLedger()
    model = _model()
    callback = DPAUCBudgetCallback(ledger)
    model.fit(
        x, y, epochs=3, batch_size=64, verbose=0, validation_data=(x, y), callbacks=[callback]
    )
    assert ledger.releases("train") == 3  # one per epoch, not one per batch
    assert ledger.releases("validation") == 3
    model.evaluate(x, y, verbose=0, callbacks=[callback])
    assert ledger.releases("evaluation") == 1
    assert ledger.spent("train").basic == pytest.approx(0.75)


def test_callback_stops_training_and_withholds_the_value_past_the_budget():
    x, y = _xy()
    ledger = PrivacyLedger(budget=0.5)
    model = _model()
    with pytest.raises(BudgetExceededError):
        model.fit(x, y, epochs=5, verbose=0, callbacks=[DPAUCBudgetCallback(ledger)])
    assert ledger.releases("train") == 2
    assert len(model.history.history.get("dp_auc", [])) <= 2


def test_ledger_cannot_be_reopened_with_a_larger_budget_and_cleans_stale_temp_files(tmp_path):
    path = tmp_path / "ledger.json"
    PrivacyLedger(budget=1.0, path=str(path)).record(
        dp_accounting.LaplaceDpEvent(noise_multiplier=2.0), dataset="test"
    )
    with pytest.raises(ValueError, match="larger budget"):
        PrivacyLedger(budget=5.0, path=str(path))
    (tmp_path / "ledger.json123.tmp").write_text("{")
    reopened = PrivacyLedger(path=str(path))
    assert reopened.budget == 1.0 and reopened.spent("test").basic == pytest.approx(0.5)
    assert not list(tmp_path.glob("*.tmp"))


def test_discrete_noise_releases_compose_by_the_basic_sum_only():
    from dpauc_tf.mechanisms import get_mechanism

    ledger = PrivacyLedger(delta=1e-6)
    continuous = get_mechanism("histogram", epsilon=0.01, num_thresholds=10)
    discrete = get_mechanism("histogram", epsilon=0.01, num_thresholds=10, noise="discrete")
    for _ in range(100):
        ledger.record_release(continuous, dataset="continuous")
        ledger.record_release(discrete, dataset="discrete")
    assert ledger.spent("continuous").best < 0.45  # PLD: about 0.39
    assert ledger.spent("discrete").best == pytest.approx(1.0)  # no PLD shortcut
    ledger.record_release(continuous, dataset="mixed")
    ledger.record_release(discrete, dataset="mixed")
    assert ledger.spent("mixed").basic == pytest.approx(0.02)
