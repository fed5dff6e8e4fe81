"""The label column is refused as a Spark slice (or client) column: each slice's
``num_examples`` was the exact number of negatives / positives under a stated epsilon_total
of 2. The refusal is by name, before Spark runs anything."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyspark")

from dpauc_tf.mechanisms.laws import Deployment
from dpauc_tf.mechanisms.registry import default_mechanism
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


def test_spark_follows_the_one_default_rule():
    """Issue 34: Spark defaulted to histogram where DPAUC and dpauc evaluate default to
    rank-sum; the evaluator names the mechanism it uses."""
    assert DPAUCEvaluator(epsilon=1.0).getParam("mechanism") == default_mechanism()
    assert DPAUCEvaluator(epsilon=1.0, delta=1e-6).getParam("mechanism") == "auc-only"
    federated = default_mechanism(deployment=Deployment.FEDERATED)  # no secure aggregation
    assert DPAUCEvaluator(epsilon=1.0, clientCol="c").getParam("mechanism") == federated
    assert DPAUCEvaluator(mechanism="paper", epsilon=1.0).getParam("mechanism") == "paper"


def test_private_auc_releases_with_the_default_and_names_it(spark):
    rng = np.random.default_rng(0)
    rows = [(float(s), float(rng.random() < s)) for s in rng.random(400)]
    frame = spark.createDataFrame(rows, "score double, label double")
    result = private_auc(frame, epsilon=1.0, seed=0)
    assert result.mechanism == result.to_dict()["mechanism"] == default_mechanism()
    with_clients = frame.selectExpr("*", "cast(rand(1) * 3 as int) as client")
    clients = private_auc(with_clients, client_col="client", epsilon=1.0, seed=0)
    assert clients.mechanism == default_mechanism(deployment=Deployment.FEDERATED)
