"""DeLong's variance from bucket counts equals the brute-force one, and predicts the spread
of the AUC over resampled test sets."""

import numpy as np

from dpauc_tf.core.sampling_variance import (
    count_noise_variance,
    delong_variance,
    hanley_mcneil_variance,
    mann_whitney_from_counts,
)


def _binned(rng, n_pos, n_neg, edges):
    pos = np.bincount(np.digitize(rng.normal(1.0, 1.0, n_pos), edges), minlength=edges.size + 1)
    neg = np.bincount(np.digitize(rng.normal(0.0, 1.0, n_neg), edges), minlength=edges.size + 1)
    return pos.astype(float), neg.astype(float)


def test_delong_equals_brute_force_on_binned_scores():
    rng = np.random.default_rng(0)
    edges = np.linspace(-3, 4, 25)
    x, y = rng.normal(1, 1, 60), rng.normal(0, 1, 90)
    xb, yb = np.digitize(x, edges), np.digitize(y, edges)
    kernel = (xb[:, None] > yb[None]) + 0.5 * (xb[:, None] == yb[None])
    pos = np.bincount(xb, minlength=26).astype(float)
    neg = np.bincount(yb, minlength=26).astype(float)
    assert np.isclose(mann_whitney_from_counts(pos, neg), kernel.mean())
    brute = kernel.mean(1).var(ddof=1) / 60 + kernel.mean(0).var(ddof=1) / 90
    assert np.isclose(delong_variance(pos, neg), brute)


def test_delong_predicts_the_spread_over_test_sets():
    rng = np.random.default_rng(1)
    edges = np.linspace(-3, 4, 40)
    sets = [_binned(rng, 300, 700, edges) for _ in range(2000)]
    aucs = np.array([mann_whitney_from_counts(p, n) for p, n in sets])
    predicted = np.mean([delong_variance(p, n) for p, n in sets[:200]])
    assert 0.9 < predicted / aucs.var() < 1.1
    # Hanley-McNeil is a model: close here, not exact
    assert 0.8 < hanley_mcneil_variance(aucs.mean(), 300, 700) / aucs.var() < 1.25


def test_count_noise_variance_is_the_spread_of_the_noisy_auc():
    rng = np.random.default_rng(2)
    pos, neg = _binned(rng, 300, 700, np.linspace(-3, 4, 30))
    noisy = [
        mann_whitney_from_counts(
            pos + rng.laplace(0, 2, pos.size), neg + rng.laplace(0, 2, neg.size)
        )
        for _ in range(4000)
    ]
    predicted = count_noise_variance(pos, neg, 8.0, 8.0)
    assert 0.9 < predicted / np.var(noisy) < 1.1


def test_vectorised_over_leading_axes_and_nan_for_empty_class():
    pos = np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]])
    neg = np.array([[2.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    out = delong_variance(pos, neg)
    assert out.shape == (2,) and np.isfinite(out[0]) and np.isnan(out[1])
