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


# -- hostile input (issue 32): a right number, a null or a one line ----------------------------
# simulate draws the summed release from the summed counts: a client cannot drop between the
# rounds here (the protocol's refusal is tested in tests/mechanisms/test_secure_rank_sum.py).
HOSTILE_GRID = 1001


def _hostile_counts():
    """Three ordinary clients, one with positives only, one with negatives only, an empty one
    and one whose scores are all tied; scores half a step off the grid (no grid ties)."""
    rng = np.random.default_rng(5)
    scores = (rng.integers(0, 1000, 300) + 0.5) / 1000
    labels = (rng.random(300) < 0.3 + 0.4 * scores).astype(np.int64)
    ids = rng.integers(0, 3, 300)
    hostile = [
        (np.array([0.2005, 0.9005, 0.5505]), np.ones(3, np.int64)),  # one class
        (np.array([0.1005, 0.7005]), np.zeros(2, np.int64)),  # the other class
        (np.zeros(0), np.zeros(0, np.int64)),  # no example
        (np.full(6, 0.5005), np.array([0, 1, 1, 0, 1, 0])),  # every score tied
    ]
    for k, (s, y) in enumerate(hostile, start=3):
        scores, labels = np.concatenate([scores, s]), np.concatenate([labels, y])
        ids = np.concatenate([ids, np.full(s.size, k)])
    return labels, scores, ids, 3 + len(hostile)


@pytest.mark.parametrize("mechanism", ["secure-rank-sum", "rank-sum"])
def test_hostile_clients_give_sklearns_auc_and_one_class_overall_gives_nan(mechanism):
    from sklearn.metrics import roc_auc_score

    labels, scores, ids, k = _hostile_counts()
    spec = ReleaseSpec.make(
        mechanism, epsilon=1e9, options={"resolution": HOSTILE_GRID}, seed=0
    )  # noise of ~1e-7 on S: the AUC is the data's
    pos, neg = client_histograms(labels, scores, Thresholds.make(HOSTILE_GRID), ids, k)
    out = simulate(spec, pos, neg, repeats=2)
    assert out.num_clients == k and out.num_examples == labels.size
    assert out.aucs == pytest.approx([roc_auc_score(labels, scores)] * 2, abs=1e-6)
    # every client holds positives only: S = 0 exactly, so the release is undefined (NaN)
    # where the noisy count leaves no negative, else the chance level; never another number
    only = simulate(spec, pos + neg, np.zeros_like(neg), repeats=20).aucs
    assert np.all(np.isnan(only) | (np.abs(only - 0.5) < 1e-6)) and np.any(np.isnan(only))


@pytest.mark.parametrize("mechanism", ["secure-rank-sum", "rank-sum"])
def test_counts_at_the_int64_limit_give_the_right_auc_and_past_it_one_line(mechanism):
    """Three billion examples over two clients (2 S needs 62 bits) give the counts' AUC; past
    MAX_EXACT_EXAMPLES (about 3.04e9) the int64 rank sums would wrap (9e9 examples gave
    0.46 for 0.91): refused in one line."""
    from dpauc_tf.mechanisms.rank_sum import MAX_EXACT_EXAMPLES

    spec = ReleaseSpec.make(mechanism, epsilon=1e9, options={"resolution": 1025}, seed=0)
    buckets = spec.count_grid().num_buckets

    def counts(scale):
        pos, neg = np.zeros((2, buckets)), np.zeros((2, buckets))
        pos[:, 900], pos[:, 10] = 0.65e9 * scale, 1e8 * scale
        neg[:, 10], neg[:, 500] = 0.5e9 * scale, 0.25e9 * scale
        return pos, neg

    out = simulate(spec, *counts(1.0))
    # positives at 900 beat every negative; at 10 they tie those at 10 and lose to those at 500
    expected = (1.3e9 * 1.5e9 + 2e8 * 1.0e9 / 2) / (1.5e9 * 1.5e9)
    assert out.num_examples == 3e9 < MAX_EXACT_EXAMPLES
    assert out.aucs[0] == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="beyond what int64 rank sums hold") as error:
        simulate(spec, *counts(3.0))
    assert "\n" not in str(error.value)
