"""One-vs-rest (multi-class) DP-AUC in TFF: the multi-class release path, noise, errors."""

from __future__ import annotations

import numpy as np
import pytest

tff = pytest.importorskip("tensorflow_federated")

from scipy import stats  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

from dpauc_tf.core.thresholds import Thresholds  # noqa: E402
from dpauc_tf.federated import evaluate_multiclass  # noqa: E402
from dpauc_tf.mechanisms.auc_only import grid_error_bound  # noqa: E402
from dpauc_tf.mechanisms.laws import Average  # noqa: E402
from dpauc_tf.mechanisms.multiclass import one_vs_rest_counts, to_one_hot  # noqa: E402
from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass as central  # noqa: E402
from tests.helpers.scores import split_among_clients  # noqa: E402
from tests.helpers.stats import discrete_laplace_pvalue  # noqa: E402

pytestmark = pytest.mark.federated

T = 20


def _data(n=900, classes=3, seed=1):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, classes))
    labels = rng.integers(0, classes, n)
    logits[np.arange(n), labels] += 1.0
    return labels, np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True), logits


def _grid_bounds(labels, scores, num_thresholds):
    pos, neg = one_vs_rest_counts(labels, scores, Thresholds.make(num_thresholds))
    per_class = np.array([grid_error_bound(p, n) for p, n in zip(pos, neg, strict=True)])
    support = pos.sum(axis=1)
    return {
        "macro": per_class.mean(),
        "weighted": (per_class * support).sum() / support.sum(),
        "micro": grid_error_bound(pos.sum(axis=0), neg.sum(axis=0)),
    }


def test_noise_off_equals_the_central_release_and_scikit_learn():
    labels, scores, logits = _data()
    clients = split_among_clients(labels, scores, 6)
    clients.append((np.zeros((0, 3)), np.zeros(0)))  # an empty client reports zeros
    out = evaluate_multiclass(clients, epsilon=None, num_thresholds=T)
    reference = central(labels, scores, epsilon=None, num_thresholds=T)
    bounds = _grid_bounds(labels, scores, T)
    for average in Average.values():
        np.testing.assert_allclose(getattr(out, average), getattr(reference, average), atol=1e-12)
        exact = roc_auc_score(labels, scores, multi_class="ovr", average=average)
        assert abs(getattr(out, average)[0] - exact) <= bounds[average] + 1e-12
    np.testing.assert_allclose(out.class_aucs, reference.class_aucs, atol=1e-12)
    np.testing.assert_allclose(out.fpr, reference.fpr, atol=1e-12)
    assert out.num_clients == out.num_reporting == 7 and out.num_examples == labels.size
    assert out.epsilon is None and out.mechanism == "one-vs-rest none"
    # one-hot labels and logits (each client's softmax) give the same release
    hot = [(logits[:0], to_one_hot(labels[:0], 3))]
    ids = np.random.default_rng(0).integers(0, 6, labels.size)
    hot += [(logits[ids == c], to_one_hot(labels[ids == c], 3)) for c in range(6)]
    again = evaluate_multiclass(
        hot, epsilon=None, num_thresholds=T, from_logits=True, average="micro"
    )
    np.testing.assert_allclose(again.noisy_counts["pos"], out.noisy_counts["pos"])
    assert again.average == "micro" and again.auc == pytest.approx(reference.micro[0], abs=1e-6)


def _residuals(out, labels, scores):
    pos, neg = one_vs_rest_counts(labels, scores, Thresholds.make(T))
    counts = out.noisy_counts
    return np.concatenate([(counts["pos"] - pos).ravel(), (counts["neg"] - neg).ravel()])


def test_local_noise_is_laplace_of_the_class_change_sensitivity_per_client():
    labels, scores, _ = _data(300)
    # one client: every count carries Laplace(4 / epsilon) (L1 = 4: a class change touches
    # two classes), 150 releases x 2 x 3 x 21 counts
    # local noise by name: TFF's default is the secure release (secure sum)
    one = evaluate_multiclass(
        [(scores, labels)],
        mechanism="histogram",
        epsilon=2.0,
        num_thresholds=T,
        seed=3,
        repeats=150,
    )
    noise = _residuals(one, labels, scores)
    assert stats.kstest(noise, stats.laplace(scale=2.0).cdf).pvalue > 1e-3
    for wrong in (1.0, 4.0):  # a halved (naive per-class budget) or doubled scale
        assert stats.kstest(noise, stats.laplace(scale=wrong).cdf).pvalue < 1e-10
    assert one.epsilon == 2.0 and one.epsilon_total == pytest.approx(300.0)
    # four clients: four independent draws in the sum, variance 4 x 2 b^2
    four = evaluate_multiclass(
        split_among_clients(labels, scores, 4),
        mechanism="histogram",
        epsilon=2.0,
        num_thresholds=T,
        seed=4,
        repeats=60,
    )
    ratio = np.var(_residuals(four, labels, scores)) / (4 * 2 * 2.0**2)
    assert 0.8 < ratio < 1.25, ratio  # a halved or doubled scale gives 0.25 / 4
    # reproducible from the seed, fresh without one
    a = evaluate_multiclass(
        split_among_clients(labels, scores, 2), epsilon=1.0, num_thresholds=T, seed=5
    )
    b = evaluate_multiclass(
        split_among_clients(labels, scores, 2), epsilon=1.0, num_thresholds=T, seed=5
    )
    c = evaluate_multiclass(split_among_clients(labels, scores, 2), epsilon=1.0, num_thresholds=T)
    np.testing.assert_array_equal(a.noisy_counts["pos"], b.noisy_counts["pos"])
    assert not np.array_equal(a.noisy_counts["pos"], c.noisy_counts["pos"])


def test_secure_shares_sum_to_one_discrete_laplace_of_the_class_change_sensitivity():
    labels, scores, _ = _data(300)
    out = evaluate_multiclass(
        split_among_clients(labels, scores, 4),
        epsilon=1.0,
        mechanism="secure-histogram",
        num_thresholds=T,
        seed=6,
        repeats=60,
    )
    noise = _residuals(out, labels, scores)
    assert np.all(noise == np.round(noise))
    assert discrete_laplace_pvalue(noise, 4.0) > 1e-3
    for wrong in (2.0, 8.0):
        assert discrete_laplace_pvalue(noise, wrong) < 1e-10
    assert out.epsilon == 1.0 and out.num_reporting == 4
    assert "4 client shares" in str(out.statement) and "L1 = 4" in str(out.statement)


def test_bad_inputs_are_one_line_value_errors():
    labels, scores, _ = _data(60)
    good = (scores, labels)
    cases = [
        ([], "at least one client"),
        ([(scores[:, 0], labels)], r"shape \[n, C\]"),
        ([good, (scores[:, :2], labels)], r"client 1: scores must have shape \[n, 3\]"),
        ([(scores[:, :1], labels * 0)], "num_classes must be >= 2"),
        ([good, (scores, labels + 3)], r"client 1: class ids must be integers in \[0, 3\)"),
        ([good, (scores * 2, labels)], r"client 1: scores must be finite and in \[0, 1\]"),
        ([(scores, labels[:10])], "client 0: 10 labels for 60 rows"),
    ]
    for clients, message in cases:
        with pytest.raises(ValueError, match=message):
            evaluate_multiclass(clients, epsilon=None, num_thresholds=T)
    with pytest.raises(ValueError, match="cannot release one-vs-rest counts"):
        evaluate_multiclass([good], epsilon=1.0, mechanism="rr", num_thresholds=T)
    with pytest.raises(ValueError, match="num_clients="):
        evaluate_multiclass(iter([good]), epsilon=1.0, mechanism="secure-histogram")
