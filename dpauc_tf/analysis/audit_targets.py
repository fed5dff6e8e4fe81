"""Releases that the audit ([`run_audit`][dpauc_tf.analysis.audit.run_audit]) drives
although they are not one call of ``release(pos, neg)`` on a histogram.

* [`SummedShares`][]: a two-round federated release (the one-vs-rest rank sums of
  [`dpauc_tf.mechanisms.multiclass_rank_sum`][]) run through its rounds: round one's totals,
  every client's round-two report with its noise share, the server's finish. The test set
  sits with client 0 and the other ``K - 1`` clients hold no example, so what is audited is
  the law of the summed shares that the server sees, not a central draw standing in for it.
* [`PairedComparisonTarget`][]: the paired comparison by the rank-sum difference
  ([`dpauc_tf.mechanisms.comparison_rank_sum`][]), whose data are both models' public scores
  and the labels: each example is its own "bucket" (``pos[i]`` its weight when positive),
  the scores are fixed, and its worst-case pair ([`comparison_worst_case_pair`][]) flips the
  example whose flip moves all four released statistics by their whole sensitivities.
  Central, or through the federated rounds with every client's (secure) noise share.

Each offers what the audit reads from a mechanism: ``name``, ``epsilon``, ``delta``,
``num_thresholds``, ``capabilities``, ``statement()``, ``release(pos, neg, seed, repeats)``
(a dict of ``[repeats, ...]`` arrays) and ``audit_pair(flip_weight)``; its ``num_clients``
is 1 because its release is already the sum over the clients.

    >>> from dpauc_tf.mechanisms.comparison_rank_sum import RankSumComparison
    >>> target = PairedComparisonTarget(RankSumComparison(epsilon=1.0))
    >>> pair = target.audit_pair(1.0)
    >>> (pair.pos - pair.pos_prime).tolist()
    [1.0, 0.0, 0.0]
    >>> sorted(target.release(pair.pos, pair.neg, seed=0, repeats=2))[:2]
    ['difference', 'num_pos']
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpauc_tf.analysis.audit_pairs import NeighbouringPair, pair_for
from dpauc_tf.mechanisms.comparison_rank_sum import RankSumComparison, comparison_statistics
from dpauc_tf.noise.seeds import make_seed

# The comparison's worst-case scores: the target is model A's top and model B's bottom, so
# its d = r_B - r_A is the largest |d| (D) and its r_A the largest |r_A| (D_A); one positive
# and one negative example that both models rank alike complete the set.
COMPARISON_SCORES_A = (1.0, 0.9, 0.1)
COMPARISON_SCORES_B = (0.0, 0.9, 0.1)


def _client_seeds(seed, clients: int) -> list[int]:
    state = np.random.SeedSequence(int(make_seed(seed).numpy()[0]) % 2**63)
    return [int(s) % (2**63 - 1) for s in state.generate_state(clients, dtype=np.uint64)]


class SummedShares:
    """A two-round release audited as the server sees it: the sum of ``num_clients`` round-two
    reports (client 0 holds the test set, the others nothing), finished.

    Args:
      mechanism: a built release with ``round_one_report(pos, neg)``,
        ``round_two_report(pos, neg, totals, seed, repeats)`` and ``finish(summed, totals)``
        (the one-vs-rest rank sums, ``rank-sum`` or ``secure-rank-sum``); its
        ``num_clients`` reports are summed.

    Examples:
        >>> from dpauc_tf.mechanisms.multiclass_rank_sum import SecureOneVsRestRankSum
        >>> m = SecureOneVsRestRankSum(epsilon=1.0, num_classes=3, num_clients=4)
        >>> target = SummedShares(m)
        >>> target.name, target.statement().epsilon
        ('one-vs-rest secure-rank-sum, 4 clients summed', 1.0)
    """

    num_clients = 1  # the release is already the sum over the clients

    def __init__(self, mechanism: Any):
        self.mechanism = mechanism
        self.clients = int(mechanism.num_clients)
        self.name = f"{mechanism.name}, {self.clients} clients summed"
        self.epsilon, self.delta = mechanism.epsilon, mechanism.delta
        self.num_thresholds = mechanism.num_thresholds
        self.capabilities = mechanism.capabilities

    def statement(self):
        return self.mechanism.statement()

    def audit_pair(self, flip_weight: float) -> NeighbouringPair:
        return pair_for(self.mechanism, flip_weight)

    def release(self, pos, neg, seed=None, repeats: int | None = None) -> dict[str, np.ndarray]:
        pos, neg = np.asarray(pos, np.float64), np.asarray(neg, np.float64)
        empty = np.zeros_like(pos)
        data = [(pos, neg)] + [(empty, empty)] * (self.clients - 1)
        totals = sum(self.mechanism.round_one_report(p, n) for p, n in data)
        seeds = _client_seeds(seed, self.clients)
        summed = None
        for (p, n), client_seed in zip(data, seeds, strict=True):
            report = self.mechanism.round_two_report(p, n, totals, client_seed, repeats=repeats)
            summed = report if summed is None else {k: summed[k] + report[k] for k in summed}
        return self.mechanism.finish(summed, totals)


def comparison_worst_case_pair(flip_weight: float = 1.0) -> NeighbouringPair:
    """The paired comparison's neighbours: three examples scored by
    `COMPARISON_SCORES_A` and `COMPARISON_SCORES_B`; the target (model A's top, model B's
    bottom: ``|d| = D``, ``|r_A| = D_A``, ``d^2 = D^2``) is positive in ``D`` and negative in
    ``D'``, with a positive at 0.9 and a negative at 0.1. Counts per example (``[3]``).

        >>> comparison_worst_case_pair().pos.tolist()
        [1.0, 1.0, 0.0]
    """
    pos = np.array([flip_weight, 1.0, 0.0])
    neg = np.array([0.0, 0.0, 1.0])
    pos_prime = np.array([0.0, 1.0, 0.0])
    neg_prime = np.array([flip_weight, 0.0, 1.0])
    return NeighbouringPair(
        pos,
        neg,
        pos_prime,
        neg_prime,
        0,
        f"3 examples; the example that model A scores 1 and model B 0 (weight {flip_weight:g}) "
        "is positive in D, negative in D' (a positive at 0.9 and a negative at 0.1 in both)",
    )


class PairedComparisonTarget:
    """The rank-sum paired comparison on `comparison_worst_case_pair`'s public scores.

    Args:
      comparison: a [`RankSumComparison`][dpauc_tf.mechanisms.comparison_rank_sum.RankSumComparison];
        with ``num_clients = K > 1`` its federated rounds run
        ([`comparison_rounds`][dpauc_tf.mechanisms.comparison_release.comparison_rounds]:
        client 0 holds the examples, the others none; secure or local noise as the
        comparison says), else its central release on the exact midranks.
    """

    num_clients = 1  # the release is already the sum over the clients
    num_thresholds = 0  # exact midranks (the rounds: TensorFlow's fine grid)

    def __init__(self, comparison: RankSumComparison):
        self.comparison = comparison
        self.clients = int(comparison.num_clients)
        kind = "secure shares" if comparison.secure else "local noise"
        self.name = comparison.name + (
            f", {self.clients} clients ({kind}) summed" if self.clients > 1 else ""
        )
        self.epsilon, self.delta = comparison.epsilon, comparison.delta
        self.capabilities = comparison.capabilities
        self.scores_a = np.array(COMPARISON_SCORES_A)
        self.scores_b = np.array(COMPARISON_SCORES_B)

    def statement(self):
        return self.comparison.statement()

    @staticmethod
    def audit_pair(flip_weight: float) -> NeighbouringPair:
        return comparison_worst_case_pair(flip_weight)

    def release(self, pos, neg, seed=None, repeats: int | None = None) -> dict[str, np.ndarray]:
        """The release of the labelling ``pos`` (each example's weight when positive)."""
        del neg  # every example is counted once: its label is pos > 0
        labels = np.asarray(pos, np.float64)
        repeats = 1 if repeats is None else int(repeats)
        if self.clients == 1:
            exact = comparison_statistics(labels, self.scores_a, self.scores_b)
            return self.comparison.release(exact, seed=seed, repeats=repeats)
        from dpauc_tf.mechanisms.comparison_release import comparison_rounds

        clients = [np.ones(labels.size, bool)]
        clients += [np.zeros(labels.size, bool)] * (self.clients - 1)
        seeds = _client_seeds(seed, self.clients)
        return comparison_rounds(
            self.comparison,
            labels,
            self.scores_a,
            self.scores_b,
            clients,
            lambda k: seeds[k],
            repeats=repeats,
        )
