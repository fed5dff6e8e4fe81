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
