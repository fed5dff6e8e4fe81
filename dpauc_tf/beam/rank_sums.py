"""The rank-sum releases over clients in Beam: ``secure-rank-sum`` in two passes, and
``rank-sum`` with every client's own noise.

[`PrivateAUC`][dpauc_tf.beam.release.PrivateAUC] with ``per_client=True`` (or a
``client_column``) and a mechanism that releases from the summed counts
(``releases_from_summed_counts``) comes here with every ``(slice, client)``'s counts on the
mechanism's grid. The law is the mechanism's; this module only moves its numbers through
Beam:

* ``secure-rank-sum`` ([`dpauc_tf.mechanisms.secure_rank_sum`][]): **pass one** sums every
  client's [`round_one_report`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.round_one_report]
  (its label-free bucket totals) per slice; **pass two** gives every client the global totals
  of its slice (a side input) and sums its
  [`round_two_report`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.round_two_report]
  (``2 S_k`` and ``P_k`` with its share of the noise, ``n_k``) modulo ``2^w`` in the limbs of
  the mechanism's [`report_layout`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.report_layout],
  as a secure sum would; the server's step is
  [`finish`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.finish]. A Beam runner sums in
  the clear: this is the arithmetic of secure aggregation, not its cryptography (whoever
  runs the pipeline sees every report).
* ``rank-sum`` with clients (no secure aggregation): the server's sum of ``K`` local reports,
  each with the global ranks and its own noise, drawn from the slice's summed counts by the
  mechanism's ``release_over_clients``
  ([`local_rank_sum_release`][dpauc_tf.mechanisms.rank_sum.local_rank_sum_release]: the same
  law, ``K`` Laplace draws on the rank sum and on the count).

Both finish through [`finish_release`][dpauc_tf.mechanisms.release.finish_release]; seeds come
from the spec (``spec.seed_for(slice, client)`` for a client's shares,
``spec.seed_for(slice)`` for a slice's local release).
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np

from dpauc_tf.beam.counting import BucketCounts
from dpauc_tf.beam.reports import SumReports, count_release
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec, finish_release
from dpauc_tf.mechanisms.secure_rank_sum import REPORT_KEYS, modular_width

# The widest round-two sum Beam takes (int64 arithmetic, as TFF's widest secure sum): a
# slice whose public number of examples needs more is refused in one line.
MAX_WIDTH = 62


def release_rank_sums(
    counts, clients_per_slice, *, spec: ReleaseSpec, repeats: int, most, interval: dict
):
    """``((slice, client), BucketCounts)`` -> one [`AUCResult`][] per slice."""
    if spec.capabilities.secure:
        return _secure_rank_sums(counts, clients_per_slice, spec, repeats, most, interval)
    summed = (
        counts
        | "CountsOfSlice" >> beam.Map(lambda kv: (kv[0][0], kv[1]))
        | "SumCounts" >> beam.CombinePerKey(_SumCounts(spec.count_grid().num_thresholds))
    )
    return summed | "LocalRankSums" >> beam.Map(
        local_release, spec=spec, repeats=repeats, most=most, interval=interval
    )


def _secure_rank_sums(counts, clients_per_slice, spec, repeats, most, interval):
    totals = beam.pvalue.AsDict(
        counts
        | "RoundOne" >> beam.Map(round_one, spec=spec)
        | "SumTotals" >> beam.CombinePerKey(sum)
    )
    return (
        counts
        | "RoundTwo"
        >> beam.Map(round_two, spec=spec, repeats=repeats, totals=totals, clients=clients_per_slice)
        | "SumRoundTwo" >> beam.CombinePerKey(SumReports())
        | "Finish"
        >> beam.Map(finish_secure, spec=spec, totals=totals, most=most, interval=interval)
    )


class _SumCounts(beam.CombineFn):
    """Sums per-client [`BucketCounts`][] of a slice (the rows too), and counts the clients."""

    def __init__(self, num_thresholds: int):
        self.num_thresholds = num_thresholds

    def create_accumulator(self):
        return (BucketCounts.zeros(self.num_thresholds), 0)

    def add_input(self, accumulator, counts: BucketCounts):
        return self.merge_accumulators([accumulator, (counts, 1)])

    def merge_accumulators(self, accumulators):
        total, clients = self.create_accumulator()
        for counts, count in accumulators:
            total.pos, total.neg = total.pos + counts.pos, total.neg + counts.neg
            total.rows += counts.rows
            clients += count
        return (total, clients)

    def extract_output(self, accumulator):
        return accumulator


def local_release(item, spec: ReleaseSpec, repeats: int, most, interval) -> AUCResult:
    """A slice's sum of its clients' local rank-sum reports (``release_over_clients``)."""
    key, (counts, num_clients) = item
    mechanism = spec.build()  # each client's own law: shares are not split
    release = mechanism.release_over_clients(
        counts.pos, counts.neg, num_clients, spec.seed_for(key), repeats
    )
    count_release()
    return _finish_slice(
        spec, mechanism, key, release, counts.num_examples, num_clients, most, interval
    )


def _finish_slice(spec, mechanism, key, release, num_examples, num_clients, most, interval):
    """A slice's rank-sum release from all its clients, through `finish_release`: every
    noise share the mechanism was sized for arrived (`finish_release`'s default: the
    mechanism's `noise_shares` rule)."""
    return finish_release(
        spec,
        {name: np.asarray(value) for name, value in release.items()},
        num_examples=num_examples,
        num_clients=num_clients,
        num_reporting=num_clients,
        slice_key=key,
        slices_per_example=most,
        mechanism=mechanism,
        **interval,
    )


# -- secure-rank-sum: the two passes ----------------------------------------------------------
def round_one(item, spec: ReleaseSpec):
    """A client's pass-one report: ``(slice, its bucket totals)`` (int64, label-free)."""
    (key, _), counts = item
    return key, np.asarray(spec.build().round_one_report(counts.pos, counts.neg), np.int64)


def report_layout(mechanism, totals: np.ndarray, num_clients: int):
    """The limbs round two's values travel in, from the public number of examples ``W``;
    a ``W`` whose sums need more than `MAX_WIDTH` bits is refused in one line."""
    num_examples = int(np.sum(totals))
    width = modular_width(num_examples, mechanism.rank_epsilon)
    if width > MAX_WIDTH:
        raise ValueError(
            f"secure-rank-sum: {num_examples} examples in one slice need a {width}-bit sum in "
            f"round two, beyond the {MAX_WIDTH} bits dpauc_tf.beam sums; split the slice"
        )
    return mechanism.report_layout(num_examples, num_clients)


def round_two(item, spec: ReleaseSpec, repeats: int, totals: dict, clients: dict):
    """A client's pass-two report with its slice's global totals: ``2 S_k``, ``P_k`` (each
    with its noise share) and ``n_k`` for every repeat (one call: the ranks once, a share
    per repeat), as limbs modulo ``2^w``."""
    (key, client), counts = item
    num_clients = int(clients[key])
    mechanism = spec.build(num_clients)
    layout = report_layout(mechanism, totals[key], num_clients)
    report = mechanism.round_two_report(
        counts.pos, counts.neg, totals[key], spec.seed_for(key, client), repeats=repeats
    )
    count_release()
    limbs = {name: layout.encode(np.asarray(report[name], np.int64)) for name in REPORT_KEYS}
    return key, (limbs, counts.num_examples)


def finish_secure(item, spec: ReleaseSpec, totals: dict, most, interval) -> AUCResult:
    """The server's step of a slice: decode round two's sums, ``finish`` (which refuses a
    round two of another population than round one ranked), then ``finish_release``."""
    key, (limbs, num_examples, num_clients) = item
    mechanism = spec.build(num_clients)
    layout = report_layout(mechanism, totals[key], num_clients)
    summed = {name: layout.decode(value) for name, value in limbs.items()}
    release = mechanism.finish(summed, totals[key], num_reporting=num_clients)
    return _finish_slice(spec, mechanism, key, release, num_examples, num_clients, most, interval)
