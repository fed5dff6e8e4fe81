"""One-vs-rest rank sums: the joint sensitivity by brute force over every class change, the
released noise's law (central and the summed secure shares), noise-off agreement with
scikit-learn, the spec's one-vs-rest path and hostile inputs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms.multiclass_rank_sum import (
    OneVsRestRankSum,
    SecureOneVsRestRankSum,
    exact_statistics,
)
from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass
from dpauc_tf.mechanisms.release import ReleaseSpec
from tests.helpers.stats import law_pvalue

# Five examples, three classes; ties inside a column and across buckets.
SCORES = np.array(
    [[0.7, 0.2, 0.1], [0.7, 0.1, 0.2], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.2, 0.2, 0.6]]
)


def _counts(labels, scores=SCORES, resolution=5):
    grid = Thresholds.make(resolution)
    classes = scores.shape[1]
    buckets = np.stack([grid.bucketize_numpy(scores[:, c]) for c in range(classes)])
    pos = np.zeros((classes, grid.num_buckets), np.int64)
    totals = np.zeros_like(pos)
    for c in range(classes):
        np.add.at(totals[c], buckets[c], 1)
        np.add.at(pos[c], buckets[c][np.asarray(labels) == c], 1)
    return pos, totals


def test_every_class_change_stays_within_the_stated_joint_sensitivity():
    """Every label vector of 5 examples over 3 classes and every change a -> b of one
    example: the totals do not move, sum_c |dS_c| / D_c <= 2, sum_c |dP_c| <= 2 and
    |dS_m| <= R_m; the bounds are reached (a claim of 1 would be false)."""
    worst = {"rank": 0.0, "count": 0.0, "micro": 0.0}
    for labels in itertools.product(range(3), repeat=5):
        pos, totals = _counts(labels)
        before = exact_statistics(pos, totals)
        for i, new in itertools.product(range(5), range(3)):
            if new == labels[i]:
                continue
            changed = list(labels)
            changed[i] = new
            pos2, totals2 = _counts(changed)
            assert np.array_equal(totals, totals2)  # label-free
            after = exact_statistics(pos2, totals2)
            d = before["twice_sensitivity"].astype(float)
            moved = np.abs(after["twice_rank_sum"] - before["twice_rank_sum"])
            rank = np.sum(np.where(d > 0, moved / np.where(d > 0, d, 1), 0.0))
            assert np.all(moved[d == 0] == 0)
            count = np.abs(after["num_pos"] - before["num_pos"]).sum()
            micro_moved = abs(int(after["twice_micro_rank_sum"] - before["twice_micro_rank_sum"]))
            assert micro_moved <= before["twice_micro_range"]
            worst["rank"] = max(worst["rank"], rank)
            worst["count"] = max(worst["count"], count)
            worst["micro"] = max(worst["micro"], micro_moved / before["twice_micro_range"])
    assert worst["rank"] <= 2.0 + 1e-12 and worst["rank"] > 1.5
    assert worst["count"] == 2 and worst["micro"] == pytest.approx(1.0)


@pytest.mark.parametrize("micro", [False, True])
def test_the_released_noise_follows_the_stated_laplace_scales(micro):
    """Noise on S_c at D_c L / eps_S, on P_c at 2 / eps_P (L = 3 with micro); a halved or a
    doubled scale is rejected."""
    m = OneVsRestRankSum(epsilon=1.0, num_classes=3, micro=micro, resolution=5)
    pos, totals = _counts([0, 1, 2, 2, 0])
    exact = exact_statistics(pos, totals)
    release = m.release(pos, totals - pos, seed=7, repeats=3000)
    sens = exact["twice_sensitivity"] / 2
    rank_eps = 0.75 / (3 if micro else 2)
    for key, truth, scale in (
        ("rank_sum", exact["twice_rank_sum"][1] / 2, sens[1] / rank_eps),
        ("num_pos", exact["num_pos"][1], 2 / 0.25),
    ):
        noise = release[key][:, 1] - truth
        assert law_pvalue(noise, "laplace", scale) > 1e-3
        assert law_pvalue(noise, "laplace", scale / 2) < 1e-6
        assert law_pvalue(noise, "laplace", scale * 2) < 1e-6
    assert ("micro_rank_sum" in release) is micro
    assert m.statement().epsilon == 1.0 and m.privacy_spent(1).best == pytest.approx(1.0)


def test_secure_shares_of_every_client_sum_to_the_central_discrete_law():
    """Four clients' round-two shares summed: one discrete Laplace draw of scale 2 D_c /
    rank_epsilon on 2 S_c (halved or doubled rejected), and the server's finish."""
    m = SecureOneVsRestRankSum(epsilon=1.0, num_classes=3, num_clients=4, resolution=5)
    labels = np.array([0, 1, 2, 2, 0])
    parts = [slice(0, 1), slice(1, 3), slice(3, 5), slice(0, 0)]  # one client empty
    counts = [_counts(labels[s], SCORES[s]) for s in parts]
    totals = sum(m.round_one_report(p, t - p) for p, t in counts)
    reports = [
        m.round_two_report(p, t - p, totals, seed=k, repeats=3000)
        for k, (p, t) in enumerate(counts)
    ]
    summed = {key: sum(r[key] for r in reports) for key in reports[0]}
    exact = exact_statistics(*_counts(labels))
    noise = summed["twice_rank_sum"][:, 0] - exact["twice_rank_sum"][0]
    scale = exact["twice_sensitivity"][0] / m.class_mechanism.rank_epsilon
    assert law_pvalue(noise, "discrete-laplace", scale) > 1e-3
    assert law_pvalue(noise, "discrete-laplace", scale / 2) < 1e-6
    assert law_pvalue(noise, "discrete-laplace", scale * 2) < 1e-6
    release = m.finish(summed, totals)
    assert release["rank_sum"].shape == (3000, 3)
    with pytest.raises(ValueError, match="lost"):  # a client dropped after round one
        m.finish({k: sum(r[k] for r in reports[1:]) for k in reports[0]}, totals)
    with pytest.raises(ValueError, match="shares arrived"):
        m.achieved(3)


def test_noise_off_limit_matches_scikit_learn_per_class_and_micro():
    rng = np.random.default_rng(0)
    n, classes = 2000, 4
    labels = rng.integers(0, classes, n)
    logits = rng.normal(size=(n, classes)) + np.eye(classes)[labels]
    scores = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    result = evaluate_multiclass(
        labels, scores, epsilon=1e7, mechanism="rank-sum", average="micro", seed=0
    )
    one_hot = np.eye(classes)[labels]
    for c in range(classes):
        assert result.class_aucs[0, c] == pytest.approx(
            roc_auc_score(one_hot[:, c], scores[:, c]), abs=1e-4
        )
    assert result.micro[0] == pytest.approx(
        roc_auc_score(one_hot, scores, average="micro"), abs=1e-4
    )
    assert result.macro[0] == pytest.approx(
        roc_auc_score(labels, scores, multi_class="ovr"), abs=1e-4
    )
    assert result.to_dict()["roc"] is None


def test_clients_in_two_rounds_and_intervals_per_class():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, 600)
    scores = rng.dirichlet([1, 1, 1], size=600)
    for mechanism in ("rank-sum", "secure-rank-sum"):
        out = evaluate_multiclass(
            labels, scores, epsilon=2.0, mechanism=mechanism, num_clients=5, seed=3, repeats=2
        )
        assert out.class_aucs.shape == (2, 3) and out.epsilon_total == pytest.approx(4.0)
        assert np.all(np.isnan(out.micro))  # micro is released only when it is the headline
    central = evaluate_multiclass(
        labels, scores, epsilon=2.0, mechanism="rank-sum", seed=3, confidence=0.9
    )
    low, high = central.interval.low, central.interval.high
    assert (
        low.shape == (1, 3)
        and np.all(low <= central.class_aucs)
        and np.all(central.class_aucs <= high)
    )
    assert len(central.to_dict()["class_intervals"]) == 3


def test_the_spec_builds_counts_and_describes_one_vs_rest_rank_sums():
    spec = ReleaseSpec.make("rank-sum", epsilon=1.0, num_classes=3)
    assert spec.build().name == "one-vs-rest rank-sum"
    assert spec.count_grid().num_thresholds == spec.build().class_mechanism.resolution
    assert spec.settings()["num_classes"] == 3 and spec.settings()["average"] == "macro"
    assert spec.capabilities.unit_weights and spec.capabilities.releases == "auc"
    assert (
        ReleaseSpec.make("histogram", epsilon=1.0, num_classes=3).count_grid().num_thresholds == 200
    )
    assert not ReleaseSpec.make("paired-comparison", epsilon=1.0).capabilities.keras_metric


def test_hostile_inputs_give_a_number_a_nan_or_one_line():
    m = OneVsRestRankSum(epsilon=1.0, num_classes=3, resolution=5)
    one_class, totals = _counts([0, 0, 0, 0, 0])
    out = m.estimate(m.release(one_class, totals - one_class, seed=0, repeats=4))
    assert out["class_aucs"].shape == (4, 3)  # defined or NaN, never an error
    tied = np.array([[0, 0, 3, 0, 0, 0], [0, 0, 2, 0, 0, 0], [0, 0, 0, 0, 0, 0]])
    ties = m.release(
        tied, np.array([[0, 0, 2, 0, 0, 0], [0, 0, 3, 0, 0, 0], [0, 0, 0, 0, 0, 5]]), seed=0
    )
    assert np.all(ties["sensitivity"][:2] == 0) and np.all(ties["rank_sum"][:2] == 0)
    with pytest.raises(ValueError, match="weights of 1"):
        m.release(one_class * 0.5, totals - one_class)
    with pytest.raises(ValueError, match="needs an epsilon"):
        OneVsRestRankSum(epsilon=None, num_classes=3)
    with pytest.raises(ValueError, match="options"):
        ReleaseSpec.make("rank-sum", epsilon=1.0, num_classes=3, options={"noise": "discrete"})


def test_the_keras_metric_releases_every_class_at_the_one_vs_rest_law():
    """DPMultiClassAUC(mechanism="rank-sum"): every class is the binary rank-sum whose rank
    and count epsilons are the one-vs-rest release's (eps_S / 2, eps_P / 2); noise off it
    is scikit-learn's macro; micro is refused in one line."""
    from dpauc_tf.keras.multiclass import DPMultiClassAUC

    rng = np.random.default_rng(2)
    labels = rng.integers(0, 3, 1500)
    logits = rng.normal(size=(1500, 3)) + np.eye(3)[labels]
    scores = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    small = {"resolution": 4097}  # a fine grid, small enough for a fast test
    metric = DPMultiClassAUC(
        num_classes=3, epsilon=1e6, mechanism="rank-sum", seed=0, mechanism_options=small
    )
    metric.update_state(labels, scores)
    exact = roc_auc_score(labels, scores, multi_class="ovr")
    assert float(metric.result()) == pytest.approx(exact, abs=1e-3)
    noisy = DPMultiClassAUC(
        num_classes=3, epsilon=1.0, mechanism="rank-sum", mechanism_options=small
    )
    law = OneVsRestRankSum(epsilon=1.0, num_classes=3).class_mechanism
    assert noisy.mechanism.rank_epsilon == pytest.approx(law.rank_epsilon)
    assert noisy.mechanism.count_epsilon == pytest.approx(law.count_epsilon)
    assert noisy.privacy_statement().epsilon == 1.0
    assert "(C = 3)" in noisy.privacy_statement().noise
    inferred = DPMultiClassAUC(epsilon=1.0, mechanism="rank-sum", mechanism_options=small)
    early = inferred.privacy_statement()  # before the first update: C not known yet
    assert "(C = not known yet)" in early.noise and "C = 2" not in early.noise
    assert early.epsilon == 1.0
    with pytest.raises(ValueError, match="pooled rank sum"):
        DPMultiClassAUC(num_classes=3, epsilon=1.0, mechanism="rank-sum", average="micro")
