"""The audit of the binary rank sums over clients as the server sees them (issue 32):
``secure-rank-sum`` through its two rounds (``SummedShares``: round one's totals, every
client's round-two report with its share, the server's finish) and ``rank-sum`` with local
noise (the sum of ``K`` clients' reports, ``release_over_clients``). Honest, the bound
stays below the claim and near it; a flip of three times the weight, and a release whose
noise is half the stated one, are caught."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from dpauc_tf.analysis.audit import run_audit
from dpauc_tf.analysis.audit_pairs import pair_for
from dpauc_tf.analysis.audit_targets import SummedShares
from dpauc_tf.mechanisms.rank_sum import RankSum
from dpauc_tf.mechanisms.secure_rank_sum import SecureRankSum

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tensorflow_federated") is not None,
    reason="the same in both worlds; runs in the keras3 world",
)

SAMPLES = 30_000
CONTROL_SAMPLES = 15_000
CLIENTS = 10
RESOLUTION = 1025


class HalvedSecureRankSum(SecureRankSum):
    """Broken on purpose: every share of the noise on ``2 S`` sized for half the scale."""

    def _shares(self, twice_d, shape, num_shares, seed):
        rank, _ = super()._shares(twice_d / 2, shape, num_shares, seed)
        _, count = super()._shares(twice_d, shape, num_shares, seed)
        return rank, count


class LocalReportsSummed:
    """``rank-sum`` over ``clients`` clients without secure aggregation, audited on what the
    local path releases: the sum of every client's report (``release_over_clients``)."""

    num_clients = 1  # the release is already the sum over the clients

    def __init__(self, mechanism: RankSum, clients: int):
        self.mechanism, self.clients = mechanism, clients
        self.name = f"{mechanism.name}, {clients} local reports summed"
        self.epsilon, self.delta = mechanism.epsilon, mechanism.delta
        self.num_thresholds = mechanism.num_thresholds
        self.capabilities = mechanism.capabilities

    def statement(self):
        return self.mechanism.statement()

    def audit_pair(self, flip_weight: float):
        return pair_for(self.mechanism, flip_weight)

    def release(self, pos, neg, seed=None, repeats=None):
        out = self.mechanism.release_over_clients(pos, neg, self.clients, seed, repeats)
        return {key: np.asarray(value) for key, value in out.items()}


class HalvedRankSum(RankSum):
    """Broken on purpose: every client's noise on ``S`` at half the stated scale."""

    @property
    def rank_epsilon(self) -> float:
        return 2 * super().rank_epsilon


def _secure(cls=SecureRankSum):
    return SummedShares(cls(epsilon=1.0, num_clients=CLIENTS, resolution=RESOLUTION))


def _local(cls=RankSum, clients=2):
    return LocalReportsSummed(cls(epsilon=1.0, resolution=RESOLUTION), clients)


def test_secure_rank_sum_summed_shares_hold_their_claim_and_reach_it():
    result = run_audit(_secure(), samples=SAMPLES, seed=0)
    assert result.claimed_epsilon == 1.0 and not result.violated, result
    assert result.epsilon_lower_bound > 0.6, result


@pytest.mark.parametrize("case", ["flip of weight 3", "halved noise on 2S"])
def test_secure_rank_sum_summed_shares_dishonest_cases_are_caught(case):
    target = _secure() if case.startswith("flip") else _secure(HalvedSecureRankSum)
    weight = 3.0 if case.startswith("flip") else 1.0
    assert target.statement().epsilon == 1.0  # it still claims epsilon 1
    assert run_audit(target, samples=CONTROL_SAMPLES, seed=1, flip_weight=weight).violated


def test_local_rank_sum_reports_hold_their_claim():
    """The sum of two clients' reports carries two draws of the noise: below the claim
    (each client's report is epsilon-DP on its own, the sum is post-processing)."""
    result = run_audit(_local(), samples=SAMPLES, seed=0)
    assert not result.violated and result.epsilon_lower_bound > 0.3, result


def test_local_rank_sum_with_one_report_reaches_its_claim_and_halved_noise_is_caught():
    """One client: the server sees its report, whose loss reaches the claim; a report with
    half the stated noise on S is caught."""
    honest = run_audit(_local(clients=1), samples=SAMPLES, seed=0)
    assert not honest.violated and honest.epsilon_lower_bound > 0.6, honest
    broken = _local(HalvedRankSum, clients=1)
    assert run_audit(broken, samples=CONTROL_SAMPLES, seed=1).violated
