"""One-vs-rest multi-class AUC: scikit-learn parity (noise off), the sensitivity by brute force,
the noise actually drawn, the accounting, the federated (simulate) path and the refusals."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.auc_only import grid_error_bound
from dpauc_tf.mechanisms.laws import Average
from dpauc_tf.mechanisms.multiclass import (
    OneVsRest,
    class_budget,
    one_vs_rest_counts,
    to_one_hot,
)
from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass
from tests.helpers.stats import discrete_laplace_pvalue


def _data(n=2000, classes=4, seed=1, shift=1.0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, classes))
    labels = rng.integers(0, classes, n)
    logits[np.arange(n), labels] += shift
    scores = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return labels, scores


def _grid_bounds(labels, scores, num_thresholds):
    """The largest gap between each average on the grid and the exact one."""
    pos, neg = one_vs_rest_counts(labels, scores, Thresholds.make(num_thresholds))
    per_class = np.array([grid_error_bound(p, n) for p, n in zip(pos, neg, strict=True)])
    support = pos.sum(axis=1)
    return {
        "macro": per_class.mean(),
        "weighted": (per_class * support).sum() / support.sum(),
        "micro": grid_error_bound(pos.sum(axis=0), neg.sum(axis=0)),
    }


@pytest.mark.parametrize("num_thresholds", [20, 200, 2000])
@pytest.mark.parametrize("one_hot", [False, True])
def test_averages_match_scikit_learn_within_the_grid_bound(num_thresholds, one_hot):
    labels, scores = _data()
    given = to_one_hot(labels, scores.shape[1]) if one_hot else labels
    bounds = _grid_bounds(labels, scores, num_thresholds)
    for average in Average.values():
        result = evaluate_multiclass(
            given, scores, epsilon=None, num_thresholds=num_thresholds, average=average
        )
        exact = roc_auc_score(labels, scores, multi_class="ovr", average=average)
        assert abs(result.auc - exact) <= bounds[average] + 1e-12, (average, result.auc, exact)
    per_class = result.class_aucs[0]
    for c in range(scores.shape[1]):
        exact = roc_auc_score(labels == c, scores[:, c])
        assert abs(per_class[c] - exact) <= 0.5 + 1e-12  # sanity; tight bound above
    if num_thresholds == 2000:  # a fine grid: the bound itself is small
        assert max(bounds.values()) < 2e-3


def test_per_class_curves_are_each_class_binary_curve():
    labels, scores = _data(n=500, classes=3)
    result = evaluate_multiclass(labels, scores, epsilon=None, num_thresholds=30)
    assert result.fpr.shape == result.tpr.shape == (1, 3, 30)
    for c in range(3):
        order = np.argsort(result.fpr[0, c])
        fpr, tpr = result.fpr[0, c][order], result.tpr[0, c][order]
        assert fpr[0] == 0.0 and tpr[-1] == 1.0
        area = float(np.sum((fpr[1:] - fpr[:-1]) * (tpr[1:] + tpr[:-1]) / 2.0))
        assert abs(area - result.class_aucs[0, c]) < 1e-9


def _all_neighbours(num_examples, num_classes):
    for labels in itertools.product(range(num_classes), repeat=num_examples):
        for i in range(num_examples):
            for other in range(num_classes):
                if other != labels[i]:
                    changed = list(labels)
                    changed[i] = other
                    yield np.array(labels), np.array(changed)


@pytest.mark.parametrize("num_classes", [2, 3, 4])
def test_sensitivity_by_brute_force_and_the_noise_that_uses_it(num_classes):
    """Every pair of label vectors that differ in one example's class, on tiny data: the
    full release moves by L1 = 4, L2 = 2; the positives alone by L1 = 2, L2 = sqrt(2) (the
    totals never move); the mechanisms' noise is exactly sensitivity / epsilon."""
    rng = np.random.default_rng(num_classes)
    scores = rng.dirichlet(np.ones(num_classes), size=3)
    weights = np.array([1.0, 0.5, 0.25])
    grid = Thresholds.make(4)
    l1, l2, l1_pos, l2_pos = set(), set(), set(), set()
    cache = {}

    def count(labels, w):
        key = (tuple(labels), w is None)
        if key not in cache:
            cache[key] = one_vs_rest_counts(labels, scores, grid, sample_weight=w)
        return cache[key]

    for labels, changed in _all_neighbours(3, num_classes):
        for w in (None, weights):
            pos, neg = count(labels, w)
            pos2, neg2 = count(changed, w)
            np.testing.assert_array_equal(pos + neg, pos2 + neg2)  # totals: label-free
            diff = np.concatenate([(pos - pos2).ravel(), (neg - neg2).ravel()])
            if w is None:
                l1.add(float(np.abs(diff).sum()))
                l2.add(round(float(np.sqrt((diff**2).sum())), 12))
                l1_pos.add(float(np.abs(pos - pos2).sum()))
                l2_pos.add(round(float(np.sqrt(((pos - pos2) ** 2).sum())), 12))
            else:
                assert np.abs(diff).sum() <= 4.0 + 1e-12
    assert l1 == {4.0} and l2 == {2.0}
    assert l1_pos == {2.0} and l2_pos == {round(np.sqrt(2.0), 12)}
    for epsilon in (0.5, 2.0):
        m = OneVsRest("histogram", epsilon=epsilon, num_classes=num_classes, num_thresholds=4)
        assert m.class_mechanism.noise_scale == pytest.approx(max(l1) / epsilon)
        assert m.statement().epsilon == pytest.approx(epsilon)
        public = OneVsRest(
            "histogram-public-scores", epsilon=epsilon, num_classes=num_classes, num_thresholds=4
        )
        assert public.class_mechanism.noise_scale == pytest.approx(max(l1_pos) / epsilon)
        assert public.statement().epsilon == pytest.approx(epsilon)


def _noise(mechanism, pos, neg, repeats, seed, clients=1):
    total = None
    for client in range(clients):
        scale = 1.0 if client == 0 else 0.0
        release = mechanism.release(scale * pos, scale * neg, seed=seed + client, repeats=repeats)
        flat = np.concatenate(
            [np.asarray(release[k]).reshape(repeats, -1) for k in sorted(release)], 1
        )
        total = flat if total is None else total + flat
    truth = np.concatenate(
        [np.asarray(v).ravel() for _, v in sorted({"neg": neg, "pos": pos}.items())]
    )
    return total - truth


@pytest.fixture(scope="module")
def counts():
    labels, scores = _data(n=300, classes=3)
    return one_vs_rest_counts(labels, scores, Thresholds.make(5))


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_histogram_noise_is_laplace_of_scale_four_over_epsilon(counts, epsilon):
    pos, neg = counts
    m = OneVsRest("histogram", epsilon=epsilon, num_classes=3, num_thresholds=5)
    noise = _noise(m, pos, neg, 4000, seed=7)
    scale = 4.0 / epsilon
    assert stats.kstest(noise.ravel(), stats.laplace(scale=scale).cdf).pvalue > 1e-3
    for wrong in (scale / 2.0, scale * 2.0):  # the naive per-class budget / a 2x over-charge
        assert stats.kstest(noise.ravel(), stats.laplace(scale=wrong).cdf).pvalue < 1e-10
    # independent across the classes (two classes' noises are what a change meets)
    first, second = noise[:, 0], noise[:, pos.shape[1]]
    assert abs(np.corrcoef(first, second)[0, 1]) < 0.06


def test_public_scores_noise_is_laplace_two_over_epsilon_and_totals_exact(counts):
    pos, neg = counts
    m = OneVsRest("histogram-public-scores", epsilon=1.0, num_classes=3, num_thresholds=5)
    release = m.release(pos, neg, seed=3, repeats=4000)
    np.testing.assert_allclose(
        np.asarray(release["total"]), np.broadcast_to(pos + neg, (4000, *pos.shape))
    )
    noise = (np.asarray(release["pos"]) - pos).ravel()
    assert stats.kstest(noise, stats.laplace(scale=2.0).cdf).pvalue > 1e-3
    for wrong in (1.0, 4.0):
        assert stats.kstest(noise, stats.laplace(scale=wrong).cdf).pvalue < 1e-10


def test_secure_shares_sum_to_discrete_laplace_of_scale_four_over_epsilon(counts):
    pos, neg = counts
    m = OneVsRest("secure-histogram", epsilon=1.0, num_classes=3, num_thresholds=5, num_clients=4)
    noise = _noise(m, pos, neg, 1500, seed=11, clients=4).ravel()
    assert np.all(noise == np.round(noise))
    assert discrete_laplace_pvalue(noise, 4.0, support=25) > 1e-3
    for wrong in (2.0, 8.0):
        assert discrete_laplace_pvalue(noise, wrong, support=25) < 1e-10


def test_audit_holds_and_catches_an_under_counted_sensitivity():
    from dpauc_tf.analysis.audit import run_audit

    m = OneVsRest("histogram", epsilon=1.0, num_classes=3, num_thresholds=5)
    honest = run_audit(m, samples=100_000, seed=0)
    assert not honest.violated and honest.epsilon_lower_bound > 0.3
    assert honest.pair.startswith("4 examples, C=3")
    assert run_audit(m, samples=100_000, seed=1, flip_weight=2.0).violated

    class PerClassEpsilon(OneVsRest):
        """The naive design: every class gets the whole epsilon (one class changes, it
        assumes), so Laplace(2 / epsilon) claims epsilon."""

        def statement(self, num_reporting=None):
            import dataclasses

            return dataclasses.replace(super().statement(), epsilon=self.epsilon / 2.0)

    naive = PerClassEpsilon("histogram", epsilon=2.0, num_classes=3, num_thresholds=5)
    assert naive.statement().epsilon == 1.0 and naive.class_mechanism.noise_scale == 2.0
    assert run_audit(naive, samples=100_000, seed=2).violated


def test_approximate_dp_class_budget_composes_to_the_target():
    class_epsilon, class_delta = class_budget(
        "secure-histogram", 1.0, 1e-6, 20, (("family", "skellam"),)
    )
    assert class_delta == 1e-6 and 0.5 < class_epsilon < 1.0
    m = OneVsRest(
        "secure-histogram",
        epsilon=1.0,
        delta=1e-6,
        num_classes=5,
        num_thresholds=20,
        options={"family": "skellam"},
    )
    spent = m.privacy_spent(1).best
    assert 0.999 <= spent <= 1.0
    assert m.statement().delta == 1e-6


def test_repeats_compose_and_result_reports_the_whole_cost():
    labels, scores = _data(n=400, classes=3)
    result = evaluate_multiclass(labels, scores, epsilon=1.0, num_thresholds=20, repeats=4, seed=0)
    assert result.epsilon == pytest.approx(1.0) and result.epsilon_total == pytest.approx(4.0)
    assert result.aucs.shape == (4,) and result.class_aucs.shape == (4, 3)
    again = evaluate_multiclass(labels, scores, epsilon=1.0, num_thresholds=20, repeats=4, seed=0)
    np.testing.assert_array_equal(result.aucs, again.aucs)
    d = result.to_dict()
    assert d["epsilon_total"] == pytest.approx(4.0) and len(d["roc"]) == 3


def test_clients_sum_to_the_central_counts_and_state_the_shares():
    labels, scores = _data(n=600, classes=3)
    central = evaluate_multiclass(labels, scores, epsilon=None, num_thresholds=20)
    clients = evaluate_multiclass(
        labels, scores, epsilon=None, num_thresholds=20, num_clients=7, seed=3
    )
    np.testing.assert_allclose(clients.class_aucs, central.class_aucs, atol=1e-12)
    secure = evaluate_multiclass(
        labels,
        scores,
        epsilon=1.0,
        num_thresholds=20,
        num_clients=7,
        seed=3,
        mechanism="secure-histogram",
    )
    assert secure.num_clients == 7 and secure.epsilon == pytest.approx(1.0)
    assert "7 client shares" in str(secure.statement)
    noise = (
        secure.noisy_counts["pos"][0] - one_vs_rest_counts(labels, scores, Thresholds.make(20))[0]
    )
    assert np.all(noise == np.round(noise))


def test_dropout_states_the_achieved_epsilon():
    m = OneVsRest("secure-histogram", epsilon=1.0, num_classes=3, num_thresholds=5, num_clients=4)
    assert m.achieved_epsilon(4) == pytest.approx(1.0)
    assert m.achieved_epsilon(2) > 1.0
    assert m.statement(2).epsilon == pytest.approx(m.achieved_epsilon(2))


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ([[1, 1, 0], [0, 1, 0]], "exactly one 1"),
        ([0, 3], r"integers in \[0, 3\)"),
        ([0.5, 1], "integers"),
        ([[0, 1], [1, 0]], "class ids"),
    ],
)
def test_bad_labels_are_refused_with_one_line(labels, message):
    scores = np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])
    with pytest.raises(ValueError, match=message):
        one_vs_rest_counts(labels, scores, Thresholds.make(5))


@pytest.mark.parametrize("mechanism", ["rr", "auc-only", "score-noise"])
def test_mechanisms_without_one_vs_rest_counts_are_refused(mechanism):
    with pytest.raises(ValueError, match="cannot release one-vs-rest counts"):
        OneVsRest(mechanism, epsilon=1.0, num_classes=3, num_thresholds=5, delta=1e-6)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="num_classes must be >= 2"):
        OneVsRest(epsilon=1.0, num_classes=1)
    with pytest.raises(ValueError, match="average must be one of"):
        evaluate_multiclass([0, 1], [[0.2, 0.8], [0.6, 0.4]], epsilon=None, average="samples")
    with pytest.raises(ValueError, match="shape"):
        evaluate_multiclass([0, 1], [0.2, 0.8], epsilon=None)
    with pytest.raises(ValueError, match="sample weights of 1 only"):  # noisy one-vs-rest
        evaluate_multiclass(
            [0, 1],
            [[0.2, 0.8], [0.6, 0.4]],
            epsilon=1.0,
            mechanism="secure-histogram",
            sample_weight=[0.5, 1.0],
        )


@pytest.mark.parametrize(
    ("mechanism", "delta", "options"),
    [
        ("histogram", None, {}),
        ("histogram-public-scores", None, {}),
        ("tree-histogram", None, {}),
        ("secure-histogram", None, {}),
        ("secure-tree-histogram", None, {}),
        ("paper", None, {}),
        ("paper-gaussian", 1e-6, {}),
        ("histogram", None, {"positive_share": 0.7}),
    ],
)
def test_every_curve_mechanism_spends_the_target_on_a_class_change(mechanism, delta, options):
    """The two-fold composition of the class release is the stated epsilon, and it is the
    target (not less: noise is not wasted; not more: the guarantee holds)."""
    m = OneVsRest(
        mechanism, epsilon=1.0, delta=delta, num_classes=4, num_thresholds=15, options=options
    )
    two = m.class_mechanism.privacy_spent(2, delta or 0.0).best
    assert two == pytest.approx(m.statement().epsilon)
    assert 0.999 <= m.statement().epsilon <= 1.0 + 1e-9


def test_skellam_shares_sum_to_the_calibrated_variance(counts):
    """Approximate DP: the summed shares' variance is ``2 mu`` of the calibrated class
    release; half or twice ``mu`` is rejected (a z-test on 54,000 draws)."""
    pos, neg = counts
    m = OneVsRest(
        "secure-histogram",
        epsilon=1.0,
        delta=1e-6,
        num_classes=3,
        num_thresholds=5,
        num_clients=3,
        options={"family": "skellam"},
    )
    mu = m.class_mechanism.noise_scale
    noise = _noise(m, pos, neg, 1500, seed=13, clients=3).ravel()
    assert np.all(noise == np.round(noise))
    variance = noise.var()
    stderr = 2.0 * mu * np.sqrt(2.0 / noise.size) * 2.0  # generous: Skellam's kurtosis is small
    assert abs(variance - 2.0 * mu) < 4.0 * stderr
    for wrong in (mu / 2.0, mu * 2.0):
        assert abs(variance - 2.0 * wrong) > 10.0 * stderr
    assert m.privacy_spent(1).best <= 1.0


# -- issue 30: list options (a tree's budget per level) as ReleaseSpec takes them --------------
def test_multiclass_spec_takes_list_options_like_release_spec():
    """``MultiClassSpec.make(..., options={"budget": [1, 2, 3]})`` raised ``TypeError:
    unhashable type: 'list'``; one-vs-rest is now a ``ReleaseSpec`` with a class count."""
    from dpauc_tf.mechanisms.multiclass import OneVsRest
    from dpauc_tf.mechanisms.option_types import frozen_options
    from dpauc_tf.mechanisms.release import ReleaseSpec

    options = {"budget": [1, 2, 3]}
    binary = ReleaseSpec.make("tree-histogram", epsilon=1.0, num_thresholds=15, options=options)
    multi = ReleaseSpec.make(
        "tree-histogram", epsilon=1.0, num_classes=3, num_thresholds=15, options=options
    )
    assert binary.options == multi.options == frozen_options(options) == (("budget", (1, 2, 3)),)
    assert hash(multi) == hash(multi)  # a spec is hashable (cached builds, shipped to workers)
    assert isinstance(multi.build(), OneVsRest) and multi != binary
    assert multi.build().class_mechanism.budget == binary.build().budget
    direct = OneVsRest("tree-histogram", epsilon=1.0, num_classes=3, num_thresholds=15,
                       options={"budget": np.array([1.0, 2.0, 3.0])})  # fmt: skip
    assert direct.class_mechanism.budget == binary.build().budget


def test_release_spec_owns_the_default_mechanism_rule_for_one_vs_rest():
    """``mechanism=None``: the registry's default; one-vs-rest needs a curve (``histogram``),
    a binary AUC from one holder takes ``rank-sum``; a bad class count or average fails in
    one line; a one-vs-rest spec's seeds are its own (not the binary spec's)."""
    from dpauc_tf.mechanisms.registry import default_mechanism
    from dpauc_tf.mechanisms.release import ReleaseSpec

    multi = ReleaseSpec.make(None, epsilon=1.0, num_classes=3, num_thresholds=10, seed=1)
    binary = ReleaseSpec.make(None, epsilon=1.0, num_thresholds=10, seed=1)
    assert multi.mechanism == default_mechanism(needs_curve=True) == "histogram"
    assert binary.mechanism == default_mechanism() == "rank-sum"
    assert multi.seed_for("central").numpy().tolist() != binary.seed_for("central").numpy().tolist()
    with pytest.raises(ValueError, match="num_classes must be >= 2"):
        ReleaseSpec.make(epsilon=1.0, num_classes=1)
    with pytest.raises(ValueError, match="average must be one of"):
        ReleaseSpec.make(epsilon=1.0, num_classes=3, average="mean")
    with pytest.raises(ValueError, match="cannot release one-vs-rest counts"):
        ReleaseSpec.make("auc-only", epsilon=1.0, num_classes=3)
    # rank-sum releases one-vs-rest by per-class rank sums (multiclass_rank_sum)
    assert ReleaseSpec.make("rank-sum", epsilon=1.0, num_classes=3).build().num_classes == 3
