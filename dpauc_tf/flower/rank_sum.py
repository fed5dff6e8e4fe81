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

Both exchanges travel as exact SecAgg+ limbs (`dpauc_tf.flower.encoding.LimbLayout`,
signed 64-bit words, as the secure histograms): round two's modular width
([`modular_width`][dpauc_tf.mechanisms.secure_rank_sum.modular_width]) must fit `EXACT_BITS`.

Examples:
    >>> RankSumExchange("totals").value, [e.value for e in RankSumExchange]
    ('totals', ['totals', 'rank-sum'])
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpauc_tf.flower.encoding import LimbLayout

# SecAgg+'s limbs carry 64-bit words, and the server reads the sums as float64: exact below
# 2^53, so round two's modular width may be at most 53 bits, signed (W up to 134,217,614).
EXACT_BITS = 53

EXCHANGE_KEY = "dpauc.exchange"  # which exchange a message is (a RankSumExchange value)
TOTALS_KEY = "dpauc.totals"  # exchange two: the aggregate totals, little-endian int64 bytes


class RankSumExchange(str, enum.Enum):
    """The two exchanges of a ``secure-rank-sum`` round on Flower."""

    TOTALS = "totals"
    RANK_SUM = "rank-sum"


def two_exchanges(spec) -> bool:
    """Whether ``spec``'s release takes the two exchanges (a secure rank sum)."""
    if spec.one_vs_rest:
        return False
    return bool(spec.capabilities.secure and spec.build().releases_from_summed_counts)


# -- the client's side ----------------------------------------------------------------------
def rank_sum_report(settings, config: Mapping[str, Any], labels, scores, seed) -> dict:
    """A client's report for the exchange ``config`` names: its bucket totals (exchange
    one) or its round-two report with the totals the message carries (exchange two), as
    NumPy arrays (sorted keys); ``repeats`` independent round-two reports."""
    import tensorflow as tf

    from dpauc_tf.core.counts import bucket_counts

    try:
        exchange = RankSumExchange(str(config.get(EXCHANGE_KEY)))
    except ValueError:
        raise ValueError(
            f"a secure-rank-sum message must name its exchange ({EXCHANGE_KEY!r}: "
            f"{', '.join(e.value for e in RankSumExchange)})"
        ) from None
    mechanism = settings.mechanism()
    grid = mechanism.count_thresholds(settings.spec.thresholds)
    pos, neg = bucket_counts(
        np.asarray(labels, np.float64).ravel(),
        np.asarray(scores, np.float64).ravel(),
        grid,
        dtype=tf.float64,
        integer_weights=True,
    )
    if exchange is RankSumExchange.TOTALS:
        return {"totals": np.asarray(mechanism.round_one_report(pos, neg), np.int64)}
    totals = decode_totals(config, grid.num_buckets)
    repeats = int(settings.repeats)
    report = mechanism.round_two_report(
        pos, neg, totals, seed, num_clients=settings.num_clients, repeats=repeats
    )
    return {key: np.asarray(report[key], np.int64) for key in sorted(report)}


def encode_totals(totals: np.ndarray) -> bytes:
    """Exchange one's sum as the bytes exchange two's message carries."""
    return np.asarray(totals, "<i8").tobytes()


def decode_totals(config: Mapping[str, Any], num_buckets: int) -> np.ndarray:
    """The totals exchange two's message carries; one line if they are missing or malformed."""
    if TOTALS_KEY not in config:
        raise ValueError(f"exchange two carries no {TOTALS_KEY!r} config entry")
    totals = np.frombuffer(bytes(config[TOTALS_KEY]), "<i8")
    if totals.size != num_buckets or np.any(totals < 0):
        raise ValueError(
            f"exchange two's totals: {totals.size} non-negative values expected {num_buckets}"
        )
    return totals.astype(np.int64)


# -- the server's side ----------------------------------------------------------------------
def check_width(mechanism, num_examples: int) -> None:
    """One line where round two's sums (modular width from the public ``W``) exceed
    `EXACT_BITS` (float64-exact sums of SecAgg+'s 64-bit limbs)."""
    from dpauc_tf.mechanisms.secure_rank_sum import modular_width

    width = modular_width(int(num_examples), mechanism.rank_epsilon)
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
):
    """Both exchanges on ``nodes`` and the finished [`AUCResult`][dpauc_tf.mechanisms.release.AUCResult]
    (``secure_sum`` is [`dpauc_tf.flower.strategy`][]'s SecAgg+ sum of one exchange).

    Raises:
      ValueError: no sum in exchange one, fewer than 2 nodes left for exchange two, a node
        of exchange one missing from exchange two (its sum is not unmasked), or a width
        beyond `EXACT_BITS` (one line each).
    """
    from dpauc_tf.flower.records import release_config
    from dpauc_tf.flower.secagg import SecAggSettings
    from dpauc_tf.mechanisms.release import finish_release

    mechanism = spec.build(len(nodes))
    num_buckets = mechanism.count_thresholds(spec.thresholds).num_buckets
    # exchange one: the totals of every node asked (label-free: no shares, no epsilon)
    layout = LimbLayout.for_clients(len(nodes))
    config = release_config(spec, num_clients=len(nodes), repeats=repeats, layout=layout)
    config[EXCHANGE_KEY] = RankSumExchange.TOTALS.value
    summed, graphs = secure_sum(
        grid, config, arrays, nodes, server_round, secagg, timeout,
        shapes={"totals": (num_buckets,)}, layout=layout,
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
    num_examples = int(totals.sum())
    mechanism = spec.build(len(ranked))  # the shares sized for the nodes that were ranked
    check_width(mechanism, num_examples)
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

    from dpauc_tf.mechanisms.secure_rank_sum import REPORT_KEYS

    summed, _ = secure_sum(
        grid, config, arrays, ranked, server_round, settings, timeout,
        shapes={key: (int(repeats),) for key in sorted(REPORT_KEYS)}, layout=layout,
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
    finished = mechanism.finish(release, totals, num_reporting=len(ranked))
    details.unmasked_groups = (len(ranked),)
    return finish_release(
        spec,
        {key: np.asarray(value) for key, value in finished.items()},
        num_examples=float(num_examples),
        num_clients=len(nodes),
        num_reporting=len(ranked),
        shares=len(ranked),
        shares_arrived=len(ranked),
        mechanism=mechanism,
    )
