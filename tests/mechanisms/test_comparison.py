"""Private paired comparison of two models (dpauc_tf.mechanisms.comparison).

The release is the stated law (a halved or doubled scale fails), every label flip costs at
most epsilon (brute force), and the test is calibrated: its z-scores have unit spread under
the null on seeded binormal test sets, which fails if the correlation of the two models is
ignored (z too narrow) or the privacy noise's variance is dropped (z too wide).
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy import stats

from dpauc_tf.mechanisms.comparison import (
    PairedComparison,
    joint_counts,
    paired_statistics,
)
from dpauc_tf.mechanisms.comparison_release import compare_models as _compare_models
from dpauc_tf.privacy.accounting import pure_epsilon


def compare_models(*args, **kwargs):
    """The joint-histogram method, which this file tests (the default is the rank sums)."""
    return _compare_models(*args, method="histogram", **kwargs)


def binormal_pair(rng, n, auc_a, auc_b, rho, rate=0.3):
    labels = rng.random(n) < rate
    z = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], size=n)
    shift_a, shift_b = (np.sqrt(2) * stats.norm.ppf(x) for x in (auc_a, auc_b))
    a = 1 / (1 + np.exp(-(z[:, 0] + shift_a * labels)))
    b = 1 / (1 + np.exp(-(z[:, 1] + shift_b * labels)))
    return labels.astype(int), a, b


@pytest.mark.parametrize("share", [0.5, 0.7])
def test_release_draws_the_stated_laplace_noise(share):
    m = PairedComparison(epsilon=1.0, positive_share=share)
    pos, neg = np.full((6, 6), 20.0), np.full((6, 6), 50.0)
    noise = {"pos": [], "neg": []}
    for seed in range(40):
        r = m.release(pos, neg, seed=seed)
        noise["pos"].append(r["pos"] - pos)
        noise["neg"].append(r["neg"] - neg)
    for key, scale in zip(("pos", "neg"), m.scales, strict=True):
        samples = np.ravel(noise[key])  # 1,440 draws
        fit = stats.kstest(samples, stats.laplace(scale=scale).cdf).pvalue
        assert fit > 1e-3, (key, fit)
        for wrong in (scale / 2, scale * 2):
            assert stats.kstest(samples, stats.laplace(scale=wrong).cdf).pvalue < 1e-6


def test_every_label_flip_costs_at_most_epsilon():
    """Every labelling of 4 examples on a 2 x 2 joint grid and every flip: the released
    counts move by sum |change| / scale <= epsilon, and the ledger's event says epsilon."""
    m = PairedComparison(epsilon=1.0, positive_share=0.7)
    bucket_a, bucket_b = np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])
    worst = 0.0
    for labels in itertools.product([0, 1], repeat=4):
        labels = np.array(labels)
        p0, n0 = joint_counts(labels, bucket_a, bucket_b, (2, 2))
        for i in range(4):
            flipped = labels.copy()
            flipped[i] = 1 - flipped[i]
            p1, n1 = joint_counts(flipped, bucket_a, bucket_b, (2, 2))
            loss = np.abs(p1 - p0).sum() / m.scales[0] + np.abs(n1 - n0).sum() / m.scales[1]
            worst = max(worst, loss)
    assert worst == pytest.approx(1.0)
    assert pure_epsilon(m.dp_event()) == pytest.approx(1.0)
    assert m.statement().epsilon == 1.0 and "L1 = 2" in m.statement().sensitivity


def test_noise_free_statistics_are_delong():
    """With no noise the difference and variance are DeLong's on the bucketed scores."""
    rng = np.random.default_rng(3)
    labels, a, b = binormal_pair(rng, 3000, 0.75, 0.76, 0.8)
    ia, ib = np.digitize(a, [0.3, 0.5, 0.7]), np.digitize(b, [0.3, 0.5, 0.7])
    s = paired_statistics(*joint_counts(labels, ia, ib, (4, 4)))

    def placements(x):
        pos, neg = x[labels == 1], x[labels == 0]
        greater = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
        return greater.mean(1), greater.mean(0)

    (va10, va01), (vb10, vb01) = placements(ia), placements(ib)
    assert s["difference"] == pytest.approx(vb10.mean() - va10.mean(), abs=1e-12)
    var = np.var(vb10 - va10, ddof=1) / va10.size + np.var(vb01 - va01, ddof=1) / va01.size
    assert s["sampling_variance"] == pytest.approx(var, rel=1e-9)


def test_type_one_error_is_controlled_and_needs_both_terms():
    """Seeded null sets (equal AUCs, correlation 0.8, n = 2,000, epsilon 1): the z-scores
    have unit spread and about 5 % reject. Ignoring the correlation (unpaired variance)
    makes z far too narrow; dropping the privacy variance makes it far too wide."""
    rng = np.random.default_rng(7)
    z, z_unpaired, z_no_noise = [], [], []
    for seed in range(300):
        labels, a, b = binormal_pair(rng, 2000, 0.75, 0.75, 0.8)
        r = compare_models(labels, a, b, epsilon=1.0, seed=seed)
        z.append(r.z)
        unpaired = r.sampling_variance_a + r.sampling_variance_b + r.privacy_variance
        z_unpaired.append(r.difference / np.sqrt(unpaired))
        z_no_noise.append(r.difference / np.sqrt(r.sampling_variance))
    z = np.asarray(z)
    assert 0.88 <= z.std() <= 1.12, z.std()
    assert np.mean(np.abs(z) > 1.96) <= 0.08
    assert np.std(z_unpaired) < 0.8  # would pass a "rejects <= 5 %" check, but no power
    assert np.std(z_no_noise) > 1.25


def test_power_at_a_real_difference():
    rng = np.random.default_rng(11)
    rejected = 0
    for seed in range(60):
        labels, a, b = binormal_pair(rng, 20000, 0.75, 0.77, 0.8)
        r = compare_models(labels, a, b, epsilon=1.0, seed=seed)
        rejected += r.p_value < 0.05 and r.difference > 0
    assert rejected >= 54


def test_result_to_dict_and_refusals():
    rng = np.random.default_rng(0)
    labels, a, b = binormal_pair(rng, 500, 0.7, 0.7, 0.5)
    r = compare_models(labels, a, b, epsilon=2.0, seed=1, confidence=0.9)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["ci_low"] < d["difference"] < d["ci_high"] and d["confidence"] == 0.9
    assert 0 <= d["privacy_share"] <= 1 and d["epsilon"] == 2.0
    assert compare_models(labels, a, b, epsilon=2.0, seed=1).difference == r.difference
    with pytest.raises(ValueError, match="one label and two scores"):
        compare_models(labels, a, b[:-1], epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        compare_models(labels, a, b, epsilon=0.0)
    with pytest.raises(ValueError, match="num_buckets"):
        compare_models(labels, a, b, epsilon=1.0, num_buckets=1)
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        compare_models(labels * 2, a, b, epsilon=1.0)
    with pytest.raises(ValueError, match="edges_a"):
        compare_models(labels, a, b, epsilon=1.0, edges_a=[0.5, 0.2])
