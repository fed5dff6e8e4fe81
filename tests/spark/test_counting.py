"""The executors' counting (NumPy, no Spark session) equals the library's bucket_counts."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyspark")
pa = pytest.importorskip("pyarrow")

from dpauc_tf.core.counts import bucket_counts  # noqa: E402
from dpauc_tf.core.thresholds import Thresholds  # noqa: E402
from dpauc_tf.spark.counting import PROBLEMS, ROWS, BucketRule, count_partition  # noqa: E402

GRIDS = [
    Thresholds.make(11),
    Thresholds.make(200),
    Thresholds.make(16, "reference"),
    Thresholds.make(threshold_grid=[0.1, 0.25, 0.5, 0.75]),  # Keras' explicit list
]


def _scores(rng, size, grid):
    """Random scores plus the grid's own values and their float neighbours (the edges)."""
    values = np.clip(grid.as_array(), 0.0, 1.0)
    edges = np.concatenate(
        [values, np.nextafter(values, 2.0), np.nextafter(values, -1.0), [0.0, 1.0]]
    )
    edges = np.clip(edges, 0.0, 1.0)
    return np.concatenate([rng.random(size), edges, edges.astype(np.float32)])


def _counts(batches, **kwargs):
    (out,) = list(count_partition(iter(batches), **kwargs))
    return out.to_pydict()


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: f"{g.grid}-{g.num_thresholds}")
def test_bucket_ids_are_the_library_rule(grid):
    scores = _scores(np.random.default_rng(0), 5000, grid)
    rule = BucketRule.from_thresholds(grid)
    np.testing.assert_array_equal(rule.ids(scores), grid.bucketize_numpy(scores))
    np.testing.assert_array_equal(rule.ids(scores), grid.bucketize(scores).numpy())


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: f"{g.grid}-{g.num_thresholds}")
def test_counts_equal_bucket_counts_over_batches_and_groups(grid):
    rng = np.random.default_rng(1)
    scores = _scores(rng, 3000, grid)
    labels = rng.integers(0, 2, scores.size).astype(np.float64)
    weights = rng.integers(0, 2, scores.size).astype(np.float64)
    clients = rng.integers(0, 3, scores.size)
    cut = scores.size // 3  # two batches, and an empty one
    batches = [
        pa.RecordBatch.from_pydict(
            {
                "score": scores[part],
                "label": labels[part],
                "weight": weights[part],
                "client": clients[part],
            }
        )
        for part in (slice(0, cut), slice(cut, cut), slice(cut, None))
    ]
    out = _counts(batches, rule=BucketRule.from_thresholds(grid), key_names=("client",))
    for client in range(3):
        mine = clients == client
        pos, neg = bucket_counts(labels[mine], scores[mine], grid, sample_weight=weights[mine])
        got_pos = np.zeros(grid.num_buckets)
        got_neg = np.zeros(grid.num_buckets)
        for c, b, p, n in zip(out["client"], out["bucket"], out["pos"], out["neg"], strict=True):
            if c == client and b >= 0:
                got_pos[b], got_neg[b] = p, n
            if c == client and b == ROWS:
                assert p == mine.sum()
        np.testing.assert_array_equal(got_pos, pos.numpy())
        np.testing.assert_array_equal(got_neg, neg.numpy())
        assert set(out["slice"]) == {None}


def test_logits_are_counted_as_bucket_counts_counts_them():
    """Logits go through the one map of every backend's --from-logits (logit_scores), then
    the grid's bucket rule, as bucket_counts counts the mapped scores."""
    from dpauc_tf.core.logit_scale import logit_scores

    rng = np.random.default_rng(2)
    logits = rng.normal(0, 3, 20_000)
    labels = rng.integers(0, 2, logits.size).astype(np.float64)
    grid = Thresholds.make(101)
    batch = pa.RecordBatch.from_pydict({"score": logits, "label": labels})
    out = _counts([batch], rule=BucketRule.from_thresholds(grid), from_logits=True)
    pos, _ = bucket_counts(labels, logit_scores(logits), grid)
    got = np.zeros(grid.num_buckets)
    for b, p in zip(out["bucket"], out["pos"], strict=True):
        if b >= 0:
            got[b] = p
    np.testing.assert_array_equal(got, pos.numpy())


def test_bad_rows_are_counted_by_kind_never_in_a_bucket():
    batch = pa.RecordBatch.from_pydict(
        {
            "score": pa.array([0.5, None, 0.5, float("nan"), 1.5, 0.5, 0.5, 0.5]),
            "label": pa.array([1.0, 1.0, None, 1.0, 0.0, 2.0, 1.0, 1.0]),
            "weight": pa.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 1.0]),
            "slice": pa.array(["a", "a", "a", "a", "a", "a", "a", None]),
        }
    )
    out = _counts(
        [batch],
        rule=BucketRule.from_thresholds(Thresholds.make(5)),
        key_names=("slice",),
        integer_weights=True,
    )
    found = {}
    for b, p in zip(out["bucket"], out["pos"], strict=True):
        kind = "counted" if b >= 0 else ("rows" if b == ROWS else PROBLEMS[b])
        found[kind] = found.get(kind, 0) + p
    assert found == {
        "counted": 1.0,  # the first row only
        "rows": 8.0,
        "null_score": 1.0,
        "null_label": 1.0,
        "null_key": 1.0,
        "score": 2.0,
        "label": 1.0,
        "fractional_weight": 1.0,
    }


def test_an_empty_partition_yields_nothing():
    rule = BucketRule.from_thresholds(Thresholds.make(5))
    assert list(count_partition(iter([]), rule=rule)) == []
