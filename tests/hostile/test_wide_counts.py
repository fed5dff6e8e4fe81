"""Counts past 2^24 stay exact in every path (a float32 sum stops at 16,777,216 per bucket,
and a label flip then moves a count by more than the stated sensitivity)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf import DPAUC
from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.simulation import client_histograms

BIG = 2**24 + 7  # one bucket past float32's last exactly counted integer


def test_bucket_counts_are_exact_past_2_24_by_default():
    grid = Thresholds.make(3)
    for labels in (tf.ones([BIG]), tf.ones([BIG], tf.float16)):  # whatever the input dtype
        pos, neg = bucket_counts(labels, tf.fill([BIG], 0.9), grid)
        assert pos.dtype == tf.float64
        assert int(tf.reduce_sum(pos)) == BIG and int(tf.reduce_sum(neg)) == 0


def test_keras_metric_counts_past_2_24_in_float16_and_float32():
    batch = 2**22
    for dtype in ("float16", "float32"):
        metric = DPAUC(epsilon=None, num_thresholds=3, dtype=dtype)
        for _ in range(4):
            metric.update_state(tf.ones([batch]), tf.fill([batch], 0.9))
        metric.update_state(tf.zeros([7]), tf.fill([7], 0.1))
        metric.update_state(tf.ones([7]), tf.fill([7], 0.9))
        assert metric.positives.dtype == tf.float64
        assert int(tf.reduce_sum(metric.positives)) == 4 * batch + 7
        # a label flip moves exactly one unit between the two counts
        assert float(metric.result()) == pytest.approx(1.0)


def test_simulation_counts_past_2_24():
    labels = np.ones(BIG, np.int8)
    labels[:5] = 0
    scores = np.where(labels == 1, 0.9, 0.1)
    pos, neg = client_histograms(labels, scores, Thresholds.make(3))
    assert pos.dtype == np.float64
    assert int(pos.sum()) == BIG - 5 and int(neg.sum()) == 5
