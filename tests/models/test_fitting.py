"""Wide & Deep worth evaluating (issue 24): a validation split, early stopping that restores
the best epoch, rare ids out of vocabulary, and a logistic-regression baseline beside it."""

from __future__ import annotations

import numpy as np
import pytest

from models.baseline import logistic_regression_baseline
from models.fitting import (
    EarlyStopping,
    l2_for_rows,
    rare_id_threshold,
    rare_ids_to_oov,
    split_validation,
)


def _rows(n, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 4, (n, 26)).astype(np.int32)
    label = ((ids[:, 0] == 3) ^ (rng.random(n) < 0.05)).astype(np.int8)
    return {"label": label, "int_features": rng.random((n, 13)).astype(np.float32), "cat_ids": ids}


class _Model:
    def __init__(self):
        self.weights = [np.zeros(2)]

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, weights):
        self.weights = [w.copy() for w in weights]


def test_early_stopping_stops_after_patience_and_restores_the_best_epoch():
    model, stop = _Model(), EarlyStopping(patience=2)
    decisions = []
    for epoch, auc in enumerate([0.60, 0.72, 0.70, 0.71, 0.69]):
        model.weights = [np.full(2, float(epoch))]
        decisions.append(stop.update(epoch, auc, model))
        if decisions[-1]:
            break
    assert decisions == [False, False, False, True] and stop.best_epoch == 1
    stop.restore(model)
    assert model.weights[0].tolist() == [1.0, 1.0]
    nan_first = EarlyStopping(patience=1)
    assert not nan_first.update(0, float("nan")) and not nan_first.update(1, 0.5)
    assert nan_first.best_epoch == 1


def test_validation_split_is_seeded_and_disjoint():
    rows = _rows(1000)
    rows["row"] = np.arange(1000)
    fit, val = split_validation(rows, 0.1, seed=3)
    again, _ = split_validation(rows, 0.1, seed=3)
    assert len(val["row"]) == 100 and len(fit["row"]) == 900
    assert not set(fit["row"]) & set(val["row"])
    assert np.array_equal(fit["row"], again["row"])


def test_rare_ids_share_the_oov_id_and_sizes_follow_the_rows():
    fit = {"cat_ids": np.array([[1, 5], [1, 5], [2, 5]])}
    test = {"cat_ids": np.array([[2, 5], [9, 7], [1, 0]])}
    _, mapped = rare_ids_to_oov(fit, [fit, test], 2)
    assert mapped["cat_ids"].tolist() == [[0, 5], [0, 0], [1, 0]]  # unseen 9, 7 too
    assert rare_id_threshold(2_000) == 2 and rare_id_threshold(16_000) == 3
    assert rare_id_threshold(10**7) == 10
    small, large = l2_for_rows(10_000), l2_for_rows(1_000_000)
    assert small[0] == pytest.approx(100 * large[0]) and small[1] > 0


def test_baseline_learns_a_planted_rule_and_chooses_c_on_validation():
    out = logistic_regression_baseline(_rows(2000), _rows(500, 1), _rows(500, 2), [4] * 26)
    assert out["test_auc"] > 0.75 and out["validation_auc"] > 0.75
    assert out["C"] in (0.01, 0.03, 0.1, 0.3, 1.0) and out["train_seconds"] >= 0
