"""Tree mechanisms: least squares, statements, and the noise actually drawn against them."""

import math

import dp_accounting
import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.analysis.tree_design import auc_variance
from dpauc_tf.core.curve import auc_from_confusion, auc_from_histogram
from dpauc_tf.core.tree import TreeLayout, least_squares_leaves, level_weights
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.tree import SecureTreeHistogram, TreeHistogram
from dpauc_tf.noise.seeds import make_seed, split_seed
from dpauc_tf.privacy.accounting import pure_epsilon

T = 15  # 16 buckets: a complete 4-ary tree of depth 2 (21 nodes)
REPEATS = 4000


def _counts(num_buckets=T + 1):
    rng = np.random.default_rng(0)
    pos = rng.integers(0, 300, size=num_buckets).astype(np.float64)
    neg = rng.integers(0, 900, size=num_buckets).astype(np.float64)
    return tf.constant(pos), tf.constant(neg)


@pytest.mark.parametrize(
    "num_buckets, branching, variances",
    [
        (10, 2, [1.0, 2.0, 3.0, 4.0]),  # arities (2, 2, 3): a wider last level
        (16, 4, [1.0, 5.0, 9.0]),
        (7, 3, [2.0, 1.0, 3.0]),
        (66, 4, [1.0, 2.0, 4.0, 3.0]),  # (4, 4, 5)
        (40, 2, [1.0, 2.0, 2.0, 3.0, 5.0, 4.0]),  # (2, 2, 2, 2, 3), 8 padding leaves
    ],
)
def test_least_squares_equals_dense_generalised_least_squares(num_buckets, branching, variances):
    layout = TreeLayout.for_buckets(num_buckets, branching)
    assert layout.depth + 1 == len(variances)
    real = layout.real_nodes
    design = layout.node_counts(tf.eye(num_buckets, dtype=tf.float64)).numpy().T[real]
    node_var = np.asarray(variances)[layout.node_levels()][real]
    rng = np.random.default_rng(1)
    observed = rng.normal(size=(3, layout.num_nodes)) * 10
    observed[:, ~real] = 0.0  # padding-only nodes are released as exact zeros
    weights = np.diag(1.0 / node_var)
    gls = np.linalg.solve(design.T @ weights @ design, design.T @ weights @ observed[:, real].T).T
    ours = least_squares_leaves(tf.constant(observed), layout, variances).numpy()
    np.testing.assert_allclose(ours, gls, atol=1e-9)
    # noise-free counts come back exactly
    leaves = rng.integers(0, 50, size=(2, num_buckets)).astype(np.float64)
    nodes = layout.node_counts(tf.constant(leaves))
    np.testing.assert_allclose(least_squares_leaves(nodes, layout, variances).numpy(), leaves)


def test_layout_and_budget():
    layout = TreeLayout.for_buckets(1024, 4)
    assert (layout.depth, layout.num_nodes, int(layout.real_nodes.sum())) == (5, 1365, 1365)
    assert TreeLayout.for_buckets(101, 4).arities == (4, 4, 7)  # was a 4th level
    assert TreeLayout.for_buckets(113, 4).arities == (4, 4, 4, 4)
    assert TreeLayout.for_buckets(256, 4).arities == (4, 4, 4, 4)
    np.testing.assert_allclose(level_weights(3, "auc").sum(), 1.0)
    assert level_weights(3, "auc")[0] > level_weights(3, "auc")[-1]
    np.testing.assert_allclose(level_weights(2, [1, 1, 2]), [0.25, 0.25, 0.5])
    with pytest.raises(ValueError, match="one weight per level"):
        level_weights(2, [1, 1])
    with pytest.raises(ValueError, match="> 0"):
        level_weights(1, [1, 0])
    with pytest.raises(ValueError, match="branching"):
        TreeLayout.for_buckets(16, 1)


def _level_noise(mechanism, key, seed=3, counts=None):
    pos, neg = counts if counts is not None else _counts(mechanism.num_buckets)
    release = mechanism.release(pos, neg, seed=seed, repeats=REPEATS)
    exact = mechanism.layout.node_counts(pos if key == "pos_tree" else neg)
    drawn = (release[key] - exact).numpy()
    offsets = mechanism.layout.offsets
    return [drawn[:, offsets[i] : offsets[i + 1]].ravel() for i in range(len(offsets) - 1)]


def test_tree_histogram_statement_and_laplace_noise_per_level():
    m = TreeHistogram(epsilon=1.0, num_thresholds=T)
    statement = m.statement()
    assert statement.epsilon == 1.0 and statement.delta == 0.0
    assert "label DP" in statement.neighbouring
    assert "L1 = 2 per level x 3 levels = 6" in statement.sensitivity
    assert "Laplace" in statement.noise
    # epsilon = sum over levels of L1 / scale
    assert math.isclose(sum(2.0 / s for s in m.level_scales), 1.0)
    assert math.isclose(pure_epsilon(m.dp_event()), 1.0)
    for key in ("pos_tree", "neg_tree"):
        for scale, drawn in zip(m.level_scales, _level_noise(m, key), strict=True):
            # Laplace(b): mean |x| = b, std = sqrt(2) b; 15 % fails a halved or doubled b.
            assert abs(np.mean(np.abs(drawn)) / scale - 1.0) < 0.15
            assert abs(np.std(drawn) / (math.sqrt(2.0) * scale) - 1.0) < 0.15
            assert abs(np.mean(drawn)) < 0.1 * scale
            # Laplace has excess kurtosis 3 (a Gaussian of the same std would give 0)
            kurtosis = np.mean(drawn**4) / np.var(drawn) ** 2 - 3.0
            assert 1.5 < kurtosis < 5.0


def test_padding_only_nodes_are_exact_zeros_and_budget_is_configurable():
    m = TreeHistogram(epsilon=2.0, num_thresholds=9, branching=2, budget="uniform")
    assert m.layout.arities == (2, 2, 3) and m.layout.num_leaves == 12  # not 16: no 5th level
    pos, neg = _counts(10)
    release = m.release(pos, neg, seed=0, repeats=5)
    padding = ~m.layout.real_nodes
    assert padding.sum() == 2
    assert np.all(release["pos_tree"].numpy()[:, padding] == 0.0)
    np.testing.assert_allclose(m.level_epsilons, [0.5] * 4)
    assert m.layout.num_nodes == 19


def test_public_scores_tree_releases_exact_totals_with_half_the_scale():
    m = TreeHistogram(epsilon=1.0, num_thresholds=T, public_scores=True)
    statement = m.statement()
    assert "L1 = 1 per level x 3 levels = 3" in statement.sensitivity
    assert "score histogram is released exactly" in statement.neighbouring
    assert math.isclose(sum(1.0 / s for s in m.level_scales), 1.0)
    assert math.isclose(pure_epsilon(m.dp_event()), 1.0)
    pos, neg = _counts()
    release = m.release(pos, neg, seed=1, repeats=REPEATS)
    assert sorted(release) == ["pos_tree", "total"]
    np.testing.assert_array_equal(release["total"].numpy()[0], (pos + neg).numpy())
    for scale, drawn in zip(m.level_scales, _level_noise(m, "pos_tree"), strict=True):
        assert abs(np.std(drawn) / (math.sqrt(2.0) * scale) - 1.0) < 0.15


def test_secure_tree_shares_sum_to_discrete_laplace_per_level():
    clients = 5
    m = SecureTreeHistogram(epsilon=1.0, num_thresholds=T, num_clients=clients)
    statement = m.statement()
    assert "trust" in statement.neighbouring and "secure sum" in statement.neighbouring
    assert "discrete Laplace" in statement.noise and "5 client shares" in statement.noise
    assert "L1 = 2 per level" in statement.sensitivity and statement.epsilon == 1.0
    pos, neg = _counts()
    # every client releases its share; the server sums the K integer reports
    per_client = [(pos / clients, neg / clients)] * clients
    per_client = [(tf.round(p), tf.round(n)) for p, n in per_client]
    seeds = split_seed(make_seed(11), clients)
    reports = [
        m.release(p, n, seed=seeds[i], repeats=REPEATS) for i, (p, n) in enumerate(per_client)
    ]
    summed = sum(r["pos_tree"] for r in reports).numpy()
    one = reports[0]["pos_tree"].numpy()
    assert np.all(summed == np.round(summed))
    exact = sum(m.layout.node_counts(p) for p, _ in per_client).numpy()
    offsets = m.layout.offsets
    for level, scale in enumerate(m.level_scales):
        drawn = (summed - exact)[:, offsets[level] : offsets[level + 1]].ravel()
        q = math.exp(-1.0 / scale)
        variance = 2.0 * q / (1.0 - q) ** 2
        assert abs(np.var(drawn) / variance - 1.0) < 0.15
        # P(0) of discrete Laplace is (1 - q) / (1 + q); halving/doubling the scale moves it
        assert abs(np.mean(drawn == 0) / ((1 - q) / (1 + q)) - 1.0) < 0.15
        share = (one - m.layout.node_counts(per_client[0][0]).numpy())[
            :, offsets[level] : offsets[level + 1]
        ]
        assert abs(np.var(share) / (variance / clients) - 1.0) < 0.2
    with pytest.raises(ValueError, match="integer counts"):
        m.release(pos + 0.5, neg, seed=0)
    aggregate = m.aggregate()
    assert aggregate.num_clients == 1 and aggregate.level_scales == m.level_scales


def test_registered_by_name_with_options():
    m = get_mechanism("tree-histogram", epsilon=1.0, num_thresholds=63, branching=8)
    assert isinstance(m, TreeHistogram) and m.layout.depth == 2
    s = get_mechanism("secure-tree-histogram", epsilon=0.5, num_thresholds=15, num_clients=3)
    assert isinstance(s, SecureTreeHistogram) and s.num_clients == 3
    assert isinstance(
        get_mechanism("tree-histogram", epsilon=1.0, num_thresholds=15).dp_event(),
        dp_accounting.ComposedDpEvent,
    )
    with pytest.raises(ValueError, match="pure"):
        TreeHistogram(epsilon=1.0, num_thresholds=15, delta=1e-6)
    with pytest.raises(ValueError, match="num_clients"):
        SecureTreeHistogram(epsilon=1.0, num_thresholds=15, num_clients=0)


def test_noise_free_tree_reproduces_the_exact_auc_and_noisy_auc_is_unbiased():
    pos, neg = _counts(64)
    m = TreeHistogram(epsilon=1.0, num_thresholds=63)
    exact = float(auc_from_histogram(pos, neg))
    nodes = {"pos_tree": m.layout.node_counts(pos), "neg_tree": m.layout.node_counts(neg)}
    assert abs(float(auc_from_confusion(m.to_confusion(nodes))) - exact) < 1e-12
    release = m.release(pos * 20, neg * 20, seed=5, repeats=400)
    aucs = auc_from_confusion(m.to_confusion(release)).numpy()
    assert aucs.shape == (400,)
    assert abs(aucs.mean() - exact) < 4 * aucs.std() / math.sqrt(aucs.size) + 1e-4


def test_tree_beats_flat_histogram_on_fine_buckets():
    rng = np.random.default_rng(2)
    pos = rng.integers(50, 150, size=1024).astype(np.float64)
    neg = rng.integers(100, 300, size=1024).astype(np.float64)
    neg = np.sort(neg)[::-1]  # some signal
    tree = math.sqrt(auc_variance(pos, neg, 1.0))
    gradient_norm = sum(float(np.sum(g**2)) for g in _gradient(pos, neg))
    flat = math.sqrt(8.0 * gradient_norm)  # Laplace(2) on every bucket: variance 8
    assert tree < flat / 2


def _gradient(pos, neg):
    from dpauc_tf.core.tree import auc_gradient

    return auc_gradient(pos, neg)


def test_two_buckets_more_do_not_cost_a_level():
    """docs/epsilon_split.md's cliff: 61 quantiles + the two ends (64 buckets) and 63
    quantiles (66 buckets) get trees of the same depth (4 levels, sensitivity 8), and the
    linearised std at 66 buckets is within 10 % of 64's (a whole 5th level cost 30 %)."""
    from dpauc_tf.analysis.tree_design import mechanism_auc_variance

    rng = np.random.default_rng(0)
    stds = {}
    for buckets in (64, 66):
        m = get_mechanism(
            "tree-histogram", epsilon=1.0, num_thresholds=buckets - 1, budget="uniform"
        )
        assert m.layout.depth == 3 and "x 4 levels = 8" in m.statement().sensitivity
        pos = np.sort(rng.random(buckets)) * 2000 + 100
        neg = np.sort(rng.random(buckets))[::-1] * 6000 + 300
        stds[buckets] = mechanism_auc_variance(pos, neg, m) ** 0.5
        # a flip moves one node per level: the released trees of neighbours differ by 1 in
        # depth + 1 nodes of each class
        leaves = rng.integers(0, 9, size=buckets).astype(np.float64)
        moved = leaves.copy()
        moved[buckets - 1] += 1
        diff = m.layout.node_counts(tf.constant(moved)) - m.layout.node_counts(tf.constant(leaves))
        assert float(tf.reduce_sum(tf.abs(diff))) == m.layout.depth + 1
    assert stds[66] < 1.1 * stds[64]
