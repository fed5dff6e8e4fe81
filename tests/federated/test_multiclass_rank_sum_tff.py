"""One-vs-rest AUC by per-class rank sums in TFF (issue 32 item 5): two rounds, local noise
(``rank-sum``) and secure noise shares (``secure-rank-sum``). Noise negligible it is
scikit-learn's one-vs-rest AUC; seeded it is the simulate backend's release to the last
digit; the summed noise has the mechanism's law (a halved or doubled scale fails); hostile
clients (a class absent, one class only, no examples) give the central numbers."""

from __future__ import annotations

import numpy as np
import pytest

tff = pytest.importorskip("tensorflow_federated")

from scipy import stats  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

from dpauc_tf.core.thresholds import Thresholds  # noqa: E402
from dpauc_tf.federated import evaluate_multiclass  # noqa: E402
from dpauc_tf.mechanisms.multiclass import one_vs_rest_counts  # noqa: E402
from dpauc_tf.mechanisms.multiclass_rank_sum import (  # noqa: E402
    OneVsRestRankSum,
    exact_statistics,
)
from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass as simulate  # noqa: E402
from tests.helpers.stats import discrete_laplace_pvalue  # noqa: E402

pytestmark = pytest.mark.federated

C = 4
RESOLUTION = 1001  # thresholds i / 1000
OPTIONS = {"resolution": RESOLUTION}


def _data(n: int = 480, seed: int = 1):
    """Scores ``(2 j + 1) / 2000``: half a step off the grid (float32 and float64 bucket them
    alike) and rows summing to 1 (scikit-learn's one-vs-rest checks it): four odd
    numerators sum to 2000."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, C, n)
    logits = rng.normal(size=(n, C))
    logits[np.arange(n), labels] += 1.0
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    j = np.floor(p * 996).astype(np.int64)
    j[np.arange(n), p.argmax(axis=1)] += 998 - j.sum(axis=1)
    return labels, (2 * j + 1) / 2000.0


def _hostile_ids(labels: np.ndarray, seed: int = 0) -> np.ndarray:
    """Six clients: 0-2 random, 3 holds no example of class 2, 4 only class 0, 5 none."""
    ids = np.random.default_rng(seed).integers(0, 4, labels.size)
    ids[(ids == 3) & (labels == 2)] = 0
    ids[np.flatnonzero(labels == 0)[:12]] = 4
    return ids


def _clients(labels, scores, ids, k=6):
    return [(scores[ids == c], labels[ids == c]) for c in range(k)]


def _run(mechanism, epsilon, labels, scores, ids, cohort_size=100, **kw):
    tff_out = evaluate_multiclass(
        _clients(labels, scores, ids),
        mechanism=mechanism,
        epsilon=epsilon,
        mechanism_options=OPTIONS,
        cohort_size=cohort_size,
        **kw,
    )
    sim = simulate(
        labels,
        scores,
        mechanism=mechanism,
        epsilon=epsilon,
        options=OPTIONS,
        num_clients=6,
        client_ids=ids,
        **kw,
    )
    return tff_out, sim


@pytest.mark.parametrize("mechanism", ["rank-sum", "secure-rank-sum"])
def test_noise_negligible_is_scikit_learn_and_seeded_is_simulate(mechanism):
    labels, scores = _data()
    ids = _hostile_ids(labels)
    assert np.isin(2, labels[ids == 3], invert=True) and set(labels[ids == 4]) == {0}
    assert not np.any(ids == 5)
    out, sim = _run(mechanism, 1e6, labels, scores, ids, seed=0)
    for average in ("macro", "weighted"):
        exact = roc_auc_score(labels, scores, multi_class="ovr", average=average)
        assert getattr(out, average)[0] == pytest.approx(exact, abs=1e-6), average
    per_class = [roc_auc_score(labels == c, scores[:, c]) for c in range(C)]
    np.testing.assert_allclose(out.class_aucs[0], per_class, atol=1e-6)
    assert out.num_clients == out.num_reporting == 6 and out.num_examples == labels.size
    assert out.mechanism == f"one-vs-rest {mechanism}"
    # seeded at epsilon 1, with the micro rank sum too, in cohorts of four (both rounds sum
    # two TFF runs): the simulate backend's release
    out, sim = _run(
        mechanism, 1.0, labels, scores, ids, cohort_size=4, seed=5, repeats=3, average="micro"
    )
    for key in ("rank_sum", "num_pos", "total", "sensitivity"):
        np.testing.assert_allclose(out.noisy_counts[key], sim.noisy_counts[key], rtol=1e-12)
    for average in ("class_aucs", "macro", "weighted", "micro"):
        np.testing.assert_allclose(getattr(out, average), getattr(sim, average), rtol=1e-12)
    assert np.all(np.isfinite(out.micro)) and out.epsilon == 1.0
    assert out.epsilon_total == pytest.approx(3.0) and str(out.statement) == str(sim.statement)


def _normalised_noise(out, labels, scores, mechanism):
    """The summed noise on every ``2 S_c`` over its scale ``2 D_c / eps_S``, and on every
    ``P_c`` (``[R * C]`` each)."""
    pos, neg = one_vs_rest_counts(labels, scores, Thresholds.make(RESOLUTION))
    exact = exact_statistics(pos, pos + neg)
    rank_eps = mechanism.class_mechanism.rank_epsilon
    twice = 2.0 * out.noisy_counts["rank_sum"] - exact["twice_rank_sum"]
    rank = twice / (exact["twice_sensitivity"] / rank_eps)
    return rank.ravel(), (out.noisy_counts["num_pos"] - exact["num_pos"]).ravel()


def test_the_summed_noise_has_the_mechanisms_law_and_a_halved_or_doubled_scale_fails():
    """300 releases in one TFF run of each (round two's reports carry the repeats): secure
    shares of 6 clients sum to one discrete Laplace of scale ``2 D_c / eps_S`` on ``2 S_c``
    and ``2 / eps_P`` on ``P_c``; local noise to six Laplace draws."""
    labels, scores = _data()
    ids = _hostile_ids(labels)
    clients = _clients(labels, scores, ids)
    common = dict(epsilon=1.0, mechanism_options=OPTIONS, seed=11, repeats=300)
    law = OneVsRestRankSum(1.0, C, resolution=RESOLUTION)
    count_scale = 1.0 / law.class_mechanism.count_epsilon  # 8
    secure = evaluate_multiclass(clients, mechanism="secure-rank-sum", **common)
    rank, count = _normalised_noise(secure, labels, scores, law)
    assert np.all(count == np.round(count))
    # 2 D_c / eps_S is hundreds: the discrete law is Laplace(1) to a few 1e-3 in its CDF
    assert stats.kstest(rank, stats.laplace().cdf).pvalue > 1e-3
    assert discrete_laplace_pvalue(count, count_scale) > 1e-3
    for wrong in (0.5, 2.0):
        assert stats.kstest(rank, stats.laplace(scale=wrong).cdf).pvalue < 1e-10, wrong
        assert discrete_laplace_pvalue(count, wrong * count_scale) < 1e-10, wrong
    local = evaluate_multiclass(clients, mechanism="rank-sum", **common)
    rank, count = _normalised_noise(local, labels, scores, law)
    # every client adds Laplace(D_c / eps_S) to S_c: six draws, variance 6 x 2 (normalised)
    for values, unit in ((rank, 1.0), (count, count_scale)):
        ratio = np.var(values) / (6 * 2 * unit**2)
        assert 0.8 < ratio < 1.25, ratio  # a halved or doubled scale gives 0.25 or 4


def test_refusals_are_one_line_and_name_what_works():
    labels, scores = _data(40)
    clients = [(scores, labels)]
    with pytest.raises(ValueError, match="needs an epsilon") as error:
        evaluate_multiclass(clients, mechanism="rank-sum", epsilon=None)
    assert "\n" not in str(error.value) and "'none'" in str(error.value)
    with pytest.raises(ValueError, match="not num_clients=3"):
        evaluate_multiclass(
            clients, mechanism="secure-rank-sum", epsilon=1.0, num_clients=3,
            mechanism_options=OPTIONS,
        )  # fmt: skip
