"""dpauc_tf.flower: Flower's ServerApp/ClientApp, SecAgg+ and the library's mechanisms.

These tests run the real Flower apps (DefaultWorkflow, SecAggPlusWorkflow, secaggplus_mod)
through the in-process grid (dpauc_tf.flower.local), which needs no Ray; one test runs
Flower's simulation engine (Ray) itself (test_flower_simulation_engine.py).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")

from dpauc_tf import get_mechanism, list_mechanisms
from dpauc_tf.core.partitions import client_slices, non_iid_partition
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.flower import LimbLayout, client_report, evaluate, model_client_report
from dpauc_tf.flower.client import client_seeds
from dpauc_tf.flower.records import flatten_report
from dpauc_tf.simulation import simulate_examples

K = 10
T = 10


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    n = 400
    labels = rng.integers(0, 2, n)
    scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0.0, 1.0)
    ids = non_iid_partition(scores, K)
    clients = [(scores[idx], labels[idx]) for idx in client_slices(ids, K)]
    return labels, scores, ids, clients


def _direct_sum(mechanism, clients, seed, repeats, only=None):
    """The sum of every (or ``only`` these) client's report, computed directly."""
    thresholds = Thresholds.make(T)
    seeds = client_seeds(seed, len(clients))
    total = None
    for k, (scores, labels) in enumerate(clients):
        if only is not None and k not in only:
            continue
        report = client_report(
            mechanism, thresholds, labels, scores, seed=np.asarray(seeds[k]), repeats=repeats
        )
        total = report if total is None else {key: total[key] + report[key] for key in total}
    return total


def test_noise_off_equals_the_simulation_exactly(data):
    labels, scores, ids, clients = data
    out = evaluate(clients, mechanism="none", epsilon=None, num_thresholds=T, engine="in-process")
    sim = simulate_examples(
        get_mechanism("none", epsilon=None, num_thresholds=T),
        labels,
        scores,
        Thresholds.make(T),
        ids,
        K,
        seed=0,
    )
    assert out.num_reporting == K and out.num_clients == K
    np.testing.assert_array_equal(out.aucs, sim.aucs)
    np.testing.assert_array_equal(out.fpr, sim.fpr)
    np.testing.assert_array_equal(out.tpr, sim.tpr)
    assert out.epsilon is None  # no noise: NOT private


@pytest.fixture(scope="module")
def secure_run(data):
    """One SecAgg+ round of secure-histogram with 200 repeats; every reply recorded."""
    _, _, _, clients = data
    replies = []
    out = evaluate(
        clients,
        mechanism="secure-histogram",
        epsilon=1.0,
        num_thresholds=T,
        seed=11,
        repeats=200,
        engine="in-process",
        observe_replies=replies.append,
    )
    return out, replies


def test_secure_sum_is_exact_and_the_guarantee_is_the_target(data, secure_run):
    _, _, _, clients = data
    out, _ = secure_run
    mechanism = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=T, num_clients=K)
    expected = _direct_sum(mechanism, clients, seed=11, repeats=200)
    for key in expected:
        np.testing.assert_array_equal(out.noisy_counts[key], expected[key])
    assert out.num_reporting == K
    assert out.epsilon == pytest.approx(1.0)
    assert out.aucs.shape == (200,)


def test_secure_auc_distribution_matches_the_simulation(data, secure_run):
    stats = pytest.importorskip("scipy.stats")
    labels, scores, ids, _ = data
    out, _ = secure_run

    def simulated(epsilon):
        mechanism = get_mechanism(
            "secure-histogram", epsilon=epsilon, num_thresholds=T, num_clients=K
        )
        return simulate_examples(
            mechanism, labels, scores, Thresholds.make(T), ids, K, seed=5, repeats=400
        ).aucs

    assert stats.ks_2samp(out.aucs, simulated(1.0)).pvalue > 1e-3
    # The test has power: half or twice the noise scale is told apart.
    assert stats.ks_2samp(out.aucs, simulated(0.5)).pvalue < 1e-3
    assert stats.ks_2samp(out.aucs, simulated(2.0)).pvalue < 1e-3


def test_the_server_receives_masked_vectors_never_a_clients_counts(data, secure_run):
    from flwr.common import bytes_to_ndarray
    from flwr.common.secure_aggregation.secaggplus_constants import RECORD_KEY_CONFIGS, Key

    stats = pytest.importorskip("scipy.stats")
    _, _, _, clients = data
    _, replies = secure_run
    masked = []
    for reply in replies:
        assert not reply.has_error()
        configs = reply.content.config_records[RECORD_KEY_CONFIGS]
        # secaggplus_mod empties the plain arrays: nothing travels next to the masked vector
        assert all(len(record) == 0 for record in reply.content.array_records.values())
        if Key.MASKED_PARAMETERS in configs:
            masked.append([bytes_to_ndarray(b) for b in configs[Key.MASKED_PARAMETERS]])
    assert len(masked) == K
    layout = LimbLayout.for_clients(K)
    mechanism = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=T, num_clients=K)
    seeds = client_seeds(11, K)
    plain = []  # what each client would send unmasked: its quantized limbs
    for k, (scores, labels) in enumerate(clients):
        report = client_report(
            mechanism, Thresholds.make(T), labels, scores, seed=np.asarray(seeds[k]), repeats=200
        )
        vector = flatten_report(report, num_examples=len(labels))
        plain.append([limb + layout.clipping_range for limb in layout.encode(vector)])
    values = []
    for vectors in masked:
        limbs = vectors[1:]  # the first array is SecAgg+'s weight factor
        assert len(limbs) == layout.num_limbs
        for own in plain:
            assert not any(np.array_equal(m, p) for m, p in zip(limbs, own, strict=True))
            # no more coincidences than chance (1 / 2^32 per value)
            assert sum(int(np.sum(m == p)) for m, p in zip(limbs, own, strict=True)) <= 2
        values.append(np.concatenate([v.ravel() for v in vectors]))
    values = np.concatenate(values).astype(np.float64) / layout.modulus_range
    assert values.min() >= 0 and values.max() < 1
    assert stats.kstest(values, "uniform").pvalue > 1e-4  # uniform modulo the field


def test_dropout_mid_round_gives_a_result_with_the_honest_epsilon(data):
    _, _, _, clients = data
    out = evaluate(
        clients,
        mechanism="secure-histogram",
        epsilon=1.0,
        num_thresholds=T,
        seed=3,
        engine="in-process",
        vanishing_clients=(2, 7),
    )
    mechanism = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=T, num_clients=K)
    assert out.num_reporting == K - 2
    assert out.epsilon == pytest.approx(mechanism.achieved_epsilon(K - 2))
    assert out.epsilon > 1.0
    assert "only 8 of 10 shares reported" in out.statement.noise
    expected = _direct_sum(mechanism, clients, seed=3, repeats=1, only=set(range(K)) - {2, 7})
    for key in expected:  # the vanished clients' counts are not in the sum
        np.testing.assert_array_equal(out.noisy_counts[key], expected[key])
    assert np.isfinite(out.auc)


def test_too_many_dropouts_fail_with_one_clear_error(data):
    _, _, _, clients = data
    with pytest.raises(ValueError, match="no report reached the server"):
        evaluate(
            clients[:4],
            mechanism="secure-histogram",
            epsilon=1.0,
            num_thresholds=T,
            seed=3,
            engine="in-process",
            vanishing_clients=(0, 1, 2),
        )


@pytest.mark.parametrize(
    # secure-rank-sum's two exchanges release no summed report of its own: its tests are in
    # test_flower_secure_rank_sum.py
    "name",
    sorted(
        set(list_mechanisms(federated=True, private=True)) - {"secure-histogram", "secure-rank-sum"}
    ),
)
def test_every_federated_mechanism_runs_with_its_own_release(data, name):
    _, _, _, clients = data
    delta = 1e-6 if name == "paper-gaussian" else None
    out = evaluate(
        clients[:4],
        mechanism=name,
        epsilon=2.0,
        delta=delta,
        num_thresholds=T,
        seed=1,
        engine="in-process",
    )
    mechanism = get_mechanism(name, epsilon=2.0, delta=delta, num_thresholds=T, num_clients=4)
    expected = _direct_sum(mechanism, clients[:4], seed=1, repeats=1)
    for key in expected:
        if mechanism.capabilities.secure:
            np.testing.assert_array_equal(out.noisy_counts[key], expected[key])
        else:
            np.testing.assert_allclose(out.noisy_counts[key], expected[key], rtol=1e-12, atol=1e-9)
    assert out.num_reporting == 4
    assert out.epsilon == pytest.approx(mechanism.statement().epsilon)


def test_keras_model_client_report_is_the_report_of_its_scores():
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("float32")
    y = rng.integers(0, 2, 64)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")])
    mechanism = get_mechanism("none", epsilon=None, num_thresholds=T)
    from_model = model_client_report(mechanism, Thresholds.make(T), model, x, y)
    scores = model.predict(x, verbose=0).ravel()
    direct = client_report(mechanism, Thresholds.make(T), y, scores)
    for key in direct:
        np.testing.assert_array_equal(from_model[key], direct[key])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mechanism": "score-noise", "epsilon": 1.0}, "cannot run on Flower"),
        ({"mechanism": "histogram", "epsilon": 1.0, "vanishing_clients": (0,)}, "secure"),
        ({"mechanism": "histogram", "epsilon": 1.0, "repeats": 0}, "repeats"),
        ({"mechanism": "histogram", "epsilon": 1.0, "engine": "grpc"}, "engine"),
        ({"mechanism": "secure-histogram", "epsilon": 1.0, "vanishing_clients": (9,)}, "indices"),
    ],
)
def test_bad_settings_give_one_line_errors(data, kwargs, message):
    _, _, _, clients = data
    with pytest.raises(ValueError, match=message):
        evaluate(clients[:3], num_thresholds=T, **{"engine": "in-process", **kwargs})


def test_bad_client_data_names_the_client(data):
    _, _, _, clients = data
    bad = [*clients[:3], (np.array([0.5, 1.5]), np.array([0, 1]))]
    with pytest.raises(ValueError, match="client 3: scores must be in"):
        evaluate(bad, mechanism="histogram", epsilon=1.0, num_thresholds=T, engine="in-process")
    with pytest.raises(ValueError, match="client 0: labels must be 0 or 1"):
        evaluate([(np.array([0.5]), np.array([2]))], mechanism="none", epsilon=None)
    with pytest.raises(ValueError, match="SecAgg\\+ needs at least 2 clients"):
        evaluate(clients[:1], mechanism="secure-histogram", epsilon=1.0, engine="in-process")


def test_flower_telemetry_is_off():
    import flwr.supercore.telemetry as telemetry

    from dpauc_tf.flower import require_flower

    telemetry.FLWR_TELEMETRY_ENABLED = "1"
    require_flower()
    assert telemetry.FLWR_TELEMETRY_ENABLED == "0"


def test_secagg_neighbourhoods_smaller_than_all_clients_stay_exact(data):
    _, _, _, clients = data
    out = evaluate(
        clients[:6],
        mechanism="secure-histogram",
        epsilon=1.0,
        num_thresholds=T,
        seed=4,
        engine="in-process",
        num_shares=3,
        reconstruction_threshold=2,
    )
    mechanism = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=T, num_clients=6)
    expected = _direct_sum(mechanism, clients[:6], seed=4, repeats=1)
    for key in expected:
        np.testing.assert_array_equal(out.noisy_counts[key], expected[key])
