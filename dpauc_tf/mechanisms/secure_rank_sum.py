"""``secure-rank-sum``: the central rank-sum release computed by a federation in two rounds.

The rank-sum release ([`dpauc_tf.mechanisms.rank_sum`][]) needs two noisy numbers, the
centred rank sum ``S = sum_b r[b] pos[b]`` and the positive count ``P``. The midranks ``r``
depend only on the label-free bucket totals, and ``S`` is linear in the per-client counts
once they are known, so ``K`` clients compute it in two rounds of secure aggregation:

1. **Round one** ([`SecureRankSum.round_one_report`][]): every client sends its bucket
   totals ``t_k[b] = pos_k[b] + neg_k[b]`` (integers, no noise); the secure sum gives the
   server the **aggregate score histogram** ``t[b]`` (what the central ``rank-sum`` also
   publishes through ``D`` and ``W``; never one client's histogram). From it the server and
   every client know the centred midranks ``r[b]``, the number of examples ``W`` and the
   sensitivity ``D = max |r[b]|`` over the occupied buckets.
2. **Round two** ([`SecureRankSum.round_two_report`][]): every client sends ``2 S_k =
   sum_b 2 r[b] pos_k[b]`` (an integer: midranks are half-integers) plus its share of a
   discrete Laplace of scale ``2 D / eps_S``, ``P_k`` plus its share of a discrete Laplace
   of scale ``1 / eps_P``, and its number of examples ``n_k`` (label-free, no noise). The
   shares are differences of Polya variates ([`dpauc_tf.noise.shares`][], Goryczka et al.
   2013): ``K`` of them sum to exactly one discrete Laplace draw.
3. **Finish** ([`SecureRankSum.finish`][]): the server checks ``sum n_k = W`` (the rank
   sums are of the population that was ranked; otherwise it refuses, one line) and holds
   ``S + L_S / 2`` and ``P + L_P``: the central release, estimated by the central
   ``1/2 + S / (P N)``, whatever ``K``.

**Guarantee** (label DP, sample weights of 1 only, all shares present): a label change in
bucket ``b`` moves ``2 S`` by ``2 |r[b]| <= 2 D`` and ``P`` by 1; the totals do not move.
Discrete Laplace of scale ``2 D / eps_S`` on ``2 S`` and ``1 / eps_P`` on ``P`` give
``eps_S + eps_P = epsilon``, pure. Where ``D = 0`` (every score tied, or ``W <= 1``) ``S = 0``
exactly and only ``eps_P`` is spent. **Trust**: the server sees only the two secure sums;
a client's own share is a ``1 / K`` part of the noise and protects little if its report leaks
(use ``rank-sum`` with local noise, below, when there is no secure aggregation).

**Widths** (`modular_width`, `ModularLayout`): round two's sums are taken modulo
``2^w`` with ``w`` from the public ``W``: ``|2 S| <= P N <= W^2 / 4`` plus the noise's tail
(``42 / eps_S`` times ``W``: exceeded with probability below ``2^-60``); ``W = 458,407``
needs ``w = 37`` bits, beyond SecAgg+'s ``2^32``, so values travel as limbs whose digit sums
cannot wrap. Round one's totals need ``ceil(log2(W + 1)) + 1`` bits each.

**Dropout**: a client lost between the rounds leaves ``sum n_k < W``: [`SecureRankSum.finish`][]
refuses (the rank sums would be of another population than the ranks). Shares sized for
``num_clients`` reporters that arrive from ``m`` fewer leave the sum a difference of Polya
variates of shape ``m / K``: [`SecureRankSum.achieved_epsilon`][] is the epsilon that noise
achieves (exact from its PMF for a given ``D``; stated for every ``D`` by the limit the
exact figures rise to; ``inf``, and ``finish`` refuses, when half the shares or fewer
arrive). Size the shares for the clients expected to report.

**Without secure aggregation** (`local_rank_sum_release`): round one sends the totals in
the clear (label-free) and every client adds its own ``Laplace(D / eps_S)`` and
``Laplace(1 / eps_P)``; the server's sum carries ``K`` draws, so the AUC's noise grows as
``sqrt(K)`` (``docs/rank_sum.md`` measures it against local ``histogram``).

Examples:
    >>> m = SecureRankSum(epsilon=1.0, num_clients=3, resolution=11)
    >>> pos = np.array([[0, 0, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0],
    ...                 [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]])
    >>> neg = np.array([[0, 0, 0, 6, 5, 1, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0],
    ...                 [0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]])
    >>> totals = sum(m.round_one_report(p, n) for p, n in zip(pos, neg))
    >>> reports = [m.round_two_report(p, n, totals, seed=k) for k, (p, n) in enumerate(zip(pos, neg))]
    >>> summed = {key: sum(r[key] for r in reports) for key in reports[0]}
    >>> release = m.finish(summed, totals)
    >>> sorted(release), float(release["total"]), float(release["sensitivity"])
    (['num_pos', 'rank_sum', 'sensitivity', 'total'], 29.0, 11.0)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import ClassVar

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.mechanisms.auc_only import COUNT_RESOLUTION
from dpauc_tf.mechanisms.base import float_counts, with_repeats
from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.rank_sum import (
    DEFAULT_COUNT_SHARE,
    RankSum,
    _integer,
    twice_centred_midranks,
    twice_sensitivity,
)
from dpauc_tf.noise.exact import discrete_laplace_variance
from dpauc_tf.noise.seeds import make_seed, split_seed
from dpauc_tf.noise.shares import check_shares, polya_shift_epsilon
from dpauc_tf.privacy.events import SkellamDpEvent, discrete_laplace_event
from dpauc_tf.privacy.statement import PrivacyStatement

# Round two's report: the doubled rank sum, the positive count, the number of examples.
REPORT_KEYS = ("twice_rank_sum", "num_pos", "num_examples")
# A discrete Laplace draw exceeds this many scales with probability below 2^-60.
TAIL_SCALES = 42.0
# SecAgg+'s largest modulus (Flower), and the widest TFF secure sum.
SECAGG_MODULUS_BITS = 32
TFF_MAX_BITWIDTH = 62


# -- modular widths and limbs ---------------------------------------------------------------
def modular_width(num_examples: int, rank_epsilon: float) -> int:
    """Bits ``w`` such that round two's sums (``2 S`` + noise, ``P`` + noise, ``W``) lie in
    ``[-2^(w-1), 2^(w-1))`` except with probability below ``2^-60``.

    ``|2 S| <= P N <= W^2 / 4``; the noise on ``2 S`` has scale ``2 D / eps_S <= W / eps_S``.

        >>> modular_width(458_407, 0.75)
        37
    """
    n = int(num_examples)
    if n < 0:
        raise ValueError(f"num_examples must be >= 0, got {num_examples}")
    bound = n * n // 4 + math.ceil(TAIL_SCALES * max(n, 1) / float(rank_epsilon)) + n + 1
    return max(int(bound).bit_length() + 1, 2)


@dataclasses.dataclass(frozen=True)
class ModularLayout:
    """Signed integers summed modulo ``2^width``, cut into limbs of ``limb_bits`` bits.

    Each value travels as ``ceil(width / limb_bits)`` digits in ``[0, 2^limb_bits)``; a
    secure sum adds the digits (exactly, or modulo ``2^modulus_bits`` where ``K`` digits
    cannot wrap: [`for_clients`][]), and [`decode`][] recombines them modulo ``2^width``.

        >>> layout = ModularLayout.for_clients(37, num_clients=1000)
        >>> layout.limb_bits, layout.num_limbs
        (22, 2)
        >>> parts = [layout.encode(np.array([-5, 2**35])), layout.encode(np.array([7, -1]))]
        >>> layout.decode(parts[0] + parts[1]).tolist()
        [2, 34359738367]
    """

    width: int
    limb_bits: int

    def __post_init__(self):
        if not 2 <= self.width <= 62:  # 2^63 itself does not fit the int64 residues
            raise ValueError(
                f"width must be in [2, 62] bits, got {self.width}: the rank sums of this many "
                "examples do not fit a 62-bit modular sum"
            )
        if not 1 <= self.limb_bits <= self.width:
            raise ValueError(f"limb_bits must be in [1, width], got {self.limb_bits}")

    @classmethod
    def for_clients(
        cls, width: int, num_clients: int, modulus_bits: int = SECAGG_MODULUS_BITS
    ) -> ModularLayout:
        """The widest limbs whose sum over ``num_clients`` stays below ``2^modulus_bits``."""
        bits = math.floor(math.log2((2**modulus_bits - 1) / int(num_clients)))
        if bits < 1:
            raise ValueError(
                f"{num_clients} clients do not fit a {modulus_bits}-bit secure sum with 1-bit limbs"
            )
        return cls(width=int(width), limb_bits=min(bits, int(width)))

    @property
    def num_limbs(self) -> int:
        return -(-self.width // self.limb_bits)

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Limbs ``[L, ...]`` (int64) of ``values mod 2^width``."""
        residues = np.mod(np.asarray(values, np.int64), np.int64(2) ** self.width)
        mask = (np.int64(1) << self.limb_bits) - 1
        return np.stack([(residues >> (self.limb_bits * i)) & mask for i in range(self.num_limbs)])

    def decode(self, limb_sums: np.ndarray) -> np.ndarray:
        """The signed sums ``[...]`` (int64) of limb sums ``[L, ...]``."""
        limb_sums = np.asarray(limb_sums)
        modulus = 2**self.width
        flat = [np.asarray(part).astype(object).ravel() for part in limb_sums]
        out = []
        for digits in zip(*flat, strict=True):
            value = sum(int(d) << (self.limb_bits * i) for i, d in enumerate(digits)) % modulus
            out.append(value - modulus if value >= modulus // 2 else value)
        return np.asarray(out, np.int64).reshape(limb_sums.shape[1:])


# -- the mechanism --------------------------------------------------------------------------
class SecureRankSum(RankSum):
    """The rank-sum release from ``num_clients`` clients in two rounds of secure aggregation.

    See the module docstring for the protocol, the guarantee, the widths and dropouts.

    Args:
      epsilon: epsilon of the summed release (rank sum and count together).
      num_thresholds: ignored (the counts are kept on a grid of ``resolution`` thresholds).
      delta: must be unset (pure epsilon).
      num_clients: the number of noise shares (the clients expected to report).
      family: ``"discrete-laplace"`` (pure epsilon) or ``"skellam"`` (needs ``delta``):
        ``Skellam((2D)^2 mu_S)`` on ``2 S`` and ``Skellam(mu_P)`` on ``P`` in total, with
        ``mu_S, mu_P`` the unit-sensitivity parameters calibrated together for
        ``(epsilon, delta)`` (Renyi precisions in the ratio ``1 - c : c``); a shift of ``2 D``
        at ``(2D)^2 mu_S`` is at most as distinguishable as a unit shift at ``mu_S``.
      count_share: share of ``epsilon`` on the positive count (default 0.25).
      resolution: thresholds of the counting grid.

    [`release`][] of counts (summed over clients) is the server's finished release with all
    shares present (the simulation's exact aggregate); the clients' steps are
    [`round_one_report`][] and [`round_two_report`][], the server's [`finish`][].

        >>> m = SecureRankSum(epsilon=1.0, num_clients=10, resolution=11)
        >>> float(m.twice_rank_scale(3)), m.count_scale
        (4.0, 4.0)
        >>> m.aggregate().num_clients
        1
    """

    name = "secure-rank-sum"
    capabilities: ClassVar[Capabilities] = Capabilities(
        secure=True, integer_counts=True, unit_weights=True, xla=False, releases="auc"
    )

    def __init__(
        self,
        epsilon: float,
        num_thresholds: int = COUNT_RESOLUTION,
        delta: float | None = None,
        num_clients: int = 1,
        family: str = "discrete-laplace",
        count_share: float = DEFAULT_COUNT_SHARE,
        resolution: int = COUNT_RESOLUTION,
    ):
        self.num_clients = check_shares(num_clients, family)
        self.family = family
        self.requires_delta = family == "skellam"
        super().__init__(
            epsilon=epsilon,
            num_thresholds=num_thresholds,
            delta=delta,
            count_share=count_share,
            resolution=resolution,
        )
        if self.requires_delta:
            self.unit_mus = _renyi_unit_mus(self.epsilon, self.delta, self.count_share)

    # -- noise parameters ------------------------------------------------------------------
    def twice_rank_scale(self, twice_sensitivity) -> np.ndarray:
        """Discrete Laplace scale of the noise on ``2 S``: ``2 D / eps_S`` (Skellam: its
        total ``mu``, ``(2D)^2 mu_S``)."""
        twice = np.asarray(twice_sensitivity, np.float64)
        if self.family == "skellam":
            return twice**2 * self.unit_mus[0]
        return twice / self.rank_epsilon

    @property
    def count_scale(self) -> float:
        """Discrete Laplace scale ``1 / eps_P`` of the count's noise; Skellam: the Laplace
        scale ``sqrt(mu_P)`` of the same variance (the intervals' law: conservative)."""
        if self.family == "skellam":
            return math.sqrt(self.unit_mus[1])
        return 1.0 / self.count_epsilon

    def rank_scale(self, sensitivity) -> np.ndarray:
        """The Laplace scale of the noise on ``S`` for the intervals: ``D / eps_S``; Skellam:
        the Laplace scale of the same variance, ``D sqrt(mu_S)`` (conservative tails)."""
        if self.family == "skellam":
            return np.asarray(sensitivity, np.float64) * math.sqrt(self.unit_mus[0])
        return np.asarray(sensitivity, np.float64) / self.rank_epsilon

    def _shares(self, twice_d, shape, num_shares: int, seed) -> tuple[tf.Tensor, tf.Tensor]:
        """One of ``num_shares`` shares of the noise on ``2 S`` and on ``P`` (int64)."""
        seeds = split_seed(seed, 2)
        twice_d = tf.cast(twice_d, tf.float64)
        if self.family == "skellam":
            rank_mu = twice_d**2 * self.unit_mus[0] / num_shares
            count_mu = tf.constant(self.unit_mus[1] / num_shares, tf.float64)
            return (
                _skellam_share(shape, rank_mu, seeds[0]),
                _skellam_share(shape, count_mu, seeds[1]),
            )
        return (
            _polya_share(shape, twice_d / self.rank_epsilon, num_shares, seeds[0]),
            _polya_share(shape, tf.constant(self.count_scale, tf.float64), num_shares, seeds[1]),
        )

    def noise_variances(self, release: Mapping) -> dict[str, np.ndarray]:
        """Variance of the noise on the released ``rank_sum`` (half the discrete Laplace on
        ``2 S``) and ``num_pos``; ``total`` and ``sensitivity`` are exact."""
        twice = 2.0 * np.asarray(release["sensitivity"], np.float64)
        scale = self.twice_rank_scale(twice)
        if self.family == "skellam":
            rank, count = 2.0 * scale, 2.0 * self.unit_mus[1]
        else:
            rank = np.vectorize(lambda b: discrete_laplace_variance(b) if b > 0 else 0.0)(scale)
            count = discrete_laplace_variance(self.count_scale)
        return {
            "rank_sum": np.asarray(rank, np.float64) / 4.0,
            "num_pos": np.asarray(count, np.float64),
            "total": np.zeros(()),
            "sensitivity": np.zeros(()),
        }

    # -- the protocol (every backend calls these) ------------------------------------------
    def round_one_report(self, pos, neg) -> np.ndarray | tf.Tensor:
        """A client's bucket totals ``pos + neg`` (int64, label-free, no noise); integer
        counts only (sample weights of 1), refused otherwise in every mode."""
        pos, neg = float_counts(pos, neg)
        pos, neg = self._require_integer_counts(pos, neg)
        totals = _integer(pos + neg)
        return totals.numpy() if tf.executing_eagerly() else totals

    def round_two_report(
        self, pos, neg, totals, seed, num_clients: int | None = None, repeats: int | None = None
    ) -> dict[str, np.ndarray | tf.Tensor]:
        """A client's round-two report (int64): ``2 S_k`` with the global ranks plus its share
        of discrete Laplace ``(2 D / eps_S)``, ``P_k`` plus its share of discrete Laplace
        ``(1 / eps_P)``, and its ``num_examples`` ``n_k``.

        Args:
          pos: the client's positive counts ``[B]`` (integers).
          neg: its negative counts ``[B]``.
          totals: round one's secure sum ``[B]`` (the global bucket totals).
          seed: this client's seed (distinct per client and release).
          num_clients: the number of shares (default: the mechanism's ``num_clients``).
          repeats: ``None`` for one report; an integer for that many reports of the same
            counts with independent noise shares (a leading axis on every value), as
            ``repeats`` independent releases would send (the ranks are computed once).
        """
        shares = self.num_clients if num_clients is None else check_shares(num_clients, self.family)
        pos, neg = float_counts(pos, neg)
        pos, neg = self._require_integer_counts(pos, neg)
        totals = tf.convert_to_tensor(totals)
        if totals.shape.rank is not None and pos.shape.rank is not None:
            if totals.shape[-1] != pos.shape[-1]:
                raise ValueError(
                    f"round one's totals have {totals.shape[-1]} buckets, the counts {pos.shape[-1]}"
                )
        totals = _integer(tf.cast(totals, tf.float64))
        pos_int, neg_int = _integer(pos), _integer(neg)
        if tf.executing_eagerly():
            short = (pos_int + neg_int).numpy() > totals.numpy()
            if np.any(short):
                raise ValueError(
                    "secure-rank-sum: this client's counts exceed round one's totals in "
                    f"{int(short.sum())} bucket(s): the totals are of another population"
                )
        twice_ranks = twice_centred_midranks(totals)
        twice_d = twice_sensitivity(totals)
        twice_s = tf.reduce_sum(twice_ranks * pos_int, -1)
        num_pos = tf.reduce_sum(pos_int, -1)
        exact = with_repeats(
            {
                "twice_rank_sum": twice_s,
                "num_pos": num_pos,
                "num_examples": tf.reduce_sum(pos_int + neg_int, -1),
                "twice_d": tf.broadcast_to(twice_d, tf.shape(twice_s)),
            },
            repeats,
        )
        rank_share, count_share = self._shares(
            exact["twice_d"], tf.shape(exact["twice_rank_sum"]), shares, make_seed(seed)
        )
        report = {
            "twice_rank_sum": exact["twice_rank_sum"] + rank_share,
            "num_pos": exact["num_pos"] + count_share,
            "num_examples": exact["num_examples"],
        }
        return {k: v.numpy() for k, v in report.items()} if tf.executing_eagerly() else report

    def finish(
        self, summed: Mapping, totals, num_reporting: int | None = None
    ) -> dict[str, tf.Tensor]:
        """The server's release (``rank_sum``, ``num_pos``, ``total``, ``sensitivity``; float64)
        from round two's secure sums ``summed`` (``REPORT_KEYS``, leading axes allowed) and
        round one's ``totals``; pass it to ``estimate_auc``.

        Refuses (``ValueError``, one line) a round two whose examples are not those ranked in
        round one (a client lost or added between the rounds), and a round two summed from
        so few shares that no epsilon is achieved (``achieved_epsilon(num_reporting)`` is
        ``inf``: half the shares or fewer, discrete Laplace); with more, the release is the
        shares' that arrived, stated with that achieved epsilon by ``finish_release``.
        """
        totals_np = np.asarray(totals, np.float64)
        if np.any(totals_np < 0) or np.any(totals_np != np.round(totals_np)):
            raise ValueError("secure-rank-sum: round one's totals must be non-negative integers")
        totals_t = tf.constant(totals_np.astype(np.int64))
        examples = np.asarray(summed["num_examples"], np.int64)
        expected = np.asarray(totals_np.sum(-1), np.int64)
        if np.any(examples != expected):
            raise ValueError(
                f"secure-rank-sum: round two summed {examples.ravel()[0]} examples but round one "
                f"ranked {expected.ravel()[0]}: a client was lost (or added) between the rounds; "
                "nothing is released (the ranks are of another population); run both rounds "
                "again with the clients present (round one costs no epsilon)"
            )
        if num_reporting is not None and not math.isfinite(
            self.achieved_epsilon(int(num_reporting))
        ):
            raise ValueError(
                f"secure-rank-sum: {num_reporting} of the {self.num_clients} noise shares "
                "arrived (half or fewer), so no epsilon bounds the rank sum's noise for every "
                "D; nothing is released (size num_clients for the clients expected to report)"
            )
        twice_d = twice_sensitivity(totals_t)
        twice_s = np.asarray(summed["twice_rank_sum"], np.float64)
        num_pos = np.asarray(summed["num_pos"], np.float64)
        shape = np.shape(twice_s)
        return {
            "rank_sum": tf.constant(twice_s / 2.0, tf.float64),
            "num_pos": tf.constant(num_pos, tf.float64),
            "total": tf.broadcast_to(tf.constant(expected, tf.float64), shape),
            "sensitivity": tf.broadcast_to(tf.cast(twice_d, tf.float64) / 2.0, shape),
        }

    def report_layout(
        self,
        num_examples: int,
        num_clients: int | None = None,
        modulus_bits: int = SECAGG_MODULUS_BITS,
    ) -> ModularLayout:
        """The limbs round two's reports travel in for ``num_examples`` (public after round
        one) and ``num_clients`` through a ``modulus_bits``-bit secure sum."""
        width = modular_width(num_examples, self.rank_epsilon)
        return ModularLayout.for_clients(width, num_clients or self.num_clients, modulus_bits)

    # -- the simulation's aggregate (all shares present) -----------------------------------
    def release(self, pos, neg, seed=None, repeats=None):
        """The finished release of counts ``pos, neg [..., B]`` (the sum over clients) with
        every share present: one discrete Laplace draw on ``2 S`` and on ``P`` (the exact
        law of the secure sum of ``num_clients`` round-two reports)."""
        pos, neg = float_counts(pos, neg)
        pos, neg = self._require_integer_counts(pos, neg)
        return self._noisy_counts_release(pos, neg, make_seed(seed), repeats)

    def _noisy_release(self, pos, neg, seed):
        return self._noisy_counts_release(pos, neg, seed, None)

    def _noisy_counts_release(self, pos, neg, seed, repeats):
        pos_int, totals = _integer(pos), _integer(pos + neg)
        twice_d = twice_sensitivity(totals)
        exact = {
            "twice_rank_sum": tf.reduce_sum(twice_centred_midranks(totals) * pos_int, -1),
            "num_pos": tf.reduce_sum(pos_int, -1),
            "twice_d": twice_d,
            "total": tf.reduce_sum(totals, -1),
        }
        exact = with_repeats(exact, repeats)
        shape = tf.shape(exact["twice_rank_sum"])
        rank_noise, count_noise = self._shares(exact["twice_d"], shape, 1, seed)
        dtype = pos.dtype
        return {
            "rank_sum": tf.cast(exact["twice_rank_sum"] + rank_noise, dtype) / 2,
            "num_pos": tf.cast(exact["num_pos"] + count_noise, dtype),
            "total": tf.cast(exact["total"], dtype),
            "sensitivity": tf.cast(exact["twice_d"], dtype) / 2,
        }

    def release_over_clients(self, pos, neg, num_clients, seed, repeats):
        """The exact aggregate of the two rounds (one full draw of the central noise, the
        law of the summed shares: ``tests/mechanisms/test_secure_rank_sum.py``)."""
        del num_clients
        return self.aggregate().release(pos, neg, seed=seed, repeats=repeats)

    def aggregate(self) -> SecureRankSum:
        """The same mechanism with one share (its release is the secure sum's law)."""
        return SecureRankSum(
            epsilon=self.epsilon,
            delta=self.delta or None,
            family=self.family,
            num_clients=1,
            count_share=self.count_share,
            resolution=self.resolution,
        )

    # -- the guarantee ---------------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        """Discrete Laplace: two events, a shift of ``2 D`` at scale ``2 D / eps_S`` being
        dominated by a unit shift at scale ``1 / eps_S`` (randomized response at ``eps_S``,
        which dominates every pure ``eps_S`` pair), and the count's unit shift. Skellam: one
        [`SkellamDpEvent`][] over ``(mu_S, mu_P)`` accounted by the Renyi bound only
        (`_skellam_event`)."""
        if self.family == "skellam":
            return _skellam_event(self.unit_mus)
        return dp_accounting.ComposedDpEvent(
            [
                discrete_laplace_event(1.0 / self.rank_epsilon, 1),
                discrete_laplace_event(self.count_scale, 1),
            ]
        )

    def achieved_epsilon(self, num_reporting: int, sensitivity: float | None = None) -> float:
        """The epsilon achieved when ``num_reporting`` of the ``num_clients`` shares arrive.

        ``epsilon`` when all arrive. Fewer: discrete Laplace, the rank sum's figure
        ([`rank_shortfall_epsilon`][]: exact for a released ``sensitivity`` ``D``; without
        it the supremum over every ``D``, ``inf`` when half the shares or fewer arrived)
        plus the count's ([`count_shortfall_epsilon`][]); Skellam: the Renyi bound of the
        shares that arrived (``Skellam(mu m / K)`` is exactly their sum). ``inf`` when none
        arrived.

            >>> m = SecureRankSum(epsilon=1.0, num_clients=10, resolution=11)
            >>> m.achieved_epsilon(10), round(m.achieved_epsilon(9), 4), m.achieved_epsilon(5)
            (1.0, 1.2353, inf)
        """
        if num_reporting >= self.num_clients:
            return self.epsilon
        if num_reporting <= 0:
            return math.inf
        if self.family == "skellam":
            from dpauc_tf.privacy.accounting import composed_epsilon

            fraction = num_reporting / self.num_clients
            arrived = tuple(mu * fraction for mu in self.unit_mus)
            return float(composed_epsilon(_skellam_event(arrived), 1, self.delta).best)
        rank = self.rank_shortfall_epsilon(num_reporting, sensitivity)
        return float(rank + self.count_shortfall_epsilon(num_reporting))

    def rank_shortfall_epsilon(self, num_reporting: int, sensitivity: float | None = None) -> float:
        """Epsilon of ``2 S`` alone when ``num_reporting`` of the discrete Laplace shares
        arrive: their sum is a difference of two Polya variates of shape ``m / K``
        (`polya_shift_epsilon`, exact for a shift of ``2 D`` at scale ``2 D / eps_S``).
        ``sensitivity`` ``D`` (public after round one): that figure (0 where ``D = 0``);
        ``None``: the supremum over ``D`` (`polya_shift_epsilon_limit`)."""
        if num_reporting >= self.num_clients:
            return self.rank_epsilon
        if num_reporting <= 0:
            return math.inf
        fraction = num_reporting / self.num_clients
        if sensitivity is None:
            return polya_shift_epsilon_limit(self.rank_epsilon, fraction)
        twice = round(2 * float(sensitivity))
        if twice == 0:
            return 0.0
        return polya_shift_epsilon(twice / self.rank_epsilon, twice, fraction)

    def count_shortfall_epsilon(self, num_reporting: int) -> float:
        """Epsilon of the positive count alone when ``num_reporting`` of the shares arrive
        (a unit shift of the arrived Polya difference, `polya_shift_epsilon`: exact, and
        finite however small the scale)."""
        if num_reporting >= self.num_clients:
            return self.count_epsilon
        if self.family == "skellam" or num_reporting <= 0:
            return math.inf
        return polya_shift_epsilon(self.count_scale, 1, num_reporting / self.num_clients)

    def statement(self) -> PrivacyStatement:
        if self.family == "skellam":
            noise = (
                f"Skellam((2D)^2 * {self.unit_mus[0]:.4g}) on 2S and Skellam("
                f"{self.unit_mus[1]:.4g}) on P in total, split into {self.num_clients} client "
                "shares (Poisson differences)"
            )
        else:
            noise = (
                f"discrete Laplace(2D / {self.rank_epsilon:g}) on 2S and discrete "
                f"Laplace({self.count_scale:g}) on P in total, split into {self.num_clients} "
                "client shares (Polya differences)"
            )
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=self.neighbouring
            + "; trust: the server sees only the secure sums of all reports (round one: the "
            "aggregate score histogram, label-free; round two: 2S and P with their noise)",
            sensitivity="2S = sum_b 2 r[b] pos[b]: 2D = 2 max |r[b]| <= n over the occupied "
            "buckets (r from round one's totals); positives P: 1",
            noise=f"{noise}; AUC = 1/2 + S / (P (n - P)) (sample weights of 1 only); where "
            "D = 0 S is exact and carries no noise",
            epsilon=self.epsilon,
            delta=self.delta,
        )

    def options(self) -> dict:
        return {"num_clients": self.num_clients, "family": self.family, **super().options()}


def polya_shift_epsilon_limit(epsilon: float, fraction: float) -> float:
    """The supremum over the sensitivity ``D`` of [`polya_shift_epsilon`][]``(2 D /
    epsilon, 2 D, fraction)``: the loss of the continuous limit, a shift of ``epsilon``
    scales of the difference of two Gamma variates of shape ``fraction`` (variance-gamma,
    density ``~ |x|^nu K_nu(|x|)``, ``nu = fraction - 1/2``):
    ``log(Gamma(nu) 2^(nu - 1) / (epsilon^nu K_nu(epsilon)))``. The exact figures increase
    with ``D`` towards it (``tests/mechanisms/test_secure_rank_sum_shortfall.py`` checks
    ``D`` from 1/2 to 10^5 on the PMF). ``inf`` for ``fraction <= 1/2``: there the density
    is unbounded at 0 and the loss grows without bound with ``D``.

        >>> polya_shift_epsilon_limit(0.75, 1.0), polya_shift_epsilon_limit(0.75, 0.5)
        (0.75, inf)
    """
    from scipy import special

    fraction = float(fraction)
    if fraction >= 1.0:
        return float(epsilon)
    if fraction <= 0.5:
        return math.inf
    nu = fraction - 0.5
    log_peak = float(special.gammaln(nu)) + (nu - 1.0) * math.log(2.0)
    # kve(nu, x) = kv(nu, x) e^x: no underflow
    log_shifted = nu * math.log(epsilon) + math.log(float(special.kve(nu, epsilon))) - epsilon
    return log_peak - log_shifted


def _skellam_event(unit_mus) -> SkellamDpEvent:
    """``(mu_S, mu_P)`` with ``l1 = 2 > l2^2 = 1``: the Renyi bound of a unit change holds (a
    larger ``l1`` only loosens it) and, at ``(2D)^2 mu_S``, bounds a shift of ``2 D`` too (its
    Gaussian term is the same, its correction smaller); the exact PLD of a unit change,
    which is not shown to bound a shift of ``2 D``, is not used (it needs ``l1 = l2^2``)."""
    return SkellamDpEvent(tuple(unit_mus), 2.0, 1.0)


def _renyi_unit_mus(epsilon: float, delta: float, count_share: float) -> tuple[float, float]:
    """The smallest ``(mu_S, mu_P) = m (1 / (1 - c), 1 / c)`` whose `_skellam_event` is
    ``(epsilon, delta)`` by the library's accountant."""
    from dpauc_tf.privacy.accounting import composed_epsilon
    from dpauc_tf.privacy.calibration import smallest_parameter

    shares = np.array([1.0 - count_share, count_share])

    def spent(m: float) -> float:
        return composed_epsilon(_skellam_event(m / shares), 1, delta).best

    m = smallest_parameter(spent, epsilon)
    return tuple(float(m / p) for p in shares)


def _skellam_share(shape, mu: tf.Tensor, seed) -> tf.Tensor:
    """``Poisson(mu) - Poisson(mu)`` (int64), ``mu`` a float64 tensor broadcastable to ``shape``."""
    mu = tf.convert_to_tensor(mu, tf.float64)
    full_shape = tf.concat([[2], shape], 0)
    counts = tf.random.stateless_poisson(
        full_shape, seed=seed, lam=tf.broadcast_to(mu, shape), dtype=tf.float64
    )
    return tf.cast(counts[0] - counts[1], tf.int64)


def _polya_share(shape, scale: tf.Tensor, num_shares: int, seed) -> tf.Tensor:
    """One of ``num_shares`` Polya-difference shares of discrete Laplace(``scale``) (int64);
    ``scale`` a float64 tensor broadcastable to ``shape`` (0 where the scale is 0)."""
    scale = tf.convert_to_tensor(scale, tf.float64)
    positive = scale > 0
    safe = tf.where(positive, scale, tf.ones_like(scale))
    q = tf.exp(-1.0 / safe)
    ratio = tf.where(positive, q / (1.0 - q), tf.zeros_like(q))
    gamma_seed, poisson_seed = tf.unstack(split_seed(seed, 2))
    full_shape = tf.concat([[2], shape], 0)
    gammas = tf.random.stateless_gamma(
        full_shape,
        seed=gamma_seed,
        alpha=tf.constant(1.0 / num_shares, tf.float64),
        dtype=tf.float64,
    )
    counts = tf.random.stateless_poisson(
        full_shape, seed=poisson_seed, lam=gammas * ratio, dtype=tf.float64
    )
    return tf.cast(counts[0] - counts[1], tf.int64)


# -- rank-sum over clients without secure aggregation ---------------------------------------
