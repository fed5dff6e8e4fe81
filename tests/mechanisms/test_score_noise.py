"""score-noise: its statement, the noise it actually draws, and the AUC of noisy scores."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms import get_mechanism, require
from dpauc_tf.mechanisms.score_noise import ScoreNoise
from dpauc_tf.noise.seeds import make_seed
from dpauc_tf.simulation import simulate_examples


def test_statement_names_relation_sensitivity_noise_and_epsilon():
    statement = ScoreNoise(epsilon=2.0).statement()
    assert statement.mechanism == "score-noise"
    assert "score DP" in statement.neighbouring
    assert "labels are NOT protected" in statement.neighbouring
    assert statement.sensitivity.startswith("L1 = 1")
    assert statement.noise == "Laplace(scale=0.5) on every score"
    assert (statement.epsilon, statement.delta) == (2.0, 0.0)
    assert ScoreNoise(epsilon=2.0).privacy_spent(3).basic == pytest.approx(6.0)


@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_drawn_noise_is_laplace_with_scale_one_over_epsilon(epsilon):
    scores = np.tile(np.linspace(0.0, 1.0, 5000), 20)
    _, noisy = ScoreNoise(epsilon).transform(None, scores, make_seed(1))
    noise = noisy.numpy() - scores
    scale = 1.0 / epsilon
    # Laplace(b): E|X| = b, Var X = 2 b^2 (a halved or doubled scale fails both).
    assert np.mean(np.abs(noise)) == pytest.approx(scale, rel=0.03)
    assert np.var(noise) == pytest.approx(2 * scale**2, rel=0.06)
    assert abs(np.mean(noise)) < 0.05 * scale
    assert np.mean(np.abs(noise) > scale) == pytest.approx(np.exp(-1), abs=0.01)


def test_counting_grid_is_data_independent_and_covers_the_noise():
    m = ScoreNoise(epsilon=2.0)
    grid = m.count_thresholds(Thresholds.make(100))
    assert grid.num_thresholds == m.num_thresholds == m.resolution
    assert grid.values[0] == pytest.approx(-10.0) and grid.values[-1] == pytest.approx(11.0)


def test_auc_of_noisy_scores_matches_the_exact_rank_auc():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 4000)
    scores = 1 / (1 + np.exp(-(rng.normal(size=4000) + labels)))
    grid = Thresholds.make(100)
    tiny = simulate_examples(ScoreNoise(epsilon=1e9), labels, scores, grid, seed=0, repeats=2)
    assert tiny.aucs == pytest.approx(roc_auc_score(labels, scores), abs=1e-4)
    # With real noise: the mean AUC equals the exact AUC of independently noised scores.
    mechanism = ScoreNoise(epsilon=2.0)
    aucs = simulate_examples(mechanism, labels, scores, grid, seed=1, repeats=40).aucs
    exact = []
    for r in range(40):
        _, noisy = mechanism.transform(None, scores, make_seed(1000 + r))
        exact.append(roc_auc_score(labels, noisy.numpy()))
    assert np.mean(aucs) == pytest.approx(np.mean(exact), abs=4 * np.std(exact) / np.sqrt(20))
    assert np.mean(aucs) < roc_auc_score(labels, scores) - 0.05
    assert tiny.fpr.shape == (2, mechanism.resolution)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="epsilon"):
        ScoreNoise(epsilon=0.0)
    grid = Thresholds.make(10)
    with pytest.raises(ValueError, match="labels"):
        simulate_examples(ScoreNoise(1.0), [0, 2], [0.1, 0.2], grid)
    with pytest.raises(ValueError, match="scores"):
        simulate_examples(ScoreNoise(1.0), [0, 1], [0.1, 1.2], grid)
    with pytest.raises(ValueError, match="Keras metric"):
        require(get_mechanism("score-noise", epsilon=1.0, num_thresholds=10), "keras_metric")
