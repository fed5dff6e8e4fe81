"""Federated DP-AUC in TFF: exactness, noise scaling, secure sum, build_fed_eval, MapReduce."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

tff = pytest.importorskip("tensorflow_federated")

import tensorflow as tf  # noqa: E402

from dpauc_tf import DPAUC  # noqa: E402
from dpauc_tf.core.counts import bucket_counts  # noqa: E402
from dpauc_tf.core.partitions import iid_partition, non_iid_partition  # noqa: E402
from dpauc_tf.core.thresholds import Thresholds  # noqa: E402
from dpauc_tf.federated import (  # noqa: E402
    build_dpauc_metrics_aggregation_process,
    client_data_from_partition,
    computations,
    evaluate,
)
from dpauc_tf.mechanisms import get_mechanism  # noqa: E402

pytestmark = pytest.mark.federated


def _scores_labels(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype(np.float32)
    scores = 1 / (1 + np.exp(-(rng.normal(size=n) + labels)))
    return scores.astype(np.float32), labels


@pytest.mark.parametrize("kind", ["iid", "non-iid"])
def test_noise_off_equals_tf_auc_on_pooled_data(kind):
    scores, labels = _scores_labels()
    reference = tf.keras.metrics.AUC(num_thresholds=100)
    reference.update_state(labels, scores)
    for k in (1, 10, 100):
        ids = (
            iid_partition(scores.size, k, seed=k) if kind == "iid" else non_iid_partition(scores, k)
        )
        out = evaluate(
            client_data_from_partition(scores, labels, ids, k),
            mechanism="histogram",
            epsilon=None,
            num_thresholds=100,
        )
        assert abs(out.auc - float(reference.result())) < 1e-6
        assert out.num_reporting == k and out.epsilon is None
        assert np.all(np.diff(out.fpr[0]) >= 0) and out.fpr.shape == (1, 100)


def _noise_variance(mechanism, k, scores, labels, seeds, **kwargs):
    ids = iid_partition(scores.size, k, seed=0)
    clients = client_data_from_partition(scores, labels, ids, k)
    pos, neg = bucket_counts(labels, scores, Thresholds.make(100), dtype=tf.float64)
    residuals = []
    for seed in seeds:
        out = evaluate(
            clients, mechanism=mechanism, epsilon=1.0, num_thresholds=100, seed=seed, **kwargs
        )
        residuals += [out.noisy_counts["pos"] - pos.numpy(), out.noisy_counts["neg"] - neg.numpy()]
    return float(np.var(np.concatenate(residuals))), out


def test_local_dp_noise_variance_grows_linearly_and_secure_does_not():
    scores, labels = _scores_labels(500)
    # histogram: Laplace(2) per client and count, variance 8 K; 3 seeds x 202 counts.
    for k in (1, 20):
        variance, out = _noise_variance("histogram", k, scores, labels, seeds=(1, 2, 3))
        assert 0.7 < variance / (8.0 * k) < 1.4, (k, variance)
        assert out.epsilon == 1.0 and out.num_reporting == k
    # secure-histogram: one discrete Laplace(2) in total (variance 7.84) for any K.
    mechanism = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=100)
    for k in (1, 20):
        variance, out = _noise_variance("secure-histogram", k, scores, labels, seeds=(1, 2, 3))
        assert 0.7 < variance / mechanism.noise_stddev**2 < 1.4, (k, variance)
        assert out.epsilon == 1.0


def test_secure_dropout_is_reported():
    scores, labels = _scores_labels(500)
    clients = client_data_from_partition(scores, labels, iid_partition(500, 10, seed=0), 10)
    out = evaluate(
        clients, mechanism="secure-histogram", epsilon=1.0, num_thresholds=20, seed=0, dropout=0.3
    )
    assert out.num_reporting == 7 and out.epsilon == 1.0  # shares sized for 7
    short = evaluate(
        clients,
        mechanism="secure-histogram",
        epsilon=1.0,
        num_thresholds=20,
        seed=0,
        dropout=0.3,
        secure_shares=10,
    )
    assert short.num_reporting == 7 and short.epsilon > 1.0  # the shortfall is reported


def test_seeds_reproduce_and_none_is_fresh():
    scores, labels = _scores_labels(300)
    clients = client_data_from_partition(scores, labels, iid_partition(300, 5, seed=0), 5)
    a = evaluate(clients, mechanism="paper", epsilon=1.0, num_thresholds=20, seed=4)
    b = evaluate(clients, mechanism="paper", epsilon=1.0, num_thresholds=20, seed=4)
    c = evaluate(clients, mechanism="paper", epsilon=1.0, num_thresholds=20)
    # NaN (an undefined estimate: noise made a class total <= 0) must reproduce too
    np.testing.assert_equal(a.auc, b.auc)
    np.testing.assert_array_equal(a.noisy_counts["tp"], b.noisy_counts["tp"])
    # fresh noise without a seed (the counts: at this noise the AUC is often clipped to 0 or 1)
    assert not np.array_equal(a.noisy_counts["tp"], c.noisy_counts["tp"])
    assert a.epsilon == 0.5  # the tight figure for the paper's noise (claimed 1.0)
    with pytest.raises(ValueError, match="unknown mechanism 'laplace'"):
        evaluate(clients, mechanism="laplace", epsilon=1.0)
    with pytest.raises(ValueError, match=r"cannot run in dpauc_tf\.federated\.evaluate"):
        evaluate(clients, mechanism="score-noise", epsilon=1.0)


def test_rr_federated_runs_and_debiases():
    scores, labels = _scores_labels(3000)
    clients = client_data_from_partition(scores, labels, iid_partition(3000, 4, seed=0), 4)
    exact = evaluate(clients, mechanism="histogram", epsilon=None, num_thresholds=100).auc
    runs = [
        evaluate(clients, mechanism="rr", epsilon=3.0, num_thresholds=100, seed=s) for s in range(5)
    ]
    assert all(r.mechanism == "rr" and r.epsilon == 3.0 for r in runs)
    assert abs(np.mean([r.auc for r in runs]) - exact) < 0.03


def test_mapreduce_form_compiles_for_local_and_secure_sums():
    thresholds = Thresholds.make(11)
    local = get_mechanism("histogram", epsilon=1.0, num_thresholds=11)
    secure = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=11, num_clients=5)
    for mechanism, bitwidth in ((local, None), (secure, 32)):
        step = computations.build_mapreduce_evaluation(
            mechanism, thresholds, secure_bitwidth=bitwidth
        )
        form = tff.backends.mapreduce.get_map_reduce_form_for_computation(step)
        assert isinstance(form, tff.backends.mapreduce.MapReduceForm)
        assert form.work is not None and form.report is not None


def _keras_model_fn(dpauc_epsilon, mechanism="histogram"):
    spec = (tf.TensorSpec([None, 2], tf.float32), tf.TensorSpec([None, 1], tf.float32))

    def model_fn():
        dense = tf.keras.layers.Dense(
            1,
            activation="sigmoid",
            kernel_initializer=tf.keras.initializers.Constant([[1.0], [0.0]]),
        )
        keras_model = tf.keras.Sequential([tf.keras.layers.Input((2,)), dense])
        return tff.learning.models.from_keras_model(
            keras_model,
            loss=tf.keras.losses.BinaryCrossentropy(),
            input_spec=spec,
            metrics=[
                DPAUC(epsilon=dpauc_epsilon, num_thresholds=50, name="dp_auc", mechanism=mechanism),
                tf.keras.metrics.AUC(num_thresholds=50, name="auc"),
                tf.keras.metrics.BinaryAccuracy(),
            ],
        )

    return model_fn


def test_the_roc_default_says_what_build_fed_eval_needs_for_it():
    """DPAUC(epsilon=...)'s ROC default (rank-sum) runs over clients as secure-rank-sum, whose
    shares need the number of clients: without it, one line naming num_clients=
    (tests/federated/test_fed_eval_rank_sum.py runs it)."""
    with pytest.raises(ValueError, match=r"'rank-sum'.*'secure-rank-sum'.*num_clients="):
        build_dpauc_metrics_aggregation_process(_keras_model_fn(1.0, mechanism=None))


def test_build_fed_eval_adds_client_noise_once_and_keeps_other_metrics():
    rng = np.random.default_rng(0)
    clients = []
    for _ in range(10):
        x = rng.normal(size=(100, 2)).astype(np.float32)
        y = (x[:, :1] + rng.normal(size=(100, 1)) > 0).astype(np.float32)
        clients.append(tf.data.Dataset.from_tensor_slices((x, y)).batch(50))
    model_fn = _keras_model_fn(1.0)
    process = build_dpauc_metrics_aggregation_process(model_fn, report_noisy_counts=True)
    evaluation = tff.learning.algorithms.build_fed_eval(
        model_fn, metrics_aggregation_process=process
    )
    default = tff.learning.algorithms.build_fed_eval(_keras_model_fn(None))
    exact = default.next(default.initialize(), clients).metrics["client_work"]["eval"]
    exact = exact["current_round_metrics"]
    residuals = []
    for _ in range(3):
        out = evaluation.next(evaluation.initialize(), clients).metrics["client_work"]["eval"]
        metrics = out["current_round_metrics"]
        for key in ("auc", "binary_accuracy", "loss", "num_examples"):
            assert metrics[key] == pytest.approx(exact[key])
        dp = metrics["dp_auc"]
        assert 0.0 <= dp["auc"] <= 1.0 and dp["auc"] != pytest.approx(exact["dp_auc"], abs=1e-9)
        # exact DPAUC counts: the noise-free metric's counts are what the default sums
        residuals.append(dp["positives"] + dp["negatives"])
    # Sum of pos+neg per bucket: noise variance 10 clients x 2 counts x Laplace(2) = 160.
    totals = np.stack(residuals)
    exact_totals = _exact_bucket_totals(clients)
    variance = float(np.var(totals - exact_totals))
    assert 0.6 * 160 < variance < 1.6 * 160, variance


def _exact_bucket_totals(clients):
    thresholds = Thresholds.make(50)
    totals = np.zeros(51)
    for dataset in clients:
        for x, y in dataset:
            scores = tf.sigmoid(x[:, 0])
            pos, neg = bucket_counts(y, scores, thresholds, dtype=tf.float64)
            totals += (pos + neg).numpy()
    return totals


def test_worker_binary_is_gone_after_shutdown(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        "import os, subprocess, numpy as np\n"
        "from dpauc_tf.federated import evaluate, shutdown_tff_workers\n"
        "evaluate([(np.array([0.2, 0.7]), np.array([0, 1]))], epsilon=None, num_thresholds=5)\n"
        "def workers():\n"
        "    out = subprocess.run(['pgrep', '-P', str(os.getpid())], capture_output=True, text=True)\n"
        "    return [p for p in out.stdout.split() if p]\n"
        "before = workers()\n"
        "shutdown_tff_workers()\n"
        "import time; time.sleep(1)\n"
        "print('BEFORE', len(before), 'AFTER', len(workers()))\n"
    )
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=240
    )
    assert "BEFORE 1 AFTER 0" in result.stdout, result.stdout + result.stderr[-2000:]


def test_invalid_client_data_is_a_value_error_naming_the_client():
    good = (np.array([0.2, 0.7]), np.array([0, 1]))
    # before: a gRPC error from inside TFF's worker
    with pytest.raises(ValueError, match="client 1: labels must be 0 or 1"):
        evaluate([good, (np.array([0.3]), np.array([2]))], epsilon=None, num_thresholds=5)
    with pytest.raises(ValueError, match=r"client 2: scores must be in \[0, 1\]"):
        evaluate([good, good, (np.array([1.5]), np.array([1]))], epsilon=None, num_thresholds=5)
    dataset = tf.data.Dataset.from_tensor_slices({"score": [0.1, 0.4], "label": [1.0, 3.0]})
    with pytest.raises(ValueError, match="client 0: labels must be 0 or 1"):
        evaluate([dataset, good], epsilon=None, num_thresholds=5)
    with pytest.raises(ValueError, match="client 0: scores and labels must not be NaN"):
        evaluate([(np.array([np.nan]), np.array([1]))], epsilon=None, num_thresholds=5)


def test_statement_is_the_achieved_guarantee_under_dropout():
    scores, labels = _scores_labels(300)
    clients = client_data_from_partition(scores, labels, iid_partition(300, 10, seed=1), 10)
    short = evaluate(
        clients,
        mechanism="secure-histogram",
        epsilon=1.0,
        num_thresholds=10,
        seed=0,
        dropout=0.3,
        secure_shares=10,
    )
    # before: statement.epsilon was the target 1.0 while .epsilon was the achieved one
    assert short.epsilon > 1.0 and short.statement.epsilon == short.epsilon
    assert "only 7 of 10 shares reported" in short.statement.noise
    assert f"({short.epsilon:g}, 0)-DP" in str(short.statement)
