"""Constrained inference: isotonic regression, consistent totals, monotone curves, AUC."""

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.core.curve import Confusion, auc_from_confusion, confusion_from_histogram
from dpauc_tf.core.postprocessing import (
    auc_estimate,
    consistent_confusion,
    isotonic_regression,
    monotone_confusion,
    pool_adjacent_violators,
)
from dpauc_tf.core.tree import auc_gradient


def _pava(y):
    """Reference pool-adjacent-violators (non-decreasing), plain Python."""
    blocks = []  # [sum, count]
    for value in y:
        blocks.append([value, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    return np.concatenate([[s / c] * c for s, c in blocks])


def test_isotonic_regression_equals_pool_adjacent_violators_on_every_row():
    rng = np.random.default_rng(0)
    values = np.cumsum(rng.normal(0.05, 1.0, size=(2, 3, 57)), axis=-1)
    fitted = isotonic_regression(tf.constant(values)).numpy()
    assert fitted.shape == values.shape
    for row, fit in zip(values.reshape(-1, 57), fitted.reshape(-1, 57), strict=True):
        np.testing.assert_allclose(fit, _pava(row), atol=1e-10)
    down = isotonic_regression(tf.constant(values), increasing=False).numpy()
    for row, fit in zip(values.reshape(-1, 57), down.reshape(-1, 57), strict=True):
        np.testing.assert_allclose(fit, -_pava(-row), atol=1e-10)
    monotone = np.sort(values, axis=-1)
    np.testing.assert_allclose(isotonic_regression(tf.constant(monotone)).numpy(), monotone)
    with pytest.raises(TypeError, match="float"):
        isotonic_regression(tf.constant([1, 2]))


def test_monotone_confusion_is_consistent_monotone_and_exact_without_noise():
    rng = np.random.default_rng(1)
    pos = rng.integers(0, 40, size=(5, 30)).astype(np.float64)
    neg = rng.integers(0, 90, size=(5, 30)).astype(np.float64)
    exact = confusion_from_histogram(tf.constant(pos), tf.constant(neg))
    projected = monotone_confusion(tf.constant(pos), tf.constant(neg))
    for a, b in zip(exact, projected, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy())
    noisy_pos = pos + rng.laplace(0, 20, size=pos.shape)
    noisy_neg = neg + rng.laplace(0, 20, size=neg.shape)
    tp, fp, tn, fn = (c.numpy() for c in monotone_confusion(noisy_pos, noisy_neg))
    for cumulative in (tp, fp):
        assert np.all(np.diff(cumulative, axis=-1) <= 1e-9)
        assert np.all(cumulative >= 0)
    assert np.all(tn >= -1e-9) and np.all(fn >= -1e-9)
    np.testing.assert_allclose(tp + fn, np.maximum(noisy_pos.sum(-1, keepdims=True), 0) + 0 * tp)
    np.testing.assert_allclose(fp + tn, np.maximum(noisy_neg.sum(-1, keepdims=True), 0) + 0 * fp)
    # on a monotone curve the trapezoid in threshold order equals the clip-and-sort AUC
    confusion = monotone_confusion(noisy_pos, noisy_neg)
    np.testing.assert_allclose(
        auc_estimate(confusion).numpy(), auc_from_confusion(confusion).numpy(), atol=1e-12
    )


def test_consistent_confusion_gives_one_total_and_removes_noise_in_it():
    rng = np.random.default_rng(2)
    pos = rng.integers(0, 400, size=50).astype(np.float64)
    neg = rng.integers(0, 900, size=50).astype(np.float64)
    exact = confusion_from_histogram(tf.constant(pos), tf.constant(neg))
    noisy = Confusion(*(c + rng.laplace(0, 30, size=(200, 49)) for c in exact))
    fixed = consistent_confusion(noisy)
    totals = (fixed.tp + fixed.fn).numpy()
    assert np.allclose(totals, totals[:, :1])  # one P per release
    raw_error = np.mean((noisy.tp.numpy() - exact.tp.numpy()) ** 2)
    fixed_error = np.mean((fixed.tp.numpy() - exact.tp.numpy()) ** 2)
    assert fixed_error < 0.6 * raw_error  # two observations per count instead of one
    noise_free = consistent_confusion(exact)
    np.testing.assert_allclose(noise_free.tp.numpy(), exact.tp.numpy())


def test_auc_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    pos = rng.integers(1, 50, size=12).astype(np.float64)
    neg = rng.integers(1, 50, size=12).astype(np.float64)
    pos[[0, -1]] = neg[[0, -1]] = 0.0  # empty end buckets: the curve runs from (1, 1) to (0, 0)

    def auc(p, n):
        return float(auc_estimate(confusion_from_histogram(tf.constant(p), tf.constant(n))))

    grad_pos, grad_neg = auc_gradient(pos, neg)
    step = 1e-4
    for b in (1, 5, 10):
        bumped = pos.copy()
        bumped[b] += step
        assert abs((auc(bumped, neg) - auc(pos, neg)) / step - grad_pos[b]) < 1e-6
        bumped = neg.copy()
        bumped[b] += step
        assert abs((auc(pos, bumped) - auc(pos, neg)) / step - grad_neg[b]) < 1e-6


def test_pool_adjacent_violators_and_the_graph_path_agree_with_the_reference():
    rng = np.random.default_rng(7)
    values = np.cumsum(rng.normal(-0.05, 1.0, size=(4, 200)), axis=-1)
    numpy_fit = pool_adjacent_violators(values, increasing=False)
    for row, fit in zip(values, numpy_fit, strict=True):
        np.testing.assert_allclose(fit, -_pava(-row), atol=1e-10)
    graph_fit = tf.function(lambda v: isotonic_regression(v, increasing=False))(tf.constant(values))
    np.testing.assert_allclose(graph_fit.numpy(), numpy_fit, atol=1e-9)
