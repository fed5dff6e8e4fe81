"""``secure-rank-sum`` on Flower (issue 32): one evaluate round, two exchanges, SecAgg+ on
both, through the in-process grid (the real ``SecAggPlusWorkflow`` and ``secaggplus_mod``).

Small data and a coarse counting grid (``resolution``) keep every round to a few seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")
from scipy import stats

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.partitions import client_slices, non_iid_partition
from dpauc_tf.flower import evaluate
from dpauc_tf.flower.rank_sum import EXCHANGE_KEY, RankSumExchange
from dpauc_tf.mechanisms.rank_sum import mechanism_statistics
from dpauc_tf.mechanisms.release import ReleaseSpec
from dpauc_tf.simulation import simulate_examples
from tests.helpers.cli import cli_status
from tests.helpers.scores import normal_score_file

K = 10
RESOLUTION = 255  # thresholds of the counting grid (the default 2^17 + 1 is the measured one)
OPTIONS = {"resolution": RESOLUTION}
RELEASES = 400
EPSILON = 0.2  # a large noise scale: the two-sample test sees the noise, not the data


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    n = 300
    labels = rng.integers(0, 2, n)
    scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0.0, 1.0)
    ids = non_iid_partition(scores, K)
    clients = [(scores[idx], labels[idx]) for idx in client_slices(ids, K)]
    return labels, scores, ids, clients


def _exact_twice_rank_sum(labels, scores) -> float:
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, options=OPTIONS)
    pos, neg = bucket_counts(labels, scores, spec.count_grid())
    return 2.0 * float(mechanism_statistics(pos, pos + neg)["rank_sum"])


def _noise(result, exact_twice: float) -> np.ndarray:
    """``|2 S~ - 2 S|`` of every release: the magnitude of the noise on ``2 S``."""
    return np.abs(2.0 * np.asarray(result.noisy_counts["rank_sum"]) - exact_twice)


@pytest.fixture(scope="module")
def flower_run(data):
    _, _, _, clients = data
    replies = []
    out = evaluate(
        clients,
        mechanism="secure-rank-sum",
        epsilon=EPSILON,
        mechanism_options=OPTIONS,
        seed=5,
        repeats=RELEASES,
        engine="in-process",
        observe_replies=replies.append,
    )
    return out, replies


def test_flower_k10_agrees_with_simulate_in_distribution(data, flower_run):
    """Two-sample Kolmogorov-Smirnov on the noise of the released ``2 S``: Flower's K = 10
    summed shares against the simulation's one draw of the central law. It passes at the
    stated scale and fails for a halved and a doubled scale (epsilon doubled, halved)."""
    labels, scores, ids, _ = data
    out, _ = flower_run
    exact = _exact_twice_rank_sum(labels, scores)
    flower = _noise(out, exact)
    assert out.num_reporting == K == out.num_clients and out.epsilon == pytest.approx(EPSILON)
    assert out.round_report.unmasked_groups == (K,)

    def simulated(epsilon: float, seed: int) -> np.ndarray:
        spec = ReleaseSpec.make("secure-rank-sum", epsilon=epsilon, options=OPTIONS, seed=seed)
        result = simulate_examples(
            spec, labels, scores, spec.thresholds, ids, K, seed=seed, repeats=RELEASES
        )
        return _noise(result, exact)

    same = stats.ks_2samp(flower, simulated(EPSILON, 1)).pvalue
    halved = stats.ks_2samp(flower, simulated(2 * EPSILON, 2)).pvalue
    doubled = stats.ks_2samp(flower, simulated(EPSILON / 2, 3)).pvalue
    assert same > 1e-3, same
    assert halved < 1e-4, halved  # a scale half the stated one is seen
    assert doubled < 1e-4, doubled  # and so is one twice as large


def test_the_server_sees_masked_vectors_in_both_exchanges(flower_run):
    """Every reply the server received is a SecAgg+ stage message: no report, in either
    exchange, reached it in the clear."""
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key

    from dpauc_tf.flower.records import REPORT_KEY

    _, replies = flower_run
    assert replies and all(
        REPORT_KEY not in r.content.array_records or not r.content.array_records[REPORT_KEY]
        for r in replies
    )
    masked = [
        r
        for r in replies
        if Key.MASKED_PARAMETERS in r.content.config_records.get(RECORD_KEY_CONFIGS, {})
    ]
    assert len(masked) == 2 * K  # two exchanges, K masked vectors each


def _clients_with(data, extra):
    _, _, _, clients = data
    return [*clients[:4], *extra]


def _exact_auc(clients) -> float:
    scores = np.concatenate([np.asarray(s, np.float64) for s, _ in clients])
    labels = np.concatenate([np.asarray(y, np.float64) for _, y in clients])
    spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=RESOLUTION)
    return float(simulate_examples(spec, labels, scores, spec.thresholds).auc)


def test_one_class_empty_and_tied_clients_give_the_right_auc(data):
    hostile = [
        (np.array([0.3, 0.9, 0.6]), np.ones(3)),  # one class
        (np.zeros(0), np.zeros(0)),  # empty
        (np.full(5, 0.5), np.array([0, 1, 0, 1, 1])),  # every score tied
    ]
    clients = _clients_with(data, hostile)
    out = evaluate(
        clients,
        mechanism="secure-rank-sum",
        epsilon=1e6,  # the noise vanishes: the AUC is the data's
        mechanism_options=OPTIONS,
        seed=0,
        engine="in-process",
    )
    assert out.num_reporting == len(clients)
    assert out.num_examples == sum(len(s) for s, _ in clients)
    assert out.auc == pytest.approx(_exact_auc(clients), abs=1e-3)


def test_a_client_lost_inside_the_first_exchange_leaves_the_others_at_full_epsilon(data):
    """A client that drops inside exchange one's SecAgg+ is not ranked: exchange two asks
    the others, with shares sized for them, so their AUC carries the full epsilon."""
    _, _, _, clients = data
    out = evaluate(
        clients[:6],
        mechanism="secure-rank-sum",
        epsilon=1e6,
        mechanism_options=OPTIONS,
        seed=0,
        vanishing_clients=[2],
        engine="in-process",
    )
    others = [c for k, c in enumerate(clients[:6]) if k != 2]
    assert out.num_clients == 6 and out.num_reporting == 5
    assert out.num_examples == sum(len(s) for s, _ in others)
    assert out.epsilon == pytest.approx(1e6)
    assert out.auc == pytest.approx(_exact_auc(others), abs=1e-3)


def test_a_client_lost_between_the_exchanges_is_refused_in_one_line(data):
    _, _, _, clients = data
    with pytest.raises(ValueError) as error:
        evaluate(
            clients[:6],
            mechanism="secure-rank-sum",
            epsilon=1.0,
            mechanism_options=OPTIONS,
            lost_between_exchanges=[4],
            engine="in-process",
        )
    message = str(error.value)
    assert "\n" not in message
    assert "exchange two" in message and "nothing is released" in message
    assert "not unmasked" in message


def test_a_client_without_the_exchange_is_refused():
    from dpauc_tf.flower.encoding import LimbLayout
    from dpauc_tf.flower.rank_sum import rank_sum_report
    from dpauc_tf.flower.records import release_config, release_from_config

    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, options=OPTIONS)
    config = release_config(spec, num_clients=3, layout=LimbLayout.for_clients(3))
    settings = release_from_config(config)
    with pytest.raises(ValueError, match=EXCHANGE_KEY):
        rank_sum_report(settings, config, [0, 1], [0.2, 0.7], seed=0)
    config[EXCHANGE_KEY] = RankSumExchange.RANK_SUM.value
    with pytest.raises(ValueError, match="totals"):
        rank_sum_report(settings, config, [0, 1], [0.2, 0.7], seed=0)


def test_cli_backend_flower_runs_secure_rank_sum(tmp_path, capsys, monkeypatch):
    import json

    monkeypatch.setenv("DPAUC_FLOWER_ENGINE", "in-process")
    path = normal_score_file(tmp_path / "scores.csv", 200, seed=4)
    status, out = cli_status(
        capsys,
        *("evaluate", "--scores", path, "--backend", "flower", "--clients", K),
        *("--mechanism", "secure-rank-sum", "--epsilon", 1, "--seed", 0),
        *("--mechanism-option", f"resolution={RESOLUTION}", "--format", "json"),
    )
    assert status == 0, out.err
    result = json.loads(out.out)
    assert result["backend"] == "flower" and result["mechanism"] == "secure-rank-sum"
    assert result["num_reporting"] == K and result["epsilon"] == pytest.approx(1.0)


def test_local_rank_sum_over_several_flower_clients_is_refused(data):
    """Without a first exchange each client would rank by its own totals and the server would
    sum rank sums of different populations: refused in one line, naming the secure release."""
    clients = _clients_with(data, [])[:3]
    with pytest.raises(ValueError, match="'rank-sum' cannot run on Flower"):
        evaluate(clients, mechanism="rank-sum", epsilon=1.0, seed=0, engine="in-process")


def test_exchange_one_limbs_carry_every_total_exchange_two_can_release():
    """Exchange one's totals travel in ``ceil(TOTALS_BITS / b)`` limbs: every count below
    ``2^TOTALS_BITS`` sums exactly; a larger one is refused in one line (no W that large
    passes exchange two's width, whatever epsilon)."""
    from dpauc_tf.flower.encoding import LimbLayout
    from dpauc_tf.flower.rank_sum import EXACT_BITS, TOTALS_BITS, totals_layout
    from dpauc_tf.mechanisms.secure_rank_sum import modular_width

    assert modular_width(2 ** (TOTALS_BITS - 1), 1e12) > EXACT_BITS
    for clients in (2, 10, 1000, 100_000):
        words = LimbLayout.for_clients(clients)
        layout = totals_layout(words.bits)
        assert layout.num_limbs == -(-TOTALS_BITS // words.bits) < words.num_limbs
        values = np.array([0, 1, 2**TOTALS_BITS - 1, 12345])
        limbs = layout.encode(values)
        summed = [layout.flower_average([limb] * clients, clients) for limb in limbs]
        assert layout.decode(summed, clients).tolist() == (clients * values).tolist()
        for bad in (-1, 2**TOTALS_BITS):
            with pytest.raises(ValueError, match=f"0, 2\\^{TOTALS_BITS}"):
                layout.encode(np.array([bad]))


def test_exchange_two_totals_refuse_malformed_or_oversized_bytes():
    import zlib

    from dpauc_tf.flower.rank_sum import TOTALS_KEY, decode_totals, encode_totals

    totals = np.array([[0, 3, 0, 0], [1, 0, 2, 0]])
    assert decode_totals({TOTALS_KEY: encode_totals(totals)}, (2, 4)).tolist() == totals.tolist()
    bomb = zlib.compress(bytes(8 * 10**7))  # 80 MB of zeros: never inflated past 64 bytes
    for config in (
        {TOTALS_KEY: b"not zlib"},
        {TOTALS_KEY: bomb},
        {TOTALS_KEY: encode_totals(np.zeros(7))},
        {TOTALS_KEY: encode_totals(-totals)},
        {},
    ):
        with pytest.raises(ValueError, match="totals") as error:
            decode_totals(config, (2, 4))
        assert "\n" not in str(error.value)


def test_exchange_two_at_the_exact_width_is_right_and_one_bit_over_is_one_line(data, monkeypatch):
    """Counts near the modular width: the largest ``W`` whose exchange-two sums fit Flower's
    53 float64-exact bits passes, the next is refused in one line; and, scaled down to this
    data (the limit lowered to its width), a round at the limit gives the data's AUC while
    one bit less refuses it before exchange two."""
    from dpauc_tf.flower import rank_sum
    from dpauc_tf.mechanisms.secure_rank_sum import modular_width

    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, options=OPTIONS)
    protocol = rank_sum.RankSumProtocol(spec, K)
    low, high = 1, 2**30  # the largest W of width <= 53 (about 1.34e8 examples)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if modular_width(middle, 0.75) <= 53 else (low, middle)
    rank_sum.check_width(protocol, low)
    with pytest.raises(ValueError, match="54-bit sum in exchange two") as error:
        rank_sum.check_width(protocol, high)
    assert "\n" not in str(error.value) and low == 134_217_614

    _, _, _, clients = data
    clients = clients[:4]
    common = dict(
        mechanism="secure-rank-sum", epsilon=1e6, mechanism_options=OPTIONS, seed=0,
        engine="in-process",
    )  # fmt: skip
    examples = sum(len(s) for s, _ in clients)
    width = modular_width(examples, 0.75e6)
    monkeypatch.setattr(rank_sum, "EXACT_BITS", width)
    assert evaluate(clients, **common).auc == pytest.approx(_exact_auc(clients), abs=1e-3)
    monkeypatch.setattr(rank_sum, "EXACT_BITS", width - 1)
    with pytest.raises(ValueError, match=f"{width}-bit sum in exchange two") as error:
        evaluate(clients, **common)
    assert "\n" not in str(error.value)
