"""``Thresholds.segment_ids_with(keras.ops, ...)`` (the counting of Keras 3's JAX backend)
puts every float32 score in the bucket that ``segment_ids`` (TensorFlow) puts it in, at and
next to every threshold. Runs where Keras 3 is installed (its TensorFlow backend here; the JAX
backend in tests/keras/test_jax_backend.py)."""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.core.thresholds import Thresholds

if int(importlib.metadata.version("keras").split(".")[0]) < 3:
    pytest.skip("keras.ops needs Keras 3", allow_module_level=True)


def _scores_around(values) -> np.ndarray:
    grid = np.clip(np.asarray(values, np.float32), 0, 1)
    parts = [grid, np.nextafter(grid, np.float32(2)), np.nextafter(grid, np.float32(-1))]
    parts.append(np.random.default_rng(0).random(300).astype(np.float32))
    return np.clip(np.concatenate([*parts, [0.0, 1.0]]), 0, 1).astype(np.float32)


@pytest.mark.parametrize(
    "grid",
    [
        Thresholds.make(7),
        Thresholds.make(200),
        Thresholds.make(12, "reference"),
        Thresholds.make(101, "reference"),
        Thresholds.from_keras([0.05, 0.1, 0.3, 0.31, 0.9]),
    ],
    ids=lambda g: g.describe(),
)
def test_keras_ops_buckets_equal_tensorflow(grid):
    from keras import ops

    values = (
        grid.values
        if grid.grid != "tf"
        else np.arange(grid.num_thresholds) / (grid.num_thresholds - 1)
    )
    scores = _scores_around(values)
    labels = (np.arange(scores.size) % 2).astype(np.float32)
    ours = np.asarray(grid.segment_ids_with(ops, scores, labels))
    # TensorFlow's path compares float64 scores (bucket_counts casts to float64)
    theirs = grid.segment_ids(tf.constant(scores, tf.float64), tf.constant(labels)).numpy()
    np.testing.assert_array_equal(ours, theirs)


def test_float32_thresholds_round_the_safe_way():
    grid = Thresholds.make(12, "reference")
    exact, rounded = grid.as_array(), grid.float32_values().astype(np.float64)
    assert np.all(rounded >= exact)  # inclusive: the smallest float32 >= theta
    strict = Thresholds.explicit([0.1, 0.2, 0.7])
    assert np.all(strict.float32_values().astype(np.float64) <= strict.as_array())
