"""One-vs-rest (multi-class) DP-AUC on Flower: the client reply, the server's sum (plain and
SecAgg+), DPAUCStrategy with ``num-classes``, noise and errors (in-process grid, no Ray)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")

from scipy import stats
from sklearn.metrics import roc_auc_score

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.flower import (
    DPAUCStrategy,
    evaluate_multiclass,
    evaluate_reply,
    release_config,
    release_from_config,
    secagg_evaluate_mod,
    spec_from_run_config,
)
from dpauc_tf.flower.local import run_in_process
from dpauc_tf.mechanisms.auc_only import grid_error_bound
from dpauc_tf.mechanisms.laws import Average
from dpauc_tf.mechanisms.multiclass import one_vs_rest_counts, to_one_hot
from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass as central
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec
from tests.helpers.scores import softmax_classes, split_among_clients
from tests.helpers.stats import discrete_laplace_pvalue

T = 20


def _run(clients, **kwargs):
    kwargs.setdefault("num_thresholds", T)
    return evaluate_multiclass(clients, engine="in-process", **kwargs)


def _residuals(out, labels, scores):
    pos, neg = one_vs_rest_counts(labels, scores, Thresholds.make(T))
    counts = out.noisy_counts
    return np.concatenate([(counts["pos"] - pos).ravel(), (counts["neg"] - neg).ravel()])


def test_noise_off_equals_the_central_release_and_scikit_learn():
    labels, scores = softmax_classes(600)
    clients = split_among_clients(labels, scores, 4)
    clients.append((np.zeros((0, 3)), np.zeros(0)))  # an empty client reports zeros
    clients[0] = (clients[0][0], to_one_hot(clients[0][1], 3))  # one-hot labels too
    out = _run(clients, epsilon=None)
    assert isinstance(out, AUCResult) and out.num_classes is not None
    reference = central(labels, scores, epsilon=None, num_thresholds=T)
    pos, neg = one_vs_rest_counts(labels, scores, Thresholds.make(T))
    per_class = np.array([grid_error_bound(p, n) for p, n in zip(pos, neg, strict=True)])
    bounds = {
        "macro": per_class.mean(),
        "weighted": (per_class * pos.sum(1)).sum() / pos.sum(),
        "micro": grid_error_bound(pos.sum(0), neg.sum(0)),
    }
    for average in Average.values():
        np.testing.assert_allclose(getattr(out, average), getattr(reference, average), atol=1e-12)
        exact = roc_auc_score(labels, scores, multi_class="ovr", average=average)
        assert abs(getattr(out, average)[0] - exact) <= bounds[average] + 1e-12
    np.testing.assert_allclose(out.class_aucs, reference.class_aucs, atol=1e-12)
    assert out.num_clients == out.num_reporting == 5 and out.num_examples == labels.size
    assert out.epsilon is None and out.mechanism == "one-vs-rest none"


def test_local_noise_is_laplace_of_the_class_change_sensitivity_per_client():
    labels, scores = softmax_classes(200)
    # local noise by name: with several clients Flower's default is the secure release
    one = _run([(scores, labels)], mechanism="histogram", epsilon=2.0, seed=3, repeats=150)
    noise = _residuals(one, labels, scores)
    assert stats.kstest(noise, stats.laplace(scale=2.0).cdf).pvalue > 1e-3  # 4 / epsilon
    for wrong in (1.0, 4.0):  # a halved (naive per-class budget) or doubled scale
        assert stats.kstest(noise, stats.laplace(scale=wrong).cdf).pvalue < 1e-10
    assert one.epsilon == 2.0 and one.epsilon_total == pytest.approx(300.0)
    four = _run(
        split_among_clients(labels, scores, 4),
        mechanism="histogram",
        epsilon=2.0,
        seed=4,
        repeats=60,
    )
    ratio = np.var(_residuals(four, labels, scores)) / (4 * 2 * 2.0**2)
    assert 0.8 < ratio < 1.25, ratio  # four draws in the sum; halved / doubled: 0.25 / 4


def test_secagg_shares_sum_to_one_discrete_laplace_and_dropouts_are_honest():
    labels, scores = softmax_classes(200)
    clients = split_among_clients(labels, scores, 4)
    out = _run(clients, epsilon=1.0, mechanism="secure-histogram", seed=6, repeats=60)
    noise = _residuals(out, labels, scores)
    assert np.all(noise == np.round(noise))
    assert discrete_laplace_pvalue(noise, 4.0) > 1e-3
    for wrong in (2.0, 8.0):
        assert discrete_laplace_pvalue(noise, wrong) < 1e-10
    assert out.epsilon == 1.0 and out.num_reporting == 4 and out.round_report.secagg is not None
    short = _run(clients, epsilon=1.0, mechanism="secure-histogram", seed=6, vanishing_clients=[1])
    assert short.num_reporting == 3 and short.epsilon > 1.0
    assert "only 3 of 4 shares reported" in short.statement.noise


def test_multiclass_release_travels_in_the_message_and_the_strategy_runs_it_every_round():
    from flwr.app import ArrayRecord
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp
    from flwr.serverapp.strategy import FedAvg

    spec = spec_from_run_config(
        {
            "num-classes": 3,
            "mechanism": "histogram",  # local noise (the default with clients is secure)
            "epsilon": 1.0,
            "num-thresholds": T,
            "average": "weighted",
        }
    )
    assert isinstance(spec, ReleaseSpec) and spec.one_vs_rest and spec.average == "weighted"
    back = release_from_config(release_config(spec, num_clients=4))
    assert back.spec == spec and back.multiclass and back.report_shapes()["pos"] == (1, 3, T + 1)
    labels, scores = softmax_classes(200)
    data = split_among_clients(labels, scores, 3)
    client = ClientApp()

    @client.evaluate(mods=[secagg_evaluate_mod])
    def evaluate(msg, context):
        part_scores, part_labels = data[int(context.node_config["partition-id"])]
        return evaluate_reply(msg, part_labels, part_scores)

    server, outcome = ServerApp(), {}

    @server.main()
    def main(grid, context):
        strategy = DPAUCStrategy(FedAvg(fraction_train=0.0), spec)
        outcome["strategy"] = strategy
        outcome["metrics"] = strategy.start(grid, ArrayRecord([np.zeros(2)]), num_rounds=2)

    run_in_process(server, client, 3)
    results = outcome["strategy"].results
    assert sorted(results) == [1, 2]
    for result in results.values():
        assert isinstance(result, AUCResult) and result.average == "weighted"
        assert result.epsilon == 1.0 and result.num_reporting == 3 and result.num_examples == 200
    metrics = outcome["strategy"].aggregate_evaluate(2, [])
    assert metrics["dpauc-weighted"] == pytest.approx(results[2].weighted[0], nan_ok=True)
    assert metrics["dpauc-auc"] == pytest.approx(results[2].weighted[0], nan_ok=True)


def test_bad_inputs_are_one_line_value_errors():
    labels, scores = softmax_classes(60)
    good = (scores, labels)
    cases = [
        ([], "at least one client"),
        ([(scores[:, 0], labels)], r"shape \[n, C\]"),
        ([good, (scores[:, :2], labels)], r"client 1: scores must have shape \[n, 3\]"),
        ([(scores[:, :1], labels * 0)], "num_classes must be >= 2"),
        ([good, (scores, labels + 3)], r"client 1: class ids must be integers in \[0, 3\)"),
        ([good, (scores * 2, labels)], r"client 1: scores must be finite and in \[0, 1\]"),
        ([(scores, labels[:10])], "client 0: 10 labels for 60 rows"),
    ]
    for clients, message in cases:
        with pytest.raises(ValueError, match=message):
            _run(clients, epsilon=None)
    with pytest.raises(ValueError, match="cannot release one-vs-rest counts"):
        _run([good], epsilon=1.0, mechanism="rr")
    with pytest.raises(ValueError, match="SecAgg\\+ needs at least 2 clients"):
        _run([good], epsilon=1.0, mechanism="secure-histogram")
