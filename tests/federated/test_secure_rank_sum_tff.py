"""secure-rank-sum through TFF (issue 32): two federated computations with secure sums, the
simulate backend's law (a two-sample test that a doubled noise fails), the central estimate on
hostile clients, dropout before round one, and a client lost between the rounds refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

tff = pytest.importorskip("tensorflow_federated")

from scipy import stats  # noqa: E402

from dpauc_tf.core.thresholds import Thresholds  # noqa: E402
from dpauc_tf.federated import evaluate  # noqa: E402
from dpauc_tf.federated.evaluate import _as_client_arrays  # noqa: E402
from dpauc_tf.federated.rank_sum import evaluate_rank_sum  # noqa: E402
from dpauc_tf.mechanisms.release import ReleaseSpec  # noqa: E402
from dpauc_tf.mechanisms.secure_rank_sum import SecureRankSum  # noqa: E402
from dpauc_tf.simulation import client_histograms, simulate  # noqa: E402

pytestmark = pytest.mark.federated

RESOLUTION = 1001
OPTIONS = {"resolution": RESOLUTION}


def _clients(num_clients: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(num_clients):
        n = 40 + 7 * k
        labels = (rng.random(n) < 0.3).astype(np.int64)
        scores = _off_grid(1.0 / (1.0 + np.exp(-(rng.normal(size=n) + labels))))
        out.append((scores, labels))
    return out


def _off_grid(scores):
    """Scores half a step from the grid's thresholds (i / 1000): TFF reads float32 scores,
    the pooled counts float64; no rounding can move one across a threshold."""
    return (np.floor(np.asarray(scores) * 1000).clip(0, 999) + 0.5) / 1000


def _pooled_counts(clients, resolution=RESOLUTION):
    scores = np.concatenate([c[0] for c in clients])
    labels = np.concatenate([c[1] for c in clients])
    pos, neg = client_histograms(labels, scores, Thresholds.make(resolution))
    return pos, neg


def test_tff_has_the_simulate_law_and_a_doubled_noise_fails():
    clients = _clients()
    out = evaluate(
        clients, mechanism="secure-rank-sum", epsilon=1.0, seed=0, mechanism_options=OPTIONS,
        repeats=80,
    )  # fmt: skip
    result = out
    assert result.num_clients == 8 and result.num_reporting == 8 and result.epsilon == 1.0
    assert result.statement.mechanism == "secure-rank-sum"
    pos, neg = _pooled_counts(clients)
    mechanism = SecureRankSum(epsilon=1.0, num_clients=8, resolution=RESOLUTION)
    simulated = simulate(mechanism, pos, neg, seed=1, repeats=4000)
    tff_sums = result.noisy_counts["rank_sum"]
    sim_sums = simulated.noisy_counts["rank_sum"]
    assert np.all(result.noisy_counts["total"] == simulated.noisy_counts["total"][0])
    assert stats.ks_2samp(tff_sums, sim_sums).pvalue > 1e-3
    assert stats.levene(tff_sums, sim_sums).pvalue > 1e-3
    exact = float(np.median(sim_sums))
    for wrong in (0.5, 2.0):  # a halved or doubled noise scale fails
        scaled = exact + wrong * (sim_sums - exact)
        assert stats.levene(tff_sums, scaled).pvalue < 1e-4, wrong


def test_hostile_clients_give_the_central_estimate():
    """One-class clients, an empty client and a client whose scores are all tied: with
    negligible noise the TFF result is the central rank-sum estimate of the pooled data."""
    rng = np.random.default_rng(3)
    clients = [
        (_off_grid(rng.random(30)), np.ones(30, np.int64)),  # positives only
        (_off_grid(rng.random(40)), np.zeros(40, np.int64)),  # negatives only
        (np.zeros(0), np.zeros(0, np.int64)),  # empty
        (np.full(12, 0.5005), (np.arange(12) % 2).astype(np.int64)),  # every score tied
    ]
    out = evaluate(
        clients, mechanism="secure-rank-sum", epsilon=1e7, seed=0, mechanism_options=OPTIONS
    )
    pos, neg = _pooled_counts(clients)
    central = SecureRankSum(epsilon=1e7, resolution=RESOLUTION)
    expected = float(central.estimate_auc(central.release(pos[0], neg[0], seed=0)))
    assert out.auc == pytest.approx(expected, abs=1e-4)


def test_dropout_before_round_one_keeps_the_population_and_the_noise():
    out = evaluate(
        _clients(), mechanism="secure-rank-sum", epsilon=1.0, seed=0, dropout=0.25,
        mechanism_options=OPTIONS,
    )  # fmt: skip
    assert out.num_reporting == 6 and out.num_clients == 8
    assert out.epsilon == 1.0 and np.isfinite(out.auc)
    # the shares were sized for the 6 expected, and 6 examples' worth of clients were ranked
    assert "6 client shares" in out.statement.noise


def test_a_client_lost_between_the_rounds_is_refused():
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, options=OPTIONS, seed=0)
    mechanism = spec.build(8)
    with pytest.raises(ValueError, match=r"lost .or added. between the rounds") as error:
        evaluate_rank_sum(
            spec, mechanism, _clients(), as_arrays=_as_client_arrays, cohort_size=4,
            batch_size=4096, secure_bitwidth=32, lost_between_rounds=[5],
        )  # fmt: skip
    assert "\n" not in str(error.value)


def test_shares_sized_for_more_than_report_state_the_achieved_epsilon():
    """6 of 8 shares arrive: the release stands, stated with the epsilon those shares
    achieve (not inf, not the target); 4 of 8 (half): no epsilon holds, refused in one line."""
    common = dict(mechanism="secure-rank-sum", epsilon=1.0, seed=0, mechanism_options=OPTIONS)
    out = evaluate(_clients(), dropout=0.25, secure_shares=8, **common)
    mechanism = SecureRankSum(epsilon=1.0, num_clients=8, resolution=RESOLUTION)
    assert out.num_reporting == 6 and out.epsilon == pytest.approx(mechanism.achieved_epsilon(6))
    assert 1.0 < out.epsilon < math.inf and out.statement.epsilon == out.epsilon
    assert "only 6 of 8 shares reported" in out.statement.noise
    assert out.epsilon_total == pytest.approx(out.epsilon) and np.isfinite(out.auc)
    with pytest.raises(ValueError, match="4 of the 8 noise shares") as error:
        evaluate(_clients(), dropout=0.5, secure_shares=8, **common)
    assert "\n" not in str(error.value)


def test_round_two_at_the_secure_sums_width_is_exact_and_one_bit_over_is_one_line(monkeypatch):
    """Counts near the modular width, scaled down: TFF's widest secure sum (62 bits, about
    3e9 examples) lowered to this data's round-two width. At the limit the sum of the
    residues decodes to the central estimate; one bit narrower, refused in one line (never a
    wrapped sum)."""
    from dpauc_tf.federated import rank_sum
    from dpauc_tf.mechanisms.secure_rank_sum import modular_width

    clients = _clients(3)
    mechanism = SecureRankSum(epsilon=1e7, resolution=RESOLUTION)
    width = modular_width(sum(len(y) for _, y in clients), mechanism.rank_epsilon)
    common = dict(mechanism="secure-rank-sum", epsilon=1e7, seed=0, mechanism_options=OPTIONS)
    monkeypatch.setattr(rank_sum, "TFF_MAX_BITWIDTH", width)
    out = evaluate(clients, **common)
    pos, neg = _pooled_counts(clients)
    expected = float(mechanism.estimate_auc(mechanism.release(pos[0], neg[0], seed=0)))
    assert out.auc == pytest.approx(expected, abs=1e-4)
    monkeypatch.setattr(rank_sum, "TFF_MAX_BITWIDTH", width - 1)
    with pytest.raises(ValueError, match=f"need a {width}-bit secure sum in round two") as error:
        evaluate(clients, **common)
    assert "\n" not in str(error.value)


def test_local_rank_sum_over_clients_is_refused_in_one_line():
    """``rank-sum`` with each client's own noise has no TFF client step here (TFF runs
    ``secure-rank-sum``): refused in one line before any round, never ranks of one client."""
    with pytest.raises(ValueError, match=r"'rank-sum' cannot run in dpauc_tf\.federated") as error:
        evaluate(_clients(3), mechanism="rank-sum", epsilon=1.0, seed=0, mechanism_options=OPTIONS)
    assert "\n" not in str(error.value)
