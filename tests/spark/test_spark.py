"""dpauc_tf.spark on a local Spark: equal to the simulation without noise, the same
distribution with noise, and hostile input refused (one session for the module)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("pyspark")
pd = pytest.importorskip("pandas")

from dpauc_tf.mechanisms.release import ReleaseSpec  # noqa: E402
from dpauc_tf.simulation import client_histograms, simulate  # noqa: E402

K = 10


def _non_iid(n=4000, seed=0):
    """K clients of different sizes, base rates and score shifts; three slices."""
    rng = np.random.default_rng(seed)
    client = rng.choice(K, n, p=np.arange(1, K + 1) / np.arange(1, K + 1).sum())
    label = (rng.random(n) < 0.1 + 0.08 * client).astype(np.int64)
    score = np.clip(0.25 + 0.3 * label + 0.03 * client + rng.normal(0, 0.2, n), 0, 1)
    group = np.array(["a", "b", "c"])[(client + rng.integers(0, 2, n)) % 3]
    return pd.DataFrame({"score": score, "label": label, "client": client, "group": group})


@pytest.fixture(scope="module")
def data():
    return _non_iid()


@pytest.fixture(scope="module")
def frame(spark, data):
    return spark.createDataFrame(data).repartition(3).cache()


def _simulated(data, spec, num_clients, seed=None, repeats=1):
    grid = spec.count_grid()
    clients = data["client"].to_numpy() if num_clients > 1 else np.zeros(len(data), int)
    pos, neg = client_histograms(
        data["label"].to_numpy(), data["score"].to_numpy(), grid, clients, num_clients
    )
    return simulate(spec.build(num_clients), pos, neg, seed=seed, repeats=repeats)


def test_noise_off_equals_simulate_for_k_non_iid_clients_and_slices(frame, data):
    from dpauc_tf.spark import private_auc, private_auc_by_slice

    spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=50)
    central = private_auc(frame, mechanism="none", epsilon=None, num_thresholds=50)
    clients = private_auc(
        frame, client_col="client", mechanism="none", epsilon=None, num_thresholds=50
    )
    for result, num_clients in ((central, 1), (clients, K)):
        expected = _simulated(data, spec, num_clients)
        assert result.aucs.tolist() == expected.aucs.tolist()
        np.testing.assert_array_equal(result.fpr, expected.fpr)
        np.testing.assert_array_equal(result.tpr, expected.tpr)
        assert result.num_examples == len(data)
    assert clients.num_clients == K
    by_slice = private_auc_by_slice(
        frame, "group", client_col="client", mechanism="none", epsilon=None, num_thresholds=50
    )
    assert sorted(by_slice) == ["a", "b", "c"]
    for key, result in by_slice.items():
        part = data[data["group"] == key]
        present = sorted(part["client"].unique())
        part = part.assign(client=part["client"].map({c: i for i, c in enumerate(present)}))
        expected = _simulated(part, spec, len(present))
        assert result.aucs.tolist() == expected.aucs.tolist(), key
        assert result.num_clients == len(present) and result.slice_key == key


def test_noisy_aucs_have_the_simulated_distribution(frame, data):
    from scipy.stats import ks_2samp

    from dpauc_tf.spark import private_auc

    settings = {"mechanism": "histogram", "epsilon": 0.5, "num_thresholds": 20}
    spec = ReleaseSpec.make(**settings)
    for client_col, num_clients in ((None, 1), ("client", K)):
        mine = private_auc(frame, client_col=client_col, seed=3, repeats=400, **settings)
        theirs = _simulated(data, spec, num_clients, seed=4, repeats=400)
        assert mine.repeats == 400 and np.std(mine.aucs) > 0
        assert ks_2samp(mine.aucs, theirs.aucs).pvalue > 0.001, client_col
        # a wrong noise scale is caught: twice (or half) the noise is another distribution
        for wrong in (0.25, 1.0):
            other = ReleaseSpec.make(**{**settings, "epsilon": wrong})
            theirs = _simulated(data, other, num_clients, 5, 800).aucs
            assert ks_2samp(mine.aucs, theirs).pvalue < 0.001, (client_col, wrong)


def test_seeds_reproduce_and_differ_per_slice(frame):
    from dpauc_tf.spark import private_auc_by_slice

    settings = {"mechanism": "histogram", "epsilon": 1.0, "num_thresholds": 20}
    settings["max_slices_per_example"] = 1
    first = private_auc_by_slice(frame, "group", seed=7, **settings)
    again = private_auc_by_slice(frame, "group", seed=7, **settings)
    assert {k: v.auc for k, v in first.items()} == {k: v.auc for k, v in again.items()}
    noise = {k: v.noisy_counts["pos"] for k, v in first.items()}
    assert len({tuple(np.round(v[0] - np.round(v[0]), 9)) for v in noise.values()}) == 3


def test_slice_accounting_is_the_worst_case_unless_declared(frame):
    from dpauc_tf.spark import DPAUCEvaluator

    worst = DPAUCEvaluator(sliceCol="group", epsilon=1.0, numThresholds=10, seed=0)
    declared = DPAUCEvaluator(
        sliceCol="group", epsilon=1.0, numThresholds=10, seed=0, maxSlicesPerExample=1
    )
    for result in worst.evaluateResults(frame).values():
        assert result.slices_per_example == 3
        assert result.epsilon == 1.0 and result.epsilon_total == pytest.approx(3.0)
    for result in declared.evaluateResults(frame).values():
        assert result.epsilon_total == pytest.approx(1.0)
    with pytest.raises(ValueError, match="evaluateResults"):
        worst.evaluate(frame)


def test_evaluator_is_private_auc(frame):
    from dpauc_tf.spark import DPAUCEvaluator, private_auc

    evaluator = DPAUCEvaluator(
        rawPredictionCol="score", labelCol="label", epsilon=1.0, numThresholds=30, seed=11
    )
    assert evaluator.isLargerBetter()
    value = evaluator.evaluate(frame)
    assert value == private_auc(frame, epsilon=1.0, num_thresholds=30, seed=11).auc


def test_auc_only_counts_on_its_own_grid_and_refuses_clients(frame, data):
    from dpauc_tf.spark import private_auc

    spec = ReleaseSpec.make("auc-only", epsilon=1.0, delta=1e-6, num_thresholds=20)
    assert spec.count_grid().num_thresholds != 20  # its own grid: counted there
    result = private_auc(
        frame, mechanism="auc-only", epsilon=1.0, delta=1e-6, num_thresholds=20, seed=0
    )
    assert result.noisy_counts and not result.has_curve
    exact = private_auc(frame, mechanism="none", epsilon=None, num_thresholds=5000)
    assert abs(result.auc - exact.auc) < 0.1
    with pytest.raises(ValueError, match="cannot sum"):
        private_auc(frame, client_col="client", mechanism="auc-only", epsilon=1.0, delta=1e-6)


def _frame(spark, rows, schema="score double, label double, weight double, s string"):
    return spark.createDataFrame(rows, schema)


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([(0.5, 1.0, 1.0, "a"), (None, 0.0, 1.0, "a")], "1 row.* 'score' hold null scores"),
        ([(0.5, 1.0, 1.0, "a"), (0.5, None, 1.0, "a")], "'label' hold null labels"),
        ([(0.5, 1.0, 1.0, "a"), (0.5, 0.0, 1.0, None)], "'s' hold null slice"),
        ([(0.5, 1.0, 1.0, "a"), (0.5, 2.0, 1.0, "a")], "labels other than 0 or 1"),
        ([(0.5, 1.0, 1.0, "a"), (float("nan"), 0.0, 1.0, "a")], "NaN or outside"),
        ([(0.5, 1.0, 1.0, "a"), (1.5, 0.0, 1.0, "a")], "NaN or outside"),
        ([(0.5, 1.0, 1.0, "a"), (0.5, 0.0, 2.0, "a")], "weights outside"),
        ([(0.5, 1.0, 1.0, "a"), (0.5, 0.0, float("nan"), "a")], "weights outside"),
    ],
)
def test_hostile_rows_are_refused(spark, rows, match):
    from dpauc_tf.spark import private_auc_by_slice

    frame = _frame(spark, rows).repartition(4)  # empty partitions too
    with pytest.raises(ValueError, match=match):
        private_auc_by_slice(frame, "s", weight_col="weight", epsilon=1.0, num_thresholds=10)


def test_integer_noise_refuses_fractional_weights(spark):
    from dpauc_tf.spark import private_auc

    frame = _frame(spark, [(0.5, 1.0, 0.5, "a"), (0.2, 0.0, 1.0, "a")])
    with pytest.raises(ValueError, match="fractional weights"):
        private_auc(
            frame, weight_col="weight", mechanism="secure-histogram", epsilon=1.0, num_thresholds=10
        )
    weighted = private_auc(
        frame, weight_col="weight", mechanism="none", epsilon=None, num_thresholds=10
    )
    assert weighted.num_examples == 2  # rows, not the weights' sum (issue 30)


@pytest.mark.parametrize("mechanism", ["rank-sum", "histogram-public-scores", "rr"])
def test_label_free_totals_refuse_weights_other_than_1(spark, mechanism):
    """Issue 30: a weight that depends on the label would show in the totals these release
    as label-free; the weight column must hold 1s. num_examples counts rows: with
    class-weight-like weights (positives 0.5) the weights' sum would give the positives."""
    from dpauc_tf.spark import private_auc

    rows = [(0.9, 1.0, 0.5, "a"), (0.2, 0.0, 1.0, "a"), (0.6, 1.0, 0.5, "a")]
    frame = _frame(spark, rows)
    with pytest.raises(ValueError, match="weights other than 1"):
        private_auc(frame, weight_col="weight", mechanism=mechanism, epsilon=1.0)
    hist = private_auc(frame, weight_col="weight", mechanism="histogram", epsilon=1.0, seed=0)
    assert hist.num_examples == 3


def test_empty_partitions_one_class_and_empty_frames(spark):
    from dpauc_tf.spark import private_auc, private_auc_by_slice

    rows = [(0.9, 1.0, 1.0, "both"), (0.1, 0.0, 1.0, "both"), (0.7, 1.0, 1.0, "pos-only")]
    frame = _frame(spark, rows).repartition(8)  # most partitions are empty
    out = private_auc_by_slice(frame, "s", mechanism="none", epsilon=None, num_thresholds=10)
    assert out["both"].auc == 1.0
    assert out["pos-only"].auc_or_none is None and math.isnan(out["pos-only"].auc)
    empty = _frame(spark, [])
    with pytest.raises(ValueError, match="no rows"):
        private_auc(empty, epsilon=1.0, num_thresholds=10)
    with pytest.raises(ValueError, match="no rows"):
        private_auc(frame.filter("score > 2"), epsilon=1.0, num_thresholds=10)


def test_bad_settings_are_refused_before_any_job(spark, frame):
    from dpauc_tf.spark import DPAUCEvaluator, private_auc

    with pytest.raises(ValueError, match="changes every example"):
        private_auc(frame, mechanism="score-noise", epsilon=1.0)
    with pytest.raises(ValueError, match="changes every example"):
        DPAUCEvaluator(mechanism="score-noise", epsilon=1.0)
    with pytest.raises(ValueError, match="no column 'prob'"):
        private_auc(frame, score_col="prob", epsilon=1.0)
    with pytest.raises(ValueError, match="must be numeric"):
        private_auc(frame, label_col="group", epsilon=1.0)
    with pytest.raises(ValueError, match="repeats"):
        private_auc(frame, epsilon=1.0, repeats=0)
