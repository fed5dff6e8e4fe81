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
        # a hair above dp-accounting's own reading (the PLD_DELTA_MARGIN, a coarser grid)
        assert exact <= spent.pld <= exact * (1 + 1e-4) and spent.method == "pld"
        assert spent.best > 89.7  # the continuous figure (87.8) is below
    tree = get_mechanism("secure-tree-histogram", epsilon=3.0, num_thresholds=15)
    levels = [
        privacy_loss_distribution.from_discrete_laplace_mechanism(1 / s).self_compose(2)
        for s in tree.level_scales
    ]
    one = levels[0]
    for level in levels[1:]:
        one = one.compose(level)
    plain = one.self_compose(5).get_epsilon_for_delta(1e-6)
    assert plain <= tree.privacy_spent(5, 1e-6).pld <= plain * (1 + 1e-4)
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
    assert spent.pld is not None and spent.method == "pld"  # Skellam's PLD from its pmf
    accountant = rdp.RdpAccountant(list(RDP_ORDERS))
    accountant.compose(laplace)
    curve = accountant.rdp + 5 * skellam_rdp(accountant.orders, skellam.noise_scale, 2.0, 2.0)
    assert spent.rdp == pytest.approx(rdp.compute_epsilon(accountant.orders, curve, 1e-6)[0])
    assert spent.rdp < spent.basic
    # discrete Laplace has no RDP in dp-accounting: Skellam + discrete Laplace by PLD only
    discrete = get_mechanism("secure-histogram", epsilon=0.5, num_thresholds=10)
    both = dp_accounting.ComposedDpEvent([skellam.dp_event(), discrete.dp_event()])
    summed = composed_epsilon(both, 1, 1e-6)
    assert summed.rdp is None and summed.method == "pld" and summed.pld < summed.basic
    from dpauc_tf.privacy.skellam import skellam_epsilon, skellam_rdp_epsilon

    alone = skellam.privacy_spent(1, 1e-6)  # the Skellam release's own best figure (PLD)
    assert alone.best == alone.pld < skellam_rdp_epsilon(skellam.noise_scale, 1e-6)
    # the statement's calibration uses the same PLD figure (issue 30)
    assert alone.best == pytest.approx(skellam_epsilon(skellam.noise_scale, 1e-6), rel=1e-9)
    assert summed.basic == pytest.approx(0.5 + alone.best)


# -- tighter where dp-accounting allows it (issue 21) ---------------------------------------
import numpy as np  # noqa: E402


def _bisect_epsilon(delta_of, delta, high=50.0):
    """Smallest epsilon with ``delta_of(epsilon) <= delta`` (delta_of non-increasing)."""
    low = 0.0
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (low, middle) if delta_of(middle) <= delta else (middle, high)
    return high


def _laplace_pair_delta(epsilon, scale):
    """Exact delta(epsilon) of one continuous histogram release under a label flip of unit
    weight: Laplace(scale) on pos[b] and on neg[b], the neighbour's pos[b] - 1, neg[b] + 1
    (brute force, independent of dp-accounting). Per count the loss ``(|x - 1| - |x|) / scale``
    is ``1 / scale`` for ``x <= 0`` (mass 1/2), ``-1 / scale`` for ``x >= 1`` (mass
    ``exp(-1 / scale) / 2``) and linear between (a fine grid of cells, each at its largest
    loss: an upper bound on delta)."""
    edges = np.linspace(0.0, 1.0, 20001)
    cells = 0.5 * (np.exp(-edges[:-1] / scale) - np.exp(-edges[1:] / scale))
    masses = np.concatenate([[0.5], cells, [0.5 * math.exp(-1 / scale)]])
    losses = np.concatenate([[1.0], 1.0 - 2.0 * edges[:-1], [-1.0]]) / scale
    order = np.argsort(losses)
    losses, masses = losses[order], masses[order]
    # sum over both counts: for each loss l of the first, the second's losses above
    # epsilon - l contribute m_j (1 - exp(epsilon - l - l_j)); tail sums from the top
    tail_mass = np.cumsum(masses[::-1])[::-1]
    tail_weighted = np.cumsum((masses * np.exp(-losses))[::-1])[::-1]
    start = np.searchsorted(losses, epsilon - losses, side="right")
    inside = start < len(losses)
    first = start[inside]
    parts = tail_mass[first] - np.exp(epsilon - losses[inside]) * tail_weighted[first]
    return float(np.sum(masses[inside] * parts))


def test_continuous_equal_split_is_booked_as_two_unit_laplace_events():
    """The continuous histogram was booked as one Laplace event of L1 = 2 (1.4-1.6x looser
    over 100-1,000 releases); a flip moves two counts by one each: two unit events."""
    m = get_mechanism("histogram", epsilon=1.0, num_thresholds=10)
    single = dp_accounting.LaplaceDpEvent(noise_multiplier=m.noise_scale / 2)  # the old booking
    for releases in (100, 1000):
        new = m.privacy_spent(releases, delta=1e-6).best
        old = composed_epsilon(single, releases, 1e-6).best
        assert new < old / 1.3, (releases, new, old)
    tree = get_mechanism("tree-histogram", epsilon=1.0, num_thresholds=15)
    old_tree = dp_accounting.ComposedDpEvent(
        [dp_accounting.LaplaceDpEvent(noise_multiplier=s / 2) for s in tree.level_scales]
    )
    assert tree.privacy_spent(100, 1e-6).best < composed_epsilon(old_tree, 100, 1e-6).best / 1.2
    assert pure_epsilon(m.dp_event()) == pytest.approx(1.0)  # the pure figure is unchanged
    assert pure_epsilon(tree.dp_event()) == pytest.approx(1.0)


def test_the_two_unit_events_still_bound_the_true_epsilon():
    m = get_mechanism("histogram", epsilon=1.0, num_thresholds=10)
    for delta in (1e-2, 1e-3):
        figure = m.privacy_spent(1, delta=delta).best
        exact = _bisect_epsilon(lambda e: _laplace_pair_delta(e, m.noise_scale), delta, 2.0)
        assert _laplace_pair_delta(figure, m.noise_scale) <= delta * (1 + 1e-3)
        assert abs(figure - exact) <= 1e-3  # tight: the exact figure, up to the grids


def _optimal_composition_delta(epsilon, k, eps0, delta0):
    """Exact delta(epsilon) of k compositions of the canonical (eps0, delta0) pair (Kairouz,
    Oh & Viswanath 2015): the worst case of k (eps0, delta0)-DP releases."""
    from math import comb, exp

    p, q = exp(eps0) / (1 + exp(eps0)), 1 / (1 + exp(eps0))
    finite = sum(
        comb(k, i) * p ** (k - i) * q**i * max(0.0, 1 - exp(epsilon - (k - 2 * i) * eps0))
        for i in range(k + 1)
    )
    return 1 - (1 - delta0) ** k + (1 - delta0) ** k * finite


def test_auc_only_composes_by_optimal_composition_and_stays_a_valid_bound():
    """auc-only was composed by the basic sum (k epsilon), 3-8x the optimal composition of
    (epsilon, delta) releases at 100-1,000 releases of epsilon 0.01."""
    m = get_mechanism("auc-only", epsilon=0.01, num_thresholds=200, delta=1e-9)
    for releases in (100, 1000):
        spent = m.privacy_spent(releases, delta=1e-5)
        assert spent.basic == pytest.approx(0.01 * releases)
        assert spent.method == "pld" and spent.best < spent.basic / 2.5, spent
    # valid: against the exact optimal composition theorem (a small case, brute force)
    k, total_delta = 60, 1e-5
    spent = m.privacy_spent(k, delta=total_delta)
    exact = _bisect_epsilon(
        lambda e: _optimal_composition_delta(e, k, m.epsilon, m.delta), total_delta, 1.0
    )
    assert _optimal_composition_delta(spent.best, k, m.epsilon, m.delta) <= total_delta
    assert exact <= spent.best <= exact + 1e-3
    # the deltas of the bounds still come first: more than the ledger's delta is refused
    assert math.isinf(m.privacy_spent(20_000, delta=1e-5).best)
    assert math.isinf(m.privacy_spent(1, delta=0.0).best)


def _skellam_flat_delta(epsilon, mu):
    """Exact delta(epsilon) of one flat Skellam histogram release (pos[b] - 1, neg[b] + 1)
    by a brute-force sum over both counts' noise (scipy's pmf)."""
    from scipy.stats import skellam

    half = int(20 * math.sqrt(2 * mu)) + 20
    k = np.arange(-half, half + 1)
    p = skellam.pmf(k, mu, mu)
    q_pos, q_neg = skellam.pmf(k + 1, mu, mu), skellam.pmf(k - 1, mu, mu)  # the neighbour's
    joint_p = p[:, None] * p[None, :]
    joint_q = q_pos[:, None] * q_neg[None, :]
    return float(np.sum(np.clip(joint_p - math.exp(epsilon) * joint_q, 0, None)))


def test_skellam_is_composed_by_its_exact_pld_and_stays_a_valid_bound():
    """Skellam was composed by its Renyi bound; the PLD from its pmf is 8-12% tighter."""
    m = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=10, delta=1e-6)
    for releases in (100, 1000):
        spent = m.privacy_spent(releases, delta=1e-6)
        assert spent.method == "pld" and spent.pld < spent.rdp / 1.05, spent
    tree = get_mechanism("secure-tree-histogram", epsilon=1.0, num_thresholds=15, delta=1e-6)
    assert tree.privacy_spent(100, 1e-6).pld < tree.privacy_spent(100, 1e-6).rdp / 1.05
    # valid: one release against the exact delta (brute force over both counts' noise)
    mu = m.noise_scale
    for delta in (1e-3, 1e-6):
        figure = m.privacy_spent(1, delta=delta).best
        assert _skellam_flat_delta(figure, mu) <= delta * (1 + 1e-6)
        exact = _bisect_epsilon(lambda e: _skellam_flat_delta(e, mu), delta, 3.0)
        assert exact <= figure <= exact + 2e-3


def test_a_huge_epsilon_gives_a_valid_figure_not_an_overflow():
    """The PLD of auc-only's (epsilon, delta) pair overflows at epsilon 1000 (exp(1000)):
    the accountant falls back to the other figures instead of raising."""
    from dpauc_tf.mechanisms import get_mechanism

    mechanism = get_mechanism("auc-only", epsilon=1000.0, num_thresholds=10, delta=1e-6)
    spent = mechanism.privacy_spent(2, delta=1e-5)  # the releases' own deltas fit: 2e-6
    assert spent.pld is None and spent.basic == pytest.approx(2000.0)
    assert spent.best == pytest.approx(2000.0)


# -- issue 30: the PLD figure is an upper bound, not a hair below it --------------------------
def _optimal_composition_delta_exact(epsilon, k, eps0, delta0):
    """As ``_optimal_composition_delta``, summed with care (fsum, expm1/log1p): its own
    round-off is below 1e-20 at delta 1e-6, far under the FFT's 4e-14."""
    from math import comb, exp, expm1, fsum, log1p

    p, q = exp(eps0) / (1 + exp(eps0)), 1 / (1 + exp(eps0))
    finite = fsum(
        comb(k, i) * p ** (k - i) * q**i * -expm1(epsilon - (k - 2 * i) * eps0)
        for i in range(k + 1)
        if (k - 2 * i) * eps0 > epsilon
    )
    kept = exp(k * log1p(-delta0))
    return -expm1(k * log1p(-delta0)) + kept * finite


def test_auc_only_over_1000_releases_is_not_below_the_exact_figure():
    """dp-accounting's FFT round-off put the PLD figure of 1,000 auc-only releases at
    591.5657804 where the exact epsilon for the ledger's delta is 591.5657806: the figure
    is read at a slightly smaller delta now (PLD_DELTA_MARGIN), so it bounds the truth."""
    m = get_mechanism("auc-only", epsilon=1.0, num_thresholds=200, delta=1e-10)
    k, total_delta = 1000, 1e-6
    figure = m.privacy_spent(k, delta=total_delta).best
    exact = _bisect_epsilon(
        lambda e: _optimal_composition_delta_exact(e, k, 1.0, 1e-10), total_delta, 1000.0
    )
    assert exact == pytest.approx(591.5657806, abs=1e-7)
    assert _optimal_composition_delta_exact(figure, k, 1.0, 1e-10) <= total_delta
    assert exact <= figure <= exact * (1 + 1e-4)  # the margin costs little


def test_a_pld_at_a_huge_epsilon_is_skipped_quickly_with_a_reason():
    """The PLD of one Laplace release at epsilon 1e4 spanned 2e8 grid points (11.5 minutes);
    at 1e5 and beyond it asked for 11 GiB to 109 TiB; at 1000 it failed ("deltas are not in
    non-increasing order"). Past PLD_MAX_LOSS it is not built; below, the grid is coarsened
    so that it spans at most PLD_MAX_POINTS points."""
    import time

    from dpauc_tf.privacy.accounting import PLD_MAX_POINTS, pld_interval, pld_note

    for epsilon in (1e3, 1e4, 1e5, 1e9):
        event = dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / epsilon)
        start = time.monotonic()
        spent = composed_epsilon(event, 1, 1e-6)
        assert time.monotonic() - start < 5.0
        assert spent.pld is None and spent.best == pytest.approx(epsilon)
        assert "not computed" in pld_note(event)
    event = dp_accounting.LaplaceDpEvent(noise_multiplier=1.0 / 300)
    interval = pld_interval([(event, 1)])
    assert 2 * 300 / interval <= PLD_MAX_POINTS and interval in (1e-3, 2e-3, 5e-3)
    spent = composed_epsilon(event, 1, 1e-6)
    assert pld_note(event) is None and spent.pld == pytest.approx(300.0, rel=1e-3)


# -- issue 30: the flat Skellam noise is calibrated by the exact PLD, not the Renyi bound ------
@pytest.mark.parametrize("epsilon", [1.0, 8.0])
def test_skellam_statement_is_tight_and_valid_against_the_exact_delta(epsilon):
    """The Renyi calibration stated (1, 1e-6) for a release whose exact epsilon is 0.893
    (8 for 3.81): the mechanism added more noise than its statement needed. mu is now the
    smallest for which the tighter of the Renyi and the PLD figures meets the target."""
    m = get_mechanism("secure-histogram", epsilon=epsilon, num_thresholds=10, delta=1e-6)
    mu = m.noise_scale
    assert _skellam_flat_delta(epsilon, mu) <= 1e-6  # valid: the exact delta (brute force)
    exact = _bisect_epsilon(lambda e: _skellam_flat_delta(e, mu), 1e-6, 2 * epsilon)
    assert 0.99 * epsilon <= exact <= epsilon  # tight


def test_class_split_skellam_is_calibrated_by_its_pld_and_stays_valid():
    """The class-split Skellam histogram (mu_pos != mu_neg) stated (1, 1e-6) for an exact
    0.88 by the Renyi bound; its two-class PLD is cheap, so it calibrates by it too."""
    from scipy.stats import skellam

    m = get_mechanism(
        "secure-histogram", epsilon=1.0, num_thresholds=10, delta=1e-6, family="skellam",
        positive_share=0.3,
    )  # fmt: skip
    mu_pos, mu_neg = m.class_scales

    def exact_delta(epsilon):
        def law(mu, shift):
            half = int(20 * math.sqrt(2 * mu)) + 20
            k = np.arange(-half, half + 1)
            return skellam.pmf(k, mu, mu), skellam.pmf(k + shift, mu, mu)

        p_pos, q_pos = law(mu_pos, 1)
        p_neg, q_neg = law(mu_neg, -1)
        joint_p, joint_q = np.outer(p_pos, p_neg), np.outer(q_pos, q_neg)
        return float(np.sum(np.clip(joint_p - math.exp(epsilon) * joint_q, 0, None)))

    assert exact_delta(1.0) <= 1e-6
    assert 0.99 <= _bisect_epsilon(exact_delta, 1e-6, 2.0) <= 1.0
