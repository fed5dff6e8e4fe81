"""The rank-sum releases over a DataFrame's clients: both rounds on Spark's executors.

[`private_auc_by_slice`][dpauc_tf.spark.evaluation.private_auc_by_slice] with a client column
and a mechanism that releases from the summed counts (``releases_from_summed_counts``: the
rank sums) comes here with the counting job's rows ``(slice, client, bucket, pos, neg)`` (a
DataFrame, never collected) and, per slice, its number of rows and of clients. The law is the
mechanism's; this module only moves its numbers through Spark, as
[`dpauc_tf.beam.rank_sums`][] does through Beam:

* ``secure-rank-sum`` ([`dpauc_tf.mechanisms.secure_rank_sum`][]): the counted rows are
  repartitioned by ``(slice, client)``, so that every client's counts meet in one task.
  **Round one** (a ``mapInArrow`` job): every client's
  [`round_one_report`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.round_one_report]
  (its label-free bucket totals), summed per ``(slice, bucket)`` by Spark's reduce; the driver
  collects the global totals (one array of the grid's size per slice, the aggregate score
  histogram) and sends them back to every task (in the task's closure, which PySpark
  broadcasts once it is large). **Round two** (a second ``mapInArrow`` job over the same
  clients): every client's
  [`round_two_report`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.round_two_report]
  with its slice's totals (``2 S_k`` and ``P_k``, each with its share of the noise, and
  ``n_k``; seed ``spec.seed_for(slice, client, first repeat of the chunk)``), cut into the limbs
  of the mechanism's
  [`report_layout`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.report_layout] (digits
  modulo ``2^w`` whose sums cannot wrap: the arithmetic of a secure sum, not its
  cryptography) and summed per ``(slice, repeat, limb)`` by Spark's reduce. The driver decodes
  the sums and calls
  [`finish`][dpauc_tf.mechanisms.secure_rank_sum.SecureRankSum.finish]. A slice whose public
  number of examples needs a sum wider than 62 bits is refused in one line after round one,
  before any noise is drawn.
* ``rank-sum`` with clients (local noise, no secure aggregation): the slice's counts summed
  over its clients on the executors, then the mechanism's ``release_over_clients`` on the
  driver (every client's own noise with the global ranks, ``K`` draws;
  [`local_rank_sum_release`][dpauc_tf.mechanisms.rank_sum.local_rank_sum_release]), seed
  ``spec.seed_for(slice, "clients")``.

What reaches the driver is at most one row per bucket of the grid per slice (round one's
totals; the local path's summed counts) and one row per repeat and limb per slice (round
two's sums): never a client's counts (``tests/spark/test_spark_rank_sums.py`` records every
collect). Spark has no secure aggregation: whoever runs the job can read every client's
report on the executors (the trust is the data holder's; the law of the release is the
protocol's).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec, finish_release
from dpauc_tf.spark.counting import PROBLEMS, ROWS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

# The counts of one client tiled over at most this many cells per round-two call (repeats
# are drawn in chunks: a rank-sum grid has 2^17 + 2 buckets).
MAX_TILED_CELLS = 1 << 22
# Round two's names, in the order of the executors' rows.
_REPORT_KEYS = ("twice_rank_sum", "num_pos", "num_examples")


# Round one's row of a partition's number of clients (ROWS and PROBLEMS keep their codes).
CLIENTS = -100


def release_rank_sums(
    spec: ReleaseSpec,
    counted: DataFrame,
    refuse: Callable[[dict[str, int]], None],
    *,
    repeats: int,
    max_slices_per_example: int | None = None,
    confidence: float | None = None,
    ci_target: str = "population",
) -> dict[Any, AUCResult]:
    """``{slice: AUCResult}`` (sorted by slice key) from the counting job's rows ``counted``
    (``slice, client, bucket, pos, neg``; negative buckets: `ROWS` and `PROBLEMS`).
    ``refuse({kind: rows})`` raises the one-line error of bad rows, before any noise is
    drawn."""
    num_buckets = spec.count_grid().num_thresholds + 1
    if spec.capabilities.secure:
        slices, releases = _two_rounds(spec, counted, refuse, num_buckets, repeats)
    else:
        slices, releases = _local_rank_sums(spec, counted, refuse, num_buckets, repeats)
    most = max_slices_per_example or len(slices)  # the worst case: every slice
    results = {}
    for key in sorted(slices, key=repr):
        rows, num_clients = slices[key]
        release, mechanism = releases[key]
        results[key] = finish_release(
            spec,
            release,
            num_examples=rows,
            num_clients=num_clients,
            mechanism=mechanism,
            slice_key=key,
            slices_per_example=most,
            confidence=confidence,
            ci_target=ci_target,
        )
    return results


def _collect(frame: DataFrame):
    """One Arrow table to the driver (PySpark 4), not a Row object per cell."""
    return frame.toArrow()


def _keys(table) -> tuple[dict, np.ndarray, np.ndarray]:
    """A collected ``(slice, bucket, ...)`` table's slices (``{slice: index}``), every row's
    slice index and bucket."""
    keys: dict = {}
    group = np.fromiter(
        (keys.setdefault(key, len(keys)) for key in table.column("slice").to_pylist()),
        np.int64,
        table.num_rows,
    )
    return keys, group, np.asarray(table.column("bucket").to_numpy(), np.int64)


def _dense(table, value: str, num_buckets: int) -> dict[Any, np.ndarray]:
    """``{slice: [B]}`` of a collected table's column ``value`` in the buckets ``>= 0``."""
    keys, group, bucket = _keys(table)
    values = np.asarray(table.column(value).to_numpy())
    cell = bucket >= 0
    dense = np.zeros((len(keys), num_buckets), values.dtype)
    dense[group[cell], bucket[cell]] = values[cell]
    return {key: dense[i] for key, i in keys.items()}


def _slices(table, value: str, refuse) -> dict[Any, tuple[float, int]]:
    """``{slice: (rows, clients)}`` from a collected table whose column ``value`` holds, in
    the negative buckets, the rows (`ROWS`), the problems (`PROBLEMS`, shown to ``refuse``
    first) and, from round one, the clients (`CLIENTS`; else a ``clients`` column on the
    `ROWS` rows); no slice: the one-line error of an empty DataFrame."""
    keys, group, bucket = _keys(table)
    values = np.asarray(table.column(value).to_numpy())
    refuse({kind: int(values[bucket == code].sum()) for code, kind in PROBLEMS.items()})
    rows = np.bincount(group[bucket == ROWS], values[bucket == ROWS], len(keys))
    if "clients" in table.column_names:  # counted per slice by Spark
        where = bucket == ROWS
        clients = np.bincount(group[where], table.column("clients").to_numpy()[where], len(keys))
    else:  # round one's CLIENTS rows
        clients = np.bincount(group[bucket == CLIENTS], values[bucket == CLIENTS], len(keys))
    slices = {key: (float(rows[i]), int(clients[i])) for key, i in keys.items() if rows[i]}
    if not slices:
        raise ValueError("dpauc_tf.spark: the DataFrame has no rows: nothing to release")
    return slices


# -- rank-sum with local noise: the slice's counts summed on the executors --------------------
def _local_rank_sums(spec, counted, refuse, num_buckets, repeats) -> tuple[dict, dict]:
    from pyspark.sql import functions as F

    summed = _collect(
        counted.groupBy("slice", "bucket").agg(
            F.sum("pos").alias("pos"),
            F.sum("neg").alias("neg"),
            F.countDistinct("client").alias("clients"),
        )
    )
    slices = _slices(summed, "pos", refuse)  # the rows and problems are counted in pos
    pos, neg = _dense(summed, "pos", num_buckets), _dense(summed, "neg", num_buckets)
    mechanism = spec.build()  # each client's own law: the shares are not split
    releases = {}
    for key, (_, num_clients) in slices.items():
        release = mechanism.release_over_clients(
            pos[key], neg[key], num_clients, spec.seed_for(key, "clients"), repeats
        )
        releases[key] = ({name: np.asarray(v) for name, v in release.items()}, mechanism)
    return slices, releases


# -- secure-rank-sum: the two rounds on the executors ----------------------------------------
def _two_rounds(spec, counted, refuse, num_buckets, repeats) -> tuple[dict, dict]:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    slice_type = counted.schema["slice"].dataType
    by_client = counted.repartition(_partitions(counted), "slice", "client").cache()
    try:
        round_one = functools.partial(round_one_partition, spec=spec, num_buckets=num_buckets)
        schema = T.StructType(
            [
                T.StructField("slice", slice_type),
                T.StructField("bucket", T.IntegerType()),
                T.StructField("total", T.LongType()),
            ]
        )
        totals_table = _collect(
            by_client.mapInArrow(round_one, schema)
            .groupBy("slice", "bucket")
            .agg(F.sum("total").alias("total"))
        )
        slices = _slices(totals_table, "total", refuse)
        totals = _dense(totals_table, "total", num_buckets)
        plans = {}  # slice -> (num_clients, totals, layout): what every client is sent
        for key, (_, num_clients) in slices.items():
            plans[key] = (
                num_clients,
                totals[key],
                _layout(spec.build(num_clients), key, totals[key]),
            )
        round_two = functools.partial(
            round_two_partition,
            spec=spec,
            num_buckets=num_buckets,
            plans=plans,
            repeats=repeats,
        )
        schema = T.StructType(
            [
                T.StructField("slice", slice_type),
                T.StructField("repeat", T.IntegerType()),
                T.StructField("limb", T.IntegerType()),
                *(T.StructField(name, T.LongType()) for name in _REPORT_KEYS),
            ]
        )
        sums = _collect(
            by_client.mapInArrow(round_two, schema)
            .groupBy("slice", "repeat", "limb")
            .agg(*(F.sum(name).alias(name) for name in _REPORT_KEYS))
        )
    finally:
        by_client.unpersist()
    releases = {key: _finish(spec, key, sums, plans[key], repeats) for key in plans}
    return slices, releases


def _partitions(frame) -> int:
    """The rounds' tasks: one per core (every task is a Python worker's pass; more tasks
    only cost)."""
    try:
        return max(1, int(frame.sparkSession.sparkContext.defaultParallelism))
    except Exception:  # Spark Connect has no SparkContext
        return 2


def _layout(mechanism, key, totals):
    """The limbs of a slice's round two, from its public number of examples; a slice whose
    sums need more than 62 bits is refused (one line, before round two draws any noise)."""
    num_examples = int(np.sum(totals))
    try:
        return mechanism.report_layout(num_examples)
    except ValueError as error:
        raise ValueError(
            f"dpauc_tf.spark: slice {key!r} ({num_examples} examples): {error}"
        ) from None


def _finish(spec, key, sums, plan, repeats) -> tuple[dict, Any]:
    """A slice's decoded round-two sums through the mechanism's ``finish`` (which refuses a
    round two of another population than round one ranked)."""
    num_clients, totals, layout = plan
    mine = np.asarray([value == key for value in sums.column("slice").to_pylist()], bool)
    repeat = np.asarray(sums.column("repeat").to_numpy(), np.int64)[mine]
    limb = np.asarray(sums.column("limb").to_numpy(), np.int64)[mine]
    summed = {}
    for name in _REPORT_KEYS:
        digits = np.zeros((layout.num_limbs, repeats), np.int64)
        digits[limb, repeat] = np.asarray(sums.column(name).to_numpy(), np.int64)[mine]
        summed[name] = layout.decode(digits)
    mechanism = spec.build(num_clients)
    release = mechanism.finish(summed, totals, num_reporting=num_clients)
    return {name: np.atleast_1d(value.numpy()) for name, value in release.items()}, mechanism


# -- what the executors run ----------------------------------------------------------------
def partition_clients(
    batches: list, num_buckets: int
) -> Iterator[tuple[Any, Any, np.ndarray, np.ndarray]]:
    """``(slice, client, pos [B], neg [B])`` of every client of a partition's record batches
    of counted rows (``slice, client, bucket, pos, neg``; a client's rows may come from
    several counting tasks: they are summed; negative buckets are skipped), one client at a
    time. No rows: nothing."""
    import pyarrow as pa
    import pyarrow.compute as pc

    batches = [batch for batch in batches if batch.num_rows]
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    table = table.filter(pc.greater_equal(table.column("bucket"), 0))
    keys: dict = {}
    group = np.fromiter(
        (
            keys.setdefault(key, len(keys))
            for key in zip(
                table.column("slice").to_pylist(), table.column("client").to_pylist(), strict=True
            )
        ),
        np.int64,
        table.num_rows,
    )
    bucket = np.asarray(table.column("bucket").to_numpy(), np.int64)
    pos = np.asarray(table.column("pos").to_numpy(), np.float64)
    neg = np.asarray(table.column("neg").to_numpy(), np.float64)
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(keys) + 1))
    for (slice_key, client), index in keys.items():
        rows = order[bounds[index] : bounds[index + 1]]
        yield (
            slice_key,
            client,
            np.bincount(bucket[rows], pos[rows], minlength=num_buckets),
            np.bincount(bucket[rows], neg[rows], minlength=num_buckets),
        )


def _quiet_tensorflow() -> None:
    from dpauc_tf.tf_startup import import_tensorflow_quietly

    import_tensorflow_quietly()  # the mechanism's reports are TensorFlow's arithmetic


def _slice_type(batches: list):
    """The Arrow type of the partition's slice column (the output's must be the same)."""
    return batches[0].schema.field("slice").type


def round_one_partition(batches: Iterator, *, spec: ReleaseSpec, num_buckets: int) -> Iterator:
    """``mapInArrow``'s round one: every client's ``round_one_report`` as rows ``(slice,
    bucket, total)`` of its occupied buckets; with them, per slice, the partition's number
    of clients (bucket `CLIENTS`) and its counted rows and problems (`ROWS`, `PROBLEMS`)."""
    import pyarrow as pa

    batches = [batch for batch in batches if batch.num_rows]
    if not batches:  # an empty partition
        return
    _quiet_tensorflow()
    mechanism = spec.build()
    slices, buckets, totals = [], [], []
    clients: dict = {}
    for slice_key, _, pos, neg in partition_clients(batches, num_buckets):
        report = np.asarray(mechanism.round_one_report(pos, neg), np.int64)
        occupied = np.flatnonzero(report)
        slices += [slice_key] * occupied.size
        buckets.append(occupied)
        totals.append(report[occupied])
        clients[slice_key] = clients.get(slice_key, 0) + 1
    counts: dict = {}  # (slice, code) -> rows: ROWS and PROBLEMS, summed over the partition
    for batch in batches:
        bucket = np.asarray(batch.column("bucket").to_numpy(), np.int64)
        rows = np.asarray(batch.column("pos").to_numpy(), np.float64)
        keys = batch.column("slice").to_pylist()
        for i in np.flatnonzero(bucket < 0).tolist():
            counts[keys[i], int(bucket[i])] = counts.get((keys[i], int(bucket[i])), 0) + rows[i]
    counts.update({(key, CLIENTS): number for key, number in clients.items()})
    slices += [key for key, _ in counts]
    buckets.append(np.asarray([code for _, code in counts], np.int64))
    totals.append(np.asarray(list(counts.values()), np.int64))
    yield pa.RecordBatch.from_pydict(
        {
            "slice": pa.array(slices, _slice_type(batches)),
            "bucket": pa.array(np.concatenate(buckets), pa.int32()),
            "total": pa.array(np.concatenate(totals), pa.int64()),
        }
    )


def round_two_partition(
    batches: Iterator, *, spec: ReleaseSpec, num_buckets: int, plans: dict, repeats: int
) -> Iterator:
    """``mapInArrow``'s round two: every client's ``round_two_report`` with its slice's
    global totals (``plans[slice]``: the number of clients, the totals, the layout), for
    every repeat, as rows ``(slice, repeat, limb, twice_rank_sum, num_pos, num_examples)``
    of limbs."""
    import pyarrow as pa

    batches = [batch for batch in batches if batch.num_rows]
    if not batches:  # an empty partition
        return
    _quiet_tensorflow()
    slice_type = _slice_type(batches)
    chunk = max(1, MAX_TILED_CELLS // num_buckets)
    for slice_key, client, pos, neg in partition_clients(batches, num_buckets):
        num_clients, totals, layout = plans[slice_key]
        mechanism = spec.build(num_clients)
        columns: dict[str, list] = {name: [] for name in _REPORT_KEYS}
        for start in range(0, repeats, chunk):
            size = min(chunk, repeats - start)
            report = mechanism.round_two_report(
                np.tile(pos, (size, 1)),
                np.tile(neg, (size, 1)),
                totals,
                spec.seed_for(slice_key, client, start),
            )
            for name in _REPORT_KEYS:
                columns[name].append(np.asarray(report[name], np.int64).reshape(size))
        limbs = {name: layout.encode(np.concatenate(columns[name])) for name in _REPORT_KEYS}
        grid = np.indices((layout.num_limbs, repeats)).reshape(2, -1)
        yield pa.RecordBatch.from_pydict(
            {
                "slice": pa.array([slice_key] * grid.shape[1], slice_type),
                "repeat": pa.array(grid[1], pa.int32()),
                "limb": pa.array(grid[0], pa.int32()),
                **{name: pa.array(limbs[name].reshape(-1), pa.int64()) for name in _REPORT_KEYS},
            }
        )
