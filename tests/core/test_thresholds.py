import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.core.thresholds import Thresholds, reference_thresholds, tf_default_thresholds


@pytest.mark.parametrize("num_thresholds", [2, 3, 10, 200, 1000])
def test_tf_grid_matches_tensorflow_auc(num_thresholds):
    auc = tf.keras.metrics.AUC(num_thresholds=num_thresholds)
    expected = np.asarray(auc.thresholds, dtype=np.float64)
    np.testing.assert_allclose(tf_default_thresholds(num_thresholds), expected, atol=1e-7)


def test_reference_grid_is_the_papers_piecewise_grid():
    grid = reference_thresholds(100)
    assert grid.size == 100
    assert np.sum(grid <= 0.2) == 50 + 1  # 50 in [0, 0.2] plus the repeated 0.2
    assert np.count_nonzero(np.isclose(grid, 0.2)) == 2
    assert np.count_nonzero(np.isclose(grid, 0.5)) == 2
    assert grid[0] == 0.0 and grid[-1] == 1.0
    assert np.all(np.diff(grid) >= 0)
    t = Thresholds.make(100, "reference")
    assert t.inclusive and t.num_buckets == 101


def test_bucketize_follows_the_comparison_rule():
    scores = tf.constant([0.0, 0.2, 0.2000001, 0.5, 1.0], tf.float64)
    explicit = Thresholds.explicit([0.2, 0.5])
    # score > theta: 0.2 passes nothing, 0.2000001 passes 0.2, 1.0 passes both.
    assert explicit.bucketize(scores).numpy().tolist() == [0, 0, 1, 1, 2]
    inclusive = Thresholds((0.2, 0.5), inclusive=True, grid="reference")
    assert inclusive.bucketize(scores).numpy().tolist() == [0, 1, 1, 2, 2]


def test_tf_grid_bucketize_matches_brute_force_comparison():
    rng = np.random.default_rng(1)
    scores = np.concatenate([rng.uniform(size=5000), np.linspace(0, 1, 101), [0.0, 1.0]])
    for num_thresholds in (2, 7, 101, 1000):
        t = Thresholds.make(num_thresholds)
        thresholds = np.asarray(tf.keras.metrics.AUC(num_thresholds=num_thresholds).thresholds)
        brute = (scores.astype(np.float32)[:, None] > thresholds[None, :].astype(np.float32)).sum(1)
        got = t.bucketize(tf.constant(scores, tf.float32)).numpy()
        # TensorFlow's own fast path is the reference; it agrees with the comparison except
        # where float32 rounding puts a score exactly on a threshold.
        assert np.mean(got == brute) > 0.99


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"num_thresholds": 1}, ValueError),
        ({"num_thresholds": 2.5}, TypeError),
        ({"num_thresholds": 10, "threshold_grid": "uniform"}, ValueError),
        ({"thresholds": [0.1, float("inf")]}, ValueError),
        ({"thresholds": [0.1, float("nan")]}, ValueError),
        ({"num_thresholds": 3, "threshold_grid": "reference"}, ValueError),
    ],
)
def test_bad_threshold_arguments_raise(kwargs, error):
    with pytest.raises(error):
        Thresholds.make(**kwargs)
