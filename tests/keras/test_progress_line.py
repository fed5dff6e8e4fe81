"""The progress line tells the truth (issue 23): in ``fit`` with validation data, the
epoch-end training and validation values (History and the printed line) are each that data
set's own release; per-batch values show nothing of another data set or epoch;
``release_on_train=False`` releases (and spends) nothing on the training labels."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import DPAUC, DPAUCBudgetCallback, PrivacyLedger

N_TRAIN, N_VAL, EPOCHS = 384, 160, 3


def _data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype("float32")
    y = (x[:, :1] + 0.5 * rng.normal(size=(n, 1)) > 0).astype("float32")
    return x, y


def _fit(verbose, capsys, monkeypatch, **options):
    """Runs fit; returns History, the printed text and every release drawn as
    ``(examples counted, value)``."""
    metric = DPAUC(epsilon=2.0, num_thresholds=20, seed=0, **options)
    drawn = []
    original = DPAUC.release

    @tf.autograph.experimental.do_not_convert  # Keras 2 would turn float() into a cast
    def spying_release(self):
        pos, neg = self.counts()
        value = float(original(self))
        drawn.append((round(float(pos.sum() + neg.sum())), value))
        return self._output(value)

    monkeypatch.setattr(DPAUC, "release", spying_release)
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1, "sigmoid")])
    model.compile("sgd", "binary_crossentropy", metrics=[metric])
    ledger = PrivacyLedger(budget=100.0)
    per_batch = []

    class Spy(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            per_batch.append(float(logs["dp_auc"]))

        def on_test_batch_end(self, batch, logs=None):
            per_batch.append(float(logs["dp_auc"]))

    capsys.readouterr()
    history = model.fit(
        *_data(N_TRAIN, 0),
        batch_size=64,
        epochs=EPOCHS,
        verbose=verbose,
        validation_data=_data(N_VAL, 1),
        callbacks=[Spy(), DPAUCBudgetCallback(ledger)],
    )
    printed = capsys.readouterr().out
    return history.history, printed, drawn, per_batch, ledger


def _printed(printed, column):
    """The values the progress output shows for ``column`` (``dp_auc`` or ``val_dp_auc``)."""
    pattern = rf"(?<![A-Za-z_]){column}: ([-+0-9.e]+|nan)"
    return [float(v) for v in re.findall(pattern, printed)]


@pytest.mark.parametrize("verbose", [1, 2])
def test_each_column_is_its_own_data_sets_release(verbose, capsys, monkeypatch):
    history, printed, drawn, per_batch, ledger = _fit(verbose, capsys, monkeypatch)
    # train, validation, train, validation, ...: each release counted its own data set
    assert [examples for examples, _ in drawn] == [N_TRAIN, N_VAL] * EPOCHS
    train, val = [v for _, v in drawn[0::2]], [v for _, v in drawn[1::2]]
    assert history["dp_auc"] == pytest.approx(train)
    assert history["val_dp_auc"] == pytest.approx(val)
    assert all(math.isnan(v) for v in per_batch)  # nothing released yet, per batch
    shown_train, shown_val = _printed(printed, "dp_auc"), _printed(printed, "val_dp_auc")
    assert len(shown_val) == EPOCHS  # one epoch-end line (or final update) per epoch
    assert shown_val == pytest.approx(val, abs=1e-4)
    # every printed training value is this epoch's training release or "nan" (per batch)
    finals = [v for v in shown_train if not math.isnan(v)]
    assert finals == pytest.approx(train, abs=1e-4)
    assert not any(v == pytest.approx(w, abs=1e-4) for v in finals for w in val if v != w)
    assert ledger.releases("train") == EPOCHS and ledger.releases("validation") == EPOCHS


def test_release_on_train_false_spends_only_on_validation(capsys, monkeypatch):
    history, printed, drawn, _, ledger = _fit(2, capsys, monkeypatch, release_on_train=False)
    assert [examples for examples, _ in drawn] == [N_VAL] * EPOCHS
    assert all(math.isnan(v) for v in history["dp_auc"])
    assert history["val_dp_auc"] == pytest.approx([v for _, v in drawn])
    assert ledger.releases("train") == 0 and ledger.releases("validation") == EPOCHS
    assert all(math.isnan(v) for v in _printed(printed, "dp_auc"))
    assert _printed(printed, "val_dp_auc") == pytest.approx([v for _, v in drawn], abs=1e-4)


def test_release_on_train_false_still_releases_in_evaluate():
    metric = DPAUC(epsilon=1.0, num_thresholds=10, seed=0, release_on_train=False)
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1, "sigmoid")])
    model.compile("sgd", "binary_crossentropy", metrics=[metric])
    value = model.evaluate(*_data(N_VAL, 1), verbose=0, return_dict=True)["dp_auc"]
    assert metric.releases_drawn == 1 and not math.isnan(value)
    metric.update_state([0, 1], [0.2, 0.7])
    assert not math.isnan(float(metric.result()))  # outside fit: a release, as ever
    assert DPAUC.from_config(metric.get_config()).release_on_train is False
