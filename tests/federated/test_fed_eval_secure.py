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
from dpauc_tf.experiments.simulation import simulate  # noqa: E402
from dpauc_tf.federated import build_dpauc_metrics_aggregation_process, computations  # noqa: E402
from dpauc_tf.federated.learning import build_client_reports  # noqa: E402
from dpauc_tf.mechanisms import get_mechanism  # noqa: E402

pytestmark = pytest.mark.federated

T = 20  # thresholds
K = 5  # clients
SPEC = (tf.TensorSpec([None, 2], tf.float32), tf.TensorSpec([None, 1], tf.float32))


def _model_fn(dpauc_metrics):
    def model_fn():
        dense = tf.keras.layers.Dense(
            1, activation="sigmoid", kernel_initializer=tf.keras.initializers.Constant([[1.0], [0.0]])
        )
        keras_model = tf.keras.Sequential([tf.keras.layers.Input((2,)), dense])
        return tff.learning.models.from_keras_model(
            keras_model,
            loss=tf.keras.losses.BinaryCrossentropy(),
            input_spec=SPEC,
            metrics=[*dpauc_metrics(), tf.keras.metrics.BinaryAccuracy()],
        )

    return model_fn


@pytest.fixture(scope="module")
def clients():
    rng = np.random.default_rng(0)
    out = []
    for _ in range(K):
        x = rng.normal(size=(80, 2)).astype(np.float32)
        y = (x[:, :1] + rng.normal(size=(80, 1)) > 0).astype(np.float32)
        out.append((x, y))
    return out


def _datasets(clients):
    return [tf.data.Dataset.from_tensor_slices(c).batch(40) for c in clients]


def _client_counts(clients):
    """Exact per-client bucket counts ``[K, T + 1]`` (scores = sigmoid(x0), as the model)."""
    thresholds = Thresholds.make(T)
    counts = [bucket_counts(y, tf.sigmoid(x[:, 0]), thresholds, dtype=tf.float64) for x, y in clients]
    return np.stack([c[0] for c in counts]), np.stack([c[1] for c in counts])


def _round(process_fn, model_fn, clients):
    evaluation = tff.learning.algorithms.build_fed_eval(
        model_fn, metrics_aggregation_process=process_fn()
    )
    return evaluation, evaluation.initialize()


@pytest.mark.parametrize(
    "mechanism, options",
    [
        ("secure-histogram", {}),
        ("secure-histogram", {"family": "skellam"}),
        ("secure-tree-histogram", {}),
    ],
)
def test_secure_noise_off_equals_tf_auc_on_the_union(clients, mechanism, options):
    # A huge epsilon makes every integer share 0: the secure arithmetic with noise off.
    delta = 1e-6 if options else None
    model_fn = _model_fn(
        lambda: [DPAUC(epsilon=1e9, delta=delta, num_thresholds=T, mechanism=mechanism,
                       mechanism_options=options or None, name="dp_auc")]
    )
    process = build_dpauc_metrics_aggregation_process(model_fn, num_clients=K, report_noisy_counts=True)
    evaluation = tff.learning.algorithms.build_fed_eval(model_fn, metrics_aggregation_process=process)
    out = evaluation.next(evaluation.initialize(), _datasets(clients)).metrics["client_work"]["eval"]
    current = out["current_round_metrics"]
    reference = tf.keras.metrics.AUC(num_thresholds=T)
    for x, y in clients:
        reference.update_state(y, tf.sigmoid(x[:, :1]))
    assert current["dp_auc"]["auc"] == pytest.approx(float(reference.result()), abs=1e-6)
    assert current["dp_auc"]["num_reporting"] == K
    if mechanism == "secure-histogram":
        pos, neg = _client_counts(clients)
        np.testing.assert_array_equal(current["dp_auc"]["positives"], pos.sum(0))
        np.testing.assert_array_equal(current["dp_auc"]["negatives"], neg.sum(0))
    accuracy = tf.keras.metrics.BinaryAccuracy()
    for x, y in clients:
        accuracy.update_state(y, tf.sigmoid(x[:, :1]))
    assert current["binary_accuracy"] == pytest.approx(float(accuracy.result()), abs=1e-6)
