import math

import dp_accounting
import pytest

from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.privacy.accounting import analytic_gaussian_sigma, composed_epsilon, pure_epsilon


def test_basic_and_tight_composition_of_laplace_releases():
    # NOTES.md: 100 Laplace releases of epsilon 0.01, delta 1e-6: basic 1.0, RDP 0.43, PLD 0.39.
    spent = composed_epsilon(dp_accounting.LaplaceDpEvent(noise_multiplier=100.0), 100, 1e-6)
    assert spent.basic == pytest.approx(1.0)
    assert spent.pld == pytest.approx(0.39, abs=0.02)
    assert spent.rdp == pytest.approx(0.43, abs=0.03)
    assert spent.best == spent.pld


def test_pure_composition_without_delta_is_the_sum():
    m = get_mechanism("histogram", epsilon=0.25, num_thresholds=10)
    spent = m.privacy_spent(releases=8)
    assert spent.basic == pytest.approx(2.0) and spent.pld is None and spent.best == 2.0
    assert pure_epsilon(m.dp_event()) == pytest.approx(0.25)


def test_gaussian_composition_needs_delta():
    m = get_mechanism("paper-gaussian", epsilon=1.0, num_thresholds=10, delta=1e-5)
    assert math.isinf(composed_epsilon(m.dp_event(), 3, 0.0).basic)
    one = m.privacy_spent(1)
    assert one.pld == pytest.approx(1.0, abs=0.02)
    many = m.privacy_spent(10, delta=1e-5)
    assert many.pld < many.basic


def test_analytic_gaussian_matches_known_values():
    # Balle & Wang (2018): epsilon = 1, delta = 1e-5 -> sigma ~ 3.73 for sensitivity 1.
    assert analytic_gaussian_sigma(1.0, 1e-5) == pytest.approx(3.73, abs=0.01)
    assert analytic_gaussian_sigma(1.0, 1e-5, sensitivity=4.0) == pytest.approx(
        4 * 3.7305, rel=1e-3
    )
    with pytest.raises(ValueError):
        analytic_gaussian_sigma(0.0, 1e-5)
    with pytest.raises(ValueError):
        analytic_gaussian_sigma(1.0, 0.0)


def test_discrete_noise_is_accounted_with_the_discrete_laplace_pld():
    """Regression: 30 secure-histogram releases at epsilon 3, delta 1e-6 were reported as
    87.8 (continuous-Laplace PLD); the discrete mechanism's exact PLD gives 89.8."""
    from dp_accounting.pld import privacy_loss_distribution

    per_count = privacy_loss_distribution.from_discrete_laplace_mechanism(1.5, sensitivity=1)
    exact = per_count.self_compose(2 * 30).get_epsilon_for_delta(1e-6)  # a flip moves 2 counts
    for name, options in [("secure-histogram", {}), ("histogram", {"noise": "discrete"})]:
        m = get_mechanism(name, epsilon=3.0, num_thresholds=10, **options)
        spent = m.privacy_spent(30, delta=1e-6)
        assert spent.pld == pytest.approx(exact, rel=1e-6) and spent.method == "pld"
        assert spent.best > 89.7  # the continuous figure (87.8) is below
    tree = get_mechanism("secure-tree-histogram", epsilon=3.0, num_thresholds=15)
    levels = [
        privacy_loss_distribution.from_discrete_laplace_mechanism(1 / s).self_compose(2)
        for s in tree.level_scales
    ]
    one = levels[0]
    for level in levels[1:]:
        one = one.compose(level)
    assert tree.privacy_spent(5, 1e-6).pld == pytest.approx(
        one.self_compose(5).get_epsilon_for_delta(1e-6), rel=1e-6
    )
    assert pure_epsilon(tree.dp_event()) == pytest.approx(3.0)


def test_randomized_response_composes_count_times():
    """dp-accounting 0.6.0's PLD accountant composes a randomized-response event once
    whatever its count; ours composes it count times (and accounts it at all)."""
    m = get_mechanism("rr", epsilon=1.0, num_thresholds=10)
    one, ten = m.privacy_spent(1, 1e-6), m.privacy_spent(10, 1e-6)
    assert one.pld == pytest.approx(1.0, abs=1e-3)
    assert 5.0 < ten.pld <= 10.0 + 1e-6
    assert (
        m.privacy_spent(10).basic == pytest.approx(10.0) and m.privacy_spent(10).method == "basic"
    )


def test_skellam_composes_by_renyi_with_others_and_says_which_method():
    from dp_accounting import rdp

    from dpauc_tf.privacy.skellam import RDP_ORDERS, skellam_rdp

    skellam = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=10, delta=1e-6)
    laplace = dp_accounting.LaplaceDpEvent(noise_multiplier=2.0)
    mixed = dp_accounting.ComposedDpEvent(
        [dp_accounting.SelfComposedDpEvent(skellam.dp_event(), 5), laplace]
    )
    spent = composed_epsilon(mixed, 1, 1e-6)
    assert spent.pld is None and spent.method == "rdp"
    accountant = rdp.RdpAccountant(list(RDP_ORDERS))
    accountant.compose(laplace)
    curve = accountant.rdp + 5 * skellam_rdp(accountant.orders, skellam.noise_scale, 2.0, 2.0)
    assert spent.rdp == pytest.approx(rdp.compute_epsilon(accountant.orders, curve, 1e-6)[0])
    assert spent.rdp < spent.basic
    # discrete Laplace has no RDP in dp-accounting: Skellam + discrete Laplace is summed
    discrete = get_mechanism("secure-histogram", epsilon=0.5, num_thresholds=10)
    both = dp_accounting.ComposedDpEvent([skellam.dp_event(), discrete.dp_event()])
    summed = composed_epsilon(both, 1, 1e-6)
    assert summed.pld is None and summed.rdp is None and summed.method == "basic"
    from dpauc_tf.privacy.skellam import skellam_epsilon

    assert summed.basic == pytest.approx(0.5 + skellam_epsilon(skellam.noise_scale, 1e-6))
