"""``secure-rank-sum`` on Flower: one evaluate round with two exchanges, SecAgg+ on both.

The law is the mechanism's ([`SecureRankSum`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum]:
``round_one_report``, ``round_two_report``, ``finish``, the calls every backend makes); this
module only moves its numbers through Flower's messages and SecAgg+:

1. **Exchange one** (`RankSumExchange.TOTALS`): every node asked sends its bucket totals
   (label-free, no noise) through SecAgg+; the server unmasks the aggregate score
   histogram only. The nodes whose masked vectors entered that sum are the population the
   ranks are of.
2. **Exchange two** (`RankSumExchange.RANK_SUM`): only those nodes are asked; the message
   carries the aggregate totals (`TOTALS_KEY`, public after exchange one) and the noise
   shares are sized for them, so their release has the full epsilon. Each sends ``2 S_k``,
   ``P_k`` (with its shares) and ``n_k`` through SecAgg+.
3. If any node of exchange one is missing from exchange two (lost between the exchanges or
   inside SecAgg+), the server does **not** unmask exchange two's sum (the shares would be
   short and the ranks of another population): one-line refusal, nothing released.
   Otherwise ``finish`` checks ``sum n_k = W`` and the release is the central one.

The same exchanges run one-vs-rest rank sums
([`SecureOneVsRestRankSum`][dpauc_tf.mechanisms.multiclass_rank_sum.SecureOneVsRestRankSum]:
``[C, B]`` column totals, per-class ``2 S_k,c`` and ``P_k,c``); `RankSumProtocol` reads
either mechanism, so the exchanges, the refusal and the shares rule are one code.

Both exchanges travel as exact SecAgg+ limbs (`dpauc_tf.flower.encoding.LimbLayout`, as
the secure histograms): exchange two's signed 64-bit words, whose modular width
([`modular_width`][dpauc_tf.mechanisms.secure_rank_sum.modular_width]) must fit `EXACT_BITS`;
exchange one's non-negative totals below ``2^TOTALS_BITS`` in fewer limbs (`totals_layout`).
Exchange two's message carries the public totals zlib-compressed (`encode_totals`).

Examples:
    >>> RankSumExchange("totals").value, [e.value for e in RankSumExchange]
    ('totals', ['totals', 'rank-sum'])
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpauc_tf.flower.encoding import LimbLayout

# SecAgg+'s limbs carry 64-bit words, and the server reads the sums as float64: exact below
# 2^53, so round two's modular width may be at most 53 bits, signed (W up to 134,217,614).
EXACT_BITS = 53

EXCHANGE_KEY = "dpauc.exchange"  # which exchange a message is (a RankSumExchange value)
TOTALS_KEY = "dpauc.totals"  # exchange two: the aggregate totals, zlib of little-endian int64
# Exchange one's totals are below 2^TOTALS_BITS: a W that large needs more than EXACT_BITS
# in exchange two (modular_width(2^27, any epsilon) > 53), so check_width refuses it anyway.
TOTALS_BITS = 28


class RankSumExchange(str, enum.Enum):
    """The two exchanges of a ``secure-rank-sum`` round on Flower."""

    TOTALS = "totals"
    RANK_SUM = "rank-sum"


def two_exchanges(spec) -> bool:
    """Whether ``spec``'s release takes the two exchanges (a secure rank sum: binary, or
    one-vs-rest by per-class rank sums)."""
    return bool(spec.capabilities.secure and spec.build().releases_from_summed_counts)


@dataclasses.dataclass(frozen=True)
class RankSumProtocol:
    """How the two exchanges read one release's mechanism: its counting, the shapes of its
    reports and its three protocol calls (``round_one_report``, ``round_two_report``,
    ``finish``), binary ([`SecureRankSum`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum])
    or one-vs-rest ([`SecureOneVsRestRankSum`][dpauc_tf.mechanisms.multiclass_rank_sum.SecureOneVsRestRankSum]:
    totals ``[C, B]``, per-class reports ``[R, C]``). No law lives here.

    Examples:
        >>> from dpauc_tf.mechanisms.release import ReleaseSpec
        >>> spec = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, num_classes=3,
        ...                         options={"resolution": 5})
        >>> p = RankSumProtocol(spec, num_clients=2)
        >>> p.totals_shape, p.report_shapes(4)["twice_rank_sum"]
        ((3, 6), (4, 3))
    """

    spec: Any
    num_clients: int

    @functools.cached_property
    def mechanism(self):
        return self.spec.build(self.num_clients)

    @functools.cached_property
    def grid(self):  # built once: 2^17 + 1 thresholds by default
        return self.mechanism.count_thresholds(self.spec.thresholds)

    @property
    def totals_shape(self) -> tuple[int, ...]:
        buckets = self.grid.num_buckets
        return (self.spec.num_classes, buckets) if self.spec.one_vs_rest else (buckets,)

    def report_shapes(self, repeats: int) -> dict[str, tuple[int, ...]]:
        """Every array of exchange two's report (``repeats`` releases)."""
        if not self.spec.one_vs_rest:
            from dpauc_tf.mechanisms.secure_rank_sum import REPORT_KEYS

            return {key: (int(repeats),) for key in REPORT_KEYS}
        classes = (int(repeats), self.spec.num_classes)
        shapes = {"twice_rank_sum": classes, "num_pos": classes, "num_examples": (int(repeats),)}
        if self.mechanism.micro:
            shapes["twice_micro_rank_sum"] = (int(repeats),)
        return shapes

    def counts(self, labels, scores) -> tuple[Any, Any]:
        """A client's integer counts on the mechanism's grid (``[B]``, or ``[C, B]``)."""
        if self.spec.one_vs_rest:
            from dpauc_tf.mechanisms.multiclass import one_vs_rest_counts

            scores = np.asarray(scores, np.float64)
            if scores.size == 0:  # an empty client reports zeros (and its noise share)
                scores, labels = scores.reshape(0, self.spec.num_classes), np.zeros(0)
            return one_vs_rest_counts(
                labels, scores, self.grid, self.spec.num_classes, integer_weights=True
            )
        import tensorflow as tf

        from dpauc_tf.core.counts import bucket_counts

        return bucket_counts(
            np.asarray(labels, np.float64).ravel(),
            np.asarray(scores, np.float64).ravel(),
            self.grid,
            dtype=tf.float64,
            integer_weights=True,
        )

    def round_two_report(self, pos, neg, totals, seed, repeats: int) -> dict:
        # the ranks once, every repeat's noise share (sized by the mechanism's num_clients)
        return self.mechanism.round_two_report(pos, neg, totals, seed, repeats=int(repeats))

    def finish(self, release: Mapping, totals, num_reporting: int) -> dict:
        if self.spec.one_vs_rest:
            return self.mechanism.finish(release, totals)
        return self.mechanism.finish(release, totals, num_reporting=num_reporting)

    def width_examples(self, num_examples: int) -> int:
        """The ``W`` whose modular width bounds exchange two's sums: the micro rank sum
        ranks the ``W C`` pooled (example, class) pairs (``|2 S_m| <= (W C)^2 / 4``)."""
        if self.spec.one_vs_rest and self.mechanism.micro:
            return int(num_examples) * self.spec.num_classes
        return int(num_examples)

    @property
    def rank_epsilon(self) -> float:
        mechanism = self.mechanism
        return getattr(mechanism, "class_mechanism", mechanism).rank_epsilon


# -- the client's side ----------------------------------------------------------------------
def rank_sum_report(settings, config: Mapping[str, Any], labels, scores, seed) -> dict:
    """A client's report for the exchange ``config`` names: its bucket totals (exchange
    one) or its round-two report with the totals the message carries (exchange two), as
    NumPy arrays (sorted keys); ``repeats`` independent round-two reports."""
    try:
        exchange = RankSumExchange(str(config.get(EXCHANGE_KEY)))
    except ValueError:
        raise ValueError(
            f"a secure-rank-sum message must name its exchange ({EXCHANGE_KEY!r}: "
            f"{', '.join(e.value for e in RankSumExchange)})"
        ) from None
    protocol = RankSumProtocol(settings.spec, settings.num_clients)
    pos, neg = protocol.counts(labels, scores)
    if exchange is RankSumExchange.TOTALS:
        totals = protocol.mechanism.round_one_report(pos, neg)
        return {"totals": np.asarray(totals, np.int64)}
    totals = decode_totals(config, protocol.totals_shape)
    report = protocol.round_two_report(pos, neg, totals, seed, settings.repeats)
    return {key: np.asarray(report[key], np.int64) for key in sorted(report)}


def exchange_layout(settings, config: Mapping[str, Any]) -> LimbLayout:
    """The limbs of the exchange ``config`` names: `totals_layout` in exchange one, the
    release's signed words in exchange two."""
    if str(config.get(EXCHANGE_KEY)) == RankSumExchange.TOTALS.value:
        return totals_layout(settings.layout.bits)
    return settings.layout


def encode_totals(totals: np.ndarray) -> bytes:
    """Exchange one's sum as the bytes exchange two's message carries: little-endian int64,
    zlib-compressed (lossless; the totals are public after exchange one and travel in the
    clear, so their mostly empty buckets compress: ``docs/flower.md`` measures it)."""
    return zlib.compress(np.asarray(totals, "<i8").tobytes())


def decode_totals(config: Mapping[str, Any], shape: tuple[int, ...]) -> np.ndarray:
    """The totals ``shape`` exchange two's message carries; one line if they are missing or
    malformed (never more than the expected bytes are inflated)."""
    if TOTALS_KEY not in config:
        raise ValueError(f"exchange two carries no {TOTALS_KEY!r} config entry")
    size = int(np.prod(shape))
    try:
        inflater = zlib.decompressobj()
        raw = inflater.decompress(bytes(config[TOTALS_KEY]), 8 * size + 1)
    except zlib.error:
        raise ValueError(f"exchange two's totals ({TOTALS_KEY!r}) are not zlib data") from None
    totals = np.frombuffer(raw[: len(raw) - len(raw) % 8], "<i8")
    if len(raw) != 8 * size or not inflater.eof or np.any(totals < 0):
        raise ValueError(
            f"exchange two's totals: {size} non-negative int64 values expected, got "
            f"{len(raw)} bytes"
        )
    return totals.astype(np.int64).reshape(shape)


def totals_layout(bits: int) -> LimbLayout:
    """Exchange one's limbs: the totals are non-negative and below ``2^TOTALS_BITS`` (a
    larger count could not pass exchange two's `check_width`), so they need
    ``ceil(TOTALS_BITS / bits)`` limbs, not the ``ceil(64 / bits)`` of a signed word.

    Examples:
        >>> totals_layout(28).num_limbs, totals_layout(22).num_limbs, LimbLayout(28).num_limbs
        (1, 2, 3)
    """
    return LimbLayout.for_bits(bits, value_bits=TOTALS_BITS)


# -- the server's side ----------------------------------------------------------------------
def check_width(protocol: RankSumProtocol, num_examples: int) -> None:
    """One line where round two's sums (modular width from the public ``W``) exceed
    `EXACT_BITS` (float64-exact sums of SecAgg+'s 64-bit limbs)."""
    from dpauc_tf.mechanisms.secure_rank_sum import modular_width

    width = modular_width(protocol.width_examples(num_examples), protocol.rank_epsilon)
    if width > EXACT_BITS:
        raise ValueError(
            f"secure-rank-sum: {int(num_examples)} examples need a {width}-bit sum in exchange "
            f"two, beyond the {EXACT_BITS} bits Flower's exact sums carry here"
        )


def secure_rank_sum_round(
    grid,
    spec,
    *,
    arrays,
    nodes: list[int],
    server_round: int,
    repeats: int,
    secagg,
    timeout: float | None,
    details,
    secure_sum,
    confidence: float | None = None,
    ci_target: str = "population",
):
    """Both exchanges on ``nodes`` and the finished [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]
    (``secure_sum`` is [`dpauc_tf.flower.strategy`][]'s SecAgg+ sum of one exchange), with
    the release's own interval at ``confidence`` (``finish_release``: the shares of the
    ranked nodes, not of the nodes asked).

    Raises:
      ValueError: no sum in exchange one, fewer than 2 nodes left for exchange two, a node
        of exchange one missing from exchange two (its sum is not unmasked), or a width
        beyond `EXACT_BITS` (one line each).
    """
    from dpauc_tf.flower.records import release_config
    from dpauc_tf.flower.secagg import SecAggSettings
    from dpauc_tf.mechanisms.release import finish_release

    protocol = RankSumProtocol(spec, len(nodes))
    # exchange one: the totals of every node asked (label-free: no shares, no epsilon)
    layout = LimbLayout.for_clients(len(nodes))
    config = release_config(spec, num_clients=len(nodes), repeats=repeats, layout=layout)
    config[EXCHANGE_KEY] = RankSumExchange.TOTALS.value
    summed, graphs = secure_sum(
        grid, config, arrays, nodes, server_round, secagg, timeout,
        shapes={"totals": protocol.totals_shape}, layout=totals_layout(layout.bits),
    )  # fmt: skip
    if summed is None:
        return None
    totals = np.rint(summed.release["totals"]).astype(np.int64)
    ranked = sorted(graphs[0][1]) if graphs else list(nodes)  # the nodes in exchange one's sum
    if len(ranked) < 2:
        raise ValueError(
            f"secure-rank-sum: {len(ranked)} of {len(nodes)} clients took part in exchange one; "
            "SecAgg+ needs at least 2 for exchange two; nothing is released"
        )
    num_examples = int(totals.reshape(-1, totals.shape[-1])[0].sum())  # every column holds W
    protocol = RankSumProtocol(spec, len(ranked))  # the shares sized for the ranked nodes
    check_width(protocol, num_examples)
    # exchange two: only the ranked nodes, with the totals; unmasked only if all of them sent
    layout = LimbLayout.for_clients(len(ranked))
    config = release_config(spec, num_clients=len(ranked), repeats=repeats, layout=layout)
    config[EXCHANGE_KEY] = RankSumExchange.RANK_SUM.value
    config[TOTALS_KEY] = encode_totals(totals)
    if secagg is not None and secagg.num_clients == len(ranked):
        settings = secagg
    else:  # the neighbourhoods of the ranked nodes (the asked size where it still fits)
        shares = secagg.num_shares if secagg is not None else None
        settings = SecAggSettings.for_clients(
            len(ranked), shares if shares is not None and shares < len(ranked) else None
        )
    missing: list[int] = []

    def all_ranked_sent(neighbours, active) -> bool:
        missing.extend(sorted(set(ranked) - set(active)))
        return not missing

    summed, _ = secure_sum(
        grid, config, arrays, ranked, server_round, settings, timeout,
        shapes=protocol.report_shapes(repeats), layout=layout,
        may_unmask=all_ranked_sent,
    )  # fmt: skip
    if summed is None or missing or summed.num_reporting != len(ranked):
        lost = missing or "some"
        raise ValueError(
            f"secure-rank-sum: node(s) {lost} of the {len(ranked)} ranked in exchange one sent "
            "nothing in exchange two (lost between the exchanges or inside SecAgg+): its sum "
            "was not unmasked (its noise would be short, its ranks of another population); "
            "nothing is released; run the round again (exchange one costs no epsilon)"
            + (f"; {details.log.describe()}" if details.log.describe() else "")
        )
    release = {key: np.rint(value).astype(np.int64) for key, value in summed.release.items()}
    finished = protocol.finish(release, totals, num_reporting=len(ranked))
    details.unmasked_groups = (len(ranked),)
    return finish_release(
        spec,
        {key: np.asarray(value) for key, value in finished.items()},
        num_examples=float(num_examples),
        num_clients=len(nodes),
        num_reporting=len(ranked),
        mechanism=protocol.mechanism,  # built for the ranked nodes: its shares, all arrived
        round_report=details.report(),
        confidence=confidence,
        ci_target=ci_target,
    )
