"""The rank-sum releases over a DataFrame's clients on Spark (issue 32): ``secure-rank-sum``
in two rounds on the executors (round one's totals, every client's round-two report with the
global ranks, both summed by Spark; ``finish`` on the driver) and ``rank-sum`` with local
noise; equal to the simulation with (almost) no noise, the same distribution with noise, the
protocol's numbers for a seed, no client's counts on the driver, and hostile clients.

A seeded Spark release does not equal ``simulate``'s: the simulation draws the summed
shares' law (one discrete Laplace) at once, Spark sums ``K`` clients' shares, each from its
own seed; the two are the same law (the distribution test below) and, seeded, Spark equals
the protocol run client by client with the same seeds."""

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


@pytest.fixture
def collected(monkeypatch):
    """Every table the driver collects from a DataFrame during the test (columns, rows)."""
    from pyspark.sql.classic.dataframe import DataFrame

    seen = []
    for name in ("toArrow", "toPandas", "collect"):
        original = getattr(DataFrame, name)

        def recording(self, *args, _original=original, **kwargs):
            out = _original(self, *args, **kwargs)
            seen.append((tuple(self.columns), len(out)))
            return out

        monkeypatch.setattr(DataFrame, name, recording)
    return seen


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
def test_almost_no_noise_equals_simulate_and_sklearn(frame, data, mechanism, collected):
    """At epsilon 1e9 the noise rounds to nothing: Spark's two rounds give the exact AUC,
    the simulation's, and the positive count exactly; the driver collected no client's
    counts (no table with a client column, none longer than the grid per slice)."""
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
    grid = ReleaseSpec.make(mechanism, epsilon=1.0, options=FINE).count_grid().num_thresholds
    assert len(collected) >= 2  # both calls collected what they release
    for columns, rows in collected:
        assert "client" not in columns and rows <= 2 * (grid + 1 + 12), (columns, rows)


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


def test_seeded_release_is_the_protocol_run_client_by_client_on_the_executors(
    frame, data, monkeypatch
):
    """Seeded, Spark's release is the protocol's numbers exactly: round one's summed
    totals, every client's round-two report with seed ``spec.seed_for(None, client, 0)``,
    summed, ``finish``; round two never runs on the driver (its report function is broken
    there, the executors' Python workers have their own)."""
    from dpauc_tf.mechanisms.secure_rank_sum import SecureRankSum
    from dpauc_tf.spark import private_auc

    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, options=FINE, seed=7)
    pos, neg = client_histograms(
        data["label"].to_numpy(),
        data["score"].to_numpy(),
        spec.count_grid(),
        data["client"].to_numpy(),
        K,
    )
    mechanism = spec.build(K)
    totals = sum(mechanism.round_one_report(p, n) for p, n in zip(pos, neg, strict=True))
    reports = [
        mechanism.round_two_report(
            np.tile(pos[k], (3, 1)), np.tile(neg[k], (3, 1)), totals, spec.seed_for(None, k, 0)
        )
        for k in range(K)
    ]
    summed = {key: sum(np.asarray(r[key], np.int64) for r in reports) for key in reports[0]}
    expected = mechanism.finish(summed, totals, num_reporting=K)

    def not_here(*args, **kwargs):
        raise AssertionError("round two ran on the driver")

    monkeypatch.setattr(SecureRankSum, "round_two_report", not_here)
    result = private_auc(frame, client_col="client", spec=spec, repeats=3)
    for key in ("rank_sum", "num_pos", "total", "sensitivity"):
        assert result.noisy_counts[key].tolist() == expected[key].numpy().tolist(), key
    assert len(set(result.noisy_counts["num_pos"].tolist())) > 1  # repeats differ
    assert "round one" in str(result.statement)


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
    # hashed on 4 clients into 8 partitions: at least 4 partitions are empty
    frame = _frame(spark, rows).repartition(8, "client")
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


def test_counts_beyond_a_62_bit_round_two_are_one_line_before_any_noise():
    """The largest public number of examples whose round-two sums fit 62 bits is taken;
    one more is refused in one line (the driver's step after round one, before round two)."""
    from dpauc_tf.mechanisms.secure_rank_sum import modular_width
    from dpauc_tf.spark.rank_sums import _layout

    mechanism = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, options=FINE).build(K)
    low, high = 1, 1 << 40  # the largest W with a 62-bit width
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (
            (middle, high)
            if modular_width(middle, mechanism.rank_epsilon) <= 62
            else (
                low,
                middle - 1,
            )
        )
    totals = np.zeros(1002, np.int64)
    totals[500] = low
    assert _layout(mechanism, "a", totals).width == 62
    totals[500] = low + 1
    with pytest.raises(ValueError, match=r"^dpauc_tf.spark: slice 'a' \(\d+ examples\)") as error:
        _layout(mechanism, "a", totals)
    assert "\n" not in str(error.value) and "62" in str(error.value)


def test_release_counts_refuses_the_rank_sums_over_clients():
    """The rank sums' rounds run on the executors; counts already on the driver are refused."""
    from dpauc_tf.spark.evaluation import release_counts

    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, options=FINE)
    counts = {(None, c): (np.ones(1002), np.ones(1002), 2004.0) for c in range(2)}
    with pytest.raises(ValueError, match="runs its rounds on the executors"):
        release_counts(spec, counts, per_client=True)


# -- the executors' rounds without a session: a lost client, counts near the width ----------
def _counted_batch(clients: dict, slice_key="s"):
    """The counting job's rows ``(slice, client, bucket, pos, neg)`` of ``{client: (pos,
    neg)}`` (occupied buckets) and, per slice, its rows (bucket `ROWS`), as one batch."""
    import pyarrow as pa

    from dpauc_tf.spark.counting import ROWS

    columns = {"slice": [], "client": [], "bucket": [], "pos": [], "neg": []}
    rows = 0.0
    for client, (pos, neg) in clients.items():
        for b in np.flatnonzero(pos + neg):
            for key, value in zip(
                columns, (slice_key, client, int(b), pos[b], neg[b]), strict=True
            ):
                columns[key].append(value)
        rows += float(np.sum(pos + neg))
    for key, value in zip(columns, (slice_key, "", ROWS, rows, 0.0), strict=True):
        columns[key].append(value)
    return pa.RecordBatch.from_pydict(
        {
            "slice": pa.array(columns["slice"], pa.string()),
            "client": pa.array(columns["client"], pa.string()),
            "bucket": pa.array(columns["bucket"], pa.int32()),
            "pos": pa.array(columns["pos"], pa.float64()),
            "neg": pa.array(columns["neg"], pa.float64()),
        }
    )


def _executor_rounds(spec, clients: dict, *, round_two_clients=None, repeats=1):
    """Spark's two rounds run as its executors run them (``round_one_partition``,
    ``round_two_partition``), summed as its reduce sums them, finished by the driver's
    ``_finish``: round two over ``round_two_clients`` (default: every client)."""
    import pyarrow as pa

    from dpauc_tf.spark.rank_sums import (
        _REPORT_KEYS,
        _finish,
        _layout,
        round_one_partition,
        round_two_partition,
    )

    num_buckets = spec.count_grid().num_thresholds + 1
    one = pa.Table.from_batches(
        list(
            round_one_partition(iter([_counted_batch(clients)]), spec=spec, num_buckets=num_buckets)
        )
    )
    bucket = one.column("bucket").to_numpy()
    total = one.column("total").to_numpy()
    totals = np.bincount(bucket[bucket >= 0], total[bucket >= 0], num_buckets).astype(np.int64)
    num_clients = int(total[bucket == -100].sum())  # CLIENTS rows
    plans = {"s": (num_clients, totals, _layout(spec.build(num_clients), "s", totals))}
    present = clients if round_two_clients is None else {c: clients[c] for c in round_two_clients}
    two = pa.Table.from_batches(
        list(
            round_two_partition(
                iter([_counted_batch(present)]),
                spec=spec,
                num_buckets=num_buckets,
                plans=plans,
                repeats=repeats,
            )
        )
    )
    frame = two.to_pandas().groupby(["slice", "repeat", "limb"], as_index=False).sum()
    sums = pa.Table.from_pandas(frame[["slice", "repeat", "limb", *_REPORT_KEYS]])
    return _finish(spec, "s", sums, plans["s"], repeats)


def _client_counts(buckets: int, seed: int, clients=3):
    rng = np.random.default_rng(seed)
    return {
        str(k): (
            rng.integers(0, 3, buckets).astype(np.float64),
            rng.integers(0, 3, buckets).astype(np.float64),
        )
        for k in range(clients)
    }


def test_executor_rounds_equal_the_central_release_and_a_client_lost_between_them_is_one_line():
    """Run as Spark's executors run them, the two rounds give the central estimate (epsilon
    1e9); a client present in round one whose round-two report is lost (an executor that
    lost its rows between the jobs) is refused by the driver in one line, nothing is
    estimated (never ranks of one population applied to another)."""
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1e9, seed=0, options=FINE)
    buckets = spec.count_grid().num_thresholds + 1
    clients = _client_counts(buckets, 0)
    release, mechanism = _executor_rounds(spec, clients)
    pos = sum(p for p, _ in clients.values())
    neg = sum(n for _, n in clients.values())
    central = simulate(spec.build(3), pos[None], neg[None], seed=0)
    assert release["rank_sum"][0] == pytest.approx(central.noisy_counts["rank_sum"][0])
    assert float(mechanism.estimate_auc(release)[0]) == pytest.approx(central.aucs[0])
    with pytest.raises(ValueError, match=r"lost \(or added\) between the rounds") as error:
        _executor_rounds(spec, clients, round_two_clients=["0", "2"])
    assert "\n" not in str(error.value) and "nothing" in str(error.value)


def test_executor_rounds_near_the_62_bit_width_give_the_right_auc():
    """Three billion examples over two clients (round two's sums need 62 bits, Spark's
    widest) give the counts' AUC through the executors' limbs; four billion are refused in
    one line after round one (``test_counts_beyond_a_62_bit_round_two_are_one_line_before_any_noise``
    finds the exact limit)."""
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1e9, seed=0, options={"resolution": 1025})
    buckets = spec.count_grid().num_thresholds + 1
    pos, neg = np.zeros(buckets), np.zeros(buckets)
    pos[[10, 900]], neg[[10, 500]] = [1e8, 0.65e9], [0.5e9, 0.25e9]
    clients = {"a": (pos, neg), "b": (pos, neg)}
    release, mechanism = _executor_rounds(spec, clients)
    # positives at 900 beat every negative; at 10 they tie those at 10, lose to those at 500
    expected = (1.3e9 * 1.5e9 + 2e8 * 1.0e9 / 2) / (1.5e9 * 1.5e9)
    assert float(release["total"][0]) == 3e9
    assert float(mechanism.estimate_auc(release)[0]) == pytest.approx(expected, rel=1e-9)
    more = {**clients, "c": (np.zeros(buckets), np.where(np.arange(buckets) == 7, 1e9, 0.0))}
    with pytest.raises(
        ValueError, match=r"^dpauc_tf.spark: slice 's' \(4000000000 examples\)"
    ) as error:
        _executor_rounds(spec, more)
    assert "\n" not in str(error.value)
