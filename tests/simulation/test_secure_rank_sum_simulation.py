"""simulate with rank sums over clients (issue 32): secure-rank-sum has the central release's law
whatever K (a two-sample test that a doubled noise fails), rank-sum with local noise per client
has sqrt(K) times the noise, and the result states what was released."""

import numpy as np
import pytest
from scipy import stats

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.rank_sum import RankSum
from dpauc_tf.mechanisms.release import ReleaseSpec
from dpauc_tf.mechanisms.secure_rank_sum import SecureRankSum
from dpauc_tf.simulation import client_histograms, simulate, simulate_examples

RESOLUTION = 1001
REPEATS = 3000


def _data(num_clients: int, n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.3).astype(np.int64)
    scores = 1.0 / (1.0 + np.exp(-(rng.normal(size=n) + labels)))
    ids = rng.integers(0, num_clients, n)
    return labels, scores, ids


def _counts(num_clients: int):
    labels, scores, ids = _data(num_clients)
    return client_histograms(labels, scores, Thresholds.make(RESOLUTION), ids, num_clients)


def test_secure_rank_sum_over_clients_has_the_central_law():
    pos1, neg1 = _counts(1)
    pos10, neg10 = _counts(10)
    assert np.array_equal(pos10.sum(0), pos1[0]) and np.array_equal(neg10.sum(0), neg1[0])
    spec = ReleaseSpec.make(
        "secure-rank-sum", epsilon=1.0, options={"resolution": RESOLUTION}, seed=0
    )
    federated = simulate(spec, pos10, neg10, repeats=REPEATS)
    central = simulate(
        SecureRankSum(epsilon=1.0, resolution=RESOLUTION), pos1, neg1, seed=1, repeats=REPEATS
    )
    assert federated.num_clients == 10 and federated.epsilon == 1.0
    assert federated.statement.mechanism == "secure-rank-sum"
    assert "10 client shares" in federated.statement.noise
    assert stats.ks_2samp(federated.aucs, central.aucs).pvalue > 1e-3
    # the test sees a doubled noise: local noise of 4 clients has twice the central std
    local = simulate(
        RankSum(epsilon=1.0, resolution=RESOLUTION), *_counts(4), seed=2, repeats=REPEATS
    )
    assert stats.ks_2samp(local.aucs, central.aucs).pvalue < 1e-6


@pytest.mark.parametrize("num_clients", [4, 16])
def test_local_rank_sum_noise_grows_as_sqrt_k(num_clients):
    pos1, neg1 = _counts(1)
    posk, negk = _counts(num_clients)
    mechanism = RankSum(epsilon=1.0, resolution=RESOLUTION)
    one = simulate(mechanism, pos1, neg1, seed=3, repeats=REPEATS)
    many = simulate(mechanism, posk, negk, seed=4, repeats=REPEATS)
    assert many.num_clients == num_clients and many.epsilon == 1.0
    ratio = np.nanstd(many.aucs) / np.nanstd(one.aucs)
    # the rank sum's noise dominates; the count's noise adds its own sqrt(K): within 12%
    assert ratio == pytest.approx(np.sqrt(num_clients), rel=0.12)


def test_simulate_examples_and_a_client_column_take_it():
    labels, scores, ids = _data(5)
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, options={"resolution": 101}, seed=0)
    result = simulate_examples(spec, labels, scores, Thresholds.make(200), ids, 5, repeats=20)
    assert result.aucs.shape == (20,) and result.num_clients == 5
    assert np.all(np.isfinite(result.aucs)) and abs(np.mean(result.aucs) - 0.75) < 0.1


def test_fractional_counts_are_refused_over_clients():
    pos, neg = _counts(3)
    pos = pos.copy()
    pos[0, np.argmax(pos[0])] += 0.5
    for mechanism in (
        SecureRankSum(epsilon=1.0, resolution=RESOLUTION, num_clients=3),
        RankSum(epsilon=1.0, resolution=RESOLUTION),
    ):
        with pytest.raises(ValueError, match="sample weights of 1 only"):
            simulate(mechanism, pos, neg, seed=0, repeats=2)


def test_the_command_line_runs_it_with_clients_and_a_client_column(tmp_path, capsys):
    import json

    from dpauc_tf.cli.main import main

    labels, scores, ids = _data(5, n=600)
    path = tmp_path / "scores.csv"
    rows = "\n".join(f"{y},{s:.6f},{c}" for y, s, c in zip(labels, scores, ids, strict=True))
    path.write_text("label,score,client\n" + rows + "\n")
    common = ["evaluate", "--scores", str(path), "--mechanism", "secure-rank-sum", "--epsilon"]
    common += ["1", "--repeats", "20", "--seed", "0", "--format", "json"]
    for extra, clients in ((["--clients", "10"], 10), (["--client-column", "client"], 5)):
        assert main([*common, *extra]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["mechanism"] == "secure-rank-sum" and out["num_clients"] == clients
        assert len(out["aucs"]) == 20 and abs(out["auc_mean"] - 0.75) < 0.1
