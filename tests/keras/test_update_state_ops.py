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
    ops = _ops(DPAUC(epsilon=1.0, num_thresholds=100, seed=0), weighted)
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
