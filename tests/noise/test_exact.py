"""Exact integer noise: distributions against theory, and the hardened histogram mechanisms."""

import math
from fractions import Fraction

import numpy as np
import pytest
import tensorflow as tf
from dp_accounting.pld import privacy_loss_distribution
from scipy import stats

from dpauc_tf.mechanisms import get_mechanism, private_auc
from dpauc_tf.mechanisms.histogram import HistogramLaplace, HistogramPublicScores
from dpauc_tf.noise import exact as exact_noise

N = 100_000


def check_distribution(samples: np.ndarray, pmf, variance: float) -> None:
    """Asserts mean, variance, a few pmf values and a chi-square fit against the theory."""
    n = samples.size
    assert np.all(samples == np.round(samples))
    assert abs(samples.mean()) < 5 * math.sqrt(variance / n)
    # Sample variance: relative standard error below 1% at n = 1e5 for these laws; 4% fails
    # a halved (x 1/4) or doubled (x 4) scale by far.
    assert samples.var() == pytest.approx(variance, rel=0.04)
    for k in (0, 1, -1, 3):
        p = float(pmf(k))
        assert abs(np.mean(samples == k) - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-12
    support = np.arange(-int(6 * math.sqrt(variance)) - 2, int(6 * math.sqrt(variance)) + 3)
    expected = pmf(support) * n
    keep = expected >= 5
    support, expected = support[keep], expected[keep]
    observed = np.array([np.count_nonzero(samples == k) for k in support], dtype=np.float64)
    tail_observed = n - observed.sum()
    tail_expected = n - expected.sum()
    observed = np.append(observed, tail_observed)
    expected = np.append(expected, tail_expected)
    assert stats.chisquare(observed, expected).pvalue > 1e-4


@pytest.mark.parametrize("scale", [0.7, 2.0, 2 / 0.3])
def test_discrete_laplace_matches_its_pmf(scale):
    samples = exact_noise.discrete_laplace_sample(scale, N, seed=11)
    check_distribution(
        samples,
        lambda k: exact_noise.discrete_laplace_pmf(k, scale),
        exact_noise.discrete_laplace_variance(scale),
    )


@pytest.mark.parametrize("sigma", [1.5, 6.0])
def test_discrete_gaussian_matches_its_pmf(sigma):
    samples = exact_noise.discrete_gaussian_sample(sigma, N, seed=12)
    check_distribution(
        samples,
        lambda k: exact_noise.discrete_gaussian_pmf(k, sigma),
        exact_noise.discrete_gaussian_variance(sigma),
    )


@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_the_distribution_check_rejects_a_wrong_scale(factor):
    scale, sigma = 2.0, 3.0
    laplace = exact_noise.discrete_laplace_sample(scale * factor, N, seed=13)
    with pytest.raises(AssertionError):
        check_distribution(
            laplace,
            lambda k: exact_noise.discrete_laplace_pmf(k, scale),
            exact_noise.discrete_laplace_variance(scale),
        )
    gaussian = exact_noise.discrete_gaussian_sample(sigma * factor, N, seed=13)
    with pytest.raises(AssertionError):
        check_distribution(
            gaussian,
            lambda k: exact_noise.discrete_gaussian_pmf(k, sigma),
            exact_noise.discrete_gaussian_variance(sigma),
        )


def test_seeds_reproduce_and_none_draws_fresh_entropy():
    a = exact_noise.discrete_laplace_sample(3.0, 1000, seed=5)
    b = exact_noise.discrete_laplace_sample(3.0, 1000, seed=5)
    np.testing.assert_array_equal(a, b)
    seed_tensor = tf.constant([5, 9], tf.int64)
    np.testing.assert_array_equal(
        exact_noise.discrete_gaussian_sample(2.0, 100, seed=seed_tensor),
        exact_noise.discrete_gaussian_sample(2.0, 100, seed=seed_tensor),
    )
    fresh = [exact_noise.discrete_laplace_sample(3.0, 1000, seed=None) for _ in range(2)]
    assert not np.array_equal(fresh[0], fresh[1])


def test_shapes_and_dtype():
    assert exact_noise.discrete_laplace_sample(1.0, (3, 4), seed=0).shape == (3, 4)
    assert exact_noise.discrete_gaussian_sample(1.0, 7, seed=0).dtype == np.int64
    assert exact_noise.discrete_laplace_sample(1.0, (0,), seed=0).shape == (0,)


def test_float_scales_are_rounded_up_and_exact_ones_kept():
    assert exact_noise.rational_scale(4.0) == 4
    assert exact_noise.rational_scale(Fraction(7, 3)) == Fraction(7, 3)
    third = exact_noise.rational_scale(1 / 3)
    assert third >= Fraction(1 / 3) and third - Fraction(1 / 3) <= Fraction(1, 2**20)


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, True, "2"])
def test_bad_scales_raise(bad):
    with pytest.raises((ValueError, TypeError)):
        exact_noise.discrete_laplace_sample(bad, 3, seed=0)
    with pytest.raises((ValueError, TypeError)):
        exact_noise.discrete_gaussian_sample(bad, 3, seed=0)


def test_tensorflow_privacy_discrete_gaussian_agrees():
    """Cross-check against tensorflow-privacy's (float-relaxed) sampler, where it exists."""
    dgu = pytest.importorskip("tensorflow_privacy.privacy.dp_query.discrete_gaussian_utils")
    sigma, n = 3, 40_000
    theirs = dgu.sample_discrete_gaussian(sigma, [n], dtype=tf.int64).numpy()
    ours = exact_noise.discrete_gaussian_sample(sigma, n, seed=21)
    support = np.arange(-9, 10)
    table = np.array(
        [
            [np.count_nonzero(x == k) for k in support] + [np.count_nonzero(np.abs(x) > 9)]
            for x in (theirs, ours)
        ]
    )
    assert stats.chi2_contingency(table)[1] > 1e-4
    assert ours.var() == pytest.approx(theirs.var(), rel=0.05)


# -- the hardened histogram mechanisms -----------------------------------------------------


def _counts():
    rng = np.random.default_rng(0)
    pos = rng.integers(0, 50, size=11).astype(np.float64)
    neg = rng.integers(0, 150, size=11).astype(np.float64)
    return tf.constant(pos), tf.constant(neg)


@pytest.mark.parametrize("cls", [HistogramLaplace, HistogramPublicScores])
def test_discrete_histogram_noise_is_integer_and_has_the_stated_law(cls):
    mechanism = cls(epsilon=0.5, num_thresholds=10, noise="discrete")
    pos, neg = _counts()
    release = mechanism.release(pos, neg, seed=3, repeats=10_000)
    noise = (release["pos"] - pos).numpy().ravel()
    check_distribution(
        noise,
        lambda k: exact_noise.discrete_laplace_pmf(k, mechanism.noise_scale),
        exact_noise.discrete_laplace_variance(mechanism.noise_scale),
    )
    assert mechanism.noise_stddev**2 == pytest.approx(noise.var(), rel=0.04)
    statement = mechanism.statement()
    assert "discrete Laplace" in statement.noise and statement.epsilon == 0.5
    assert "label DP" in statement.neighbouring
    assert statement.delta == 0.0


def test_discrete_noise_is_reproducible_and_works_in_a_graph():
    mechanism = get_mechanism("histogram", epsilon=1.0, num_thresholds=10, noise="discrete")
    pos, neg = _counts()
    first = mechanism.release(pos, neg, seed=8)
    np.testing.assert_array_equal(first["pos"], mechanism.release(pos, neg, seed=8)["pos"])
    graph = tf.function(lambda p, n, s: mechanism.release(p, n, seed=s))
    out = graph(pos, neg, tf.constant([8, 0], tf.int64))
    np.testing.assert_array_equal(out["neg"], first["neg"])
    auc = private_auc(mechanism, pos, neg, seed=None, repeats=4).aucs
    assert np.all((auc >= 0) & (auc <= 1))


def test_discrete_noise_refuses_fractional_counts():
    mechanism = get_mechanism("histogram", epsilon=1.0, num_thresholds=2, noise="discrete")
    pos, neg = tf.constant([0.0, 1.5, 0.0]), tf.constant([0.0, 2.0, 0.0])
    with pytest.raises(ValueError, match="integer counts"):
        mechanism.release(pos, neg, seed=0)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.function(lambda p, n: mechanism.release(p, n, seed=0))(pos, neg)


def test_unknown_noise_kind_raises():
    with pytest.raises(ValueError, match="noise"):
        get_mechanism("histogram", epsilon=1.0, num_thresholds=2, noise="float")


def test_continuous_event_understates_discrete_delta_so_privacy_spent_uses_the_discrete_pld():
    """dp_event() is a continuous Laplace event; for discrete noise at epsilon=2 its PLD delta
    is too small, so privacy_spent() accounts the discrete mechanism itself."""
    epsilon = 2.0
    mechanism = HistogramLaplace(epsilon=epsilon, num_thresholds=4, noise="discrete")
    scale = mechanism.noise_scale
    discrete = privacy_loss_distribution.from_discrete_laplace_mechanism(1 / scale).self_compose(2)
    continuous = privacy_loss_distribution.from_laplace_mechanism(scale / 2)
    assert discrete.get_delta_for_epsilon(1.9) > continuous.get_delta_for_epsilon(1.9)
    spent = mechanism.privacy_spent(releases=3, delta=1e-6)
    assert spent.rdp is None and spent.basic == pytest.approx(3 * epsilon)
    expected = discrete.self_compose(3).get_epsilon_for_delta(1e-6)
    assert spent.pld == pytest.approx(expected, rel=1e-6)
    assert HistogramLaplace(epsilon=epsilon, num_thresholds=4).privacy_spent(3, 1e-6).rdp
