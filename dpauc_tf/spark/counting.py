"""What runs on Spark's executors: Arrow batches of a partition -> per-bucket counts.

[`count_partition`][] is the function given to ``DataFrame.mapInArrow``: it reads one
partition's record batches (columns ``score, label, weight, slice, client``, the first three
as doubles) and yields a few rows ``(slice, client, bucket, pos, neg)``: the (weighted)
positives and negatives of every non-empty bucket of every ``(slice, client)`` group of the
partition. Spark then sums them per ``(slice, client, bucket)``; only those sums reach the
driver, never a row.

The counting is NumPy (no TensorFlow on the executors): the library's one NumPy bucketing,
[`BucketRule`][dpauc_tf.core.bucket_rule.BucketRule] (what
[`Thresholds.bucketize_numpy`][dpauc_tf.core.thresholds.Thresholds.bucketize_numpy] runs:
TensorFlow's bucket rule, bit for bit; ``tests/spark/test_counting.py`` checks the counts
equal [`dpauc_tf.core.counts.bucket_counts`][]'), and one ``np.bincount`` in float64 counts
a batch, so integer counts are exact up to 2^53.

Rows the counts must not silently absorb are counted instead, per kind, in rows with a
negative ``bucket`` (`PROBLEMS`): the driver refuses the release with a one-line
message naming the kind and the number of rows. ``bucket = -1`` (``ROWS``) holds the number
of rows of the group, so a group of zero-weight rows still exists.

Importing this module needs only NumPy and PyArrow (no PySpark, no TensorFlow).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dpauc_tf.core.bucket_rule import BucketRule

# bucket ids < 0 carry row counts: -1 the rows of a group, the others one problem each
ROWS = -1
PROBLEMS = {
    -2: "null_score",
    -3: "null_label",
    -4: "null_weight",
    -5: "null_key",
    -6: "label",
    -7: "score",
    -8: "weight",
    -9: "fractional_weight",
    -10: "unit_weight",
}
_CODE = {kind: code for code, kind in PROBLEMS.items()}


def _problems(score, label, weight, nulls, *, from_logits, integer_weights, unit_weights=False):
    """Per row: the code of its first problem (0: none); ``nulls``: the null masks of
    score, label, weight and the keys."""
    code = np.zeros(score.size, np.int64)
    names = ("null_score", "null_label", "null_weight", "null_key")
    checks = [
        *zip(nulls, names, strict=True),
        ((label != 0.0) & (label != 1.0), "label"),
        (np.isnan(score) if from_logits else ~((score >= 0.0) & (score <= 1.0)), "score"),
        (~((weight >= 0.0) & (weight <= 1.0)), "weight"),
    ]
    if unit_weights:
        checks.append((weight != 1.0, "unit_weight"))
    if integer_weights:
        checks.append((weight != np.round(weight), "fractional_weight"))
    for bad, kind in reversed(checks):  # the first violated rule wins
        code[bad] = _CODE[kind]
    return code


def _doubles(batch, name: str, default: float) -> tuple[np.ndarray, np.ndarray]:
    """A double column's values (nulls as NaN) and null mask; ``default`` where absent."""
    index = batch.schema.get_field_index(name)
    if index < 0:
        return np.full(batch.num_rows, default), np.zeros(batch.num_rows, bool)
    column = batch.column(index)
    null = np.asarray(column.is_null().to_numpy(zero_copy_only=False), bool)
    values = np.asarray(column.fill_null(np.nan).to_numpy(zero_copy_only=False), np.float64)
    return values, null


def _group_ids(batch, key_names) -> tuple[np.ndarray, list, np.ndarray]:
    """Per row: its group's index, the groups' ``(slice, client)`` keys, and a null-key mask."""
    import pyarrow.compute as pc

    size = batch.num_rows
    combined = np.zeros(size, np.int64)
    null = np.zeros(size, bool)
    dictionaries = []
    for name in ("slice", "client"):
        if name not in key_names:
            dictionaries.append([None])
            continue
        encoded = pc.dictionary_encode(batch.column(batch.schema.get_field_index(name)))
        null |= np.asarray(encoded.is_null().to_numpy(zero_copy_only=False), bool)
        indices = np.asarray(encoded.indices.fill_null(0).to_numpy(zero_copy_only=False))
        dictionary = encoded.dictionary.to_pylist() or [None]
        combined = combined * len(dictionary) + indices.astype(np.int64)
        dictionaries.append(dictionary)
    unique, groups = np.unique(combined, return_inverse=True)
    num_clients = len(dictionaries[1])
    keys = [
        (dictionaries[0][code // num_clients], dictionaries[1][code % num_clients])
        for code in unique.tolist()
    ]
    return groups.ravel(), keys, null


def count_partition(
    batches: Iterator,
    *,
    rule: BucketRule,
    key_names: tuple[str, ...] = (),
    from_logits: bool = False,
    integer_weights: bool = False,
    unit_weights: bool = False,
) -> Iterator:
    """``mapInArrow``'s function: record batches -> count batches (see the module docstring).

    ``key_names``: which of ``"slice"`` and ``"client"`` the batches hold (an absent key is
    ``None`` in the output). An empty partition yields nothing.
    """
    num_buckets = rule.num_buckets
    width = num_buckets + len(PROBLEMS) + 1  # buckets, then ROWS and PROBLEMS
    totals: dict = {}  # (slice, client) -> float64 [2, width]
    key_types: dict = {}
    for batch in batches:
        size = batch.num_rows
        for name in key_names:
            key_types[name] = batch.schema.field(name).type
        if size == 0:
            continue
        score, score_null = _doubles(batch, "score", np.nan)
        label, label_null = _doubles(batch, "label", np.nan)
        weight, weight_null = _doubles(batch, "weight", 1.0)
        groups, keys, key_null = _group_ids(batch, key_names)
        problem = _problems(
            score,
            label,
            weight,
            (score_null, label_null, weight_null, key_null),
            from_logits=from_logits,
            integer_weights=integer_weights,
            unit_weights=unit_weights,
        )
        good = problem == 0
        if from_logits:  # the one map of logits onto [0, 1] (no saturated end buckets)
            from dpauc_tf.core.logit_scale import logit_scores

            score = logit_scores(score)
        # every row's place in its group's [2, width] block: its bucket (negatives in the
        # second row), or for a row with a problem that problem's column of the first row
        column = num_buckets - 1 - problem  # PROBLEMS: -2 -> num_buckets + 1, ...
        column[good] = rule.ids(score[good]) + (1 - label[good].astype(np.int64)) * width
        segment = groups * (2 * width) + column
        length = len(keys) * 2 * width
        counted = np.bincount(segment, weights=np.where(good, weight, 0.0), minlength=length)
        counted += np.bincount(segment[~good], minlength=length)
        counted += np.bincount(groups * (2 * width) + num_buckets, minlength=length)  # ROWS
        counted = counted.reshape(len(keys), 2, width)
        for index, key in enumerate(keys):
            totals[key] = totals.get(key, 0.0) + counted[index]
    if totals:
        yield _as_batch(totals, num_buckets, key_types)


def _as_batch(totals: dict, num_buckets: int, key_types: dict):
    import pyarrow as pa

    slices, clients, buckets, pos, neg = [], [], [], [], []
    for (slice_key, client), block in totals.items():
        for column in np.flatnonzero((block[0] != 0) | (block[1] != 0)).tolist():
            slices.append(slice_key)
            clients.append(client)
            # ROWS and PROBLEMS keep their negative codes
            buckets.append(column if column < num_buckets else num_buckets - 1 - column)
            pos.append(float(block[0, column]))
            neg.append(float(block[1, column]) if column < num_buckets else 0.0)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(slices, type=key_types.get("slice", pa.string())),
            pa.array(clients, type=key_types.get("client", pa.string())),
            pa.array(buckets, type=pa.int32()),
            pa.array(pos, type=pa.float64()),
            pa.array(neg, type=pa.float64()),
        ],
        ["slice", "client", "bucket", "pos", "neg"],
    )
