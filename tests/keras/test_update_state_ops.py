"""update_state's graph stays small (its cost on small batches is one op dispatch per op):
the counts are added in place (one AssignAddVariableOp each, also in Keras 3, whose
Variable.assign_add is a read, an add and an assignment), and the batch's ops stay below
the number they were before the small-batch work (Keras 2: 32, Keras 3: 36)."""

from __future__ import annotations

import collections

import pytest
import tensorflow as tf

from dpauc_tf import DPAUC

SPEC = tf.TensorSpec([1000], tf.float32)


def _ops(metric, weighted: bool) -> collections.Counter:
    @tf.function
    def step(y, p, w):
        metric.update_state(y, p, sample_weight=w)

    graph = step.get_concrete_function(SPEC, SPEC, SPEC if weighted else None).graph
    return collections.Counter(
        op.type for op in graph.get_operations() if op.type not in ("Const", "Placeholder", "NoOp")
    )


@pytest.mark.parametrize("weighted", [False, True])
def test_counts_are_added_in_place_in_few_ops(weighted):
    ops = _ops(DPAUC(epsilon=1.0, num_thresholds=100, seed=0, mechanism="histogram"), weighted)
    assert ops["AssignAddVariableOp"] == 2
    assert ops["AssignVariableOp"] == 0 and ops["ReadVariableOp"] == 0
    assert ops["Assert"] == (3 if weighted else 2)  # one per rule: labels, scores, weights
    assert ops["SelectV2"] == 1  # the XLA poisoning, in one op
    assert sum(ops.values()) <= (38 if weighted else 30), ops


def test_added_in_place_also_with_noise_off_and_multi_label():
    for metric in (
        DPAUC(epsilon=None, num_thresholds=50),
        DPAUC(epsilon=1.0, multi_label=True, num_labels=3, num_thresholds=50),
    ):
        spec = SPEC if not metric.multi_label else tf.TensorSpec([100, 3], tf.float32)

        @tf.function
        def step(y, p, metric=metric):
            metric.update_state(y, p)

        graph = step.get_concrete_function(spec, spec).graph
        types = [op.type for op in graph.get_operations()]
        assert types.count("AssignAddVariableOp") == 2 and "AssignVariableOp" not in types


def test_a_fine_grid_is_updated_in_place_per_example_and_equals_the_dense_sum(monkeypatch):
    """rank-sum (DPAUC's ROC default) counts on 2^17 + 1 buckets: a batch scatters one bucket
    per example (O(batch)) instead of adding a dense 131,074-bucket histogram; the counts are
    the dense path's, eagerly, in tf.function and under XLA; a refused input makes them NaN."""
    import numpy as np

    from dpauc_tf.keras import tf_counts

    metric = DPAUC(epsilon=1.0, seed=0)
    assert metric.mechanism.name == "rank-sum" and metric.positives.shape[0] == 2**17 + 2
    ops = _ops(metric, weighted=True)
    assert ops["ResourceScatterAdd"] == 2 and ops["UnsortedSegmentSum"] == 0, ops
    rng = np.random.default_rng(0)
    y = (rng.random(1000) < 0.3).astype(np.float32)
    p = rng.random(1000).astype(np.float32)
    w = np.ones(1000, np.float32)  # rank-sum takes weights of 1 only (issue 30)
    results = {}
    for mode in ("eager", "function", "xla", "dense"):
        m = DPAUC(epsilon=1.0, seed=0)
        if mode == "dense":
            monkeypatch.setattr(tf_counts, "SPARSE_MIN_BUCKETS", 10**9)

        def step(*args, m=m):
            m.update_state(*args)  # returns None (Keras 2's wrapper returns an op)

        if mode in ("function", "xla", "dense"):
            step = tf.function(step, jit_compile=mode == "xla")
        step(y, p, w)
        step(y, p, w)
        results[mode] = np.concatenate([np.asarray(m.positives), np.asarray(m.negatives)])
        monkeypatch.setattr(tf_counts, "SPARSE_MIN_BUCKETS", 16_385)
    for mode in ("eager", "function", "xla"):
        np.testing.assert_allclose(results[mode], results["dense"], rtol=0, atol=1e-9)
    assert results["dense"].sum() == pytest.approx(2 * w.sum())
    poisoned = DPAUC(epsilon=1.0, seed=0)
    tf.function(lambda *a: poisoned.update_state(*a) and None, jit_compile=True)(y, p, w * 3)
    counts = np.asarray(poisoned.positives)
    assert np.isnan(counts[[0, -1]]).all() and np.isnan(counts.sum())
    with pytest.raises(ValueError, match="counts are NaN, so nothing is released"):
        poisoned.result()  # nothing of the batch is released
    assert poisoned.releases_drawn == 0
