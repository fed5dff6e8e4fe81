"""``secure-rank-sum`` when fewer noise shares arrive than they were sized for (issue 32 item 4).

The epsilon achieved by ``m`` of ``K`` discrete Laplace shares is checked against a brute
force on the PMF of the arrived noise (the negative binomial convolved with itself, every
``z`` and every shift up to ``2 D``), so a figure that understated the loss fails here.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpauc_tf.mechanisms.secure_rank_sum import (
    SecureRankSum,
    polya_shift_epsilon,
    polya_shift_epsilon_limit,
)
from dpauc_tf.noise.shares import shortfall_unit_epsilon

RANK_EPSILON = 0.75  # epsilon = 1 with the default count share of 0.25


def _brute_force_loss(scale: float, shift: int, fraction: float) -> float:
    """max over z and 0 < k <= shift of log P(z) / P(z + k), P the PMF of the difference of
    two NegativeBinomial(fraction, e^(-1/scale)), by direct convolution."""
    q = math.exp(-1.0 / scale)
    support = int(60 * scale) + 4 * shift + 200
    p = stats.nbinom.pmf(np.arange(support), fraction, 1.0 - q)
    diff = np.convolve(p, p[::-1])  # P(z) at index z + support - 1
    centre = support - 1
    window = diff[centre - 2 * shift - 50 : centre + 2 * shift + 51]  # well above underflow
    logs = np.log(window)
    return max(float(np.max(logs[:-k] - logs[k:])) for k in range(1, shift + 1))


@pytest.mark.parametrize("fraction", [0.55, 0.75, 0.9])
@pytest.mark.parametrize("sensitivity", [0.5, 1.0, 2.5, 6.0])
def test_the_shifted_loss_is_the_brute_force_maximum_over_every_z_and_shift(fraction, sensitivity):
    twice = round(2 * sensitivity)
    scale = twice / RANK_EPSILON
    exact = polya_shift_epsilon(scale, twice, fraction)
    assert exact == pytest.approx(_brute_force_loss(scale, twice, fraction), rel=1e-7)
    assert exact > RANK_EPSILON  # less noise arrived: more loss than the full scale's


@pytest.mark.parametrize("fraction", [0.55, 0.75, 0.9, 0.99])
def test_the_limit_bounds_every_sensitivity_and_is_reached(fraction):
    limit = polya_shift_epsilon_limit(RANK_EPSILON, fraction)
    figures = [
        polya_shift_epsilon(2 * d / RANK_EPSILON, round(2 * d), fraction)
        for d in (0.5, 1, 3, 10, 100, 1000, 20_000)
    ]
    assert all(a < b for a, b in itertools.pairwise(figures))  # rising with D
    assert figures[-1] <= limit
    if fraction >= 0.75:  # not loose: the exact figure at large D is within 1% of it
        assert figures[-1] == pytest.approx(limit, rel=1e-2)
    assert polya_shift_epsilon_limit(RANK_EPSILON, 1.0) == RANK_EPSILON
    assert math.isinf(polya_shift_epsilon_limit(RANK_EPSILON, 0.5))


def test_achieved_epsilon_is_the_rank_limit_plus_the_count_loss():
    m = SecureRankSum(epsilon=1.0, num_clients=10, resolution=11)
    assert m.achieved_epsilon(10) == 1.0 == m.achieved_epsilon(12)
    nine = m.achieved_epsilon(9)
    count = polya_shift_epsilon(m.count_scale, 1, 0.9)
    assert count == pytest.approx(shortfall_unit_epsilon(m.count_scale, 0.9), rel=1e-6)
    assert nine == pytest.approx(polya_shift_epsilon_limit(0.75, 0.9) + count)
    assert 1.0 < nine < m.achieved_epsilon(7) < math.inf
    # for a given D the figure is the exact one, at most the one stated for every D
    at_d = m.achieved_epsilon(9, sensitivity=40.0)
    assert at_d == pytest.approx(polya_shift_epsilon(80 / 0.75, 80, 0.9) + count)
    assert 1.0 < at_d <= nine
    assert m.achieved_epsilon(9, sensitivity=0.0) == pytest.approx(count)  # D = 0: S exact
    assert math.isinf(m.achieved_epsilon(5)) and math.isinf(m.achieved_epsilon(0))
    # noise negligible (epsilon 1e9): a huge figure, never NaN
    huge = SecureRankSum(epsilon=1e9, num_clients=5, resolution=11).achieved_epsilon(4)
    assert huge > 1e9 and math.isfinite(huge)


def test_skellam_shares_that_arrive_state_a_finite_larger_epsilon():
    m = SecureRankSum(epsilon=1.0, delta=1e-6, family="skellam", num_clients=10, resolution=11)
    figures = [m.achieved_epsilon(k) for k in (10, 9, 5, 1)]
    assert figures[0] == 1.0
    assert figures[0] < figures[1] < figures[2] < figures[3] < math.inf
    # m of K shares are Skellam(mu m / K): a mechanism calibrated to the achieved figure
    # has exactly that noise
    half = SecureRankSum(
        epsilon=figures[2], delta=1e-6, family="skellam", num_clients=10, resolution=11
    )
    assert np.allclose(half.unit_mus, np.multiply(m.unit_mus, 0.5), rtol=1e-3)


def test_finish_releases_what_arrived_and_refuses_half_or_fewer_in_one_line():
    m = SecureRankSum(epsilon=1.0, num_clients=4, resolution=11)
    pos = np.array([[0, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0]])
    neg = np.array([[0, 0, 0, 6, 5, 1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0]])
    totals = sum(m.round_one_report(p, n) for p, n in zip(pos, neg, strict=True))
    reports = [
        m.round_two_report(p, n, totals, seed=k)
        for k, (p, n) in enumerate(zip(pos, neg, strict=True))
    ]
    summed = {key: sum(r[key] for r in reports) for key in reports[0]}
    with pytest.raises(ValueError, match="2 of the 4 noise shares") as error:
        m.finish(summed, totals, num_reporting=2)
    assert "\n" not in str(error.value)
    three = SecureRankSum(epsilon=1.0, num_clients=3, resolution=11)  # 2 of 3 arrive
    release = three.finish(summed, totals, num_reporting=2)
    assert float(release["total"]) == 28.0  # the two clients' examples
