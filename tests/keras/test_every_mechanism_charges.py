"""Every private mechanism that can be a Keras metric is charged by DPAUCBudgetCallback.

The mechanisms are read from the registry, so a new one is covered without editing this
file; their events must be storable in the ledger (JSON) and give a finite epsilon.
"""

import math

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import DPAUC, DPAUCBudgetCallback, PrivacyLedger
from dpauc_tf.mechanisms.registry import get_mechanism, list_mechanisms, mechanism_class

DELTA = 1e-6
KERAS_MECHANISMS = list_mechanisms(private=True, keras_metric=True)


def _delta_for(name):
    # A quarter of the ledger's delta: two releases of a mechanism whose delta is spent by
    # basic composition (auc-only's bound) must still fit in the ledger's delta.
    return DELTA / 4 if mechanism_class(name).requires_delta else None


def _data(n=256):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(n, 3)).astype("float32")
    return x, (x[:, 0] + 0.5 * rng.normal(size=n) > 0).astype("float32")


def test_the_registry_lists_the_mechanisms_this_test_covers():
    assert {"histogram", "tree-histogram", "secure-tree-histogram", "rr", "auc-only"} <= set(
        KERAS_MECHANISMS
    )


@pytest.mark.parametrize("name", KERAS_MECHANISMS)
def test_fit_charges_one_release_of_every_keras_mechanism(name, tmp_path):
    tf.keras.utils.set_random_seed(0)
    metric = DPAUC(epsilon=1.0, num_thresholds=15, mechanism=name, delta=_delta_for(name), seed=0)
    model = tf.keras.Sequential(
        [tf.keras.Input((3,)), tf.keras.layers.Dense(1, activation="sigmoid")]
    )
    model.compile("adam", "binary_crossentropy", metrics=[metric], jit_compile=False)
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger(budget=100.0, delta=DELTA, path=str(path))
    x, y = _data()
    model.fit(
        x,
        y,
        epochs=1,
        batch_size=64,
        verbose=0,
        validation_data=(x, y),
        callbacks=[DPAUCBudgetCallback(ledger)],
    )
    assert ledger.releases("train") == 1 and ledger.releases("validation") == 1
    expected = metric.mechanism.privacy_spent(1, DELTA)
    for dataset in ("train", "validation"):
        assert ledger.events(dataset) == [metric.mechanism.dp_event()]
        spent = ledger.spent(dataset)
        assert math.isfinite(spent.best) and spent.best > 0
        assert spent.best == pytest.approx(expected.best, rel=1e-9)
    reopened = PrivacyLedger(path=str(path))  # and from disk
    assert reopened.spent("train") == ledger.spent("train")


def _every_mechanism():
    """Every registered mechanism, secure ones in both noise families."""
    out = []
    for name in list_mechanisms():
        if name == "none":
            out.append((name, get_mechanism(name, epsilon=None, num_thresholds=15)))
            continue
        out.append(
            (name, get_mechanism(name, epsilon=1.0, num_thresholds=15, delta=_delta_for(name)))
        )
        if name in list_mechanisms(secure=True):
            skellam = get_mechanism(name, epsilon=1.0, num_thresholds=15, delta=DELTA)
            assert skellam.family == "skellam"
            out.append((name + "/skellam", skellam))
    discrete = get_mechanism("histogram", epsilon=1.0, num_thresholds=15, noise="discrete")
    out.append(("histogram/discrete", discrete))
    return out


def test_ledger_json_round_trips_every_mechanisms_event(tmp_path):
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger(delta=DELTA, path=str(path))
    mechanisms = _every_mechanism()
    for label, mechanism in mechanisms:
        ledger.record_release(mechanism, dataset=label)
        ledger.record_release(mechanism, dataset=label)
    reopened = PrivacyLedger(path=str(path))
    for label, mechanism in mechanisms:
        assert reopened.events(label) == [mechanism.dp_event()] * 2, label
        assert reopened.spent(label) == ledger.spent(label), label
        figures = reopened.spent(label)
        if label == "none":
            assert math.isinf(figures.best)
        else:
            assert figures.best == pytest.approx(mechanism.privacy_spent(2, DELTA).best, rel=1e-9)
            assert math.isfinite(figures.best), label
