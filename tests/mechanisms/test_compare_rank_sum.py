"""The paired comparison by the rank-sum difference: every flip within the stated
sensitivities (brute force), the noise's law (central and secure shares), noise-off
agreement with the exact AUCs, federated rounds and hostile inputs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dpauc_tf.mechanisms.comparison_rank_sum import RankSumComparison, comparison_statistics
from dpauc_tf.mechanisms.comparison_release import compare_models
from dpauc_tf.mechanisms.release import ReleaseSpec
from tests.helpers.stats import law_pvalue

SCORES_A = np.array([0.9, 0.2, 0.6, 0.4, 0.4, 0.1])
SCORES_B = np.array([0.8, 0.3, 0.4, 0.7, 0.4, 0.1])


def test_every_flip_stays_within_the_stated_sensitivities():
    """All 2^6 label vectors, every flip: Delta by <= D = max |d|, S_A by <= max |r_A|, P by
    1, Q by <= D^2; D is reached (a smaller claim would be false)."""
    reached = False
    for labels in itertools.product((0, 1), repeat=6):
        before = comparison_statistics(np.array(labels), SCORES_A, SCORES_B)
        for i in range(6):
            flipped = np.array(labels)
            flipped[i] = 1 - flipped[i]
            after = comparison_statistics(flipped, SCORES_A, SCORES_B)
            for key in ("sensitivity", "sensitivity_a", "total_square", "total"):
                assert after[key] == before[key]  # public: the same for both neighbours
            moved = abs(after["difference"] - before["difference"])
            assert moved <= before["sensitivity"] + 1e-12
            reached |= moved == before["sensitivity"]
            assert abs(after["rank_sum_a"] - before["rank_sum_a"]) <= before["sensitivity_a"]
            assert abs(after["num_pos"] - before["num_pos"]) == 1
            assert abs(after["square"] - before["square"]) <= before["sensitivity"] ** 2 + 1e-12
    assert reached


@pytest.mark.parametrize("secure", [False, True])
def test_the_released_noise_follows_the_stated_scales(secure):
    m = RankSumComparison(epsilon=1.0, secure=secure)
    exact = comparison_statistics(np.array([1, 0, 1, 0, 0, 1]), SCORES_A, SCORES_B)
    release = m.release(exact, seed=5, repeats=3000)
    noise = release["difference"] - exact["difference"]
    scale = exact["sensitivity"] / 0.5
    if secure:  # discrete Laplace on 2 Delta (an integer)
        twice = np.round(2 * noise)
        law, scale, noise = "discrete-laplace", 2 * scale, twice
    else:
        law = "laplace"
    if secure:  # every statistic on its integer lattice, whatever the labels
        for key, factor in (("difference", 2), ("rank_sum_a", 2), ("num_pos", 1), ("square", 4)):
            assert float(factor * exact[key]).is_integer()
            lattice = factor * release[key]
            assert np.array_equal(lattice, np.round(lattice))
    assert law_pvalue(noise, law, scale) > 1e-3
    assert law_pvalue(noise, law, scale / 2) < 1e-6
    assert law_pvalue(noise, law, scale * 2) < 1e-6
    assert m.statement().epsilon == 1.0 and m.privacy_spent(1).best == pytest.approx(1.0)


def _pair(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype(int)
    z = rng.normal(size=n)
    a = 1 / (1 + np.exp(-(labels + z)))
    b = 1 / (1 + np.exp(-(1.15 * labels + 0.9 * z + 0.43 * rng.normal(size=n))))
    return labels, a, b


def test_noise_off_limit_is_the_exact_difference():
    labels, a, b = _pair()
    out = compare_models(labels, a, b, epsilon=1e9, method="rank-sum", seed=0)
    exact = roc_auc_score(labels, b) - roc_auc_score(labels, a)
    assert out.difference == pytest.approx(exact, abs=1e-9)
    assert out.auc_a == pytest.approx(roc_auc_score(labels, a), abs=1e-9)
    assert out.ci_low < out.difference < out.ci_high and out.privacy_share < 1e-6


def test_federated_rounds_agree_with_central_and_refuse_a_lost_client():
    labels, a, b = _pair(1500, seed=1)
    exact = roc_auc_score(labels, b) - roc_auc_score(labels, a)
    for secure in (False, True):
        out = compare_models(
            labels, a, b, epsilon=1e9, method="rank-sum", num_clients=7, secure=secure, seed=2
        )
        assert out.difference == pytest.approx(exact, abs=2e-4)  # the fine grid's ties only
    m = RankSumComparison(epsilon=1.0, num_clients=2, secure=True)
    totals = np.array([[2, 1], [1, 2]])
    summed = {"num_examples": np.array([2.0]), "total_square": np.array([0.0])}
    with pytest.raises(ValueError, match="lost"):
        m.finish(summed, totals, 1.0)


def test_hostile_inputs_and_the_spec():
    labels, a, b = _pair(200)
    with pytest.raises(ValueError, match="method"):
        compare_models(labels, a, b, epsilon=1.0, method="delong")
    with pytest.raises(ValueError, match="rank-sum"):
        compare_models(labels, a, b, epsilon=1.0, num_clients=3, method="histogram")
    with pytest.raises(ValueError, match="num_buckets: only method='histogram'"):
        compare_models(labels, a, b, epsilon=1.0, num_buckets=8)  # was silently ignored
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        compare_models(labels, a * 3, b, epsilon=1.0, method="rank-sum", num_clients=2)
    same = compare_models(labels, a, a, epsilon=1.0, method="rank-sum", seed=0)
    assert same.difference == 0.0  # D = 0: the difference is exact
    one_class = compare_models(np.ones(200, int), a, b, epsilon=1.0, method="rank-sum", seed=0)
    assert np.isfinite(one_class.difference) or np.isnan(one_class.difference)
    spec = ReleaseSpec.make("paired-comparison-rank-sum", epsilon=1.0)
    assert spec.capabilities.releases == "auc" and not spec.capabilities.keras_metric
    with pytest.raises(ValueError, match="sum to 1"):
        RankSumComparison(
            1.0, shares={"difference": 0.5, "rank_sum_a": 0.2, "num_pos": 0.2, "square": 0.2}
        )
