"""auc-only: the flip sensitivity by brute force, the noise's exact law, the grid, refusals."""

import math

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from dpauc_tf import DPAUC
from dpauc_tf.core.curve import confusion_from_histogram
from dpauc_tf.core.postprocessing import mann_whitney_auc
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.auc_only import (
    COUNT_RESOLUTION,
    MIN_BOUND,
    AucOnly,
    auc_flip_sensitivity,
    grid_error_bound,
)

DELTA = 1e-6
MAX_N = 10


# -- the sensitivity: every data set of n <= 10 examples up to ties, every flip ------------
def _bucket_sequences(n):
    """Every data set of ``n`` examples up to relabelling: a sequence of non-empty buckets
    (tied scores), each holding ``p`` positives and ``q`` negatives, in score order."""
    if n == 0:
        return [[]]
    out = []
    for size in range(1, n + 1):
        for p in range(size + 1):
            out.extend([(p, size - p), *rest] for rest in _bucket_sequences(n - size))
    return out


def _mann_whitney(pos, neg):
    """Rows of bucket counts (ascending scores) -> AUC with ties 1/2; NaN if a class is empty."""
    below = np.cumsum(neg, axis=1) - neg
    num_pos, num_neg = pos.sum(1), neg.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ((pos * below).sum(1) + 0.5 * (pos * neg).sum(1)) / (num_pos * num_neg)


@pytest.fixture(scope="module")
def brute_force():
    """max |AUC(D) - AUC(D')| over every data set with class counts (P, N) and every flip."""
    worst = {}
    for n in range(2, MAX_N + 1):
        sequences = _bucket_sequences(n)
        counts = np.zeros((len(sequences), 2, n))
        for i, seq in enumerate(sequences):
            for j, (p, q) in enumerate(seq):
                counts[i, :, j] = p, q
        pos, neg = counts[:, 0], counts[:, 1]
        auc = _mann_whitney(pos, neg)
        num_pos, num_neg = pos.sum(1), neg.sum(1)
        change = np.zeros(len(sequences))
        for j in range(n):
            for direction in (1, -1):  # +1: a negative of bucket j becomes positive
                source = neg if direction == 1 else pos
                ok = source[:, j] > 0
                new_pos, new_neg = pos.copy(), neg.copy()
                new_pos[:, j] += direction
                new_neg[:, j] -= direction
                flipped = _mann_whitney(new_pos, new_neg)
                ok &= np.isfinite(flipped) & np.isfinite(auc)
                change = np.where(ok, np.maximum(change, np.abs(flipped - auc)), change)
        for key in set(zip(num_pos.astype(int), num_neg.astype(int), strict=True)):
            rows = (num_pos == key[0]) & (num_neg == key[1])
            worst[key] = max(worst.get(key, 0.0), float(change[rows].max()))
    return worst


def test_brute_force_enumerates_every_tie_pattern():
    # a(n) = sum_s (s + 1) a(n - s): 2, 7, 24, 82 data sets of 1..4 examples.
    assert [len(_bucket_sequences(n)) for n in (1, 2, 3, 4)] == [2, 7, 24, 82]


def test_flip_sensitivity_is_exactly_the_brute_force_maximum(brute_force):
    assert len(brute_force) == sum(n + 1 for n in range(2, MAX_N + 1))  # every (P, N)
    for (num_pos, num_neg), worst in brute_force.items():
        if num_pos < 1 or num_neg < 1 or num_pos + num_neg == 2:
            continue  # no flip keeps both classes
        exact = auc_flip_sensitivity(num_pos, num_neg)
        assert worst == pytest.approx(exact, abs=1e-12), (num_pos, num_neg)
        assert worst <= 1.0 / min(num_pos, num_neg) + 1e-12  # what the mechanism uses


def test_our_brute_force_auc_is_the_librarys_estimator():
    rng = np.random.default_rng(0)
    pos, neg = rng.integers(0, 4, (50, 7)).astype(float), rng.integers(0, 4, (50, 7)).astype(float)
    library = mann_whitney_auc(confusion_from_histogram(tf.constant(pos), tf.constant(neg)))
    np.testing.assert_allclose(library.numpy(), _mann_whitney(pos, neg), rtol=1e-12)


def test_weighted_flips_stay_within_one_over_the_smaller_class():
    """Weights in [0, 1]: one flip moves the weighted AUC by at most 1 / min(P, N)."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(3, 12))
        pos = rng.random(n) * (rng.random(n) < 0.5)
        neg = rng.random(n) * (rng.random(n) < 0.6)
        j = int(rng.integers(n))
        if neg[j] == 0 or pos.sum() <= 0 or neg.sum() - neg[j] <= 0:
            continue
        new_pos, new_neg = pos.copy(), neg.copy()
        new_pos[j], new_neg[j] = pos[j] + neg[j], 0.0  # the negative weight becomes positive
        before = _mann_whitney(pos[None], neg[None])[0]
        after = _mann_whitney(new_pos[None], new_neg[None])[0]
        assert abs(after - before) <= 1.0 / min(pos.sum(), neg.sum()) + 1e-12


# -- the grid ------------------------------------------------------------------------------
def test_the_counting_grid_is_within_1e5_of_the_exact_auc():
    from dpauc_tf.experiments.ground_truth import exact_auc
    from dpauc_tf.experiments.synthetic import binormal_score_set
    from dpauc_tf.simulation import client_histograms

    data = binormal_score_set(20_089, 4_992, target_auc=0.77, seed=0)
    mechanism = AucOnly(epsilon=1.0, num_thresholds=200, delta=DELTA)
    assert mechanism.num_thresholds == COUNT_RESOLUTION
    scores = data.scores.astype(np.float32)  # what a Keras model gives
    pos, neg = client_histograms(data.labels, scores, mechanism.count_thresholds(None))
    on_grid = float(mann_whitney_auc(confusion_from_histogram(pos[0], neg[0])))
    assert abs(on_grid - exact_auc(data.labels, scores)) < 1e-5
    assert grid_error_bound(pos[0], neg[0]) < 1e-5  # guaranteed, whatever the order in buckets


# -- the noise's exact law -----------------------------------------------------------------
NUM_POS, NUM_NEG = 1_500, 1_000
RESOLUTION = 11  # small grid: fast releases; the law does not depend on the grid
SAMPLES = 2_000


def _counts():
    pos = np.zeros(RESOLUTION + 1)
    neg = np.zeros(RESOLUTION + 1)
    pos[[4, 6, 8]] = [300, 500, 700]
    neg[[3, 4, 6]] = [500, 300, 200]
    return pos, neg


def _exact_auc():
    pos, neg = _counts()
    return float(_mann_whitney(pos[None], neg[None])[0])


def _mechanism(cls=AucOnly, count_share=None):
    return cls(
        epsilon=1.0,
        num_thresholds=RESOLUTION,
        delta=DELTA,
        resolution=RESOLUTION,
        count_share=count_share,
    )


def released_auc_cdf(x, mechanism, exact, min_count, nodes=2_000):
    """CDF of the released AUC given the counts: Laplace(1 / (m eps_auc)) around the exact
    AUC, mixed over m = min_count - margin + Laplace(count_scale) (m >= MIN_BOUND)."""
    u = (np.arange(nodes) + 0.5) / nodes
    n = NUM_POS + NUM_NEG
    laplace = stats.laplace.ppf(u, scale=mechanism.count_scale_for(n))
    bound = min_count - mechanism.margin_for(n) + laplace
    assert bound.min() >= MIN_BOUND  # the NaN branch has negligible mass at these counts
    scale = 1.0 / (bound * mechanism.auc_epsilon_for(n))
    return stats.laplace.cdf((np.asarray(x)[:, None] - exact) / scale[None]).mean(axis=1)


class _Scaled(AucOnly):
    factor = 1.0

    def _auc_scale(self, bound):
        return super()._auc_scale(bound) * self.factor


class _Halved(_Scaled):
    factor = 0.5


class _Doubled(_Scaled):
    factor = 2.0


def _release(mechanism, mode):
    pos, neg = (tf.constant(c) for c in _counts())
    if mode == "eager":
        return mechanism.release(pos, neg, seed=7, repeats=SAMPLES)
    function = tf.function(
        lambda p, n: mechanism.release(p, n, seed=tf.constant([7, 0], tf.int64), repeats=SAMPLES),
        jit_compile=(mode == "xla"),
    )
    return function(pos, neg)


def _ks(values, mechanism):
    cdf = lambda x: released_auc_cdf(x, mechanism, _exact_auc(), min(NUM_POS, NUM_NEG))  # noqa: E731
    return stats.kstest(values, cdf).pvalue


@pytest.mark.parametrize(
    "mode, count_share",
    [("eager", None), ("function", None), ("xla", None), ("eager", 0.05)],
)
def test_released_auc_has_the_stated_law_and_a_wrong_scale_fails(mode, count_share):
    """Eagerly, in tf.function and under XLA, with the n-dependent share (0.145 at these
    2,500 examples) and a fixed one; a halved or doubled AUC or count scale fails (eager)."""
    assert get_mechanism("auc-only", epsilon=1.0, num_thresholds=5, delta=DELTA).capabilities.xla
    honest = _mechanism(count_share=count_share)
    n = NUM_POS + NUM_NEG
    if count_share is None:
        assert honest.count_share_for(n) == pytest.approx(math.sqrt(math.log(5e5) / (n / 4)))
    release = _release(honest, mode)
    bound = release["min_count_bound"].numpy()
    # the bound: min(P, N) - margin + Laplace(1 / eps_count)
    centred = bound - (min(NUM_POS, NUM_NEG) - honest.margin_for(n))
    scale = honest.count_scale_for(n)
    assert stats.kstest(centred, stats.laplace(scale=scale).cdf).pvalue > 1e-3
    assert _ks(release["auc"].numpy(), honest) > 1e-3
    if mode != "eager":
        return  # the broken variants run the same code: checked once, eagerly
    for wrong in (scale / 2, scale * 2):
        assert stats.kstest(centred, stats.laplace(scale=wrong).cdf).pvalue < 1e-6
    for broken in (_Halved, _Doubled):
        values = _release(_mechanism(broken, count_share), mode)["auc"].numpy()
        assert _ks(values, honest) < 1e-6, broken.__name__


def test_released_auc_through_the_keras_metric_has_the_stated_law():
    values = {}
    for cls in (AucOnly, _Halved, _Doubled):
        metric = DPAUC(epsilon=1.0, delta=DELTA, seed=3, mechanism_options={"resolution": 11})
        assert metric.mechanism.name == "auc-only"
        metric._mechanism = _mechanism(cls)  # the broken variants on the same counts
        pos, neg = _counts()
        metric.positives.assign(pos)
        metric.negatives.assign(neg)
        values[cls] = np.array([float(metric.result()) for _ in range(300)])
        assert metric.releases_drawn == 300
    honest = _mechanism()
    assert _ks(values[AucOnly], honest) > 1e-3
    assert _ks(values[_Halved], honest) < 1e-3
    assert _ks(values[_Doubled], honest) < 1e-3


# -- behaviour at the edges ----------------------------------------------------------------
def test_small_or_one_class_data_release_nan():
    mechanism = _mechanism(count_share=0.05)
    pos, neg = _counts()
    small = mechanism.release(pos / 10, neg / 10, seed=0, repeats=200)  # min(P, N) = 100
    assert np.all(np.isnan(small["auc"].numpy()))
    assert np.all(small["min_count_bound"].numpy() < MIN_BOUND)
    one_class = mechanism.release(pos, np.zeros_like(neg), seed=0, repeats=50)
    assert np.all(np.isnan(one_class["auc"].numpy()))


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="delta"):
        AucOnly(epsilon=1.0, num_thresholds=5)
    with pytest.raises(ValueError, match="count_share"):
        AucOnly(epsilon=1.0, num_thresholds=5, delta=DELTA, count_share=1.0)
    with pytest.raises(ValueError, match="num_clients=3"):
        get_mechanism("auc-only", epsilon=1.0, num_thresholds=5, delta=DELTA, num_clients=3)


def test_small_test_sets_release_a_number_with_the_default_share():
    """n = 500 with 127 positives: the fixed 0.05 share's margin (262) always gave NaN; the
    share that suits n (0.32, margin 41) releases every time, with the stated noise."""
    pos, neg = np.zeros(RESOLUTION + 1), np.zeros(RESOLUTION + 1)
    pos[[5, 7, 9]], neg[[3, 5, 7]] = [27, 50, 50], [200, 100, 73]
    fixed = _mechanism(count_share=0.05).release(pos, neg, seed=0, repeats=500)
    assert np.all(np.isnan(fixed["auc"].numpy()))
    default = _mechanism()
    assert default.margin_for(500) == pytest.approx(40.5, abs=0.1)
    release = default.release(pos, neg, seed=0, repeats=500)
    assert not np.any(np.isnan(release["auc"].numpy()))
    centred = release["min_count_bound"].numpy() - (127 - default.margin_for(500))
    assert (
        stats.kstest(centred, stats.laplace(scale=default.count_scale_for(500)).cdf).pvalue > 1e-3
    )
    # the statement says how the share is chosen; the whole epsilon is charged once
    assert "public number of examples" in default.statement().noise
    assert default.privacy_spent(1).best == pytest.approx(1.0)
    with pytest.raises(ValueError, match="margin_for"):
        _ = default.margin


def test_guarantee_and_accounting():
    mechanism = _mechanism(count_share=0.05)
    statement = mechanism.statement()
    assert (statement.epsilon, statement.delta) == (1.0, DELTA)
    assert mechanism.count_epsilon + mechanism.auc_epsilon == pytest.approx(1.0)
    # P(Laplace(1/eps_count) > margin) = delta
    assert 0.5 * math.exp(-mechanism.margin / mechanism.count_scale) == pytest.approx(DELTA)
    assert mechanism.privacy_spent(1).best == pytest.approx(1.0)
    assert mechanism.privacy_spent(3, delta=3 * DELTA).best == pytest.approx(3.0)
    assert math.isinf(mechanism.privacy_spent(3, delta=2 * DELTA).best)  # deltas add up


def test_the_metric_releases_no_curve_and_picks_its_default():
    def default(**asked):  # the metric's default is the spec's (ReleaseSpec.mechanism_for)
        return DPAUC(epsilon=1.0, num_thresholds=10, **asked).get_config()["mechanism"]

    assert default(delta=DELTA) == "auc-only"
    assert default() == "rank-sum"  # pure epsilon: docs/rank_sum.md
    assert default(curve="PR") == default(summation_method="minoring") == "histogram"
    with pytest.raises(ValueError, match="pure epsilon"):  # a curve spends no delta usefully
        DPAUC(epsilon=1.0, num_thresholds=10, curve="PR", delta=DELTA)
    metric = DPAUC(epsilon=1.0, delta=DELTA, seed=0)
    assert metric.get_config()["mechanism"] == "auc-only"
    assert metric.positives.shape == (COUNT_RESOLUTION + 1,)
    metric.update_state([0, 1, 1, 0], [0.2, 0.7, 0.9, 0.1])
    with pytest.raises(ValueError, match="no ROC curve"):
        metric.roc_curve()
    with pytest.raises(ValueError, match="only the ROC AUC"):
        DPAUC(epsilon=1.0, delta=DELTA, mechanism="auc-only", curve="PR")
    pr = DPAUC(epsilon=1.0, curve="PR")
    assert pr.mechanism.name == "histogram"
    assert DPAUC(epsilon=1.0).get_config()["mechanism"] == "rank-sum"
    again = DPAUC.from_config(metric.get_config())
    assert again.mechanism.name == "auc-only" and again.get_config() == metric.get_config()


def test_evaluate_command_says_there_is_no_curve(tmp_path, capsys):
    import json

    from dpauc_tf.cli.main import main

    rng = np.random.default_rng(0)
    labels = rng.random(1_500) < 0.4
    scores = np.clip(0.5 + 0.2 * (labels - 0.5) + 0.2 * rng.normal(size=1_500), 0, 1)
    path = tmp_path / "scores.csv"
    np.savetxt(path, np.c_[scores, labels], delimiter=",", header="score,label", comments="")
    args = ["evaluate", "--scores", str(path), "--mechanism", "auc-only", "--epsilon", "1"]
    args += ["--delta", "1e-6", "--repeats", "4", "--seed", "0", "--show-exact"]
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["roc"] is None and "no curve" in out["roc_note"]
    assert abs(out["auc_mean"] - out["exact_auc"]) < 0.02 and out["num_undefined"] == 0
    # it counts on its own fine grid, and says why a release can be undefined
    assert out["num_thresholds"] == 200 and out["count_thresholds"] == COUNT_RESOLUTION
    assert "undefined_note" not in out  # no release was undefined (issue 24: only when meaningful)
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "there is no curve" in table
    assert f"200 (tf grid); auc-only counts on its own {COUNT_RESOLUTION}" in table
    histogram = ["evaluate", "--scores", str(path), "--mechanism", "histogram", "--epsilon", "1"]
    histogram += ["--format", "json"]
    assert main(histogram) == 0  # a curve mechanism counts on the 200 thresholds
    out = json.loads(capsys.readouterr().out)
    assert out["count_thresholds"] == 200 and "undefined_note" not in out
    assert main([*args, "--clients", "3"]) != 0
    assert "num_clients=3" in capsys.readouterr().err
    tiny = tmp_path / "tiny.csv"  # min(P, N) = 2: the bound is below 2 in every release
    tiny.write_text("score,label\n0.1,0\n0.9,1\n0.5,1\n0.3,0\n")
    assert main([*args[:2], str(tiny), *args[3:]]) == 0
    assert "undefined in every release (the noisy lower bound of min(P, N)" in (
        capsys.readouterr().out
    )
