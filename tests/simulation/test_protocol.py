"""The simulate backend is written against the release protocol: a ReleaseSpec sets it up,
derive_seed seeds every chunk of repeats, finish_release post-processes, the result is an
AUCResult (and base.private_auc's post-processing is finish_release's too)."""

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.mechanisms import get_mechanism, private_auc
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec, finish_release
from dpauc_tf.noise.seeds import derive_seed
from dpauc_tf.simulation import SEED_KEY, client_histograms, simulate

T = 20
K = 5


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, 2000)
    scores = 1 / (1 + np.exp(-(rng.normal(size=2000) + labels)))
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T)
    return client_histograms(labels, scores, spec.count_grid(), rng.integers(0, K, 2000), K)


def test_simulate_returns_the_one_result_type_with_the_whole_cost(counts):
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T, seed=7)
    out = simulate(spec, *counts, repeats=4)
    assert isinstance(out, AUCResult) and out.repeats == 4 and out.num_clients == K
    assert out.epsilon == 1.0 and out.num_examples == 2000
    assert out.epsilon_total == pytest.approx(spec.build(K).privacy_spent(4).best)
    assert out.to_dict()["epsilon_total"] == out.epsilon_total


def test_seeds_come_from_derive_seed_and_the_post_processing_from_finish_release(counts):
    pos, neg = counts
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T, seed=7)
    out = simulate(spec, pos, neg, repeats=3)
    mechanism = spec.build(K)
    release = mechanism.release(pos, neg, seed=derive_seed(7, SEED_KEY, 0), repeats=3)
    summed = {key: tf.reduce_sum(value, axis=1).numpy() for key, value in release.items()}
    by_hand = finish_release(spec, summed, num_examples=2000.0, num_clients=K)
    np.testing.assert_array_equal(out.aucs, by_hand.aucs)
    np.testing.assert_array_equal(out.fpr, by_hand.fpr)
    # a built mechanism with the same seed is the same release; seed=None is fresh noise
    again = simulate(mechanism, pos, neg, seed=7, repeats=3)
    np.testing.assert_array_equal(again.aucs, out.aucs)
    fresh = simulate(ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T), pos, neg)
    assert fresh.aucs[0] != out.aucs[0]


def test_secure_simulation_states_the_full_noise(counts):
    spec = ReleaseSpec.make("secure-histogram", epsilon=1.0, num_thresholds=T, seed=1)
    out = simulate(spec, *counts, repeats=2)
    assert out.statement == spec.build(K).statement() and out.num_reporting == K


def test_private_auc_is_finish_release_of_the_mechanisms_release():
    m = get_mechanism("histogram", epsilon=1.0, num_thresholds=3)
    pos, neg = tf.constant([0.0, 50.0, 30.0, 0.0]), tf.constant([0.0, 40.0, 10.0, 0.0])
    out = private_auc(m, pos, neg, seed=3, repeats=5)
    release = m.release(pos, neg, seed=3, repeats=5)
    direct = finish_release(
        None, {k: v.numpy() for k, v in release.items()}, num_examples=130.0, mechanism=m
    )
    np.testing.assert_array_equal(out.aucs, direct.aucs)
    np.testing.assert_array_equal(out.fpr, direct.fpr)
    assert out.epsilon_total == direct.epsilon_total == 5.0
    one = private_auc(m, pos, neg, seed=3)
    assert one.aucs.shape == (1,) and one.fpr.shape == (1, 3) and one.epsilon_total == 1.0


def test_simulate_refuses_what_is_not_a_release():
    with pytest.raises(TypeError, match="ReleaseSpec or a built mechanism"):
        simulate("histogram", np.zeros((1, T + 1)), np.zeros((1, T + 1)))
