"""A logistic-regression baseline on the same prepared features as Wide & Deep.

One-hot categorical ids (a sparse column per id of every column, the wide part's input) and
the 13 scaled integers, fitted by scikit-learn's ``LogisticRegression`` (liblinear, L2). The
inverse regularisation ``C`` is chosen on the validation rows from :data:`C_GRID`; the
baseline is then scored on the test rows. :func:`models.train.train` reports it beside the
model, on the same split, so a model that does worse than a linear one shows at once.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> def part(n):
    ...     ids = rng.integers(0, 3, (n, 26)).astype(np.int32)
    ...     y = (ids[:, 0] == 2).astype(np.int8) | (rng.random(n) < 0.1)
    ...     return {"label": y, "int_features": rng.random((n, 13)).astype(np.float32),
    ...             "cat_ids": ids}
    >>> out = logistic_regression_baseline(part(400), part(200), part(200), [3] * 26)
    >>> out["test_auc"] > 0.8, out["C"] in C_GRID
    (True, True)
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)


def design_matrix(arrays: Mapping[str, np.ndarray], vocab_sizes: Sequence[int]):
    """Sparse ``[n, sum(vocab) + 13]``: one-hot ids of every column, then the integers."""
    import scipy.sparse as sp

    ids = np.asarray(arrays["cat_ids"], np.int64)
    offsets = np.concatenate([[0], np.cumsum(vocab_sizes)[:-1]]).astype(np.int64)
    n = ids.shape[0]
    rows = np.repeat(np.arange(n), ids.shape[1])
    total = int(np.sum(vocab_sizes))
    one_hot = sp.csr_matrix((np.ones(ids.size), (rows, (ids + offsets).ravel())), shape=(n, total))
    integers = sp.csr_matrix(np.asarray(arrays["int_features"], np.float64))
    return sp.hstack([one_hot, integers]).tocsr()


def _auc(labels: np.ndarray, scores: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    if len(np.unique(labels)) < 2:
        return float("nan")
    return float(roc_auc_score(labels, scores))


def logistic_regression_baseline(
    train: Mapping[str, np.ndarray],
    validation: Mapping[str, np.ndarray],
    test: Mapping[str, np.ndarray],
    vocab_sizes: Sequence[int],
    c_grid: Sequence[float] = C_GRID,
) -> dict[str, Any]:
    """Fits the baseline on ``train``, picks ``C`` on ``validation``, scores ``test``.

    Returns:
        ``{"model": "logistic regression (one-hot ids + integers)", "C", "validation_auc",
        "test_auc", "train_seconds"}``.
    """
    from sklearn.linear_model import LogisticRegression

    started = time.perf_counter()
    x_train, x_val, x_test = (design_matrix(a, vocab_sizes) for a in (train, validation, test))
    y_train = np.asarray(train["label"])
    best = None
    for c in c_grid:
        fitted = LogisticRegression(C=c, solver="liblinear", max_iter=1000).fit(x_train, y_train)
        auc = _auc(np.asarray(validation["label"]), fitted.predict_proba(x_val)[:, 1])
        if best is None or auc > best[0]:
            best = (auc, c, fitted)
    val_auc, c, fitted = best
    return {
        "model": "logistic regression (one-hot ids + integers)",
        "C": c,
        "validation_auc": val_auc,
        "test_auc": _auc(np.asarray(test["label"]), fitted.predict_proba(x_test)[:, 1]),
        "train_seconds": round(time.perf_counter() - started, 3),
    }
