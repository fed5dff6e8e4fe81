"""The NumPy bucket rule (streaming) gives bit-identical counts to ``bucket_counts`` (TF)."""

import numpy as np
import pytest
from scipy.special import expit

from dpauc_tf.core.counts import bucket_counts, bucket_counts_numpy
from dpauc_tf.core.thresholds import Thresholds

GRIDS = {
    "tf 200": Thresholds.make(200),
    "tf 7": Thresholds.make(7),
    "tf 1000": Thresholds.make(1000),
    "reference 100": Thresholds.make(100, "reference"),
    "keras list": Thresholds.make(None, thresholds=[0.1, 0.33, 0.9]),
    "explicit beyond [0, 1]": Thresholds.explicit(np.linspace(-0.2, 1.2, 57)),
}


def hostile_scores(grid: Thresholds, n: int = 20_000) -> np.ndarray:
    """Random scores plus every threshold (clipped to [0, 1]), its float32 neighbours, 0, 1."""
    rng = np.random.default_rng(1)
    values = np.clip(grid.as_array(), 0.0, 1.0)
    f32 = values.astype(np.float32)
    near = np.concatenate(
        [
            values,
            f32.astype(np.float64),
            np.nextafter(f32, np.float32(0)).astype(np.float64),
            np.nextafter(f32, np.float32(1)).astype(np.float64),
            np.nextafter(values, 0.0),
            np.nextafter(values, 1.0),
            [0.0, 1.0, 5e-324, 1e-7, 1 - 1e-7, np.nextafter(1.0, 0.0)],
        ]
    )
    return np.clip(np.concatenate([rng.random(n), near]), 0.0, 1.0)


@pytest.mark.parametrize("name", sorted(GRIDS))
def test_numpy_counts_equal_tf_counts_bit_for_bit(name):
    grid = GRIDS[name]
    scores = hostile_scores(grid)
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, scores.size)
    groups = rng.integers(0, 3, scores.size)
    pos, neg = bucket_counts(labels, scores, grid, group_ids=groups, num_groups=3)
    np_pos, np_neg = bucket_counts_numpy(labels, scores, grid, groups, 3)
    assert np_pos.dtype == np.int64
    np.testing.assert_array_equal(np_pos, pos.numpy())
    np.testing.assert_array_equal(np_neg, neg.numpy())
    ids = grid.bucketize_numpy(scores)
    np.testing.assert_array_equal(ids, grid.bucketize(scores).numpy())


def test_logits_through_the_sigmoid_match():
    """The CLI's logits: scipy's expit, then the same buckets as TF's sigmoid path."""
    rng = np.random.default_rng(3)
    logits = np.concatenate([rng.normal(scale=4, size=20_000), [-np.inf, np.inf, 0.0, 40, -40]])
    labels = rng.integers(0, 2, logits.size)
    grid = Thresholds.make(200)
    pos, neg = bucket_counts(labels, logits, grid, from_logits=True)
    np_pos, np_neg = bucket_counts_numpy(labels, expit(logits), grid)
    np.testing.assert_array_equal(np_pos[0], pos.numpy())
    np.testing.assert_array_equal(np_neg[0], neg.numpy())


def test_counts_past_2_24_stay_exact():
    grid = Thresholds.make(3)
    n = (1 << 24) + 3
    pos, neg = bucket_counts_numpy(np.ones(n, np.int8), np.full(n, 0.9), grid)
    assert int(pos.sum()) == n and int(neg.sum()) == 0


def test_group_ids_out_of_range_are_refused():
    with pytest.raises(ValueError, match="num_groups"):
        bucket_counts_numpy(np.array([1]), np.array([0.5]), Thresholds.make(3), np.array([2]), 2)
