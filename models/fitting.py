"""How :mod:`models.train` fits Wide & Deep without overfitting small data.

* a validation split of the training rows (:func:`split_validation`), which chooses the
  epoch (:class:`EarlyStopping`: stop after ``patience`` epochs without a better validation
  AUC, then restore the best epoch's weights) and the baseline's regularisation;
* categorical ids seen fewer than :func:`rare_id_threshold` times in the fitting rows share
  the out-of-vocabulary id (:func:`rare_ids_to_oov`): on 20,000 rows most Criteo ids occur
  once, and a weight learnt from one row is noise;
* L2 penalties that shrink with the number of rows (:func:`l2_for_rows`), as a
  logistic regression's fixed ``C`` does.

Example:
    >>> import numpy as np
    >>> rows = {"label": np.arange(10) % 2, "cat_ids": np.zeros((10, 26), np.int32),
    ...         "int_features": np.zeros((10, 13), np.float32)}
    >>> fit, val = split_validation(rows, 0.2, seed=0)
    >>> len(fit["label"]), len(val["label"])
    (8, 2)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

DEFAULT_MAX_EPOCHS = 10
DEFAULT_PATIENCE = 2
DEFAULT_VALIDATION_FRACTION = 0.1
DEFAULT_DROPOUT = 0.3
DEFAULT_EMBEDDING_L2 = None  # None: l2_for_rows(the fitting rows)
# L2 per row of the mean loss: penalty = WIDE_L2_ROWS / n (the wide weights) and
# DEEP_L2_ROWS / n (the embeddings); a logistic regression with C = 0.1 is 5 / n. Chosen on
# the shared 19,532-row Criteo sample (docs/wide_deep.md), not on its test rows.
WIDE_L2_ROWS = 16.0
DEEP_L2_ROWS = 1.5


def auc_or_nan(labels: np.ndarray, scores: np.ndarray) -> float:
    """scikit-learn's AUC, NaN when ``labels`` hold one class."""
    from sklearn.metrics import roc_auc_score

    if len(np.unique(labels)) < 2:
        return float("nan")
    return float(roc_auc_score(labels, scores))


def split_validation(
    rows: Mapping[str, np.ndarray], fraction: float, seed: int | None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(fitting rows, validation rows)``: a seeded random ``fraction`` of ``rows`` (at
    least one row each)."""
    n = len(rows["label"])
    if n < 2:
        raise ValueError(f"the training split has {n} row(s): too few to hold out validation")
    rng = np.random.default_rng(None if seed is None else [seed, 24])
    count = min(n - 1, max(1, round(fraction * n)))
    chosen = np.zeros(n, bool)
    chosen[rng.choice(n, count, replace=False)] = True
    fit = {key: value[~chosen] for key, value in rows.items()}
    val = {key: value[chosen] for key, value in rows.items()}
    return fit, val


def rare_id_threshold(num_rows: int) -> int:
    """Ids seen fewer times than this in ``num_rows`` fitting rows are out of vocabulary:
    3 at 16,000 rows, 8 at 100,000, 10 from 250,000 on (``sqrt(n) / 40``, within [2, 10]).

    >>> rare_id_threshold(16_000), rare_id_threshold(1_000_000)
    (3, 10)
    """
    return int(max(2, min(10, round(math.sqrt(max(num_rows, 1)) / 40))))


def rare_ids_to_oov(
    reference: Mapping[str, np.ndarray], parts: Sequence[Mapping[str, np.ndarray]], min_count: int
) -> list[dict[str, np.ndarray]]:
    """``parts`` with every categorical id seen fewer than ``min_count`` times in
    ``reference`` (the fitting rows) replaced by the out-of-vocabulary id 0.

    >>> ref = {"cat_ids": np.array([[1], [1], [2]])}
    >>> rare_ids_to_oov(ref, [ref], 2)[0]["cat_ids"].ravel().tolist()
    [1, 1, 0]
    """
    ids = np.asarray(reference["cat_ids"])
    keep = []
    for column in range(ids.shape[1]):
        counts = np.bincount(ids[:, column])
        keep.append(counts >= min_count)
    out = []
    for part in parts:
        mapped = np.array(part["cat_ids"], copy=True)
        for column, kept in enumerate(keep):
            values = mapped[:, column]
            known = values < kept.size
            frequent = np.zeros(values.shape, bool)
            frequent[known] = kept[values[known]]
            values[~frequent] = 0
        out.append({**part, "cat_ids": mapped})
    return out


def l2_for_rows(num_rows: int) -> tuple[float, float]:
    """``(wide L2, embedding L2)`` for ``num_rows`` fitting rows (see the module docstring).

    >>> [f"{v:.1e}" for v in l2_for_rows(10_000)]
    ['1.6e-03', '1.5e-04']
    """
    n = max(int(num_rows), 1)
    return WIDE_L2_ROWS / n, DEEP_L2_ROWS / n


class EarlyStopping:
    """Keeps the weights of the epoch with the best validation AUC; says when to stop.

    >>> stop = EarlyStopping(patience=2)
    >>> [stop.update(e, auc) for e, auc in enumerate([0.6, 0.7, 0.69, 0.68])]
    [False, False, False, True]
    >>> stop.best_epoch
    1
    """

    def __init__(self, patience: int) -> None:
        if patience < 1:
            raise ValueError(f"patience must be at least 1, got {patience}")
        self.patience = int(patience)
        self.best_epoch: int | None = None
        self.best_auc = -math.inf
        self._weights: Any = None
        self._waited = 0

    def update(self, epoch: int, validation_auc: float, model: Any = None) -> bool:
        """Records one epoch (its weights, from ``model``, when it is the best); returns
        whether to stop. A NaN AUC (one class in the validation rows) never improves."""
        if self.best_epoch is None or validation_auc > self.best_auc:
            self.best_epoch, self._waited = epoch, 0
            self.best_auc = -math.inf if math.isnan(validation_auc) else validation_auc
            self._weights = None if model is None else model.get_weights()
            return False
        self._waited += 1
        return self._waited >= self.patience

    def restore(self, model: Any) -> None:
        """Gives ``model`` the best epoch's weights."""
        if self._weights is not None:
            model.set_weights(self._weights)
