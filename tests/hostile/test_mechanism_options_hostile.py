"""Hostile use of mechanism options and of ``release`` itself (issue 21).

* ``public_scores`` read with ``bool()``: ``"False"``/``"no"`` published the score histogram.
* ``release`` of fractional counts through an integer-noise mechanism published the fraction.
* ``positive_rate=1e-300``: raw ``ZeroDivisionError``; ``positive_share=1e-300``: a message
  about Python sequences.
* ``mechanism_options={"num_clients": 1000}``: Flower sized the shares for 1,000 clients
  (epsilon 10.2 for a requested 1), TFF raised a raw ``TypeError``, Beam another.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.mechanisms import get_mechanism

RESERVED = "mechanism_options cannot set num_clients; it is set by secure_shares="


def _clients(k=3, n=60, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        labels = (rng.random(n) < 0.4).astype(np.int64)
        out.append((rng.random(n), labels))
    return out


@pytest.mark.parametrize("value", ["False", "no", "0", "off", " FALSE"])
def test_keras_metric_with_a_string_false_keeps_the_scores_private(value):
    from dpauc_tf import DPAUC

    metric = DPAUC(
        epsilon=1.0,
        num_thresholds=15,
        mechanism="tree-histogram",
        mechanism_options={"public_scores": value},
        seed=0,
    )
    assert metric._mechanism.public_scores is False
    assert "released exactly" not in str(metric._mechanism.statement())


def test_near_integer_counts_are_refused_too():
    mechanism = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=2, num_clients=3)
    with pytest.raises(ValueError, match="integer counts"):
        mechanism.release(tf.constant([0.0, 2.0 + 1e-9, 0.0], tf.float64), tf.zeros(3), seed=0)
    big = tf.constant([0.0, 2.0**50, 0.0], tf.float64)  # large integers are integers
    released = mechanism.release(big, tf.zeros(3, tf.float64), seed=0)["pos"].numpy()
    assert np.all(released == np.round(released))


def test_the_secure_sum_of_fractional_reports_cannot_be_built_in_graph_mode():
    """A hand-built federated round: each client's release in tf.function, then summed."""
    mechanism = get_mechanism(
        "secure-tree-histogram", epsilon=1.0, num_thresholds=15, num_clients=4
    )

    @tf.function
    def report(pos, neg, seed):
        return mechanism.release(pos, neg, seed=seed)

    pos = tf.constant(np.r_[np.zeros(15), 0.5], tf.float64)
    with pytest.raises(tf.errors.InvalidArgumentError, match="integer counts"):
        report(pos, tf.zeros(16, tf.float64), tf.constant([1, 2], tf.int64))


@pytest.mark.skipif(importlib.util.find_spec("flwr") is None, reason="needs Flower")
def test_flower_refuses_num_clients_in_mechanism_options():
    from dpauc_tf.flower import evaluate

    with pytest.raises(ValueError, match=RESERVED) as error:
        evaluate(
            _clients(),
            mechanism="secure-histogram",
            epsilon=1.0,
            num_thresholds=10,
            mechanism_options={"num_clients": 1000},
            engine="in-process",
        )
    assert str(error.value).startswith("dpauc_tf.flower.evaluate: ")


@pytest.mark.skipif(importlib.util.find_spec("apache_beam") is None, reason="needs Apache Beam")
def test_beam_refuses_num_clients_in_mechanism_options():
    from dpauc_tf.beam import PrivateAUC

    with pytest.raises(ValueError, match="mechanism_options cannot set num_clients"):
        PrivateAUC("secure-histogram", epsilon=1.0, mechanism_options={"num_clients": 1000})
    transform = PrivateAUC(
        "tree-histogram", epsilon=1.0, num_thresholds=15, mechanism_options={"public_scores": "no"}
    )
    assert dict(transform.spec.options) == {"public_scores": False}


@pytest.mark.skipif(
    importlib.util.find_spec("tensorflow_federated") is None, reason="needs TFF (federated world)"
)
def test_tff_refuses_num_clients_in_mechanism_options():
    from dpauc_tf.federated import evaluate

    with pytest.raises(ValueError, match=RESERVED) as error:
        evaluate(
            _clients(),
            mechanism="secure-histogram",
            epsilon=1.0,
            num_thresholds=10,
            mechanism_options={"num_clients": 1000},
        )
    assert str(error.value).startswith("dpauc_tf.federated.evaluate: ")


@pytest.mark.parametrize(
    "options",
    [
        {"positive_rate": 1e-300},
        {"positive_share": 1e-300},
        {"positive_rate": float("inf")},
        {"positive_share": "0.5; rm -rf /"},
        {"public_scores": "False", "positive_rate": 0.3},  # parsed False: the split applies
    ],
)
def test_extreme_options_never_escape_as_raw_errors(options):
    try:
        mechanism = get_mechanism("tree-histogram", epsilon=1.0, num_thresholds=15, **options)
    except ValueError as error:
        assert "\n" not in str(error) and "option" in str(error)
        return
    assert mechanism.public_scores is False and mechanism.positive_share != 0.5
