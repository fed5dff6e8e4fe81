"""Secure mechanisms in ``build_fed_eval`` (integer shares, secure sum) and the refused default."""

from __future__ import annotations

import collections

import numpy as np
import pytest

tff = pytest.importorskip("tensorflow_federated")

import tensorflow as tf  # noqa: E402
from scipy import stats  # noqa: E402

from dpauc_tf import DPAUC  # noqa: E402
from dpauc_tf.core.counts import bucket_counts  # noqa: E402
from dpauc_tf.core.thresholds import Thresholds  # noqa: E402
from dpauc_tf.federated import build_dpauc_metrics_aggregation_process  # noqa: E402
from dpauc_tf.federated.learning import build_client_reports  # noqa: E402
from dpauc_tf.mechanisms import get_mechanism  # noqa: E402
from dpauc_tf.simulation import simulate  # noqa: E402
from tests.helpers.tff_models import client_datasets, linear_clients, model_fn_with  # noqa: E402

pytestmark = pytest.mark.federated

T = 20  # thresholds
K = 5  # clients


@pytest.fixture(scope="module")
def clients():
    return linear_clients(K, seed=0)


def _client_counts(clients):
    """Exact per-client bucket counts ``[K, T + 1]`` (scores = sigmoid(x0), as the model)."""
    thresholds = Thresholds.make(T)
    counts = [
        bucket_counts(y, tf.sigmoid(x[:, 0]), thresholds, dtype=tf.float64) for x, y in clients
    ]
    return np.stack([c[0] for c in counts]), np.stack([c[1] for c in counts])


SECURE = {
    "dp_auc": ("secure-histogram", None),
    "dp_auc_skellam": ("secure-histogram", {"family": "skellam"}),
    "dp_auc_tree": ("secure-tree-histogram", None),
}


def _secure_metrics(epsilon):
    return [
        DPAUC(
            epsilon=epsilon,
            delta=1e-6 if options else None,
            num_thresholds=T,
            mechanism=mechanism,
            mechanism_options=options,
            name=name,
        )
        for name, (mechanism, options) in SECURE.items()
    ]


def _union_auc(clients):
    reference = tf.keras.metrics.AUC(num_thresholds=T)
    for x, y in clients:
        reference.update_state(y, tf.sigmoid(x[:, :1]))
    return float(reference.result())


def test_secure_noise_off_equals_tf_auc_on_the_union(clients):
    # A huge epsilon makes every integer share 0: the secure arithmetic with noise off.
    model_fn = model_fn_with(lambda: _secure_metrics(1e9))
    process = build_dpauc_metrics_aggregation_process(
        model_fn, num_clients=K, report_noisy_counts=True
    )
    evaluation = tff.learning.algorithms.build_fed_eval(
        model_fn, metrics_aggregation_process=process
    )
    state = evaluation.initialize()
    for _ in range(2):
        out = evaluation.next(state, client_datasets(clients))
        state = out.state
    metrics = out.metrics["client_work"]["eval"]
    current, total = metrics["current_round_metrics"], metrics["total_rounds_metrics"]
    for name in SECURE:
        assert current[name]["auc"] == pytest.approx(_union_auc(clients), abs=1e-6), name
        assert total[name]["auc"] == pytest.approx(_union_auc(clients), abs=1e-6), name
        assert current[name]["num_reporting"] == K and total[name]["num_reporting"] == 2 * K
    pos, neg = _client_counts(clients)
    np.testing.assert_array_equal(current["dp_auc"]["positives"], pos.sum(0))
    np.testing.assert_array_equal(current["dp_auc"]["negatives"], neg.sum(0))
    np.testing.assert_array_equal(total["dp_auc"]["positives"], 2 * pos.sum(0))
    accuracy = tf.keras.metrics.BinaryAccuracy()
    for x, y in clients:
        accuracy.update_state(y, tf.sigmoid(x[:, :1]))
    assert current["binary_accuracy"] == pytest.approx(float(accuracy.result()), abs=1e-6)


NUM_COPIES, ROUNDS = 20, 15  # 300 independent releases: 20 DPAUC metrics x 15 rounds


def test_secure_noise_matches_the_simulation_and_a_halved_scale_does_not(clients):
    model_fn = model_fn_with(
        lambda: [
            DPAUC(epsilon=1.0, num_thresholds=T, mechanism="secure-histogram", name=f"dp{i}")
            for i in range(NUM_COPIES)
        ]
    )
    process = build_dpauc_metrics_aggregation_process(model_fn, num_clients=K)
    evaluation = tff.learning.algorithms.build_fed_eval(
        model_fn, metrics_aggregation_process=process
    )
    state, datasets, aucs = evaluation.initialize(), client_datasets(clients), []
    for _ in range(ROUNDS):
        current = evaluation.next(state, datasets).metrics["client_work"]["eval"]
        aucs += [current["current_round_metrics"][f"dp{i}"] for i in range(NUM_COPIES)]
    pos, neg = _client_counts(clients)

    def simulated(epsilon):
        mechanism = get_mechanism(
            "secure-histogram", epsilon=epsilon, num_thresholds=T, num_clients=K
        )
        return simulate(mechanism, pos, neg, seed=0, repeats=4000).aucs

    assert stats.ks_2samp(aucs, simulated(1.0)).pvalue > 1e-3
    # Half the noise scale (epsilon 2): the test must see it.
    assert stats.ks_2samp(aucs, simulated(2.0)).pvalue < 1e-2


def test_client_shares_are_integer_counts_plus_noise_on_each_client(clients):
    mechanism = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=T, num_clients=K)
    counts = tff.TensorType(np.float64, [T + 1])
    value_type = tff.StructWithPythonType(
        [("dp_auc", tff.StructWithPythonType([(None, counts), (None, counts)], list))],
        collections.OrderedDict,
    )
    summed, secure = build_client_reports({"dp_auc": mechanism}, value_type, secure_bitwidth=32)
    # What the secure sum receives from one client: int64 residues, DPAUC not in the plain sum.
    result_type = secure.type_signature.result["dp_auc"]
    assert {np.dtype(t.dtype) for t in result_type} == {np.dtype(np.int64)}
    assert "dp_auc" not in str(summed.type_signature.result)
    pos, neg = _client_counts(clients)
    residuals = []
    for _ in range(20):
        out = secure(collections.OrderedDict(dp_auc=[pos[0], neg[0]]))["dp_auc"]
        for key, exact in (("pos", pos[0]), ("neg", neg[0])):
            value = np.asarray(out[key])
            assert value.dtype == np.int64 and np.all((value >= 0) & (value < 2**32))
            signed = np.where(value >= 2**31, value - 2**32, value)
            residuals.append(signed - exact)
    residuals = np.concatenate(residuals)
    # One client's share: 1/K of the total discrete Laplace variance, integer, not zero.
    share_variance = mechanism.noise_stddev**2 / K
    assert 0.7 < np.var(residuals) / share_variance < 1.4
    assert np.all(residuals == np.round(residuals)) and np.any(residuals != 0)
    # The process sums those residues with the secure sum intrinsic.
    model_fn = model_fn_with(
        lambda: [DPAUC(epsilon=1.0, num_thresholds=T, mechanism="secure-histogram")]
    )
    process = build_dpauc_metrics_aggregation_process(model_fn, num_clients=K)
    assert "federated_secure_sum_bitwidth" in str(process.next.to_building_block())


def test_default_path_refuses_a_noisy_dpauc_and_secure_needs_num_clients():
    noisy = model_fn_with(lambda: [DPAUC(epsilon=1.0, num_thresholds=T)])
    # before: build_fed_eval(model_fn) ran, and every round's dp_auc was NaN
    with pytest.raises(ValueError, match="build_dpauc_metrics_aggregation_process"):
        tff.learning.algorithms.build_fed_eval(noisy)
    secure = model_fn_with(
        lambda: [DPAUC(epsilon=1.0, num_thresholds=T, mechanism="secure-histogram")]
    )
    with pytest.raises(ValueError, match="pass num_clients="):
        build_dpauc_metrics_aggregation_process(secure)
    tree = model_fn_with(lambda: [DPAUC(epsilon=1.0, num_thresholds=T, mechanism="tree-histogram")])
    with pytest.raises(ValueError, match="histogram and secure mechanisms only"):
        build_dpauc_metrics_aggregation_process(tree)
