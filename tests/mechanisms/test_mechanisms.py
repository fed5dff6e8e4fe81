"""Every mechanism: its statement, and the noise actually drawn against that statement."""

import math

import dp_accounting
import numpy as np
import pytest
import tensorflow as tf
from dp_accounting import pld

from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.mechanisms import get_mechanism, private_auc
from dpauc_tf.mechanisms.histogram import HistogramLaplace, HistogramPublicScores
from dpauc_tf.mechanisms.none import NoNoise
from dpauc_tf.mechanisms.paper import PaperGaussian, PaperLaplace
from dpauc_tf.privacy.accounting import analytic_gaussian_sigma

T = 20
REPEATS = 4000


def _counts():
    rng = np.random.default_rng(0)
    pos = rng.integers(0, 500, size=T + 1).astype(np.float64)
    neg = rng.integers(0, 1500, size=T + 1).astype(np.float64)
    return tf.constant(pos), tf.constant(neg)


def _noise_samples(mechanism, seed=1):
    pos, neg = _counts()
    release = mechanism.release(pos, neg, seed=seed, repeats=REPEATS)
    if isinstance(mechanism, PaperLaplace):
        exact = confusion_from_histogram(pos, neg)._asdict()
    elif isinstance(mechanism, HistogramPublicScores):
        exact = {"pos": pos, "total": pos + neg}
    else:
        exact = {"pos": pos, "neg": neg}
    return {key: (release[key] - exact[key][None]).numpy() for key in release}


def _assert_laplace(samples, scale):
    """Mean 0, variance 2 b^2 and mean |x| = b: a halved or doubled scale fails."""
    flat = samples.ravel()
    n = flat.size
    assert abs(flat.mean()) < 5 * math.sqrt(2) * scale / math.sqrt(n)
    assert np.var(flat) == pytest.approx(2 * scale**2, rel=0.05)
    assert np.mean(np.abs(flat)) == pytest.approx(scale, rel=0.03)
    # Laplace kurtosis is 6 (Gaussian: 3).
    kurtosis = np.mean(flat**4) / np.var(flat) ** 2
    assert 5.0 < kurtosis < 7.0


def test_paper_mechanism_statement_and_noise():
    m = PaperLaplace(epsilon=1.0, num_thresholds=T)
    s = m.statement()
    assert m.noise_scale == 4 * T  # eps' = eps / (4T) -> Laplace(4T / eps)
    assert "label" in s.neighbouring
    assert s.claimed_epsilon == 1.0 and s.epsilon == 0.5  # tight: only 2 of 4 counts move
    assert "2T" in s.sensitivity and "Laplace" in s.noise and s.delta == 0.0
    samples = _noise_samples(m)
    assert sorted(samples) == ["fn", "fp", "tn", "tp"]
    for key in samples:
        _assert_laplace(samples[key], 4 * T)
    # the four counts get independent noise
    assert abs(np.corrcoef(samples["tp"].ravel(), samples["fn"].ravel())[0, 1]) < 0.02
    assert m.privacy_spent().basic == pytest.approx(0.5)


def test_histogram_mechanism_statement_and_noise():
    m = HistogramLaplace(epsilon=0.5, num_thresholds=T)
    s = m.statement()
    assert "L1 = 2" in s.sensitivity and s.epsilon == 0.5 and s.delta == 0.0
    assert m.noise_scale == 4.0
    samples = _noise_samples(m)
    _assert_laplace(np.concatenate([samples["pos"], samples["neg"]]), 4.0)
    assert m.privacy_spent().basic == pytest.approx(0.5)


def test_histogram_public_scores_statement_and_noise():
    m = HistogramPublicScores(epsilon=2.0, num_thresholds=T)
    s = m.statement()
    assert "L1 = 1" in s.sensitivity and "score histogram" in s.neighbouring
    samples = _noise_samples(m)
    _assert_laplace(samples["pos"], 0.5)
    np.testing.assert_array_equal(samples["total"], 0.0)  # totals are exact
    assert m.privacy_spent().basic == pytest.approx(2.0)


def test_paper_gaussian_statement_noise_and_calibration():
    m = PaperGaussian(epsilon=1.0, num_thresholds=T, delta=1e-5)
    s = m.statement()
    assert s.epsilon == 1.0 and s.delta == 1e-5 and "sqrt(2T)" in s.sensitivity
    sigma = m.noise_stddev
    assert sigma == pytest.approx(analytic_gaussian_sigma(1.0, 1e-5) * math.sqrt(2 * T))
    samples = np.concatenate([v.ravel() for v in _noise_samples(m).values()])
    assert np.std(samples) == pytest.approx(sigma, rel=0.03)
    kurtosis = np.mean(samples**4) / np.var(samples) ** 2
    assert 2.7 < kurtosis < 3.3
    # dp-accounting agrees that this sigma gives (1, 1e-5) and that 0.9 sigma does not.
    for factor, ok in ((1.0, True), (0.9, False)):
        accountant = pld.PLDAccountant()
        accountant.compose(dp_accounting.GaussianDpEvent(factor * sigma / math.sqrt(2 * T)))
        assert (accountant.get_epsilon(1e-5) <= 1.0 + 1e-3) is ok


def test_no_noise_is_exact_and_says_it_is_not_private():
    m = get_mechanism("histogram", epsilon=None, num_thresholds=T)
    assert isinstance(m, NoNoise)
    assert "NOT" in m.statement().noise and math.isinf(m.statement().epsilon)
    samples = _noise_samples(m)
    assert all(np.all(v == 0) for v in samples.values())


def test_seeds_reproduce_and_none_draws_fresh_noise():
    m = HistogramLaplace(epsilon=1.0, num_thresholds=T)
    pos, neg = _counts()
    a = m.release(pos, neg, seed=3)["pos"].numpy()
    b = m.release(pos, neg, seed=3)["pos"].numpy()
    c = m.release(pos, neg, seed=4)["pos"].numpy()
    d = m.release(pos, neg)["pos"].numpy()
    e = m.release(pos, neg)["pos"].numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and not np.array_equal(d, e)


def test_repeats_are_independent_draws_with_the_single_release_distribution():
    m = HistogramLaplace(epsilon=1.0, num_thresholds=T)
    pos, neg = _counts()
    batch = m.release(pos, neg, seed=0, repeats=500)["pos"].numpy() - pos.numpy()
    singles = np.stack(
        [m.release(pos, neg, seed=s)["pos"].numpy() - pos.numpy() for s in range(1, 501)]
    )
    assert batch.shape == (500, T + 1)
    assert np.var(batch) == pytest.approx(np.var(singles), rel=0.12)
    assert len({tuple(row) for row in batch.round(6)}) == 500


@pytest.mark.parametrize(
    "name", ["paper", "paper-gaussian", "histogram", "histogram-public-scores"]
)
def test_private_auc_is_unbiased_enough_and_varies(name):
    rng = np.random.default_rng(5)
    # whole counts: histogram-public-scores takes weights of 1 only (issue 30)
    pos = tf.constant(
        np.round(rng.integers(1000, 5000, size=101).astype(np.float64) * np.linspace(0, 2, 101))
    )
    neg = tf.constant(
        np.round(rng.integers(1000, 5000, size=101).astype(np.float64) * np.linspace(2, 0, 101))
    )
    delta = 1e-6 if name == "paper-gaussian" else None
    m = get_mechanism(name, epsilon=1.0, num_thresholds=100, delta=delta)
    out = private_auc(m, pos, neg, seed=0, repeats=200)
    exact = private_auc(get_mechanism(name, epsilon=None, num_thresholds=100), pos, neg).auc
    aucs = out.aucs
    assert aucs.shape == (200,) and np.all((aucs >= 0) & (aucs <= 1))
    assert np.std(aucs) > 0
    assert abs(np.mean(aucs) - exact) < 0.01
    assert out.fpr.shape == (200, 100)


def test_histogram_beats_the_paper_mechanism_at_the_same_epsilon():
    pos, neg = _counts()
    stds = {}
    for name in ("paper", "histogram"):
        m = get_mechanism(name, epsilon=1.0, num_thresholds=T)
        stds[name] = float(np.std(private_auc(m, pos * 20, neg * 20, seed=0, repeats=300).aucs))
    assert stds["histogram"] * 3 < stds["paper"]


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"name": "histogram", "epsilon": 0.0}, ValueError),
        ({"name": "histogram", "epsilon": -1.0}, ValueError),
        ({"name": "histogram", "epsilon": float("inf")}, ValueError),
        ({"name": "histogram", "epsilon": float("nan")}, ValueError),
        ({"name": "histogram", "epsilon": True}, TypeError),
        ({"name": "histogram", "epsilon": "1"}, TypeError),
        ({"name": "laplace", "epsilon": 1.0}, ValueError),
        ({"name": "paper-gaussian", "epsilon": 1.0}, ValueError),
        ({"name": "paper-gaussian", "epsilon": 1.0, "delta": 1.0}, ValueError),
        ({"name": "paper-gaussian", "epsilon": 1.0, "delta": 0.0}, ValueError),
        ({"name": "histogram", "epsilon": 1.0, "delta": 1e-5}, ValueError),
        ({"name": "none", "epsilon": 1.0}, ValueError),
        ({"name": "histogram", "epsilon": 1.0, "num_thresholds": 1}, ValueError),
    ],
)
def test_bad_mechanism_arguments_raise(kwargs, error):
    kwargs.setdefault("num_thresholds", 10)
    name = kwargs.pop("name")
    with pytest.raises(error):
        get_mechanism(name, **kwargs)


def test_paper_event_is_the_exact_composition_and_pld_is_far_below_its_claim():
    """A flip moves 2T counts by one unit: 2T Laplace(4T / eps) unit losses. The paper's
    epsilon 1 at T = 100 is 0.5 by its own sensitivity and about 0.13 by PLD at 1e-6."""
    m = PaperLaplace(epsilon=1.0, num_thresholds=100)
    event = m.dp_event()
    assert event.count == 200 and event.event.noise_multiplier == 400.0
    spent = m.privacy_spent(1, delta=1e-6)
    assert spent.basic == pytest.approx(0.5)
    assert spent.pld == pytest.approx(0.13, abs=0.005)
