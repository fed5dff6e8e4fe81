"""secure-rank-sum (issue 32): the two-round protocol's summed shares have the central law (a
halved or doubled scale fails), the exact output law on every labelling of tiny data keeps the
ratio within e^eps, the protocol equals the central statistic, dropouts and hostile input give a
right number or a one-line refusal, and the modular limbs are exact at their limits."""

import itertools
import math

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.rank_sum import RankSum, rank_sum_statistics
from dpauc_tf.mechanisms.secure_rank_sum import (
    ModularLayout,
    SecureRankSum,
    modular_width,
    twice_centred_midranks,
    twice_sensitivity,
)

EPSILON = 1.0
RESOLUTION = 11  # 12 buckets


def _clients():
    """Three clients on a 12-bucket grid: one with both classes, one with ties, one negative-only."""
    pos = np.zeros((3, 12), np.int64)
    neg = np.zeros((3, 12), np.int64)
    pos[0, [5, 6, 9]] = [3, 4, 2]
    neg[0, [3, 4, 5]] = [6, 5, 1]
    pos[1, 6] = 4
    neg[1, [4, 6]] = [5, 2]
    neg[2, [3, 11]] = [1, 1]
    return pos, neg


def _protocol_sums(mechanism, pos, neg, repeats, seed=0):
    """Round one and round two of every client, ``repeats`` releases at once (``[R]`` sums)."""
    totals = sum(mechanism.round_one_report(p, n) for p, n in zip(pos, neg, strict=True))
    reports = [
        mechanism.round_two_report(
            np.tile(p, (repeats, 1)), np.tile(n, (repeats, 1)), totals, seed=1000 * seed + k
        )
        for k, (p, n) in enumerate(zip(pos, neg, strict=True))
    ]
    return totals, {key: sum(r[key] for r in reports) for key in reports[0]}


def _dlaplace_chi2_pvalue(noise: np.ndarray, scale: float) -> float:
    """Chi-square of integer noise against discrete Laplace(scale) (``P(k) ~ exp(-|k|/scale)``),
    on bins of about equal probability."""
    return _chi2_pvalue(noise, stats.dlaplace(1.0 / scale))


def _chi2_pvalue(noise: np.ndarray, law) -> float:
    """Chi-square of integer noise against a frozen integer law, on ~equal-probability bins."""
    edges = np.unique(np.round(law.ppf(np.linspace(0.02, 0.98, 25))).astype(np.int64))
    # bins (-inf, e0], (e0, e1], ..., (e_last, inf)
    cdf = np.concatenate([[0.0], law.cdf(edges), [1.0]])
    expected = np.diff(cdf) * noise.size
    observed = np.bincount(np.searchsorted(edges, noise, side="left"), minlength=edges.size + 1)
    return float(stats.chisquare(observed, expected).pvalue)


def test_summed_shares_are_the_central_discrete_laplace_and_a_wrong_scale_fails():
    """10 clients' round-two shares sum to discrete Laplace(2D / eps_S) on 2S and
    (1 / eps_P) on P: a chi-square at the stated scale passes, at half or twice it fails."""
    mechanism = SecureRankSum(epsilon=EPSILON, num_clients=10, resolution=RESOLUTION)
    pos3, neg3 = _clients()
    # ten clients: the three above and seven copies of the first split off
    pos = np.concatenate([pos3, np.tile(pos3[:1], (7, 1))])
    neg = np.concatenate([neg3, np.tile(neg3[:1], (7, 1))])
    totals, summed = _protocol_sums(mechanism, pos, neg, repeats=20_000)
    exact = rank_sum_statistics(
        tf.constant(pos.sum(0), tf.float64), tf.constant(neg.sum(0), tf.float64)
    )
    twice_d = int(twice_sensitivity(tf.constant(totals)).numpy())
    assert twice_d == 2 * float(exact["sensitivity"])
    scales = {
        "twice_rank_sum": float(mechanism.twice_rank_scale(twice_d)),
        "num_pos": mechanism.count_scale,
    }
    exact_values = {
        "twice_rank_sum": 2 * float(exact["rank_sum"]),
        "num_pos": float(exact["num_pos"]),
    }
    assert np.all(summed["num_examples"] == totals.sum())
    for key, scale in scales.items():
        noise = summed[key] - np.int64(round(exact_values[key]))
        assert _dlaplace_chi2_pvalue(noise, scale) > 1e-3, key
        for wrong in (scale / 2, scale * 2):
            assert _dlaplace_chi2_pvalue(noise, wrong) < 1e-6, (key, wrong)
    # the two noises are independent draws
    assert abs(np.corrcoef(summed["twice_rank_sum"], summed["num_pos"])[0, 1]) < 0.05


def test_skellam_shares_sum_to_the_stated_skellam_and_a_wrong_mu_fails():
    """family='skellam': the summed shares are Skellam((2D)^2 mu_S) on 2S and Skellam(mu_P) on
    P; halving or doubling mu fails the same test."""
    mechanism = SecureRankSum(
        epsilon=EPSILON, delta=1e-6, family="skellam", num_clients=3, resolution=RESOLUTION
    )
    pos, neg = _clients()
    totals, summed = _protocol_sums(mechanism, pos, neg, repeats=20_000, seed=2)
    twice_d = int(twice_sensitivity(tf.constant(totals)).numpy())
    exact = rank_sum_statistics(*(tf.constant(c.sum(0), tf.float64) for c in (pos, neg)))
    mus = {
        "twice_rank_sum": (2 * float(exact["rank_sum"]), twice_d**2 * mechanism.unit_mus[0]),
        "num_pos": (float(exact["num_pos"]), mechanism.unit_mus[1]),
    }
    for key, (value, mu) in mus.items():
        noise = summed[key] - np.int64(round(value))
        assert _chi2_pvalue(noise, stats.skellam(mu, mu)) > 1e-3, key
        for wrong in (mu / 2, mu * 2):
            assert _chi2_pvalue(noise, stats.skellam(wrong, wrong)) < 1e-6, (key, wrong)
    assert mechanism.privacy_spent(1).best == pytest.approx(EPSILON, rel=1e-6)


def test_the_aggregate_release_has_the_protocols_law():
    """simulate's path (one full draw on the summed counts) against the protocol: a two-sample
    test on the rank sum (the same law), and the same exact totals and sensitivity."""
    mechanism = SecureRankSum(epsilon=EPSILON, num_clients=3, resolution=RESOLUTION)
    pos, neg = _clients()
    totals, summed = _protocol_sums(mechanism, pos, neg, repeats=8_000, seed=1)
    protocol = mechanism.finish(summed, totals)
    aggregate = mechanism.aggregate().release(pos.sum(0), neg.sum(0), seed=5, repeats=8_000)
    for key in ("total", "sensitivity"):
        assert np.all(protocol[key].numpy() == aggregate[key].numpy())
    for key in ("rank_sum", "num_pos"):
        assert stats.ks_2samp(protocol[key].numpy(), aggregate[key].numpy()).pvalue > 1e-3, key
    # and against a doubled scale of the aggregate's noise: the test has the power to see it
    exact = 2 * float(
        rank_sum_statistics(*(tf.constant(c.sum(0), tf.float64) for c in (pos, neg)))["rank_sum"]
    )
    doubled = exact / 2 + 2 * (aggregate["rank_sum"].numpy() - exact / 2)
    assert stats.ks_2samp(protocol["rank_sum"].numpy(), doubled).pvalue < 1e-6


def _exact_law_log_ratio(mechanism, pos_a, neg_a, pos_b, neg_b):
    """The largest log ratio of the exact output law (2S~, P~) of two neighbours (same totals:
    the released W and D coincide), over the whole support window."""
    totals = pos_a + neg_a
    assert np.array_equal(totals, pos_b + neg_b)
    twice_d = int(twice_sensitivity(tf.constant(totals, tf.int64)).numpy())
    ranks = twice_centred_midranks(tf.constant(totals, tf.int64)).numpy()
    outputs = []
    for pos in (pos_a, pos_b):
        outputs.append((int(ranks @ pos), int(pos.sum())))
    worst = 0.0
    laws = []
    if twice_d > 0:
        laws.append((0, stats.dlaplace(1.0 / float(mechanism.twice_rank_scale(twice_d)))))
    laws.append((1, stats.dlaplace(1.0 / mechanism.count_scale)))
    for index, law in laws:
        centre = [o[index] for o in outputs]
        grid = np.arange(min(centre) - 200, max(centre) + 201)
        log_a = law.logpmf(grid - centre[0])
        log_b = law.logpmf(grid - centre[1])
        worst += float(np.max(np.abs(log_a - log_b)))
    if twice_d == 0:
        assert outputs[0][0] == outputs[1][0] == 0  # S is exact and carries nothing
    return worst


@pytest.mark.parametrize("scores", [(0, 0, 1, 2), (3, 3, 3, 3), (0, 2, 2, 5)])
def test_brute_force_every_labelling_and_flip_stays_within_e_eps(scores):
    """Every labelling of four examples and every single-label flip: the exact output law's
    log ratio is at most epsilon, and reaches at least eps_P (the count's share always moves)."""
    mechanism = SecureRankSum(epsilon=EPSILON, num_clients=4, resolution=4)
    scores = np.asarray(scores)
    worst = 0.0
    for labels in itertools.product((0, 1), repeat=scores.size):
        labels = np.asarray(labels)
        for flip in range(scores.size):
            other = labels.copy()
            other[flip] = 1 - other[flip]
            counts = []
            for lab in (labels, other):
                counts.append(np.bincount(scores, lab == 1, minlength=6).astype(np.int64))
                counts.append(np.bincount(scores, lab == 0, minlength=6).astype(np.int64))
            ratio = _exact_law_log_ratio(mechanism, *counts)
            assert ratio <= EPSILON + 1e-9, (labels, flip, ratio)
            worst = max(worst, ratio)
    assert worst >= mechanism.count_epsilon - 1e-9
    if len(set(scores.tolist())) > 1:
        assert worst == pytest.approx(EPSILON)  # a flip at the extreme rank uses all of it


def test_the_protocol_is_the_central_estimator():
    """With noise far below the AUC's resolution, the finished release is the exact rank sum
    and its AUC the central one (2S and the global ranks are right, whatever the split)."""
    mechanism = SecureRankSum(epsilon=1e9, num_clients=3, resolution=RESOLUTION)
    pos, neg = _clients()
    totals, summed = _protocol_sums(mechanism, pos, neg, repeats=1)
    release = mechanism.finish(summed, totals)
    central = rank_sum_statistics(*(tf.constant(c.sum(0), tf.float64) for c in (pos, neg)))
    for key in ("rank_sum", "num_pos", "total", "sensitivity"):
        assert float(release[key][0]) == pytest.approx(float(central[key]), abs=1e-6), key
    auc = float(mechanism.estimate_auc(release)[0])
    assert auc == pytest.approx(
        float(RankSum(epsilon=1e9, resolution=RESOLUTION).estimate_auc(central))
    )


# -- dropouts and hostile input --------------------------------------------------------------
def test_a_client_lost_between_the_rounds_is_refused_in_one_line():
    mechanism = SecureRankSum(epsilon=EPSILON, num_clients=3, resolution=RESOLUTION)
    pos, neg = _clients()
    totals = sum(mechanism.round_one_report(p, n) for p, n in zip(pos, neg, strict=True))
    reports = [mechanism.round_two_report(pos[k], neg[k], totals, seed=k) for k in (0, 1)]
    summed = {key: sum(r[key] for r in reports) for key in reports[0]}
    with pytest.raises(ValueError, match=r"lost .*between the rounds") as error:
        mechanism.finish(summed, totals)
    assert "\n" not in str(error.value)
    # an empty client that drops leaves the population, but not the noise, intact: refused too
    empty = np.zeros(12, np.int64)
    mechanism4 = SecureRankSum(epsilon=EPSILON, num_clients=4, resolution=RESOLUTION)
    reports = [mechanism4.round_two_report(pos[k], neg[k], totals, seed=k) for k in range(3)]
    summed = {key: sum(r[key] for r in reports) for key in reports[0]}
    del empty
    with pytest.raises(ValueError, match="2 of the 4 noise shares"):  # half: no epsilon
        mechanism4.finish(summed, totals, num_reporting=2)
    assert math.isinf(mechanism4.achieved_epsilon(2)) and mechanism4.achieved_epsilon(4) == 1.0
    assert 1.0 < mechanism4.achieved_epsilon(3) < math.inf  # test_secure_rank_sum_shortfall.py
    # a client whose counts are not part of round one's totals is refused
    with pytest.raises(ValueError, match="exceed round one's totals"):
        mechanism.round_two_report(pos[0] + 1, neg[0], totals, seed=0)


def test_one_class_empty_and_tied_clients_give_the_right_number():
    mechanism = SecureRankSum(epsilon=1e9, num_clients=4, resolution=RESOLUTION)
    pos, neg = _clients()
    pos = np.concatenate([pos, np.zeros((1, 12), np.int64)])  # an empty fourth client
    neg = np.concatenate([neg, np.zeros((1, 12), np.int64)])
    totals, summed = _protocol_sums(mechanism, pos, neg, repeats=1)
    auc = float(mechanism.estimate_auc(mechanism.finish(summed, totals))[0])
    central = RankSum(epsilon=1e9, resolution=RESOLUTION)
    expected = float(
        central.estimate_auc(
            rank_sum_statistics(*(tf.constant(c.sum(0), tf.float64) for c in (pos, neg)))
        )
    )
    assert auc == pytest.approx(expected)
    # every score tied: D = 0, S = 0 exactly (no noise on it), the AUC is 1/2
    tied_pos = np.zeros((2, 12), np.int64)
    tied_neg = np.zeros((2, 12), np.int64)
    tied_pos[:, 7], tied_neg[:, 7] = [3, 0], [0, 5]
    noisy = SecureRankSum(epsilon=EPSILON, num_clients=2, resolution=RESOLUTION)
    totals, summed = _protocol_sums(noisy, tied_pos, tied_neg, repeats=50)
    release = noisy.finish(summed, totals)
    assert np.all(release["rank_sum"].numpy() == 0.0) and np.all(
        release["sensitivity"].numpy() == 0
    )
    aucs = noisy.estimate_auc(release).numpy()
    assert np.all(np.isnan(aucs) | (aucs == 0.5))
    # nothing at all: undefined (NaN), never a made-up number
    zeros = np.zeros((2, 12), np.int64)
    totals, summed = _protocol_sums(mechanism, zeros, zeros, repeats=1)
    assert np.isnan(float(mechanism.estimate_auc(mechanism.finish(summed, totals))[0]))


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_fractional_counts_are_refused_in_every_mode(mode):
    mechanism = SecureRankSum(epsilon=EPSILON, num_clients=2, resolution=RESOLUTION)
    pos = tf.constant([0.0] * 5 + [2.5] + [0.0] * 6, tf.float64)
    neg = tf.constant([1.0] * 12, tf.float64)
    totals = np.full(12, 4, np.int64)
    if mode == "eager":
        with pytest.raises(ValueError, match="sample weights of 1 only"):
            mechanism.round_one_report(pos, neg)
        with pytest.raises(ValueError, match="sample weights of 1 only"):
            mechanism.round_two_report(pos, neg, totals, seed=0)
        with pytest.raises(ValueError, match="sample weights of 1 only"):
            mechanism.release(pos, neg, seed=0)
    else:
        function = tf.function(lambda p, n: mechanism.round_two_report(p, n, totals, seed=0))
        with pytest.raises(tf.errors.InvalidArgumentError, match="sample weights of 1 only"):
            function(pos, neg)


def test_refusals_and_registry():
    spec = get_mechanism("secure-rank-sum", epsilon=EPSILON, num_thresholds=10, num_clients=5)
    assert isinstance(spec, SecureRankSum) and spec.num_clients == 5
    assert spec.capabilities.secure and spec.capabilities.unit_weights
    assert (
        get_mechanism("secure-rank-sum", epsilon=EPSILON, num_thresholds=10, delta=1e-6).family
        == "skellam"
    )
    with pytest.raises(ValueError, match="pure epsilon-DP; leave delta unset"):
        SecureRankSum(epsilon=EPSILON, delta=1e-6)
    with pytest.raises(ValueError, match="num_clients must be >= 1"):
        SecureRankSum(epsilon=EPSILON, num_clients=0)
    # rank-sum takes clients through the registry: its release over clients is the local
    # noise one (each client's own draws, tests/mechanisms/test_default_mechanism.py)
    local = get_mechanism("rank-sum", epsilon=EPSILON, num_thresholds=10, num_clients=5)
    assert local.releases_from_summed_counts and not local.capabilities.secure
    with pytest.raises(ValueError, match="cannot be summed"):
        get_mechanism("auc-only", epsilon=EPSILON, num_thresholds=10, delta=1e-6, num_clients=5)
    assert spec.privacy_spent(1).best == pytest.approx(EPSILON)
    assert spec.privacy_spent(10).best <= 10 * EPSILON + 1e-9


# -- widths and limbs ------------------------------------------------------------------------
def test_modular_width_holds_the_extreme_sums_and_limbs_are_exact_at_the_edges():
    n = 458_407
    width = modular_width(n, 0.75)
    assert width == 37  # the paper's test set: beyond SecAgg+'s 2^32, within TFF's 62 bits
    extreme = n * n // 4 + math.ceil(42 * n / 0.75)
    assert extreme < 2 ** (width - 1)
    layout = ModularLayout.for_clients(width, num_clients=1000)
    assert 1000 * (2**layout.limb_bits - 1) < 2**32
    # 1000 clients whose reports sum to the extremes (and individually wrap): exact
    values = np.array([extreme, -extreme, 0, 2 ** (width - 1) - 1, -(2 ** (width - 1))])
    parts = np.zeros((1000, values.size), np.int64)
    parts[0] = values
    rng = np.random.default_rng(0)
    noise = rng.integers(-(2**40), 2**40, size=(999, values.size))
    parts[1:] = noise
    parts[0] -= noise.sum(0)
    limb_sums = sum(layout.encode(p) for p in parts)
    assert np.all(limb_sums < 2**32)
    assert layout.decode(limb_sums).tolist() == values.tolist()
    # one value past the width wraps: the width is the contract
    assert layout.decode(layout.encode(np.array([2 ** (width - 1)]))).tolist() == [
        -(2 ** (width - 1))
    ]
    with pytest.raises(ValueError, match="do not fit"):
        ModularLayout.for_clients(37, num_clients=2**33)


# -- the audit -------------------------------------------------------------------------------
def test_audit_holds_and_catches_a_flip_of_three_times_the_weight():
    """The audit (worst-case pair, Clopper-Pearson lower bound on epsilon) of the summed
    release: honest, its bound stays below epsilon and is not trivial; a flipped example of
    weight 3 (a moved label the noise was not sized for) is caught."""
    from dpauc_tf.analysis.audit import run_audit

    mechanism = get_mechanism(
        "secure-rank-sum", epsilon=EPSILON, num_thresholds=200, num_clients=10
    )
    honest = run_audit(mechanism, samples=40_000, seed=0)
    assert not honest.violated and honest.epsilon_lower_bound > 0.4
    over = run_audit(mechanism, samples=40_000, seed=0, flip_weight=3.0)
    assert over.violated


def test_modular_layout_refuses_a_width_int64_cannot_hold():
    """Width 63 made ``np.int64(2) ** 63`` wrap to ``-2^63``: wrong residues, silently."""
    from dpauc_tf.mechanisms.secure_rank_sum import ModularLayout

    layout = ModularLayout(width=62, limb_bits=31)
    values = np.array([-(2**61), 2**61 - 1, -1, 0])
    assert layout.decode(layout.encode(values)).tolist() == values.tolist()
    with pytest.raises(ValueError, match=r"width must be in \[2, 62\]"):
        ModularLayout(width=63, limb_bits=31)
