"""The label column is refused as a Spark slice (or client) column: each slice's
``num_examples`` was the exact number of negatives / positives under a stated epsilon_total
of 2. The refusal is by name, before Spark runs anything."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from dpauc_tf.spark import DPAUCEvaluator, private_auc, private_auc_by_slice


class _NoFrame:
    """Stands for a DataFrame: the refusal comes before any use of it."""

    def __getattr__(self, name):
        raise AssertionError(f"the DataFrame was used ({name}) before the refusal")


@pytest.mark.parametrize("label", ["label", "y"])
def test_private_auc_by_slice_refuses_the_label_column(label):
    with pytest.raises(ValueError, match=f"slices on the label column {label!r}"):
        private_auc_by_slice(_NoFrame(), label, label_col=label, epsilon=1.0, num_thresholds=10)


def test_the_label_as_client_column_is_refused():
    with pytest.raises(ValueError, match="client column is the label column"):
        private_auc(
            _NoFrame(), client_col="label", mechanism="secure-histogram", epsilon=1.0,
            num_thresholds=10,
        )  # fmt: skip


def test_the_evaluator_refuses_the_label_as_slice_column_when_built():
    with pytest.raises(ValueError, match="slices on the label column 'label'"):
        DPAUCEvaluator(sliceCol="label", epsilon=1.0, numThresholds=10)
    with pytest.raises(ValueError, match="slices on the label column 'y'"):
        DPAUCEvaluator(sliceCol="y", labelCol="y", epsilon=1.0, numThresholds=10)
    DPAUCEvaluator(sliceCol="group", epsilon=1.0, numThresholds=10)  # label-free: accepted
