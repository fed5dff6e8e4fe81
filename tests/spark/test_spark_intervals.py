"""Spark's release step gives every slice its interval (no Spark session needed: the step
that runs on the driver, from the counts)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyspark")  # dpauc_tf.spark imports it (the keras3 world has it)

from dpauc_tf.mechanisms.release import ReleaseSpec
from dpauc_tf.spark.evaluation import release_counts


def test_release_counts_adds_the_interval_per_slice():
    spec = ReleaseSpec.make("secure-histogram", epsilon=1.0, num_thresholds=3, seed=0)
    pos, neg = np.array([0.0, 100.0, 300.0, 0.0]), np.array([0.0, 400.0, 200.0, 0.0])
    counts = {("a", c): (pos, neg, 1000.0) for c in range(4)}  # four clients of slice a
    results = release_counts(spec, counts, per_client=True, repeats=3, confidence=0.95)
    result = results["a"]
    assert result.interval is not None and result.interval.target == "population"
    assert np.all(result.ci_low < result.aucs) and np.all(result.aucs < result.ci_high)
    assert len(result.to_dict()["releases"]) == 3


def test_private_auc_by_slice_refuses_before_counting():
    pytest.importorskip("pyspark")
    from dpauc_tf.spark.evaluation import private_auc_by_slice

    with pytest.raises(ValueError, match="confidence"):
        private_auc_by_slice(None, None, epsilon=1.0, confidence=2.0)
