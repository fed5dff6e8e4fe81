"""compare_noise_families: per-evaluation calibration of both families and the verdict."""

import math

import numpy as np
import pytest

from dpauc_tf.analysis.noise_families import compare_noise_families
from dpauc_tf.analysis.tree_design import mechanism_auc_variance
from dpauc_tf.mechanisms.tree import SecureTreeHistogram

POS = np.array([0.0, 10.0, 30.0, 60.0, 100.0, 0.0]) * 100
NEG = np.array([0.0, 100.0, 60.0, 30.0, 10.0, 0.0]) * 100


def test_laplace_side_spends_the_whole_budget_and_no_more():
    for n in (1, 20):
        c = compare_noise_families(n, 1.0, 1e-6, POS, NEG, branching=2)
        m = SecureTreeHistogram(c.laplace_epsilon, 5, branching=2)
        spent = m.privacy_spent(n, 1e-6).best
        assert spent <= 1.0 + 1e-9 and spent > 0.99  # bisection to 1e-3 relative
        assert c.laplace_auc_std == pytest.approx(math.sqrt(mechanism_auc_variance(POS, NEG, m)))
    assert c.laplace_accountant == "pld" and c.laplace_epsilon > 1.0 / 20  # beats basic


def test_skellam_side_composes_to_the_budget_and_the_verdict_flips_with_n():
    one = compare_noise_families(1, 1.0, 1e-6, POS, NEG, branching=2)
    many = compare_noise_families(100, 1.0, 1e-6, POS, NEG, branching=2)
    assert one.better == "discrete-laplace" and many.better == "skellam"
    # Renyi composition: noise std grows like sqrt(n) (mus like n), Laplace's like n
    ratio = np.asarray(many.skellam_mus) / np.asarray(one.skellam_mus)
    assert 30 < ratio.mean() < 100
    assert many.laplace_auc_std / one.laplace_auc_std > 15
    assert many.skellam_auc_std / one.skellam_auc_std < 12
    assert "better: skellam" in str(many)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="num_evaluations"):
        compare_noise_families(0, 1.0, 1e-6, POS, NEG)
    with pytest.raises(ValueError, match="delta"):
        compare_noise_families(5, 1.0, 0.0, POS, NEG)
    with pytest.raises(ValueError, match="epsilon_total"):
        compare_noise_families(5, -1.0, 1e-6, POS, NEG)
    with pytest.raises(ValueError, match="same length"):
        compare_noise_families(5, 1.0, 1e-6, POS, NEG[:-1])
