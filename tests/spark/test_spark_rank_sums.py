"""The rank-sum releases over a DataFrame's clients on Spark (issue 32): ``secure-rank-sum``
in two rounds (round one's totals, every client's round-two report with the global ranks,
``finish``) and ``rank-sum`` with local noise; equal to the simulation with (almost) no
noise, the same distribution with noise, and hostile clients."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyspark")
pd = pytest.importorskip("pandas")

from sklearn.metrics import roc_auc_score  # noqa: E402

from dpauc_tf.mechanisms.release import ReleaseSpec  # noqa: E402
from dpauc_tf.simulation import client_histograms, simulate  # noqa: E402

K = 10
FINE = {"resolution": 1000}  # a small counting grid: fast tests, the same protocol
SCORE_GRID = 400  # scores at bucket midpoints of a 1/400 grid: no two meet in one bucket


def _clients(n=2000, seed=0):
    """K non-IID clients (sizes, base rates, shifts), scores on a grid coarser than the
    counting grid (so the fine-grid AUC is the exact AUC)."""
    rng = np.random.default_rng(seed)
    client = rng.choice(K, n, p=np.arange(1, K + 1) / np.arange(1, K + 1).sum())
    label = (rng.random(n) < 0.15 + 0.06 * client).astype(np.int64)
    raw = np.clip(0.3 + 0.25 * label + 0.02 * client + rng.normal(0, 0.2, n), 0, 0.999)
    score = (np.floor(raw * SCORE_GRID) + 0.5) / SCORE_GRID
    group = np.array(["a", "b"])[(client >= 7).astype(int)]  # clients 7-9 only in "b"
    return pd.DataFrame({"score": score, "label": label, "client": client, "group": group})


@pytest.fixture(scope="module")
def data():
    return _clients()


@pytest.fixture(scope="module")
def frame(spark, data):
    return spark.createDataFrame(data).repartition(3).cache()


def _simulated(data, spec, seed, repeats):
    grid = spec.count_grid()
    pos, neg = client_histograms(
        data["label"].to_numpy(), data["score"].to_numpy(), grid, data["client"].to_numpy(), K
    )
    mechanism = spec.build(K if spec.capabilities.secure else None)  # shares: secure only
    return simulate(mechanism, pos, neg, seed=seed, repeats=repeats)


@pytest.mark.parametrize("mechanism", ["secure-rank-sum", "rank-sum"])
def test_almost_no_noise_equals_simulate_and_sklearn(frame, data, mechanism):
    """At epsilon 1e9 the noise rounds to nothing: Spark's two rounds give the exact AUC,
    the simulation's, and the positive count exactly."""
    from dpauc_tf.spark import private_auc, private_auc_by_slice

    settings = {"mechanism": mechanism, "epsilon": 1e9, "mechanism_options": FINE, "seed": 1}
    result = private_auc(frame, client_col="client", **settings)
    exact = roc_auc_score(data["label"], data["score"])
    assert result.mechanism == mechanism and result.num_clients == K
    assert result.auc == pytest.approx(exact, abs=1e-9)
    assert result.noisy_counts["num_pos"][0] == pytest.approx(data["label"].sum(), abs=1e-6)
    theirs = _simulated(data, ReleaseSpec.make(mechanism, epsilon=1e9, options=FINE), 2, 1)
    assert result.auc == pytest.approx(float(theirs.aucs[0]), abs=1e-9)
    # per slice: each slice ranks its own population, with the clients present there
    by_slice = private_auc_by_slice(frame, "group", client_col="client", **settings)
    for key, part in data.groupby("group"):
        assert by_slice[key].num_clients == part["client"].nunique()
        assert by_slice[key].auc == pytest.approx(roc_auc_score(part["label"], part["score"]))


@pytest.mark.parametrize("mechanism", ["secure-rank-sum", "rank-sum"])
def test_noisy_aucs_have_the_simulated_distribution(frame, data, mechanism):
    """Spark's releases and the simulation's (the summed shares' law, drawn at once) are one
    distribution; twice or half the noise is caught."""
    from scipy.stats import ks_2samp

    from dpauc_tf.spark import private_auc

    epsilon = 0.02  # noise well above the sampling spread: the scale is what is tested
    mine = private_auc(
        frame,
        client_col="client",
        mechanism=mechanism,
        epsilon=epsilon,
        mechanism_options=FINE,
        seed=3,
        repeats=300,
    )
    assert mine.repeats == 300 and np.nanstd(mine.aucs) > 0
    assert mine.epsilon == pytest.approx(epsilon)

    def simulated(eps, seed, repeats):
        spec = ReleaseSpec.make(mechanism, epsilon=eps, options=FINE)
        return _simulated(data, spec, seed, repeats).noisy_counts["rank_sum"]

    # the rank sum itself (the AUC clips at 0 and 1 at this noise)
    rank_sums = mine.noisy_counts["rank_sum"]
    assert ks_2samp(rank_sums, simulated(epsilon, 4, 300)).pvalue > 0.001
    for wrong in (epsilon / 2, 2 * epsilon):
        assert ks_2samp(rank_sums, simulated(wrong, 5, 600)).pvalue < 0.001, wrong


def test_seeded_two_rounds_reproduce_and_each_client_draws_its_own_share(frame):
    from dpauc_tf.spark import private_auc

    settings = {"mechanism": "secure-rank-sum", "epsilon": 1.0, "mechanism_options": FINE}
    first = private_auc(frame, client_col="client", seed=7, repeats=3, **settings)
    again = private_auc(frame, client_col="client", seed=7, repeats=3, **settings)
    other = private_auc(frame, client_col="client", seed=8, repeats=3, **settings)
    assert first.aucs.tolist() == again.aucs.tolist()
    assert first.aucs.tolist() != other.aucs.tolist()
    assert len(set(first.noisy_counts["num_pos"].tolist())) > 1  # repeats differ
    assert "round one" in str(first.statement)


def _frame(spark, rows):
    return spark.createDataFrame(rows, "score double, label double, client string")


def test_hostile_clients_give_the_right_number(spark):
    """A one-class client, a client whose scores are all tied, a one-row client: the rank
    sums of the whole population, exactly (epsilon 1e9)."""
    from dpauc_tf.spark import private_auc

    rng = np.random.default_rng(2)
    rows = [(float(s), float(s > 0.5), "mixed") for s in (np.arange(40) + 0.5) / 40]
    rows += [(float(s), 1.0, "positives") for s in (rng.integers(0, 40, 12) + 0.5) / 40]
    rows += [(0.3125, float(k % 2), "tied") for k in range(9)]
    rows += [(0.0125, 0.0, "single")]
    scores = np.array([r[0] for r in rows])
    labels = np.array([r[1] for r in rows])
    frame = _frame(spark, rows).repartition(4)
    for mechanism in ("secure-rank-sum", "rank-sum"):
        result = private_auc(
            frame, client_col="client", mechanism=mechanism, epsilon=1e9, mechanism_options=FINE
        )
        assert result.num_clients == 4
        assert result.auc == pytest.approx(roc_auc_score(labels, scores), abs=1e-9)
    # every client tied at one score: D = 0, the AUC is 1/2 exactly
    tied = _frame(spark, [(0.5, float(k % 2), str(k % 3)) for k in range(12)])
    result = private_auc(
        tied, client_col="client", mechanism="secure-rank-sum", epsilon=1.0, mechanism_options=FINE
    )
    assert float(result.noisy_counts["sensitivity"][0]) == 0.0
    assert result.auc_or_none in (None, 0.5)
    # one class in the whole DataFrame: undefined, not a number
    one = _frame(spark, [(0.2, 1.0, "a"), (0.7, 1.0, "b")])
    result = private_auc(
        one, client_col="client", mechanism="secure-rank-sum", epsilon=1e9, mechanism_options=FINE
    )
    assert result.auc_or_none is None


def test_hostile_rows_and_mechanisms_are_one_line(spark):
    from dpauc_tf.spark import private_auc

    nan = _frame(spark, [(0.5, 1.0, "a"), (float("nan"), 0.0, "b")])
    with pytest.raises(ValueError, match=r"^dpauc_tf.spark: 1 row\(s\) .*NaN or outside"):
        private_auc(nan, client_col="client", mechanism="secure-rank-sum", epsilon=1.0)
    fine = _frame(spark, [(0.5, 1.0, "a"), (0.2, 0.0, "b")])
    with pytest.raises(ValueError, match="releases one AUC from one data holder"):
        private_auc(fine, client_col="client", mechanism="auc-only", epsilon=1.0, delta=1e-6)
