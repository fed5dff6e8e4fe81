"""rank-sum: the AUC identity and the sensitivity by brute force, the noise's law in every
mode (a halved or doubled scale fails), an audit case, the interval, the default, refusals."""

import itertools
import math

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from dpauc_tf import DPAUC
from dpauc_tf.analysis.audit import run_audit
from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.core.postprocessing import mann_whitney_auc
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.auc_only import COUNT_RESOLUTION
from dpauc_tf.mechanisms.intervals import release_interval
from dpauc_tf.mechanisms.rank_sum import RankSum, rank_sum_statistics

EPSILON = 1.0


def _pairwise_auc(labels, scores, weights):
    """Weighted Mann-Whitney over all pairs, ties 1/2 (the definition)."""
    pos, neg = labels == 1, labels == 0
    if not pos.any() or not neg.any():
        return math.nan
    diff = scores[pos][:, None] - scores[neg][None, :]
    pair = np.outer(weights[pos], weights[neg])
    wins = np.where(diff > 0, 1.0, np.where(diff == 0, 0.5, 0.0))
    return float((pair * wins).sum() / pair.sum())


def _counts(labels, scores, weights, buckets):
    pos = np.bincount(scores, weights * (labels == 1), minlength=buckets)
    neg = np.bincount(scores, weights * (labels == 0), minlength=buckets)
    return tf.constant(pos, tf.float64), tf.constant(neg, tf.float64)


# -- brute force: every labelling of small tied score sets, every flip -------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_identity_and_sensitivity_over_every_labelling_and_flip(weighted):
    """On score sets with ties (scores are bucket ids), for every labelling: 1/2 + S/(P N) is
    the pairwise AUC; every flip moves S by at most D and P by at most 1, D is the same for
    both neighbours (it depends on the scores and weights only), and D is attained."""
    rng = np.random.default_rng(1 if weighted else 0)
    checked = 0
    for n in range(1, 8):
        scores = rng.integers(0, 4, n)
        weights = rng.uniform(0.2, 1.0, n) if weighted else np.ones(n)
        worst = 0.0
        for labels in itertools.product((0, 1), repeat=n):
            labels = np.array(labels)
            stats_d = {
                k: float(v)
                for k, v in rank_sum_statistics(*_counts(labels, scores, weights, 4)).items()
            }
            p, w = stats_d["num_pos"], stats_d["total"]
            if 0 < p < w and 0 < (labels == 1).sum() < n:
                auc = 0.5 + stats_d["rank_sum"] / (p * (w - p))
                assert auc == pytest.approx(_pairwise_auc(labels, scores, weights), abs=1e-12)
            for i in range(n):
                flipped = labels.copy()
                flipped[i] = 1 - flipped[i]
                stats_f = rank_sum_statistics(*_counts(flipped, scores, weights, 4))
                move = abs(float(stats_f["rank_sum"]) - stats_d["rank_sum"])
                assert move <= stats_d["sensitivity"] + 1e-12
                assert abs(float(stats_f["num_pos"]) - p) <= 1.0 + 1e-12
                assert float(stats_f["sensitivity"]) == stats_d["sensitivity"]
                worst = max(worst, move / max(weights[i], 1e-12))
                checked += 1
        if n > 1:  # attained: the flip of an example of weight 1 in the outermost bucket
            assert worst == pytest.approx(stats_d["sensitivity"], rel=1e-9)
    assert checked > 400


def test_the_estimate_is_tensorflows_auc_on_the_grid_and_sklearns_on_fine_scores():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    labels = rng.random(3_000) < 0.3
    scores = np.round(np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0, 1), 3)  # many ties
    m = RankSum(epsilon=1e9)  # noise negligible
    grid = m.count_thresholds(None)
    buckets = grid.bucketize_numpy(scores)
    pos, neg = _counts(labels.astype(int), buckets, np.ones(3_000), grid.num_buckets)
    exact = float(mann_whitney_auc(confusion_from_histogram(pos, neg)))
    assert float(m.estimate_auc(m.release(pos, neg, seed=0))) == pytest.approx(exact, abs=1e-8)
    assert exact == pytest.approx(roc_auc_score(labels, scores), abs=1e-6)


# -- the noise's law ------------------------------------------------------------------------
SAMPLES = 4_000


def _fixture_counts():
    pos = np.zeros(12)
    neg = np.zeros(12)
    pos[[4, 6, 8]] = [300, 500, 700]
    neg[[3, 4, 6]] = [500, 300, 200]
    return tf.constant(pos), tf.constant(neg)


def _release(mechanism, mode):
    pos, neg = _fixture_counts()
    if mode == "eager":
        return mechanism.release(pos, neg, seed=7, repeats=SAMPLES)
    function = tf.function(
        lambda p, n: mechanism.release(p, n, seed=tf.constant([7, 0], tf.int64), repeats=SAMPLES),
        jit_compile=(mode == "xla"),
    )
    return function(pos, neg)


@pytest.mark.parametrize("mode", ["eager", "function", "xla"])
def test_noise_is_laplace_of_the_stated_scales_and_a_wrong_scale_fails(mode):
    mechanism = RankSum(epsilon=EPSILON, resolution=11, count_share=0.3)
    exact = {k: v.numpy() for k, v in rank_sum_statistics(*_fixture_counts()).items()}
    release = {k: v.numpy() for k, v in _release(mechanism, mode).items()}
    assert np.all(release["total"] == exact["total"])
    assert np.all(release["sensitivity"] == exact["sensitivity"])
    # D: the lowest occupied bucket (3) has centred midrank 500/2 - 2500/2 = -1000
    assert exact["sensitivity"] == 1000.0
    scales = {"rank_sum": 1000.0 / 0.7, "num_pos": 1.0 / 0.3}
    assert float(mechanism.rank_scale(exact["sensitivity"])) == pytest.approx(scales["rank_sum"])
    assert mechanism.count_scale == pytest.approx(scales["num_pos"])
    for key, scale in scales.items():
        noise = release[key] - exact[key]
        assert stats.kstest(noise, "laplace", args=(0, scale)).pvalue > 1e-3, key
        for wrong in (scale / 2, scale * 2):
            assert stats.kstest(noise, "laplace", args=(0, wrong)).pvalue < 1e-6, key
    assert np.corrcoef(release["rank_sum"], release["num_pos"])[0, 1] == pytest.approx(0, abs=0.06)


def test_max_weight_other_than_1_is_refused():
    """Weights of 1 only (issue 30: a weight that moves with the label, Keras' class_weight,
    would make the released W and D label statistics): max_weight=3 is refused in one line;
    tests/mechanisms/test_label_dependent_weights.py has the brute force."""
    with pytest.raises(ValueError, match="max_weight must be 1"):
        DPAUC(epsilon=EPSILON, max_weight=3.0, seed=0, mechanism_options={"resolution": 11})


def test_audit_holds_and_catches_a_flip_of_twice_the_weight():
    mechanism = get_mechanism("rank-sum", epsilon=EPSILON, num_thresholds=200)
    honest = run_audit(mechanism, samples=40_000, seed=0)
    assert not honest.violated and honest.epsilon_lower_bound > 0.4
    over = run_audit(mechanism, samples=40_000, seed=0, flip_weight=3.0)
    assert over.violated


# -- the interval ----------------------------------------------------------------------------
def test_sample_interval_covers_at_the_nominal_rate():
    """400 seeded releases of one data set: the sample-target interval (the Laplace law of the
    rank sum, the count's noise to first order) covers the exact AUC 95% of the time; a
    binomial 400-draw standard error is 1.1%, so 92-98% fails a halved width (~67%)."""
    mechanism = RankSum(epsilon=0.5, resolution=11)
    pos, neg = _fixture_counts()
    exact = float(mann_whitney_auc(confusion_from_histogram(pos, neg)))
    release = {k: v.numpy() for k, v in mechanism.release(pos, neg, seed=2, repeats=400).items()}
    ci = release_interval(mechanism, release, target="sample")
    covered = np.mean((ci.low <= exact) & (exact <= ci.high))
    assert 0.92 <= covered <= 0.98
    half = (ci.high - ci.low) / 4
    mid = (ci.high + ci.low) / 2
    assert np.mean(np.abs(mid - exact) <= half) < 0.85  # half the width would under-cover
    population = release_interval(mechanism, release, target="population")
    assert np.all(population.high - population.low > ci.high - ci.low)


# -- the default, the edges, the refusals ---------------------------------------------------
def test_dpauc_defaults_to_rank_sum_for_the_roc_auc():
    metric = DPAUC(epsilon=EPSILON, seed=0)
    assert metric.mechanism.name == "rank-sum"
    assert metric.positives.shape == (COUNT_RESOLUTION + 1,)
    rng = np.random.default_rng(0)
    y = rng.random(2_000) < 0.3
    s = np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0, 1)
    metric.update_state(y, s)
    exact = DPAUC(epsilon=None, num_thresholds=COUNT_RESOLUTION)
    exact.update_state(y, s)
    values = [float(metric.result()) for _ in range(50)]
    assert abs(np.mean(values) - float(exact.result())) < 0.01
    with pytest.raises(ValueError, match="no ROC curve"):
        metric.roc_curve()
    assert DPAUC(epsilon=EPSILON, curve="PR").mechanism.name == "histogram"
    assert DPAUC(epsilon=EPSILON, summation_method="minoring").mechanism.name == "histogram"


def test_one_class_and_tiny_data_never_give_a_made_up_number():
    m = RankSum(epsilon=EPSILON, resolution=11)
    pos, neg = _fixture_counts()
    one_class = m.estimate_auc(m.release(pos, tf.zeros_like(neg), seed=0, repeats=2_000)).numpy()
    # P~ is the whole data up to noise: N~ <= 0 (NaN) about half the time; otherwise clipped
    assert np.isnan(one_class).mean() == pytest.approx(0.5, abs=0.05)
    finite = one_class[np.isfinite(one_class)]
    assert np.all((finite >= 0) & (finite <= 1))
    single = m.estimate_auc(
        m.release(tf.one_hot(4, 12, dtype=tf.float64), tf.zeros(12, tf.float64), seed=0, repeats=50)
    ).numpy()
    assert np.all(np.isnan(single) | ((single >= 0) & (single <= 1)))
    empty = m.estimate_auc(m.release(tf.zeros(12, tf.float64), tf.zeros(12, tf.float64), seed=0))
    assert np.isnan(float(empty))


def test_refusals_are_one_line():
    with pytest.raises(ValueError, match="pure epsilon-DP; leave delta unset"):
        RankSum(epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="count_share must be in"):
        RankSum(epsilon=1.0, count_share=1.0)
    with pytest.raises(ValueError, match="num_clients=3"):  # one holder's AUC only
        get_mechanism("auc-only", epsilon=1.0, num_thresholds=10, delta=1e-6, num_clients=3)
    with pytest.raises(ValueError, match="only the ROC AUC"):
        DPAUC(epsilon=1.0, mechanism="rank-sum", curve="PR")


def test_guarantee_and_accounting():
    m = RankSum(epsilon=2.0, count_share=0.25)
    assert (m.count_epsilon, m.rank_epsilon) == (0.5, 1.5)
    statement = m.statement()
    assert (statement.epsilon, statement.delta) == (2.0, 0.0)
    assert m.privacy_spent(1).best == pytest.approx(2.0)
    assert m.privacy_spent(3).best <= 6.0 + 1e-9


def test_evaluate_command_picks_the_default_for_what_is_asked(tmp_path, capsys):
    import json

    from dpauc_tf.cli.main import main

    rng = np.random.default_rng(0)
    labels = rng.random(3_000) < 0.3
    scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0, 1)
    path = tmp_path / "scores.csv"
    np.savetxt(path, np.c_[scores, labels], delimiter=",", header="score,label", comments="")
    base = ["evaluate", "--scores", str(path), "--epsilon", "1", "--seed", "0", "--format", "json"]
    expected = {
        (): "rank-sum",
        ("--delta", "1e-6"): "auc-only",
        ("--clients", "3"): "rank-sum",  # each client's own noise (no secure aggregation)
        ("--mechanism", "tree-histogram"): "tree-histogram",
    }
    for extra, name in expected.items():
        assert main([*base, *extra]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["mechanism"] == name, extra
    assert main([*base, "--confidence", "0.95"]) == 0
    release = json.loads(capsys.readouterr().out)["releases"][0]
    assert release["ci_low"] < release["auc"] < release["ci_high"]
    assert main(["evaluate", "--scores", str(path)]) == 2
    assert "give --epsilon" in capsys.readouterr().err
