"""Estimators are an Enum (as Keras' curves and summation methods): one place names them,
validates a name and says how each counts the pairs inside a bucket; ``none`` runs the
base class's checks like every mechanism."""

from __future__ import annotations

import pytest

from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.estimators import AUCEstimator
from dpauc_tf.mechanisms.none import NoNoise


def test_every_estimator_name_round_trips():
    assert tuple(e.value for e in AUCEstimator) == (
        "mann-whitney",
        "mann-whitney-smooth",
        "reference",
    )
    for name in tuple(e.value for e in AUCEstimator):
        assert AUCEstimator.from_str(name).value == name
        assert AUCEstimator.from_str(AUCEstimator.from_str(name)) is AUCEstimator.from_str(name)


def test_an_unknown_estimator_names_the_choices():
    with pytest.raises(ValueError, match=r"estimator must be one of 'mann-whitney'.*got 'mw'"):
        get_mechanism("histogram", epsilon=1.0, num_thresholds=3, estimator="mw")


def test_mechanisms_keep_the_name_and_the_enum():
    m = get_mechanism("histogram", epsilon=1.0, num_thresholds=3, estimator="mann-whitney-smooth")
    assert m.auc_estimator is AUCEstimator.MANN_WHITNEY_SMOOTH
    assert m.estimator == "mann-whitney-smooth" and m.within_bucket == "linear"
    assert m.options()["estimator"] == "mann-whitney-smooth"
    assert "estimator" not in get_mechanism("histogram", epsilon=1.0, num_thresholds=3).options()


def test_none_runs_the_base_checks():
    none = NoNoise(None, 5)
    assert none.auc_estimator is AUCEstimator.MANN_WHITNEY and none.num_thresholds == 5
    with pytest.raises(ValueError, match="adds no noise"):
        NoNoise(1.0, 5)
    with pytest.raises(ValueError, match="at least 2 thresholds"):
        NoNoise(None, 1)
    with pytest.raises(TypeError, match="num_thresholds must be an int"):
        NoNoise(None, 2.5)
