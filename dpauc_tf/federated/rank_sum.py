"""``secure-rank-sum`` in TFF: two federated computations, each a secure sum (issue 32).

The builders take the clients' counting and the mechanism's reports, so the binary release
([`evaluate_rank_sum`][]) and the one-vs-rest rank sums
(``dpauc_tf.federated.multiclass.evaluate_rank_sums``: ``[C, B]`` totals,
per-class reports; sums in the clear for ``rank-sum``'s local noise) share them.

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

from dpauc_tf.federated.computations import ARRAYS_TYPE, SEED_TYPE, client_counts
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec, finish_release
from dpauc_tf.mechanisms.secure_rank_sum import (
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


def _summed(values, bitwidth: int | None):
    """A federated sum: secure modulo ``2^bitwidth`` (``None``: in the clear)."""
    if bitwidth is None:
        return tff.federated_sum(values)
    return tff.federated_secure_sum_bitwidth(values, bitwidth)


def build_round_one(
    mechanism,
    data_type: tff.Type,
    counts: Callable,
    bitwidth: int | None,
) -> tff.Computation:
    """``client data@CLIENTS -> <totals, num_reporting>@SERVER``: every client's
    ``mechanism.round_one_report`` of its ``counts(client_data) -> (pos, neg)`` (label-free),
    summed securely modulo ``2^bitwidth`` (decode with `decode_sum`), or in the clear where
    ``bitwidth`` is ``None`` (a release without secure aggregation)."""

    @tff.tensorflow.computation(data_type)
    def client_totals(client_data):
        totals = mechanism.round_one_report(*counts(client_data))
        return totals if bitwidth is None else _residues(totals, bitwidth)

    @tff.tensorflow.computation(data_type)
    def one(client_data):
        del client_data
        return tf.constant(1, tf.int32)

    @tff.federated_computation(tff.FederatedType(data_type, tff.CLIENTS))
    def round_one(client_data):
        totals = _summed(tff.federated_map(client_totals, client_data), bitwidth)
        reporting = tff.federated_sum(tff.federated_map(one, client_data))
        return tff.federated_zip(collections.OrderedDict(totals=totals, num_reporting=reporting))

    return round_one


def build_round_two(
    report: Callable,
    data_type: tff.Type,
    counts: Callable,
    totals_type: tff.Type,
    bitwidth: int | None,
) -> tff.Computation:
    """``(client data@CLIENTS, seeds@CLIENTS, totals@SERVER) -> <reports,
    num_reporting>@SERVER``: the server broadcasts round one's totals and every client sends
    ``report(pos, neg, totals, seed)`` (the mechanism's round-two report, a dict of tensors),
    summed securely modulo ``2^bitwidth`` (integer reports) or in the clear (``None``)."""

    @tff.tensorflow.computation(data_type, SEED_TYPE, totals_type)
    def client_report(client_data, seed, totals):
        pos, neg = counts(client_data)
        values = report(pos, neg, totals, seed)
        if bitwidth is not None:
            values = {k: _residues(v, bitwidth) for k, v in values.items()}
        return collections.OrderedDict(sorted(values.items()))

    @tff.tensorflow.computation(SEED_TYPE)
    def one(seed):
        del seed
        return tf.constant(1, tf.int32)

    @tff.federated_computation(
        tff.FederatedType(data_type, tff.CLIENTS),
        tff.FederatedType(SEED_TYPE, tff.CLIENTS),
        tff.FederatedType(totals_type, tff.SERVER),
    )
    def round_two(client_data, seeds, totals):
        broadcast = tff.federated_broadcast(totals)
        reports = tff.federated_map(client_report, (client_data, seeds, broadcast))
        reporting = tff.federated_sum(tff.federated_map(one, seeds))
        return tff.federated_zip(
            collections.OrderedDict(reports=_summed(reports, bitwidth), num_reporting=reporting)
        )

    return round_two


def decode_sum(total, bitwidth: int | None):
    """A sum of cohorts' sums: signed int64 from residues modulo ``2^bitwidth`` (``None``:
    as it is)."""
    return np.asarray(total) if bitwidth is None else _signed(total, bitwidth)


def run_round_one(
    round_one: tff.Computation, arrays: Sequence, cohort_size: int, bitwidth: int | None
) -> np.ndarray:
    """Round one over every client, ``cohort_size`` at a time: the decoded totals (int64)."""
    totals = 0
    for start in range(0, len(arrays), cohort_size):
        out = round_one(list(arrays[start : start + cohort_size]))
        totals = totals + np.asarray(out["totals"], np.int64)
    return decode_sum(totals, bitwidth)


def run_round_two(
    round_two: tff.Computation,
    arrays: Sequence,
    seeds: Sequence,
    totals: np.ndarray,
    cohort_size: int,
    bitwidth: int | None,
) -> tuple[dict[str, np.ndarray], int]:
    """Round two over every client, ``cohort_size`` at a time: the decoded sums of the
    reports and the number of clients that reported."""
    summed: dict[str, np.ndarray] | None = None
    num_reporting = 0
    for start in range(0, len(arrays), cohort_size):
        stop = start + cohort_size
        out = round_two(list(arrays[start:stop]), list(seeds[start:stop]), totals)
        reports = {k: np.asarray(v) for k, v in out["reports"].items()}
        summed = reports if summed is None else {k: summed[k] + reports[k] for k in summed}
        num_reporting += int(out["num_reporting"])
    if summed is None:
        raise ValueError("need at least one client in round two")
    return {k: decode_sum(v, bitwidth) for k, v in summed.items()}, num_reporting


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
    confidence: float | None = None,
    ci_target: str = "population",
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

    def counts(client_data):
        return client_counts(client_data, grid, integer_weights=True)

    round_one = build_round_one(mechanism, ARRAYS_TYPE, counts, secure_bitwidth)
    totals_type = tff.TensorType(np.int64, [grid.num_buckets])
    round_twos: dict[int, tff.Computation] = {}  # by round two's modular width
    parts, num_clients, num_examples = [], 0, 0.0
    for repeat in range(repeats):
        clients = client_data() if callable(client_data) else client_data
        every = [as_arrays(item, batch_size, index) for index, item in enumerate(clients)]
        if not every:
            raise ValueError("need at least one client (client_data yielded none)")
        num_clients = len(every)
        arrays = [a for i, a in enumerate(every) if reporting is None or i in reporting]
        totals = run_round_one(round_one, arrays, cohort_size, secure_bitwidth)
        num_examples = float(totals.sum())
        width = modular_width(int(num_examples), mechanism.rank_epsilon)
        if width > TFF_MAX_BITWIDTH:
            raise ValueError(
                f"secure-rank-sum: {int(num_examples)} examples need a {width}-bit secure sum in "
                f"round two, beyond TFF's {TFF_MAX_BITWIDTH}"
            )
        if width not in round_twos:  # built once per width: a build costs ~4% of a release
            round_twos[width] = build_round_two(
                mechanism.round_two_report, ARRAYS_TYPE, counts, totals_type, width
            )
        round_two = round_twos[width]
        chosen = [i for i in range(len(arrays)) if i not in lost]
        seeds = [spec.seed_for(SEED_KEY, repeat, i).numpy() for i in chosen]
        summed, num_reporting = run_round_two(
            round_two, [arrays[i] for i in chosen], seeds, totals, cohort_size, width
        )
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
        confidence=confidence,
        ci_target=ci_target,
    )
