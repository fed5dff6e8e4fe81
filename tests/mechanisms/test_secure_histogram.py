"""``secure-histogram``: statement, shares that sum to the stated noise, dropout."""

from __future__ import annotations

import math

import pytest
import tensorflow as tf

from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.secure_histogram import SecureHistogram
from dpauc_tf.noise.seeds import make_seed, split_seed
from dpauc_tf.privacy.skellam import skellam_epsilon


def test_secure_histogram_statement():
    m = get_mechanism("secure-histogram", epsilon=0.5, num_thresholds=100, num_clients=10)
    s = m.statement()
    assert "label DP" in s.neighbouring and "secure sum" in s.neighbouring
    assert s.sensitivity.startswith("L1 = 2") and "discrete Laplace(scale=4)" in s.noise
    assert (s.epsilon, s.delta) == (0.5, 0.0)
    assert m.privacy_spent(1).basic == pytest.approx(0.5)
    sk = SecureHistogram(1.0, 100, delta=1e-6, num_clients=10, family="skellam")
    assert sk.statement().delta == 1e-6 and "Skellam" in sk.statement().noise
    # the PLD figure moves in steps of its grid: calibrated to within 1e-4 below the target
    assert 1.0 - 1e-4 <= skellam_epsilon(sk.noise_scale, 1e-6) <= 1.0
    with pytest.raises(ValueError, match="delta"):
        SecureHistogram(1.0, 100, num_clients=3, family="skellam")
    with pytest.raises(ValueError, match="family"):
        SecureHistogram(1.0, 100, family="gaussian")


@pytest.mark.parametrize("family", ["discrete-laplace", "skellam"])
def test_secure_shares_sum_to_the_stated_noise_for_any_k(family):
    """Shares are integers; their sum over K clients has the stated variance for K = 1 and 50."""
    delta = 1e-6 if family == "skellam" else None
    zeros = tf.zeros([101], tf.float64)
    for k in (1, 50):
        m = SecureHistogram(1.0, 100, delta=delta, num_clients=k, family=family)
        seeds = split_seed(make_seed(k), k)
        total = sum(m.release(zeros, zeros, seed=seeds[i], repeats=40)["pos"] for i in range(k))
        assert bool(tf.reduce_all(total == tf.round(total)))
        ratio = float(tf.math.reduce_variance(total)) / m.noise_stddev**2
        # 4040 samples: the ratio's sd is < 0.05; half/double the scale gives 0.25 / 4.
        assert 0.8 < ratio < 1.25, (k, ratio)


def test_secure_histogram_dropout_shortfall_raises_epsilon():
    m = SecureHistogram(1.0, 100, num_clients=10)
    assert m.achieved_epsilon(10) == 1.0 and m.achieved_epsilon(20) == 1.0
    eps = [m.achieved_epsilon(r) for r in (9, 5, 1)]
    assert 1.0 < eps[0] < eps[1] < eps[2] and math.isinf(m.achieved_epsilon(0))


def test_collusion_changes_nothing_for_local_mechanisms_and_everything_for_secure_ones():
    local = get_mechanism("histogram", epsilon=1.0, num_thresholds=10)
    assert local.colluding_epsilon(9, 10) == 1.0  # every local report is private on its own
    secure = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=10, num_clients=10)
    assert secure.colluding_epsilon(0) == 1.0
    assert secure.colluding_epsilon(5) == secure.achieved_epsilon(5) > 1.0
    assert math.isinf(secure.colluding_epsilon(10))
    with pytest.raises(ValueError):
        secure.colluding_epsilon(-1)
