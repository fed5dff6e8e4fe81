"""dpauc_tf.federated.evaluate on the release protocol: a ReleaseSpec sets it up, every
client's seed is spec.seed_for("tff", repeat, client), finish_release post-processes, and
the result is the one AUCResult; evaluate_spec takes a spec built elsewhere (the CLI's)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("tensorflow_federated")

from dpauc_tf.core.partitions import client_data_from_partition, non_iid_partition
from dpauc_tf.federated import evaluate, evaluate_spec
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec
from dpauc_tf.simulation import client_histograms, simulate

pytestmark = pytest.mark.federated
T = 20
K = 10


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    labels = (rng.random(1500) < 0.4).astype(np.float64)
    scores = 1 / (1 + np.exp(-(rng.normal(size=1500) + labels)))
    ids = np.asarray(non_iid_partition(scores, K), np.int64)
    return scores, labels, ids


def test_noise_off_equals_the_simulate_backend_k10_non_iid(data):
    scores, labels, ids = data
    spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=T)
    out = evaluate(client_data_from_partition(scores, labels, ids, K), **spec.settings())
    pos, neg = client_histograms(labels, scores, spec.count_grid(), ids, K)
    expected = simulate(spec, pos, neg)
    assert isinstance(out, AUCResult)
    assert out.aucs.tolist() == expected.aucs.tolist()
    np.testing.assert_array_equal(out.fpr, expected.fpr)
    assert out.epsilon is None and out.statement.mechanism == "none"
    assert out.num_clients == out.num_reporting == K and out.num_examples == 1500


def test_repeats_are_accounted_once(data):
    scores, labels, ids = data
    clients = client_data_from_partition(scores, labels, ids, K)
    out = evaluate(clients, mechanism="histogram", epsilon=1.0, num_thresholds=T, seed=3, repeats=3)
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T)
    assert out.repeats == 3 and len(set(out.aucs.tolist())) == 3
    assert out.epsilon_total == pytest.approx(spec.build().privacy_spent(3).best)
    assert out.auc == out.aucs[0] and out.noisy_counts["pos"].shape == (3, T + 1)
    assert out.to_dict()["num_reporting"] == K
    again = evaluate(clients, mechanism="histogram", epsilon=1.0, num_thresholds=T, seed=3)
    assert again.auc == out.auc  # repeat 0's seeds do not depend on the number of repeats
    with pytest.raises(ValueError, match="once per repeat"):
        evaluate(iter(clients), epsilon=1.0, num_thresholds=T, num_clients=K, repeats=2)


def test_evaluate_spec_runs_the_spec_it_is_given_and_the_default_comes_from_the_registry(data):
    """The spec built once (here as the command line builds it) is what runs: the same
    numbers as evaluate's own spec; mechanism=None takes the registry's default for a
    secure deployment, never a name of the adapter's own."""
    from dpauc_tf.mechanisms.laws import Deployment
    from dpauc_tf.mechanisms.registry import default_mechanism

    scores, labels, ids = data
    clients = client_data_from_partition(scores, labels, ids, K)
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T, seed=8)
    by_spec = evaluate_spec(spec, clients)
    by_values = evaluate(clients, mechanism="histogram", epsilon=1.0, num_thresholds=T, seed=8)
    assert by_spec.aucs.tolist() == by_values.aucs.tolist()
    default = evaluate(clients, epsilon=None, num_thresholds=T)
    assert default.mechanism in ("none", default_mechanism(deployment=Deployment.SECURE))
    noisy = evaluate(clients, epsilon=1.0, num_thresholds=T, seed=1)
    assert noisy.mechanism == default_mechanism(deployment=Deployment.SECURE)


def test_the_dropout_is_drawn_from_the_spec(data):
    """Which clients report under ``dropout`` comes from ``spec.seed_for("dropout")``: the
    same spec seed gives the same reporting set, another seed (almost surely) another."""
    from dpauc_tf.federated.evaluate import DROPOUT_SEED_KEY, _reporting_set
    from dpauc_tf.noise.exact import rng_from_seed

    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T, seed=4)
    chosen = _reporting_set(40, 30, 0.25, spec)
    drawn = rng_from_seed(spec.seed_for(DROPOUT_SEED_KEY)).choice(40, size=30, replace=False)
    assert chosen == set(drawn.tolist()) and len(chosen) == 30
    other = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T, seed=5)
    assert _reporting_set(40, 30, 0.25, other) != chosen
    assert _reporting_set(40, 40, 0.0, spec) is None
    scores, labels, ids = data
    runs = [
        evaluate(
            client_data_from_partition(scores, labels, ids, K),
            mechanism="histogram",
            epsilon=1.0,
            num_thresholds=T,
            seed=4,
            dropout=0.3,
        )
        for _ in range(2)
    ]
    assert runs[0].num_reporting == 7 and runs[0].aucs.tolist() == runs[1].aucs.tolist()
