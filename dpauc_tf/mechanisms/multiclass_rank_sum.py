"""One-vs-rest multi-class AUC by per-class rank sums: ``2 C`` noisy numbers (``+1`` for micro).

For class ``c`` the examples of class ``c`` are the positives and every other example a
negative, all scored by the column ``s[:, c]``. That column's bucket totals ``t_c[b]`` hold
every example whatever its class, so they are **label-free**, and so are its centred
midranks ``r_c[b]`` and ``D_c = max |r_c[b]|`` over its occupied buckets
([`dpauc_tf.mechanisms.rank_sum`][]). Class ``c``'s AUC is then ``1/2 + S_c / (P_c (n -
P_c))`` with ``S_c = sum_b r_c[b] pos_c[b]`` and ``P_c`` the examples of class ``c``: both
linear in the labels.

**Neighbours and the joint sensitivity** (label DP, sample weights of 1). One example's
class changes from ``a`` to ``a'``: ``S_a`` moves by ``-r_a[b_a]`` and ``P_a`` by ``-1``,
``S_a'`` by ``+r_a'[b_a']`` and ``P_a'`` by ``+1``; no other class moves. Over the vector of
the normalised rank sums ``S_c / D_c`` the L1 change is at most **2** (one unit in two
classes), over the counts ``P_c`` it is **2**. The **micro** average (the AUC of all ``n C``
(example, class) pairs, scored by the pooled column histogram ``sum_c t_c[b]``, ranks
``r_m``) has ``P_m = n`` (public) and ``S_m = sum_b r_m[b] sum_c pos_c[b]``; a class change
moves one positive from bucket ``b_a`` to ``b_a'`` of the pooled histogram, so ``S_m`` moves
by ``r_m[b_a'] - r_m[b_a]``, at most the range ``R_m = max r_m - min r_m`` over the occupied
buckets: ``S_m / R_m`` moves by at most **1**.

**One noise for the whole vector** (pure epsilon, ``c = count_share``):
``eps_P = c eps``, ``eps_S = (1 - c) eps``; ``L = 2`` (``L = 3`` with ``micro``);
``Laplace(L / eps_S)`` on every normalised rank sum (``S_c + Laplace(L D_c / eps_S)``,
``S_m + Laplace(L R_m / eps_S)``) and ``Laplace(2 / eps_P)`` on every ``P_c``. The privacy
loss is at most ``L eps_S / L + 2 eps_P / 2 = eps``, whatever ``C``. Without micro every
class is exactly the binary ``rank-sum`` release at ``epsilon / 2`` (its ``class_mechanism``);
micro costs every class a factor ``3 / 2`` on its rank sum's noise, so it is released only
when micro is the headline average.

**Averages** (post-processing): ``macro`` the mean of the class AUCs, ``weighted`` their
mean weighted by the released ``P_c`` (clipped at 0), ``micro`` ``1/2 + S_m / (n^2 (C - 1))``
(NaN when not released). **Interval per class**: each class's release follows the binary
``rank-sum`` law of its ``class_mechanism`` ([`OneVsRestRankSum.class_intervals`][]).

**Federated** ([`OneVsRestRankSum.round_one_report`][], [`OneVsRestRankSum.round_two_report`][],
[`OneVsRestRankSum.finish`][]): as ``secure-rank-sum``, round one sums every client's ``[C, B]`` column
histograms (label-free: the server learns the aggregate score histogram of every column),
round two sums ``2 S_k,c``, ``P_k,c``, ``2 S_k,m`` and ``n_k`` with the global ranks. With
``rank-sum`` every client adds the whole noise to its own report (each report private on
its own; the sum carries ``K`` draws); with ``secure-rank-sum``
([`SecureOneVsRestRankSum`][]) every client adds a Polya-difference share of a discrete
Laplace whose sum over the ``K`` shares is one draw of the central law (on ``2 S``: integers).

Examples:
    >>> m = OneVsRestRankSum(epsilon=1.0, num_classes=3, resolution=11)
    >>> m.class_mechanism.rank_epsilon, m.class_mechanism.count_epsilon
    (0.375, 0.125)
    >>> OneVsRestRankSum(epsilon=1.0, num_classes=3, micro=True).micro_epsilon
    0.25
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dp_accounting
import numpy as np
import tensorflow as tf

from dpauc_tf.core.defaults import DEFAULT_NUM_THRESHOLDS
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.auc_only import COUNT_RESOLUTION
from dpauc_tf.mechanisms.laws import IntervalLaw
from dpauc_tf.mechanisms.multiclass import OneVsRest, check_num_classes
from dpauc_tf.mechanisms.rank_sum import (
    DEFAULT_COUNT_SHARE,
    RankSum,
    _integer,
    twice_centred_midranks,
    twice_sensitivity,
)
from dpauc_tf.mechanisms.registry import mechanism_spec
from dpauc_tf.noise import samplers
from dpauc_tf.noise.seeds import make_seed, split_seed
from dpauc_tf.noise.shares import check_shares
from dpauc_tf.privacy.events import discrete_laplace_event, laplace_event
from dpauc_tf.privacy.statement import PrivacyStatement, check_epsilon

NEIGHBOURING = (
    "label DP, multi-class: neighbouring test sets differ only in the class of one example "
    "(its scores are the same; every sample weight is 1)"
)
# The keys of round two's report (every client) and of the finished release.
REPORT_KEYS = ("twice_rank_sum", "num_pos", "num_examples", "twice_micro_rank_sum")


def _integers(counts: Any) -> np.ndarray:
    """Counts as int64, refusing fractions (a fractional weight would show through)."""
    values = np.asarray(counts, np.float64)
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("one-vs-rest rank sums take non-negative finite counts")
    if np.any(values != np.round(values)):
        raise ValueError(
            "one-vs-rest rank sums take sample weights of 1 only (integer counts): a weight "
            "that moves with the class would make the label-free totals depend on the labels"
        )
    return values.astype(np.int64)


def twice_midranks(totals: np.ndarray) -> np.ndarray:
    """``2 r[b] = 2 sum_{b' < b} t[b'] + t[b] - W`` (int64) of totals ``[..., B]``
    ([`twice_centred_midranks`][dpauc_tf.mechanisms.rank_sum.twice_centred_midranks]).

    Examples:
        >>> twice_midranks(np.array([1, 0, 2, 1])).tolist()
        [-3, -2, 0, 3]
    """
    return twice_centred_midranks(np.asarray(totals, np.int64)).numpy()


def statistics(pos: Any, totals: Any) -> dict[str, tf.Tensor]:
    """The doubled statistics (int64 tensors; graph-safe, so a TFF client runs them) of
    per-class positives ``pos [C, B]`` ranked by the (global) column totals ``totals [C, B]``:
    ``twice_rank_sum [C]``, ``num_pos [C]``, ``twice_sensitivity [C]`` (``2 D_c``),
    ``num_examples`` (``n``), ``twice_micro_rank_sum`` and ``twice_micro_range`` (``2 R_m``)
    of the pooled histogram."""
    pos = tf.convert_to_tensor(pos, tf.int64)
    totals = tf.convert_to_tensor(totals, tf.int64)
    pooled = tf.reduce_sum(totals, axis=0)
    twice_micro = twice_centred_midranks(pooled)
    occupied = pooled > 0
    top = tf.reduce_max(tf.where(occupied, twice_micro, tf.int64.min))
    bottom = tf.reduce_min(tf.where(occupied, twice_micro, tf.int64.max))
    zero = tf.constant(0, tf.int64)
    return {
        "twice_rank_sum": tf.reduce_sum(twice_centred_midranks(totals) * pos, axis=-1),
        "num_pos": tf.reduce_sum(pos, axis=-1),
        "twice_sensitivity": twice_sensitivity(totals),
        "num_examples": tf.reduce_sum(totals[0]),
        "twice_micro_rank_sum": tf.reduce_sum(twice_micro[None, :] * pos),
        "twice_micro_range": tf.where(tf.reduce_any(occupied), top - bottom, zero),
    }


def exact_statistics(pos: Any, totals: Any) -> dict[str, np.ndarray]:
    """[`statistics`][] as int64 arrays.

    Examples:
        >>> s = exact_statistics([[1, 0, 0], [0, 0, 1]], [[1, 0, 1], [1, 0, 1]])
        >>> s["twice_rank_sum"].tolist(), s["twice_sensitivity"].tolist()
        ([-1, 1], [1, 1])
    """
    return {key: value.numpy() for key, value in statistics(pos, totals).items()}


def _arrays(tensors: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {key: np.asarray(value) for key, value in tensors.items()}


class OneVsRestRankSum:
    """The one-vs-rest release of ``C`` classes' rank sums and positive counts (pure epsilon).

    Args:
      epsilon: epsilon of one release of all classes (``None``: no noise, NOT private).
      num_classes: ``C >= 2``.
      micro: also release the pooled rank sum of the micro average (costs every class's
        rank sum a factor 3/2 in noise).
      count_share: share of ``epsilon`` on the positive counts (default 0.25).
      resolution: thresholds of the counting grid (TensorFlow's grid).
      num_clients: the clients of a federated release (each adds the whole noise here).

    [`release`][] takes per-class counts ``pos, neg [C, B]`` and returns ``rank_sum``,
    ``num_pos``, ``total``, ``sensitivity`` (``[..., C]``) and, with ``micro``,
    ``micro_rank_sum`` and ``micro_sensitivity`` (``[...]``), a leading ``repeats`` axis when
    asked.

    Examples:
        >>> m = OneVsRestRankSum(epsilon=2.0, num_classes=2, resolution=3)
        >>> r = m.release([[0, 3, 0, 0], [0, 0, 2, 0]], [[0, 0, 2, 0], [0, 3, 0, 0]], seed=0)
        >>> sorted(r)
        ['num_pos', 'rank_sum', 'sensitivity', 'total']
        >>> m.statement().epsilon
        2.0
    """

    base_name = "rank-sum"
    discrete = False
    # Over clients it releases from their summed counts only, in two rounds (the ranks come
    # from round one's totals): the question every backend asks of a release, as of
    # CountMechanism's rank sums.
    releases_from_summed_counts = True

    def __init__(
        self,
        epsilon: float | None,
        num_classes: int,
        *,
        micro: bool = False,
        count_share: float = DEFAULT_COUNT_SHARE,
        resolution: int = COUNT_RESOLUTION,
        num_clients: int | None = None,
    ):
        self.num_classes = check_num_classes(num_classes)
        self.epsilon = check_epsilon(epsilon)
        self.micro = bool(micro)
        self.rank_changes = 3 if self.micro else 2
        self._num_clients = 1 if num_clients is None else int(num_clients)
        # the per-class law: the binary rank-sum with rank epsilon eps_S / L and count
        # epsilon eps_P / 2 (exactly rank-sum at epsilon / 2 without micro)
        probe = RankSum(epsilon=1.0, count_share=count_share, resolution=resolution)
        self.count_share = probe.count_share
        self.resolution = probe.resolution
        if self.epsilon is None:
            raise ValueError(
                f"one-vs-rest {self.base_name} needs an epsilon; use the 'none' mechanism for "
                "no noise"
            )
        rank = (1.0 - self.count_share) * self.epsilon / self.rank_changes
        count = self.count_share * self.epsilon / 2.0
        self.class_mechanism = RankSum(
            epsilon=rank + count, count_share=count / (rank + count), resolution=resolution
        )
        self.delta = 0.0
        self.num_thresholds = self.resolution
        self.name = f"one-vs-rest {self.base_name}"

    # -- what the release path reads ----------------------------------------------------
    @property
    def capabilities(self):
        return RankSum.capabilities

    @property
    def num_clients(self) -> int:
        return self._num_clients

    @property
    def class_epsilon(self) -> float:
        """Epsilon of the binary ``rank-sum`` release every class follows."""
        return self.class_mechanism.epsilon

    class_delta = None

    @property
    def micro_epsilon(self) -> float | None:
        """Epsilon of the pooled rank sum's normalised coordinate (``eps_S / L``)."""
        return None if self.epsilon is None else self.class_mechanism.rank_epsilon

    def count_thresholds(self, thresholds: Thresholds) -> Thresholds:
        """The grid every client counts on (TensorFlow's, ``resolution`` thresholds)."""
        return self.class_mechanism.count_thresholds(thresholds)

    def _scales(self, exact: Mapping[str, Any]) -> dict[str, tf.Tensor]:
        """Noise scales of the doubled rank sums, the counts and the doubled micro sum."""
        rank_eps = self.class_mechanism.rank_epsilon
        return {
            "twice_rank_sum": tf.cast(exact["twice_sensitivity"], tf.float64) / rank_eps,
            "num_pos": tf.constant(1.0 / self.class_mechanism.count_epsilon, tf.float64),
            "twice_micro_rank_sum": tf.cast(exact["twice_micro_range"], tf.float64) / rank_eps,
        }

    def _noise(self, shape, scale, seed, num_shares: int) -> tf.Tensor:
        """Continuous Laplace of ``scale`` (every client its own whole draw)."""
        del num_shares
        scale = tf.broadcast_to(tf.cast(scale, tf.float64), shape)
        return samplers.laplace(tf.constant(shape, tf.int32), 1.0, seed) * scale

    def _noisy(self, exact, seed, repeats, num_shares) -> dict[str, tf.Tensor]:
        """The exact statistics plus this report's noise (tensors; graph-safe)."""
        scales = self._scales(exact)
        keys = ["twice_rank_sum", "num_pos"] + (["twice_micro_rank_sum"] if self.micro else [])
        seeds = split_seed(make_seed(seed), len(keys))
        out = {}
        for i, key in enumerate(keys):
            value = tf.convert_to_tensor(exact[key], tf.int64)
            shape = value.shape.as_list()
            shape = shape if repeats is None else [int(repeats), *shape]
            noise = self._noise(shape, scales[key], seeds[i], num_shares)
            out[key] = tf.cast(value, noise.dtype) + noise
        return out

    # -- central: one data holder -------------------------------------------------------
    def release(self, pos, neg, seed=None, repeats: int | None = None) -> dict[str, np.ndarray]:
        """The noisy release of per-class counts ``pos, neg [C, B]`` (weights of 1)."""
        pos, totals = self._checked(pos, neg)
        exact = exact_statistics(pos, totals)
        noisy = self._noisy(exact, seed, repeats, 1)
        return self._finished(_arrays(noisy), exact, repeats)

    def _checked(self, pos, neg) -> tuple[np.ndarray, np.ndarray]:
        pos, neg = _integers(pos), _integers(neg)
        if pos.ndim != 2 or pos.shape[0] != self.num_classes or neg.shape != pos.shape:
            raise ValueError(
                f"one-vs-rest counts must have shape [C={self.num_classes}, B], got "
                f"{pos.shape} and {neg.shape}"
            )
        totals = pos + neg
        if np.any(totals.sum(axis=1) != totals[0].sum()):
            raise ValueError(
                "one-vs-rest counts must hold every example once per class column (the "
                "classes' totals differ)"
            )
        return pos, totals

    def _finished(self, noisy, exact, repeats) -> dict[str, np.ndarray]:
        """The release in the units of the binary rank-sum (``S``, not ``2 S``)."""
        lead = () if repeats is None else (int(repeats),)
        shape = (*lead, self.num_classes)
        out = {
            "rank_sum": np.asarray(noisy["twice_rank_sum"], np.float64) / 2.0,
            "num_pos": np.asarray(noisy["num_pos"], np.float64),
            "total": np.full(shape, float(exact["num_examples"])),
            "sensitivity": np.broadcast_to(
                np.asarray(exact["twice_sensitivity"], np.float64) / 2.0, shape
            ).copy(),
        }
        if self.micro:
            out["micro_rank_sum"] = np.asarray(noisy["twice_micro_rank_sum"], np.float64) / 2.0
            out["micro_sensitivity"] = np.full(lead, float(exact["twice_micro_range"]) / 2.0)
        return out

    # -- federated: two rounds ----------------------------------------------------------
    def round_one_report(self, pos, neg) -> np.ndarray | tf.Tensor:
        """A client's per-class bucket totals ``[C, B]`` (int64, label-free, no noise);
        checked and an array eagerly, a tensor in a graph (a TFF client)."""
        if not tf.executing_eagerly():
            return _integer(tf.cast(pos, tf.float64) + tf.cast(neg, tf.float64))
        pos, totals = self._checked(pos, neg)
        del pos
        return totals

    def round_two_report(
        self, pos, neg, totals, seed, repeats: int | None = None
    ) -> dict[str, np.ndarray | tf.Tensor]:
        """A client's report with round one's global ``totals [C, B]``: ``2 S_k,c``,
        ``P_k,c``, ``n_k`` and ``2 S_k,m`` (with ``micro``), each with this client's noise
        (the whole law here; a share of it in [`SecureOneVsRestRankSum`][]). Eagerly the
        counts are checked and the report is arrays; in a graph (a TFF client) tensors."""
        if tf.executing_eagerly():
            pos, own = self._checked(pos, neg)
            totals = _integers(totals)
            if totals.shape != own.shape:
                raise ValueError(
                    f"round one's totals have shape {totals.shape}, the counts {own.shape}"
                )
            if np.any(own > totals):
                raise ValueError(
                    "one-vs-rest rank sums: this client's counts exceed round one's totals: "
                    "the totals are of another population"
                )
        else:
            pos = _integer(tf.cast(pos, tf.float64))
            own = pos + _integer(tf.cast(neg, tf.float64))
        exact = statistics(pos, totals)  # the global ranks: S_k,c with the global r_c
        report = self._noisy(exact, seed, repeats, self.num_clients)
        lead = [] if repeats is None else [int(repeats)]
        report["num_examples"] = tf.fill(lead, tf.reduce_sum(tf.cast(own[0], tf.int64)))
        return _arrays(report) if tf.executing_eagerly() else report

    def report_width(self, num_examples: int) -> int:
        """Bits of a modular sum that holds round two's sums of ``num_examples`` (public
        after round one) but for a ``2^-60`` chance: every class's ``|2 S_c| <= n^2 / 4``
        plus its noise (scale ``2 D_c / eps <= n / eps``), as ``secure-rank-sum``
        (`dpauc_tf.mechanisms.secure_rank_sum.modular_width`); with micro
        ``|2 S_m| <= C n^2`` and ``2 R_m <= 2 C n``: the width of ``2 C n`` examples."""
        from dpauc_tf.mechanisms.secure_rank_sum import modular_width

        scale = 2 * self.num_classes if self.micro else 1
        return modular_width(int(num_examples) * scale, self.class_mechanism.rank_epsilon)

    def finish(self, summed: Mapping[str, Any], totals) -> dict[str, np.ndarray]:
        """The server's release from round two's sums and round one's ``totals``; refuses
        (one line) a round two whose examples are not those ranked in round one."""
        totals = _integers(totals)
        exact = exact_statistics(np.zeros_like(totals), totals)
        examples = np.asarray(summed["num_examples"], np.int64)
        if np.any(examples != exact["num_examples"]):
            raise ValueError(
                f"one-vs-rest rank sums: round two summed {int(examples.ravel()[0])} examples "
                f"but round one ranked {int(exact['num_examples'])}: a client was lost (or "
                "added) between the rounds; nothing is released (run both rounds again)"
            )
        repeats = None if examples.ndim == 0 else int(examples.shape[0])
        return self._finished(summed, exact, repeats)

    # -- post-processing ----------------------------------------------------------------
    def estimate(self, release: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Per-class AUCs ``[..., C]``, supports, and the three averages ``[...]`` (micro
        NaN when not released); no curve (``fpr``/``tpr`` ``[..., C, 0]``)."""
        tensors = {
            key: tf.constant(np.asarray(release[key], np.float64))
            for key in ("rank_sum", "num_pos", "total")
        }
        class_aucs = self.class_mechanism.estimate_auc(tensors).numpy()
        support = np.maximum(np.asarray(release["num_pos"], np.float64), 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            weighted = (class_aucs * support).sum(-1) / support.sum(-1)
        total = np.asarray(release["total"], np.float64)[..., 0]
        if "micro_rank_sum" in release:
            pairs = total * total * (self.num_classes - 1)
            with np.errstate(invalid="ignore", divide="ignore"):
                raw = 0.5 + np.asarray(release["micro_rank_sum"], np.float64) / pairs
            micro = np.where(total > 0, np.clip(raw, 0.0, 1.0), np.nan)
        else:
            micro = np.full(total.shape, np.nan)
        empty = np.zeros((*class_aucs.shape, 0))
        return {
            "class_aucs": class_aucs,
            "support": support,
            "macro": class_aucs.mean(-1),
            "weighted": weighted,
            "micro": micro,
            "fpr": empty,
            "tpr": empty,
        }

    def class_intervals(self, release: Mapping[str, Any], confidence: float, target: str):
        """Every class's interval ``[R, C]``: the binary ``rank-sum`` law of
        ``class_mechanism`` applied to each class's release (post-processing)."""
        from dpauc_tf.mechanisms.intervals import release_interval

        parts = {
            key: np.atleast_2d(np.asarray(release[key], np.float64))
            for key in ("rank_sum", "num_pos", "total", "sensitivity")
        }
        return release_interval(
            self.class_mechanism,
            parts,
            confidence=confidence,
            target=target,
            num_examples=float(parts["total"].ravel()[0]),
            copies=self._interval_copies(),
        )

    def _interval_copies(self) -> float:
        """Noise draws in the sum: ``K`` local reports, one for the central release."""
        return float(self.num_clients)

    # -- the guarantee ------------------------------------------------------------------
    def dp_event(self) -> dp_accounting.DpEvent:
        """``L`` unit changes of the normalised rank sums at scale ``1 / rank_epsilon`` and
        two unit changes of the counts at ``1 / count_epsilon``, composed."""
        event = discrete_laplace_event if self.discrete else laplace_event
        return dp_accounting.ComposedDpEvent(
            [
                event(1.0 / self.class_mechanism.rank_epsilon, self.rank_changes),
                event(1.0 / self.class_mechanism.count_epsilon, 2),
            ]
        )

    def privacy_spent(self, releases: int = 1, delta: float | None = None):
        from dpauc_tf.privacy.accounting import composed_epsilon

        return composed_epsilon(self.dp_event(), releases, 0.0 if delta is None else delta)

    def achieved(self, num_reporting: int | None) -> tuple[PrivacyStatement, bool]:
        """The statement, and whether fewer shares arrived than the noise was sized for."""
        short = num_reporting is not None and num_reporting < self.num_clients
        if short and self.discrete:
            raise ValueError(
                f"{self.name}: {num_reporting} of the {self.num_clients} noise shares arrived; "
                "nothing is released (size num_clients for the clients expected to report)"
            )
        return self.statement(), False

    def _noise_text(self, classes_known: bool = True) -> str:
        classes = self.num_classes if classes_known else "not known yet"
        rank, count = self.class_mechanism.rank_epsilon, self.class_mechanism.count_epsilon
        micro = f"; S_m + Laplace(R_m / {rank:.6g})" if self.micro else ""
        return (
            f"S_c + Laplace(D_c / {rank:.6g}) and P_c + Laplace({1 / count:.6g}) for every class "
            f"(C = {classes}){micro}"
        )

    def statement(self, *, classes_known: bool = True) -> PrivacyStatement:
        """The guarantee of one release of every class (``classes_known=False``: the
        number of classes is not known yet; only the noise line's ``C`` depends on it)."""
        micro = (
            "; pooled rank sum S_m / R_m: 1 (R_m the range of the pooled midranks)"
            if self.micro
            else ""
        )
        return PrivacyStatement(
            mechanism=self.name,
            neighbouring=NEIGHBOURING,
            sensitivity="a class change moves two classes: sum_c |dS_c| / D_c <= 2 (D_c = max "
            f"|r_c[b]| from class c's own score column, label-free), sum_c |dP_c| <= 2{micro}",
            noise=self._noise_text(classes_known)
            + "; the column histograms' n and D_c are released"
            + self._clients_text(),
            epsilon=self.epsilon,  # L rank_epsilon + 2 count_epsilon (dp_event composes to it)
            delta=0.0,
        )

    def _clients_text(self) -> str:
        """Over clients without secure aggregation: what the server sees (the secure
        release's trust is in its noise text)."""
        if self.num_clients <= 1 or self.capabilities.secure:
            return ""
        return (
            f"; over {self.num_clients} clients without secure aggregation every client adds "
            "this noise to its own report (ranked by round one's column totals) and the server "
            "sees every client's column histograms (round one, in the clear, label-free) and "
            "noisy reports"
        )

    def aggregate(self) -> OneVsRestRankSum:
        return self

    def options(self) -> dict:
        return {
            "count_share": self.count_share,
            "resolution": self.resolution,
            "micro": self.micro,
        }

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(epsilon={self.epsilon!r}, num_classes={self.num_classes}, "
            f"micro={self.micro})"
        )


class SecureOneVsRestRankSum(OneVsRestRankSum):
    """The one-vs-rest rank sums summed by secure aggregation: every client adds one of
    ``num_clients`` Polya-difference shares of discrete Laplace noise (on ``2 S``, integers),
    whose sum is one draw of the central law; integer counts only.

    Examples:
        >>> m = SecureOneVsRestRankSum(epsilon=1.0, num_classes=3, num_clients=4, resolution=5)
        >>> m.name, m.statement().epsilon
        ('one-vs-rest secure-rank-sum', 1.0)
    """

    base_name = "secure-rank-sum"
    discrete = True

    def __init__(
        self, epsilon: float | None, num_classes: int, *, num_clients: int | None = None, **kw
    ):
        shares = check_shares(1 if num_clients is None else num_clients, "discrete-laplace")
        super().__init__(epsilon, num_classes, num_clients=shares, **kw)

    @property
    def capabilities(self):
        from dpauc_tf.mechanisms.secure_rank_sum import SecureRankSum

        return SecureRankSum.capabilities

    def _noise(self, shape, scale, seed, num_shares: int) -> tf.Tensor:
        """One of ``num_shares`` Polya-difference shares of discrete Laplace(``scale``)."""
        from dpauc_tf.mechanisms.secure_rank_sum import _polya_share

        scale = tf.broadcast_to(tf.cast(scale, tf.float64), shape)
        return _polya_share(tf.constant(shape, tf.int32), scale, num_shares, seed)

    def release(self, pos, neg, seed=None, repeats: int | None = None) -> dict[str, np.ndarray]:
        """The finished release with every share present (one discrete Laplace draw: the law
        of the secure sum of ``num_clients`` round-two reports)."""
        pos, totals = self._checked(pos, neg)
        exact = exact_statistics(pos, totals)
        return self._finished(_arrays(self._noisy(exact, seed, repeats, 1)), exact, repeats)

    def _interval_copies(self) -> float:
        return 1.0

    def _noise_text(self, classes_known: bool = True) -> str:
        classes = self.num_classes if classes_known else "not known yet"
        rank, count = self.class_mechanism.rank_epsilon, self.class_mechanism.count_epsilon
        micro = f"; discrete Laplace(2 R_m / {rank:.6g}) on 2 S_m" if self.micro else ""
        return (
            f"discrete Laplace(2 D_c / {rank:.6g}) on 2 S_c and discrete Laplace({1 / count:.6g}) "
            f"on P_c for every class (C = {classes}){micro}, in total, split into "
            f"{self.num_clients} client shares (Polya differences); trust: the server sees only "
            "the secure sums (round one: every column's aggregate score histogram)"
        )


def one_vs_rest_rank_sum(
    mechanism: str,
    *,
    epsilon: float | None,
    num_classes: int,
    num_clients: int | None,
    options: Mapping[str, Any],
    average: str,
) -> OneVsRestRankSum:
    """The one-vs-rest rank-sum release of ``mechanism`` (``rank-sum``: central or local
    noise; ``secure-rank-sum``: noise shares), with the micro rank sum when ``average`` is
    ``"micro"``; other options: ``count_share``, ``resolution`` (``num_clients`` and
    ``family="discrete-laplace"`` for the secure one)."""
    options = dict(options)
    unknown = set(options) - {"count_share", "resolution", "num_clients", "family"}
    if unknown:
        raise ValueError(
            f"one-vs-rest {mechanism} takes the options count_share and resolution, got "
            f"{sorted(unknown)}"
        )
    family = options.pop("family", "discrete-laplace")
    shares = options.pop("num_clients", None) or num_clients
    micro = average == "micro"
    if mechanism_spec(mechanism).capabilities.secure:  # noise shares, summed securely
        if family != "discrete-laplace":
            raise ValueError("one-vs-rest secure-rank-sum takes family='discrete-laplace' only")
        return SecureOneVsRestRankSum(
            epsilon, num_classes, num_clients=shares, micro=micro, **options
        )
    return OneVsRestRankSum(epsilon, num_classes, num_clients=shares, micro=micro, **options)


def build_one_vs_rest(
    mechanism: str,
    *,
    epsilon: float | None,
    num_classes: int,
    num_thresholds: int = DEFAULT_NUM_THRESHOLDS,
    delta: float | None = None,
    num_clients: int | None = None,
    options: Mapping[str, Any] | None = None,
    average: str = "macro",
):
    """The one-vs-rest release of ``mechanism``, chosen by its law: a rank-sum mechanism
    (its interval law is ``RANK_SUM``: two noisy numbers per class) gives the per-class rank
    sums of this module (with the micro rank sum when
    ``average`` is ``"micro"``); a curve mechanism gives
    [`OneVsRest`][dpauc_tf.mechanisms.multiclass.OneVsRest].

    Examples:
        >>> build_one_vs_rest("rank-sum", epsilon=1.0, num_classes=3).name
        'one-vs-rest rank-sum'
    """
    if getattr(mechanism_spec(mechanism).load(), "interval_law", None) is IntervalLaw.RANK_SUM:
        return one_vs_rest_rank_sum(
            mechanism,
            epsilon=epsilon,
            num_classes=num_classes,
            num_clients=num_clients,
            options=dict(options or {}),
            average=average,
        )
    return OneVsRest(
        mechanism,
        epsilon=epsilon,
        num_classes=num_classes,
        num_thresholds=num_thresholds,
        delta=delta,
        num_clients=num_clients,
        options=options,
    )
