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
    header, *entries = [json.loads(line) for line in path.read_text().splitlines()]
    assert header["budget"] == 1.0 and len(entries) == 1
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
    callback = DPAUCBudgetCallback(ledger)
    history = model.fit(x, y, epochs=5, verbose=0, callbacks=[callback])
    assert ledger.releases("train") == 2
    values = history.history["dp_auc"]  # two releases, then the withheld value (NaN)
    assert len(values) == 3 and np.isnan(values[2]) and not np.isnan(values[:2]).any()
    assert isinstance(callback.refusal, BudgetExceededError)


def test_ledger_cannot_be_reopened_with_a_larger_budget(tmp_path):
    path = tmp_path / "ledger.json"
    PrivacyLedger(budget=1.0, path=str(path)).record(
        dp_accounting.LaplaceDpEvent(noise_multiplier=2.0), dataset="test"
    )
    with pytest.raises(ValueError, match="larger budget"):
        PrivacyLedger(budget=5.0, path=str(path))
    reopened = PrivacyLedger(path=str(path))
    assert reopened.budget == 1.0 and reopened.spent("test").basic == pytest.approx(0.5)
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_evaluate_after_a_refused_fit_is_charged():
    x, y = _xy()
    ledger = PrivacyLedger(budget=0.5)
    model = _model()
    callback = DPAUCBudgetCallback(ledger)
    model.fit(x, y, epochs=5, verbose=0, callbacks=[callback])
    assert callback.refusal is not None  # stopped by the budget
    model.evaluate(x, y, verbose=0, callbacks=[callback])
    assert ledger.releases("evaluation") == 1


class _Interrupt(tf.keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        raise KeyboardInterrupt


def test_evaluate_after_an_interrupted_fit_is_charged():
    x, y = _xy()
    ledger = PrivacyLedger()
    model = _model()
    callback = DPAUCBudgetCallback(ledger)
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, epochs=2, verbose=0, callbacks=[callback, _Interrupt()])
    model.evaluate(x, y, verbose=0, callbacks=[callback])
    model.evaluate(x, y, verbose=0, callbacks=[callback])
    assert ledger.releases("evaluation") == 2 and ledger.releases("train") == 0


def test_discrete_noise_releases_compose_by_the_discrete_pld():
    from dpauc_tf.mechanisms import get_mechanism

    ledger = PrivacyLedger(delta=1e-6)
    continuous = get_mechanism("histogram", epsilon=0.01, num_thresholds=10)
    discrete = get_mechanism("histogram", epsilon=0.01, num_thresholds=10, noise="discrete")
    for _ in range(100):
        ledger.record_release(continuous, dataset="continuous")
        ledger.record_release(discrete, dataset="discrete")
    assert ledger.spent("continuous").best < 0.45  # PLD: about 0.39
    # the exact discrete-Laplace PLD: a flip moves two counts by one each
    from dp_accounting.pld import privacy_loss_distribution

    exact = privacy_loss_distribution.from_discrete_laplace_mechanism(0.005).self_compose(200)
    discrete_spent = ledger.spent("discrete")
    assert discrete_spent.method == "pld" and discrete_spent.basic == pytest.approx(1.0)
    # an upper bound: read at delta (1 - 1e-3), past the FFT's round-off (docs/accounting.md)
    figure = exact.get_epsilon_for_delta(1e-6)
    assert figure <= discrete_spent.best <= figure * (1 + 1e-3)
    ledger.record_release(continuous, dataset="mixed")
    ledger.record_release(discrete, dataset="mixed")
    assert ledger.spent("mixed").basic == pytest.approx(0.02)


def _delta_model():
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [tf.keras.Input((3,)), tf.keras.layers.Dense(1, activation="sigmoid")]
    )
    metric = DPAUC(epsilon=1.0, delta=1e-6, seed=0, name="dp_auc")  # auc-only: (eps, delta)
    model.compile("adam", "binary_crossentropy", metrics=[metric])
    return model, metric


@pytest.mark.parametrize("call", ["fit", "evaluate"])
def test_a_ledger_without_delta_refuses_delta_releases_naming_delta(call):
    """The README's DPAUC(delta=...) with a ledger of no delta: refused before the first step
    in one line that names delta and what to do (issue 21: it said "epsilon inf")."""
    x, y = _xy()
    model, metric = _delta_model()
    ledger = PrivacyLedger(budget=10.0)
    with pytest.raises(BudgetExceededError) as refused:
        if call == "fit":
            model.fit(x, y, epochs=2, verbose=0, callbacks=[DPAUCBudgetCallback(ledger)])
        else:
            model.evaluate(x, y, verbose=0, callbacks=[DPAUCBudgetCallback(ledger)])
    message = str(refused.value)
    assert "delta 1e-06" in message and "ledger's delta 0" in message and "\n" not in message
    assert "PrivacyLedger(budget=..., delta=" in message
    assert metric.releases_drawn == 0 and len(ledger.entries) == 0


def test_a_refusal_once_the_deltas_fill_the_ledger_names_delta():
    x, y = _xy()
    model, metric = _delta_model()
    ledger = PrivacyLedger(budget=10.0, delta=2.5e-6)  # two releases' deltas fit, not three
    callback = DPAUCBudgetCallback(ledger)
    model.fit(x, y, epochs=5, verbose=0, callbacks=[callback])
    message = str(callback.refusal)  # training stopped at the third release
    assert "delta 1e-06 each" in message and "ledger's delta 2.5e-06" in message
    assert "\n" not in message
    assert ledger.releases("train") == 2 and metric.releases_drawn == 2
