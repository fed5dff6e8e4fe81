"""Issue 32's privacy claims, release by release (``secure-rank-sum``, ``rank-sum`` over
clients with local noise, the one-vs-rest rank sums, the paired comparison by rank sums):

* a brute force over every labelling of tiny data, with label-independent weights of 0 and 1
  and every single flip (every class change), of the exact log ratio of what the server sees:
  round one's totals (public: they must be equal for both neighbours) and round two's
  reports, whose centres come from the mechanisms' own reports (at an epsilon so large that
  the discrete shares are exactly 0) and whose noise scales are the mechanisms' own. A
  discrete or continuous Laplace of scale ``b`` moved by ``delta`` has log ratio exactly
  ``|delta| / b`` at its worst point, so the view's worst log ratio is the sum over what it
  releases. It stays within epsilon and reaches it (a smaller claim would be false); a
  weight that moves with the label (``class_weight``) moves round one's totals, which is why
  every rank-sum release takes weights of 1 only (``test_label_dependent_weights.py``);
* the summed shares' and the local reports' laws (a halved or a doubled scale fails) in
  eager mode, inside ``tf.function`` and under XLA where the release has a TF path (the
  TFF path: ``tests/federated/test_secure_rank_sum_tff.py``);
* the audit of what the server sees for ``secure-rank-sum`` (the summed shares) and for the
  local reports, honest and dishonest;
* every statement says what the server sees in round one.

docs/rank_sum.md ("Federated rank sum: figures") has the table of release x test.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from dpauc_tf.mechanisms.comparison_rank_sum import STATISTICS, RankSumComparison
from dpauc_tf.mechanisms.multiclass_rank_sum import (
    OneVsRestRankSum,
    SecureOneVsRestRankSum,
    exact_statistics,
)
from dpauc_tf.mechanisms.rank_sum import RankSum, local_rank_sum_release, mechanism_statistics
from dpauc_tf.mechanisms.secure_rank_sum import SecureRankSum, twice_sensitivity
from tests.helpers.stats import law_pvalue

EPSILON = 1.0
EXACT = 1e12  # the discrete shares' scales are ~1e-12: every share is exactly 0
BUCKETS = (0, 1, 1, 3)  # four examples' buckets (a tie) on a 6-bucket grid
CLIENT = (0, 0, 1, 1)  # two clients
# label-independent weights: all 1, and each example in turn at weight 0 (absent)
WEIGHTS = [np.ones(4, np.int64)] + [np.where(np.arange(4) == i, 0, 1) for i in range(4)]


def _binary_counts(labels, weights, client):
    """One client's ``pos, neg [6]`` (integers) of the examples it holds."""
    mine = np.asarray(CLIENT) == client
    buckets = np.asarray(BUCKETS)[mine]
    w = np.asarray(weights)[mine]
    y = np.asarray(labels)[mine]
    pos = np.bincount(buckets, w * (y == 1), minlength=6).astype(np.int64)
    neg = np.bincount(buckets, w * (y == 0), minlength=6).astype(np.int64)
    return pos, neg


def _neighbours(num_labels: int, size: int = 4, weight_sets=None):
    """Every (labels, weights) and every one-example change of the label."""
    for weights in WEIGHTS if weight_sets is None else weight_sets:
        for labels in itertools.product(range(num_labels), repeat=size):
            for i, new in itertools.product(range(size), range(num_labels)):
                if new != labels[i]:
                    changed = list(labels)
                    changed[i] = new
                    yield weights, tuple(labels), tuple(changed), i


# -- brute force: the exact log ratio of the server's view --------------------------------
def _secure_view(mechanism, exact, labels, weights):
    """Round one's totals and every client's round-two centre (2 S_k, P_k, n_k) from the
    mechanism's own reports (``exact``: shares exactly 0), and the scales of the noise."""
    counts = [_binary_counts(labels, weights, k) for k in (0, 1)]
    totals = sum(mechanism.round_one_report(p, n) for p, n in counts)
    centres = [exact.round_two_report(p, n, totals, seed=k) for k, (p, n) in enumerate(counts)]
    release = exact.finish({key: sum(c[key] for c in centres) for key in centres[0]}, totals)
    twice_d = 2 * float(release["sensitivity"])
    scales = {
        "twice_rank_sum": float(mechanism.twice_rank_scale(twice_d)),
        "num_pos": mechanism.count_scale,
    }
    return totals, centres, scales


def _log_ratio(view_a, view_b, flipped_client) -> float:
    """The worst log ratio of two views ``(totals, centres, scales)``: the public parts must
    agree, only the flipped example's client moves, and each released number moved by
    ``delta`` under noise of scale ``b`` costs ``|delta| / b`` (0 where ``b = 0`` and it
    does not move)."""
    totals_a, centres_a, scales_a = view_a
    totals_b, centres_b, scales_b = view_b
    assert np.array_equal(totals_a, totals_b)  # round one: label-free
    assert scales_a.keys() == scales_b.keys()
    for key in scales_a:  # D from the totals: public
        assert np.array_equal(scales_a[key], scales_b[key]), key
    ratio = 0.0
    for k, (a, b) in enumerate(zip(centres_a, centres_b, strict=True)):
        assert np.array_equal(a["num_examples"], b["num_examples"])
        for key, scale in scales_a.items():
            moved = np.abs(np.asarray(a[key], np.float64) - np.asarray(b[key], np.float64))
            if k != flipped_client:
                assert np.all(moved == 0), (key, k)  # another client's report stays
            scale = np.broadcast_to(np.asarray(scale, np.float64), moved.shape)
            assert np.all(moved[scale == 0] == 0), key  # no noise: nothing may move
            ratio += float(np.sum(moved[scale > 0] / scale[scale > 0]))
    return ratio


def test_secure_rank_sum_brute_force_with_weight_and_label_flips():
    """Two clients' round one and round two (2 S_k and P_k with their shares): every
    labelling of four examples, weights 0 or 1, every flip: within epsilon, and reached."""
    mechanism = SecureRankSum(epsilon=EPSILON, num_clients=2, resolution=4)
    exact = SecureRankSum(epsilon=EXACT, num_clients=2, resolution=4)
    views = {}

    def view(labels, weights):
        key = (labels, tuple(weights))
        if key not in views:
            views[key] = _secure_view(mechanism, exact, labels, weights)
        return views[key]

    worst = 0.0
    for weights, labels, changed, i in _neighbours(2):
        ratio = _log_ratio(view(labels, weights), view(changed, weights), CLIENT[i])
        assert ratio <= EPSILON + 1e-9, (weights, labels, i, ratio)
        if weights[i] == 0:
            assert ratio == 0.0  # an example of weight 0 is not in the release
        worst = max(worst, ratio)
    assert worst == pytest.approx(EPSILON)


def test_local_rank_sum_brute_force_with_weight_and_label_flips():
    """``rank-sum`` over clients without secure aggregation: the server sees every client's
    totals (round one, in the clear) and every client's ``S_k + Laplace(D / eps_S)``,
    ``P_k + Laplace(1 / eps_P)`` with the global ranks: within epsilon for every flip, and
    reached. The law of the K reports' sum is ``local_rank_sum_release``'s (tested below)."""
    mechanism = RankSum(epsilon=EPSILON, resolution=4)
    views = {}

    def view(labels, weights):
        key = (labels, tuple(weights))
        if key not in views:
            counts = [_binary_counts(labels, weights, k) for k in (0, 1)]
            per_client = np.stack([p + n for p, n in counts])
            totals = per_client.sum(0)
            centres = []
            for p, n in counts:
                s = {k: v.numpy() for k, v in mechanism_statistics(p, totals).items()}
                centres.append({**s, "num_examples": np.sum(p + n)})
            scales = {
                "rank_sum": float(mechanism.rank_scale(centres[0]["sensitivity"])),
                "num_pos": mechanism.count_scale,
            }
            views[key] = (per_client, centres, scales)  # every client's totals are seen
        return views[key]

    worst = 0.0
    for weights, labels, changed, i in _neighbours(2):
        ratio = _log_ratio(view(labels, weights), view(changed, weights), CLIENT[i])
        assert ratio <= EPSILON + 1e-9, (weights, labels, i, ratio)
        worst = max(worst, ratio)
    assert worst == pytest.approx(EPSILON)


# one-vs-rest: four examples' scores in three columns (ties inside a column)
OVR_BUCKETS = np.array([[0, 2, 2, 4], [3, 3, 1, 0], [1, 4, 0, 4]])  # [C, example]


def _ovr_counts(labels, weights, client):
    mine = np.asarray(CLIENT) == client
    pos = np.zeros((3, 5), np.int64)
    neg = np.zeros((3, 5), np.int64)
    for c in range(3):
        for i in np.flatnonzero(mine):
            target = pos if labels[i] == c else neg
            target[c, OVR_BUCKETS[c, i]] += weights[i]
    return pos, neg


def test_one_vs_rest_brute_force_with_weight_and_class_changes():
    """Every labelling of four examples over three classes, weights 0 or 1, every class
    change of one example, micro sum included: the two clients' round-two reports (their
    centres from ``statistics``, what ``round_two_report`` adds the noise to) move by at
    most epsilon in log ratio at the noise scales of both the secure shares' sum and of
    every client's own local noise (the same scales), and close to it (the joint
    sensitivity L = 3 with micro is reached up to the grid's ties)."""
    local = OneVsRestRankSum(EPSILON, 3, num_clients=2, resolution=4, micro=True)
    secure = SecureOneVsRestRankSum(EPSILON, 3, num_clients=2, resolution=4, micro=True)
    keys = ("twice_rank_sum", "num_pos", "twice_micro_rank_sum")
    views = {}

    def view(labels, weights):
        key = (labels, tuple(weights))
        if key not in views:
            counts = [_ovr_counts(labels, weights, k) for k in (0, 1)]
            totals = sum(secure.round_one_report(p, n) for p, n in counts)
            centres = []
            for p, n in counts:
                centre = exact_statistics(p, totals)  # with the global ranks
                centres.append({**centre, "num_examples": np.sum(p[0] + n[0])})
            # D_c and R_m depend on the totals only (any client's positives give them)
            scales = {}
            for name in keys:
                scale = np.asarray(local._scales(centres[0])[name], np.float64)
                assert np.array_equal(scale, secure._scales(centres[0])[name])
                scales[name] = scale
            views[key] = (totals, centres, scales)
        return views[key]

    worst = 0.0
    for weights, labels, changed, i in _neighbours(3, weight_sets=WEIGHTS[:3]):
        ratio = _log_ratio(view(labels, weights), view(changed, weights), CLIENT[i])
        assert ratio <= EPSILON + 1e-9, (weights, labels, i, ratio)
        worst = max(worst, ratio)
    assert worst > 0.75 * EPSILON, worst


# the paired comparison: both models' scores of four examples (ties in each)
SCORES_A = np.array([0.9, 0.4, 0.4, 0.1])
SCORES_B = np.array([0.2, 0.8, 0.4, 0.4])


@pytest.mark.parametrize("secure", [False, True], ids=["local", "secure"])
def test_paired_comparison_brute_force_with_weight_and_label_flips(secure):
    """The comparison's rounds over two clients: round one's totals of both models and every
    client's largest |d| (public), round two's four sums (2 Delta, 2 S_A, P, 4 Q): every
    labelling, weights 0 or 1 (an example of weight 0 is absent), every flip: within
    epsilon, and reached (the example at model A's top and B's bottom)."""
    mechanism = RankSumComparison(EPSILON, num_clients=2, secure=secure)
    exact = RankSumComparison(EXACT, num_clients=2, secure=True)
    views = {}

    def view(labels, weights):
        key = (labels, tuple(weights))
        if key not in views:
            present = np.asarray(weights) == 1
            bucket_a = np.searchsorted(np.unique(SCORES_A[present]), SCORES_A)
            bucket_b = np.searchsorted(np.unique(SCORES_B[present]), SCORES_B)
            size = int(max(bucket_a.max(), bucket_b.max())) + 1
            rows = [(np.asarray(CLIENT) == k) & present for k in (0, 1)]
            totals = sum(mechanism.round_one_report(bucket_a[r], bucket_b[r], size) for r in rows)
            largest = []  # every client's largest |d| (label-free; the server sees each)
            for r in rows:
                rank_a, rank_b = mechanism.client_ranks(bucket_a[r], bucket_b[r], totals)
                largest.append(float(np.abs(rank_b - rank_a).max(initial=0.0)))
            sensitivity = max(largest)
            y = np.asarray(labels, np.float64)
            centres = []
            for k, r in enumerate(rows):
                report = exact.round_two_report(
                    y[r], bucket_a[r], bucket_b[r], totals, sensitivity, seed=k
                )
                centres.append({**report, "largest": largest[k]})
            release = exact.finish(
                {key: sum(c[key] for c in centres) for key in centres[0]}, totals, sensitivity
            )
            sens = mechanism._sensitivities(
                {"sensitivity": sensitivity, "sensitivity_a": float(release["sensitivity_a"][0])}
            )
            scales = {key: mechanism.scale(key, sens[key]) for key in STATISTICS}
            views[key] = (totals, centres, scales)
        return views[key]

    worst = 0.0
    for weights, labels, changed, i in _neighbours(2):
        a, b = view(labels, weights), view(changed, weights)
        assert [c["largest"] for c in a[1]] == [c["largest"] for c in b[1]]  # label-free
        ratio = _log_ratio(a, b, CLIENT[i])
        assert ratio <= EPSILON + 1e-9, (weights, labels, i, ratio)
        worst = max(worst, ratio)
    assert worst == pytest.approx(EPSILON)


def test_a_weight_that_moves_with_the_label_moves_round_ones_totals():
    """Why every rank-sum release takes weights of 1 only: with a class weight of 2 (or 0)
    for the positives, a flip changes round one's public totals, which no noise covers (the
    refusals: ``test_label_dependent_weights.py``, Spark's and Beam's counting)."""
    for class_weight in ({0: 1, 1: 2}, {0: 1, 1: 0}):
        labels, changed = (1, 0, 1, 0), (0, 0, 1, 0)
        totals = []
        for y in (labels, changed):
            weights = np.array([class_weight[v] for v in y])
            totals.append(sum(np.add(*_binary_counts(y, weights, k)) for k in (0, 1)))
        assert not np.array_equal(*totals)


# -- the laws of the shares and of the local reports, in every TF mode -------------------
def _secure_share_sum(mode: str, repeats: int):
    """Five clients' round-two reports of ``2 S_k`` (``repeats`` releases), summed, and the
    exact ``2 S`` and noise scale."""
    mechanism = SecureRankSum(epsilon=EPSILON, num_clients=5, resolution=4)
    labels = (1, 0, 1, 0)
    counts = [_binary_counts(labels, np.ones(4, np.int64), k) for k in (0, 1)]
    counts += [(np.zeros(6, np.int64), np.zeros(6, np.int64))] * 3  # three empty clients
    totals = sum(mechanism.round_one_report(p, n) for p, n in counts)

    def report(p, n, seed):
        return mechanism.round_two_report(p, n, totals, seed, repeats=repeats)["twice_rank_sum"]

    if mode != "eager":
        report = tf.function(report, jit_compile=(mode == "xla"))
    summed = sum(
        np.asarray(report(tf.constant(p), tf.constant(n), tf.constant([k, 9], tf.int64)))
        for k, (p, n) in enumerate(counts)
    )
    exact = SecureRankSum(epsilon=EXACT, num_clients=5, resolution=4)
    centre = sum(exact.round_two_report(p, n, totals, seed=0)["twice_rank_sum"] for p, n in counts)
    twice_d = int(twice_sensitivity(tf.constant(totals)).numpy())
    return summed - centre, float(mechanism.twice_rank_scale(twice_d))


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_secure_rank_sum_round_two_shares_sum_to_the_stated_law_in_each_mode(mode):
    noise, scale = _secure_share_sum(mode, repeats=6000)
    assert law_pvalue(noise, "discrete-laplace", scale) > 1e-3
    assert law_pvalue(noise, "discrete-laplace", scale / 2) < 1e-6
    assert law_pvalue(noise, "discrete-laplace", scale * 2) < 1e-6


def test_secure_rank_sum_round_two_share_under_xla_has_the_law_or_does_not_compile():
    """Under XLA the share's Gamma and Poisson samplers have no kernel (TensorFlow's): the
    report does not compile, so nothing is released. Were it to compile, its law is tested."""
    try:
        noise, scale = _secure_share_sum("xla", repeats=6000)
    except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError) as error:
        assert "XLA" in str(error) and "Stateless" in str(error)
        return
    assert law_pvalue(noise, "discrete-laplace", scale) > 1e-3
    assert law_pvalue(noise, "discrete-laplace", scale * 2) < 1e-6


def _local_noise(mode: str, clients: int, repeats: int):
    mechanism = RankSum(epsilon=EPSILON, resolution=4)
    pos, neg = _binary_counts((1, 0, 1, 0), np.ones(4, np.int64), 0)
    p2, n2 = _binary_counts((1, 0, 1, 0), np.ones(4, np.int64), 1)
    pos, neg = (pos + p2).astype(np.float64), (neg + n2).astype(np.float64)

    def release(p, n):
        return local_rank_sum_release(
            mechanism, p, n, clients, tf.constant([4, 2], tf.int64), repeats
        )

    if mode != "eager":
        release = tf.function(release, jit_compile=(mode == "xla"))
    out = {k: np.asarray(v) for k, v in release(tf.constant(pos), tf.constant(neg)).items()}
    exact = {k: np.asarray(v) for k, v in mechanism_statistics(pos, pos + neg).items()}
    return {
        "rank_sum": (
            out["rank_sum"] - exact["rank_sum"],
            mechanism.rank_scale(exact["sensitivity"]),
        ),
        "num_pos": (out["num_pos"] - exact["num_pos"], mechanism.count_scale),
    }


def _sum_of_laplaces(clients: int, scale: float, size: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.laplace(0.0, scale, (size, clients)).sum(1)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_local_rank_sum_over_clients_is_the_sum_of_k_laplace_reports_in_each_mode(mode):
    """The local release over K = 5 clients is the sum of K reports, each with the whole
    Laplace noise: a two-sample test against K numpy Laplace draws passes at the stated
    scales and fails at half or twice them."""
    for key, (noise, scale) in _local_noise(mode, 5, 4000).items():
        scale = float(scale)
        reference = _sum_of_laplaces(5, scale, 20_000, 1)
        assert stats.ks_2samp(noise, reference).pvalue > 1e-3, key
        for wrong in (scale / 2, scale * 2):
            other = _sum_of_laplaces(5, wrong, 20_000, 2)
            assert stats.ks_2samp(noise, other).pvalue < 1e-6, (key, wrong)


def test_local_rank_sum_over_clients_under_xla_has_the_law_or_does_not_compile():
    try:
        noise, scale = _local_noise("xla", 5, 4000)["rank_sum"]
    except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError) as error:
        assert "XLA" in str(error) and "Stateless" in str(error)
        return
    scale = float(scale)
    assert stats.ks_2samp(noise, _sum_of_laplaces(5, scale, 20_000, 1)).pvalue > 1e-3
    assert stats.ks_2samp(noise, _sum_of_laplaces(5, 2 * scale, 20_000, 2)).pvalue < 1e-6


# -- the statements say what the server sees in round one --------------------------------
def _statement_text(statement) -> str:
    return f"{statement.neighbouring}; {statement.sensitivity}; {statement.noise}"


def test_every_statement_over_clients_says_what_the_server_sees_in_round_one():
    """Each release over clients states what round one shows the server: the aggregate
    score histogram (secure sums) or every client's histogram in the clear (local noise);
    the comparison also every client's largest |d|. One data holder: no rounds."""
    from dpauc_tf.mechanisms.base import achieved_statement

    secure = {
        "secure-rank-sum": SecureRankSum(epsilon=EPSILON, num_clients=4).statement(),
        "one-vs-rest secure": SecureOneVsRestRankSum(EPSILON, 3, num_clients=4).statement(),
        "comparison secure": RankSumComparison(EPSILON, num_clients=4, secure=True).statement(),
    }
    for name, statement in secure.items():
        text = _statement_text(statement)
        assert "round one" in text and "aggregate score histogram" in text, name
        assert "server sees only the secure sums" in text, name
    local = {
        "rank-sum": achieved_statement(RankSum(epsilon=EPSILON), 4),
        "one-vs-rest": OneVsRestRankSum(EPSILON, 3, num_clients=4).statement(),
        "comparison": RankSumComparison(EPSILON, num_clients=4).statement(),
    }
    for name, statement in local.items():
        text = _statement_text(statement)
        assert "without secure aggregation" in text, name
        assert "round one, in the clear" in text and "label-free" in text, name
    assert "largest |d|" in _statement_text(secure["comparison secure"])
    assert "largest |d|" in _statement_text(local["comparison"])
    for central in (
        RankSum(epsilon=EPSILON).statement(),
        OneVsRestRankSum(EPSILON, 3).statement(),
        RankSumComparison(EPSILON).statement(),
    ):
        assert "round one" not in _statement_text(central)
