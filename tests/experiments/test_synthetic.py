"""The synthetic score sets hit the paper's sizes and AUCs."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dpauc_tf.experiments import synthetic


@pytest.fixture(scope="module")
def score_sets():
    return synthetic.paper_score_sets()


@pytest.mark.parametrize("epoch", [0, 1, 2])
def test_paper_sizes_and_aucs(score_sets, epoch):
    s = score_sets[epoch]
    assert s.num_examples == 458_407
    assert s.num_positives == 117_317
    assert roc_auc_score(s.labels, s.scores) == pytest.approx(
        synthetic.TARGET_AUCS[epoch], abs=1e-4
    )
    assert s.auc == pytest.approx(synthetic.TARGET_AUCS[epoch], abs=1e-4)
    assert np.all((s.scores > 0) & (s.scores < 1))
    # Calibrated-looking: mean score at the positive rate, most scores near 0.
    assert np.mean(s.scores) == pytest.approx(117_317 / 458_407, abs=1e-3)
    assert np.median(s.scores) < 0.25


def test_deterministic_and_seeded(score_sets):
    again = synthetic.paper_score_set(1)
    np.testing.assert_array_equal(again.scores, score_sets[1].scores)
    np.testing.assert_array_equal(again.labels, score_sets[1].labels)
    other = synthetic.binormal_score_set(5000, 1000, 0.8, seed=1)
    assert not np.array_equal(
        other.scores, synthetic.binormal_score_set(5000, 1000, 0.8, seed=2).scores
    )


def test_binormal_model_parameters():
    s = synthetic.binormal_score_set(20_000, 5000, 0.75, seed=3)
    # Population AUC of the binormal model is Phi(d / sqrt 2); the sample solution is close.
    from scipy.stats import norm

    assert norm.cdf(s.separation / np.sqrt(2)) == pytest.approx(0.75, abs=0.01)
    with pytest.raises(ValueError):
        synthetic.binormal_score_set(100, 0, 0.7)
    with pytest.raises(ValueError):
        synthetic.paper_score_set(3)
