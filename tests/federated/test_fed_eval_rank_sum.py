"""``build_fed_eval`` with DPAUC's ROC default (``rank-sum``): the rank sum over clients as
two secure sums inside one metrics aggregation (issue 32 item 3)."""

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
from dpauc_tf.federated.learning import build_rank_sum_rounds  # noqa: E402
from dpauc_tf.mechanisms.rank_sum import RankSum, rank_sum_statistics  # noqa: E402
from dpauc_tf.mechanisms.release import ReleaseSpec  # noqa: E402
from dpauc_tf.mechanisms.secure_rank_sum import SecureRankSum  # noqa: E402
from dpauc_tf.simulation import simulate  # noqa: E402
from tests.helpers.tff_models import client_datasets, linear_clients, model_fn_with  # noqa: E402

pytestmark = pytest.mark.federated
K = 5  # clients
RESOLUTION = 63
OPTIONS = {"resolution": RESOLUTION}


@pytest.fixture(scope="module")
def clients():
    return linear_clients(K, seed=3)


def _client_counts(clients):
    """Per-client counts ``[K, R + 1]`` on the rank sum's own grid (scores = sigmoid(x0))."""
    grid = RankSum(epsilon=1.0, resolution=RESOLUTION).count_thresholds(Thresholds.make(200))
    counts = [bucket_counts(y, tf.sigmoid(x[:, 0]), grid, dtype=tf.float64) for x, y in clients]
    return np.stack([c[0] for c in counts]), np.stack([c[1] for c in counts])


def _evaluation(metrics, num_clients=K, report=True):
    model_fn = model_fn_with(metrics)
    process = build_dpauc_metrics_aggregation_process(
        model_fn, num_clients=num_clients, report_noisy_counts=report
    )
    return tff.learning.algorithms.build_fed_eval(model_fn, metrics_aggregation_process=process)


def test_the_roc_default_runs_as_the_secure_rank_sum_and_equals_the_central_one(clients):
    """DPAUC(epsilon=...)'s default: no refusal; with noise negligible, the pooled rank-sum
    AUC; the server's release is what the central release holds; no value over rounds."""
    evaluation = _evaluation(lambda: [DPAUC(epsilon=1e9, mechanism_options=OPTIONS)])
    state = evaluation.initialize()
    for _ in range(2):
        out = evaluation.next(state, client_datasets(clients))
        state = out.state
    metrics = out.metrics["client_work"]["eval"]
    current, total = metrics["current_round_metrics"], metrics["total_rounds_metrics"]
    pos, neg = _client_counts(clients)
    central = rank_sum_statistics(*(tf.constant(c.sum(0), tf.float64) for c in (pos, neg)))
    expected = float(RankSum(epsilon=1e9, resolution=RESOLUTION).estimate_auc(central))
    dp = current["dp_auc"]
    assert dp["auc"] == pytest.approx(expected, abs=1e-6)
    assert dp["num_reporting"] == K
    for key in ("rank_sum", "num_pos", "total", "sensitivity"):
        assert dp[key] == pytest.approx(float(central[key]), abs=1e-6), key
    assert np.isnan(total["dp_auc"]["auc"])  # rank sums of separately ranked rounds don't add
    assert 0.0 < current["binary_accuracy"] <= 1.0  # other metrics keep TFF's default


def test_the_noise_has_the_simulation_law_and_a_halved_or_doubled_scale_fails(clients):
    """120 releases: the AUCs match the simulation's secure-rank-sum (two-sample KS), and the
    noise on S and on P has the stated variance: a halved or doubled scale (variance x 1/4
    or x 4) falls outside the bounds."""
    copies, rounds = 12, 10
    evaluation = _evaluation(
        lambda: [
            DPAUC(epsilon=1.0, mechanism_options=OPTIONS, name=f"dp{i}") for i in range(copies)
        ]
    )
    state, datasets, releases = evaluation.initialize(), client_datasets(clients), []
    for _ in range(rounds):
        current = evaluation.next(state, datasets).metrics["client_work"]["eval"]
        releases += [current["current_round_metrics"][f"dp{i}"] for i in range(copies)]
    pos, neg = _client_counts(clients)
    central = rank_sum_statistics(*(tf.constant(c.sum(0), tf.float64) for c in (pos, neg)))
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, options=OPTIONS, seed=1)
    simulated = simulate(spec, pos, neg, repeats=3000).aucs
    aucs = [r["auc"] for r in releases]
    assert stats.ks_2samp(aucs, simulated).pvalue > 1e-3
    stated = spec.build(K).noise_variances({"sensitivity": float(central["sensitivity"])})
    for key in ("rank_sum", "num_pos"):
        residuals = np.array([r[key] for r in releases]) - float(central[key])
        ratio = float(np.mean(residuals**2) / stated[key])
        assert 0.55 < ratio < 1.8, (key, ratio)  # a halved / doubled scale: 0.25 / 4


def test_shares_sized_for_more_clients_release_with_a_finite_achieved_epsilon_or_nan(clients):
    """K report: shares sized for K + 1 still give an epsilon (the release is kept, its
    figure is achieved_epsilon(K)); sized for 2 K (half arrived) none holds: NaN."""
    for sized, defined in ((K + 1, True), (2 * K, False)):
        evaluation = _evaluation(
            lambda: [DPAUC(epsilon=1.0, mechanism_options=OPTIONS)], num_clients=sized
        )
        out = evaluation.next(evaluation.initialize(), client_datasets(clients))
        dp = out.metrics["client_work"]["eval"]["current_round_metrics"]["dp_auc"]
        assert dp["num_reporting"] == K
        assert np.isfinite(dp["num_pos"]) == defined
        mechanism = SecureRankSum(epsilon=1.0, num_clients=sized, resolution=RESOLUTION)
        assert np.isfinite(mechanism.achieved_epsilon(K)) == defined


def test_a_client_lost_between_the_rounds_gives_nan_and_no_num_clients_is_refused():
    mechanism = SecureRankSum(epsilon=1.0, num_clients=2, resolution=3)
    value_type = tff.StructWithPythonType(
        [
            (
                "dp_auc",
                tff.StructWithPythonType(
                    [
                        (None, tff.TensorType(np.float64, [4])),
                        (None, tff.TensorType(np.float64, [4])),
                    ],
                    list,
                ),
            )
        ],
        collections.OrderedDict,
    )
    _, _, _, release = build_rank_sum_rounds({"dp_auc": mechanism}, value_type)
    totals = collections.OrderedDict(dp_auc=np.array([1, 2, 0, 1], np.int64))
    reports = collections.OrderedDict(
        dp_auc=collections.OrderedDict(twice_rank_sum=np.int64(3), num_pos=np.int64(2),
                                       num_examples=np.int64(3))
    )  # fmt: skip
    lost = release(totals, reports, 2)["dp_auc"]  # round two summed 3 of round one's 4
    assert np.isnan(lost["rank_sum"]) and np.isnan(lost["num_pos"]) and lost["total"] == 4.0
    reports["dp_auc"]["num_examples"] = np.int64(4)
    kept = release(totals, reports, 2)["dp_auc"]
    assert kept["rank_sum"] == 1.5 and kept["num_pos"] == 2.0
    with pytest.raises(ValueError, match="pass num_clients=") as error:
        build_dpauc_metrics_aggregation_process(
            model_fn_with(lambda: [DPAUC(epsilon=1.0, mechanism_options=OPTIONS)])
        )
    assert "\n" not in str(error.value) and "'secure-rank-sum'" in str(error.value)
