"""``secure-rank-sum`` in TFF: two federated computations, each a secure sum (issue 32).

Round one ([`build_round_one`][]): every client counts its examples on the mechanism's grid
and sends its bucket totals (label-free, no noise) modulo ``2^secure_bitwidth``;
``tff.federated_secure_sum_bitwidth`` gives the server the aggregate score histogram.
Round two ([`build_round_two`][]): the server broadcasts the totals, every client sends
[`SecureRankSum.round_two_report`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.round_two_report]
modulo ``2^w`` (``w = modular_width(W, eps_S)``, at most 62 bits: TFF's widest secure sum),
and the server decodes the secure sum and calls
[`SecureRankSum.finish`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.finish], which
refuses a round two whose examples are not those ranked in round one (a client lost between
the rounds), and a round two with half its noise shares or fewer; fewer shares than sized
for but more than half are released with the epsilon they achieve
([`SecureRankSum.achieved_epsilon`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.achieved_epsilon]). The law is the module's; this file only moves its numbers through TFF. As for
every secure mechanism here, TFF's test context runs the secure sum as an ordinary sum.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.federated.computations import ARRAYS_TYPE, SEED_TYPE, client_counts
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec, finish_release
from dpauc_tf.mechanisms.secure_rank_sum import (
    REPORT_KEYS,
    TFF_MAX_BITWIDTH,
    SecureRankSum,
    modular_width,
)

SEED_KEY = "tff-rank-sum"  # client k's seed of repeat r: spec.seed_for(SEED_KEY, r, k)


def _residues(values: tf.Tensor, bitwidth: int) -> tf.Tensor:
    return tf.math.floormod(tf.cast(values, tf.int64), tf.constant(2**bitwidth, tf.int64))


def _signed(total: np.ndarray, bitwidth: int) -> np.ndarray:
    modulus = 2**bitwidth
    value = np.mod(np.asarray(total, np.int64), modulus)
    return np.where(value >= modulus // 2, value - modulus, value)


def build_round_one(
    mechanism: SecureRankSum, thresholds: Thresholds, bitwidth: int
) -> tff.Computation:
    """``client data@CLIENTS -> <totals mod 2^bitwidth, num_reporting>@SERVER``."""

    @tff.tensorflow.computation(ARRAYS_TYPE)
    def client_totals(client_data):
        pos, neg = client_counts(client_data, thresholds, integer_weights=True)
        return _residues(mechanism.round_one_report(pos, neg), bitwidth)

    @tff.tensorflow.computation(ARRAYS_TYPE)
    def one(client_data):
        del client_data
        return tf.constant(1, tf.int32)

    @tff.federated_computation(tff.FederatedType(ARRAYS_TYPE, tff.CLIENTS))
    def round_one(client_data):
        totals = tff.federated_map(client_totals, client_data)
        summed = tff.federated_secure_sum_bitwidth(totals, bitwidth)
        reporting = tff.federated_sum(tff.federated_map(one, client_data))
        return tff.federated_zip(collections.OrderedDict(totals=summed, num_reporting=reporting))

    return round_one


def build_round_two(
    mechanism: SecureRankSum, thresholds: Thresholds, bitwidth: int
) -> tff.Computation:
    """``(client data@CLIENTS, seeds@CLIENTS, totals@SERVER) -> <reports mod 2^bitwidth,
    num_reporting>@SERVER``."""
    totals_type = tff.TensorType(np.int64, [thresholds.num_buckets])

    @tff.tensorflow.computation(ARRAYS_TYPE, SEED_TYPE, totals_type)
    def client_report(client_data, seed, totals):
        pos, neg = client_counts(client_data, thresholds, integer_weights=True)
        report = mechanism.round_two_report(pos, neg, totals, seed)
        return collections.OrderedDict((k, _residues(report[k], bitwidth)) for k in REPORT_KEYS)

    @tff.tensorflow.computation(SEED_TYPE)
    def one(seed):
        del seed
        return tf.constant(1, tf.int32)

    @tff.federated_computation(
        tff.FederatedType(ARRAYS_TYPE, tff.CLIENTS),
        tff.FederatedType(SEED_TYPE, tff.CLIENTS),
        tff.FederatedType(totals_type, tff.SERVER),
    )
    def round_two(client_data, seeds, totals):
        broadcast = tff.federated_broadcast(totals)
        reports = tff.federated_map(client_report, (client_data, seeds, broadcast))
        summed = tff.federated_secure_sum_bitwidth(reports, bitwidth)
        reporting = tff.federated_sum(tff.federated_map(one, seeds))
        return tff.federated_zip(collections.OrderedDict(reports=summed, num_reporting=reporting))

    return round_two


def evaluate_rank_sum(
    spec: ReleaseSpec,
    mechanism: SecureRankSum,
    client_data: Sequence | Callable[[], Iterable],
    *,
    as_arrays: Callable,
    cohort_size: int,
    batch_size: int,
    secure_bitwidth: int,
    repeats: int = 1,
    reporting: set[int] | None = None,
    lost_between_rounds: Sequence[int] = (),
) -> AUCResult:
    """``repeats`` evaluations by the two-round protocol (each repeat runs both rounds).

    ``as_arrays(item, batch_size, index)`` turns a client item into its arrays (the caller's
    reader); ``reporting``: the clients (by index) that take part (``None``: all; the others
    report in neither round); ``lost_between_rounds``: clients (by index) that report in
    round one and not in round two, for tests of dropouts:
    [`SecureRankSum.finish`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.finish] then
    refuses.
    """
    lost = set(int(i) for i in lost_between_rounds)
    grid = mechanism.count_thresholds(spec.thresholds)  # the mechanism's own fine grid
    round_one = build_round_one(mechanism, grid, secure_bitwidth)
    parts, num_clients, num_examples = [], 0, 0.0
    for repeat in range(repeats):
        clients = client_data() if callable(client_data) else client_data
        every = [as_arrays(item, batch_size, index) for index, item in enumerate(clients)]
        if not every:
            raise ValueError("need at least one client (client_data yielded none)")
        num_clients = len(every)
        arrays = [a for i, a in enumerate(every) if reporting is None or i in reporting]
        totals = np.zeros(grid.num_buckets, np.int64)
        for start in range(0, len(arrays), cohort_size):
            out = round_one(arrays[start : start + cohort_size])
            totals = totals + np.asarray(out["totals"], np.int64)
        totals = _signed(totals, secure_bitwidth)
        num_examples = float(totals.sum())
        width = modular_width(int(num_examples), mechanism.rank_epsilon)
        if width > TFF_MAX_BITWIDTH:
            raise ValueError(
                f"secure-rank-sum: {int(num_examples)} examples need a {width}-bit secure sum in "
                f"round two, beyond TFF's {TFF_MAX_BITWIDTH}"
            )
        round_two = build_round_two(mechanism, grid, width)
        summed = {key: np.int64(0) for key in REPORT_KEYS}
        num_reporting = 0
        chosen = [i for i in range(len(arrays)) if i not in lost]
        for start in range(0, len(chosen), cohort_size):
            cohort = chosen[start : start + cohort_size]
            seeds = [spec.seed_for(SEED_KEY, repeat, i).numpy() for i in cohort]
            out = round_two([arrays[i] for i in cohort], seeds, totals)
            summed = {k: summed[k] + np.asarray(out["reports"][k], np.int64) for k in summed}
            num_reporting += int(out["num_reporting"])
        summed = {k: _signed(v, width) for k, v in summed.items()}
        release = mechanism.finish(summed, totals, num_reporting=num_reporting)
        parts.append({k: np.atleast_1d(v.numpy()) for k, v in release.items()})
    joined = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    return finish_release(  # stated with the epsilon the shares that arrived achieve
        spec,
        joined,
        num_examples=num_examples,
        num_clients=num_clients,
        num_reporting=len(arrays),
        shares_arrived=num_reporting,
        mechanism=mechanism,
    )
