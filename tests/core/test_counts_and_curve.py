import numpy as np
import pytest
import tensorflow as tf
from sklearn.metrics import roc_auc_score

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.curve import (
    Confusion,
    auc_from_confusion,
    auc_from_histogram,
    confusion_from_histogram,
    roc_from_confusion,
)
from dpauc_tf.core.thresholds import Thresholds


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    labels = (rng.uniform(size=n) < 0.3).astype(np.float32)
    scores = np.clip(0.25 + 0.2 * labels + 0.15 * rng.normal(size=n), 0, 1).astype(np.float32)
    weights = rng.uniform(size=n).astype(np.float32)
    return labels, scores, weights


@pytest.mark.parametrize("grid", ["tf", "reference"])
def test_bucket_counts_match_brute_force(grid):
    labels, scores, weights = _data()
    t = Thresholds.make(40, grid)
    pos, neg = bucket_counts(labels, scores, t, weights)
    values = np.asarray(t.values)
    passes = scores[:, None] >= values if t.inclusive else scores[:, None] > values
    tp = (passes * (weights * labels)[:, None]).sum(0)
    fp = (passes * (weights * (1 - labels))[:, None]).sum(0)
    confusion = confusion_from_histogram(pos, neg)
    if grid == "tf":  # float32 arithmetic of TensorFlow's bucketing, see test_thresholds
        np.testing.assert_allclose(confusion.tp.numpy(), tp, atol=2.0)
    else:
        np.testing.assert_allclose(confusion.tp.numpy(), tp, rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(confusion.fp.numpy(), fp, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(
        (confusion.tp + confusion.fn).numpy(), np.full(40, (weights * labels).sum()), rtol=1e-5
    )


@pytest.mark.parametrize("num_thresholds", [3, 10, 200, 1000])
@pytest.mark.parametrize("weighted", [False, True])
def test_noise_free_auc_equals_tensorflow_auc(num_thresholds, weighted):
    labels, scores, weights = _data(seed=num_thresholds)
    w = weights if weighted else None
    reference = tf.keras.metrics.AUC(num_thresholds=num_thresholds)
    reference.update_state(labels, scores, sample_weight=w)
    pos, neg = bucket_counts(labels, scores, Thresholds.make(num_thresholds), w)
    assert abs(float(auc_from_histogram(pos, neg)) - float(reference.result())) < 1e-6


def test_fine_grid_auc_is_close_to_exact_auc():
    labels, scores, _ = _data(n=20000, seed=3)
    exact = roc_auc_score(labels, scores)
    for num_thresholds, tolerance in ((10, 0.05), (200, 2e-3), (10000, 1e-4)):
        pos, neg = bucket_counts(labels, scores, Thresholds.make(num_thresholds))
        assert abs(float(auc_from_histogram(pos, neg)) - exact) < tolerance


def test_counting_is_additive_over_batches():
    labels, scores, weights = _data()
    t = Thresholds.make(50)
    whole = bucket_counts(labels, scores, t, weights)
    parts = [bucket_counts(labels[i::3], scores[i::3], t, weights[i::3]) for i in range(3)]
    np.testing.assert_allclose(sum(p[0] for p in parts).numpy(), whole[0].numpy(), rtol=1e-5)
    np.testing.assert_allclose(sum(p[1] for p in parts).numpy(), whole[1].numpy(), rtol=1e-5)


def test_noisy_counts_are_clipped_and_points_sorted():
    confusion = Confusion(
        tp=tf.constant([[10.0, -3.0, 6.0]]),
        fp=tf.constant([[5.0, 1.0, -2.0]]),
        tn=tf.constant([[0.0, 4.0, 8.0]]),
        fn=tf.constant([[0.0, 7.0, 4.0]]),
    )
    roc = roc_from_confusion(confusion)
    fpr, tpr = roc.fpr.numpy()[0], roc.tpr.numpy()[0]
    np.testing.assert_allclose(fpr, [0.0, 0.2, 1.0])  # -2 clipped to 0; sorted ascending
    np.testing.assert_allclose(tpr, [0.6, 0.0, 1.0])
    auc = float(auc_from_confusion(confusion)[0])
    assert auc == pytest.approx(0.2 * 0.3 + 0.8 * 0.5)


def test_auc_broadcasts_over_a_repeat_axis():
    labels, scores, _ = _data()
    pos, neg = bucket_counts(labels, scores, Thresholds.make(20))
    stacked = auc_from_histogram(tf.stack([pos, pos * 2]), tf.stack([neg, neg * 2]))
    assert stacked.shape == (2,)
    assert float(stacked[0]) == pytest.approx(float(stacked[1]), abs=1e-6)


def _bad(**overrides):
    labels, scores, _ = _data(n=10)
    values = {"y_true": labels, "y_pred": scores, "sample_weight": None}
    values.update(overrides)
    return values


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"y_true": np.array([0, 1, 2, 0, 1, 0, 1, 0, 1, 0], np.float32)}, "labels must be 0 or 1"),
        ({"y_pred": np.full(10, 1.5, np.float32)}, "in \\[0, 1\\]"),
        ({"y_pred": np.full(10, -0.1, np.float32)}, "in \\[0, 1\\]"),
        ({"y_pred": np.full(10, np.nan, np.float32)}, "in \\[0, 1\\]"),
        ({"sample_weight": np.full(10, 2.0, np.float32)}, "weights must be in \\[0, 1\\]"),
        ({"sample_weight": np.full(10, -1.0, np.float32)}, "weights must be in \\[0, 1\\]"),
    ],
)
def test_invalid_input_raises_a_clear_error(overrides, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        bucket_counts(thresholds=Thresholds.make(10), **_bad(**overrides))


def test_nan_logits_raise_and_logits_are_squashed():
    labels, scores, _ = _data(n=200)
    t = Thresholds.make(30)
    with pytest.raises(tf.errors.InvalidArgumentError, match="logits must not be NaN"):
        bucket_counts(labels, np.full(200, np.nan, np.float32), t, from_logits=True)
    logits = np.log(scores + 1e-6) - np.log1p(-scores + 1e-6)
    direct = bucket_counts(labels, 1 / (1 + np.exp(-logits)), t)
    via_logits = bucket_counts(labels, logits, t, from_logits=True)
    np.testing.assert_allclose(direct[0].numpy(), via_logits[0].numpy(), atol=1.0)


def test_invalid_input_under_xla_gives_nan_not_a_number():
    t = Thresholds.make(10)

    @tf.function(jit_compile=True)
    def counts(y, p):
        return bucket_counts(y, p, t)

    pos, _ = counts(tf.constant([0.0, 3.0]), tf.constant([0.1, 0.2]))
    assert np.all(np.isnan(pos.numpy()))
    pos, _ = counts(tf.constant([0.0, 1.0]), tf.constant([0.1, 0.2]))
    assert np.all(np.isfinite(pos.numpy()))
