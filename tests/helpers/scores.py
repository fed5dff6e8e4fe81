"""Scores for the tests: binary and softmax score sets, their split among clients, and score
files for the command line and the readers (``score,label`` CSV files whose floats are
written with ``repr``, read back bit for bit)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def normal_scores(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``labels, scores``: labels 0/1 at random, scores ``N(0.4 + 0.2 label, 0.2)`` clipped
    to [0, 1] (an AUC of about 0.76)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0, 1)
    return labels, scores


def softmax_classes(n: int, classes: int = 3, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``labels, scores [n, classes]``: normal logits with 1 added to each example's own
    class, through a softmax (a one-vs-rest AUC of about 0.75 per class)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, classes))
    labels = rng.integers(0, classes, n)
    logits[np.arange(n), labels] += 1.0
    return labels, np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)


def split_among_clients(labels, scores, k: int, seed: int = 0) -> list[tuple]:
    """``[(scores, labels)]`` of ``k`` clients, each example's client drawn uniformly."""
    ids = np.random.default_rng(seed).integers(0, k, labels.size)
    return [(scores[ids == c], labels[ids == c]) for c in range(k)]


def write_score_csv(path: Path, labels, scores, clients=None) -> str:
    """Writes a ``score,label`` CSV file (``score,label,client`` with ``clients``) at
    ``path``; returns the path as a string."""
    rows = "".join(
        f"{float(s)!r},{int(y)}" + ("" if clients is None else f",{int(clients[i])}") + "\n"
        for i, (s, y) in enumerate(zip(scores, labels, strict=True))
    )
    path = Path(path)
    path.write_text("score,label" + ("" if clients is None else ",client") + "\n" + rows)
    return str(path)


def normal_score_file(path: Path, n: int, seed: int) -> str:
    """A ``score,label`` CSV file of [`normal_scores`][] at ``path``."""
    return write_score_csv(path, *normal_scores(n, seed))
