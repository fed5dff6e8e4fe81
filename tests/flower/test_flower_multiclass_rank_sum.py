"""One-vs-rest rank sums on Flower (issue 32): ``evaluate_multiclass(mechanism=
"secure-rank-sum")`` runs the binary release's two exchanges (SecAgg+ on both) with the
per-class mechanism ``SecureOneVsRestRankSum``; and the release's own interval on Flower.

In-process grid (the real ``SecAggPlusWorkflow`` and ``secaggplus_mod``), small data and a
coarse counting grid (``resolution``) keep every round to a few seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flwr")

from scipy import stats
from sklearn.metrics import roc_auc_score

from dpauc_tf.flower import evaluate_multiclass
from dpauc_tf.flower.evaluate import evaluate_spec
from dpauc_tf.mechanisms.auc_only import grid_error_bound
from dpauc_tf.mechanisms.multiclass import one_vs_rest_counts, to_one_hot
from dpauc_tf.mechanisms.multiclass_rank_sum import exact_statistics
from dpauc_tf.mechanisms.multiclass_release import evaluate_multiclass as central
from dpauc_tf.mechanisms.release import ReleaseSpec, finish_release, with_interval
from tests.helpers.scores import softmax_classes, split_among_clients
from tests.helpers.stats import discrete_laplace_pvalue

RESOLUTION = 255
OPTIONS = {"resolution": RESOLUTION}
NOISE_OFF = 1e6  # the noise scales vanish: every share is 0 (the release is the data's)


def _run(clients, **kwargs):
    kwargs.setdefault("mechanism", "secure-rank-sum")
    kwargs.setdefault("mechanism_options", OPTIONS)
    return evaluate_multiclass(clients, engine="in-process", **kwargs)


def _pooled(clients):
    scores = np.concatenate([np.reshape(s, (-1, 3)) for s, _ in clients])
    ids = [np.asarray(y).argmax(1) if np.ndim(y) == 2 else np.asarray(y) for _, y in clients]
    return np.concatenate(ids).astype(int), scores


@pytest.mark.parametrize("average", ["macro", "micro"])
def test_noise_off_equals_the_central_release_and_scikit_learn(average):
    """Hostile clients too: one without class 2, one empty, one with one-hot labels."""
    labels, scores = softmax_classes(240)
    clients = split_among_clients(labels, scores, 4)
    keep = clients[1][1] != 2
    clients[1] = (clients[1][0][keep], clients[1][1][keep])  # class 2 absent on client 1
    clients[0] = (clients[0][0], to_one_hot(clients[0][1], 3))
    clients.append((np.zeros((0, 3)), np.zeros(0)))  # an empty client
    out = _run(clients, epsilon=NOISE_OFF, average=average, seed=0)
    labels, scores = _pooled(clients)
    reference = central(
        labels, scores, epsilon=NOISE_OFF, mechanism="secure-rank-sum", options=OPTIONS,
        average=average, seed=0,
    )  # fmt: skip
    assert out.mechanism == "one-vs-rest secure-rank-sum" and out.epsilon == NOISE_OFF
    assert out.num_clients == out.num_reporting == 5 and out.num_examples == labels.size
    np.testing.assert_allclose(out.class_aucs, reference.class_aucs, atol=1e-12)
    np.testing.assert_allclose(out.aucs, reference.aucs, atol=1e-12)
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, num_classes=3, options=OPTIONS)
    pos, neg = one_vs_rest_counts(labels, scores, spec.count_grid())
    per_class = np.array([grid_error_bound(p, n) for p, n in zip(pos, neg, strict=True)])
    exact = [roc_auc_score(labels == c, scores[:, c]) for c in range(3)]
    assert np.all(np.abs(out.class_aucs[0] - exact) <= per_class + 1e-12)
    bound = per_class.mean() if average == "macro" else grid_error_bound(pos.sum(0), neg.sum(0))
    sklearn = roc_auc_score(labels, scores, multi_class="ovr", average=average)
    assert abs(out.aucs[0] - sklearn) <= bound + 1e-12


def test_summed_shares_are_one_draw_of_the_class_change_law():
    """The noise on every ``2 S_c`` (scale ``2 D_c / rank_epsilon``, the joint sensitivity of
    a class change) and on every ``P_c`` (``1 / count_epsilon``) that the server unmasks
    is one discrete Laplace draw: halved or doubled scales are rejected."""
    labels, scores = softmax_classes(200, seed=2)
    clients = split_among_clients(labels, scores, 4, seed=3)
    out = _run(clients, epsilon=8.0, seed=4, repeats=150)
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=8.0, num_classes=3, options=OPTIONS)
    pos, neg = one_vs_rest_counts(labels, scores, spec.count_grid())
    exact = exact_statistics(pos.astype(np.int64), (pos + neg).astype(np.int64))
    law = spec.build(4).class_mechanism
    released = out.noisy_counts
    twice_noise = 2.0 * released["rank_sum"] - exact["twice_rank_sum"]
    assert np.all(twice_noise == np.round(twice_noise))
    scale = exact["twice_sensitivity"] / law.rank_epsilon  # per class
    normalised = (twice_noise / scale).ravel()
    assert stats.kstest(normalised, stats.laplace.cdf).pvalue > 1e-3
    for wrong in (0.5, 2.0):
        assert stats.kstest(normalised / wrong, stats.laplace.cdf).pvalue < 1e-6
    count_noise = released["num_pos"] - exact["num_pos"]
    assert law.count_epsilon == pytest.approx(1.0)
    assert discrete_laplace_pvalue(count_noise, 1.0) > 1e-3
    for wrong in (0.5, 2.0):
        assert discrete_laplace_pvalue(count_noise, wrong) < 1e-6
    assert out.epsilon == pytest.approx(8.0) and out.round_report.unmasked_groups == (4,)


def test_a_client_lost_inside_exchange_one_leaves_the_others_at_full_epsilon():
    labels, scores = softmax_classes(240, seed=5)
    clients = split_among_clients(labels, scores, 5)
    out = _run(clients, epsilon=NOISE_OFF, seed=0, vanishing_clients=[2])
    others = [c for k, c in enumerate(clients) if k != 2]
    kept_labels, kept_scores = _pooled(others)
    reference = central(
        kept_labels, kept_scores, epsilon=NOISE_OFF, mechanism="secure-rank-sum",
        options=OPTIONS, seed=0,
    )  # fmt: skip
    assert out.num_clients == 5 and out.num_reporting == 4
    assert out.num_examples == kept_labels.size and out.epsilon == NOISE_OFF
    np.testing.assert_allclose(out.class_aucs, reference.class_aucs, atol=1e-12)


def test_a_client_lost_between_the_exchanges_is_refused_in_one_line():
    labels, scores = softmax_classes(240, seed=6)
    with pytest.raises(ValueError) as error:
        _run(split_among_clients(labels, scores, 4), epsilon=1.0, lost_between_exchanges=[3])
    message = str(error.value)
    assert "\n" not in message
    assert "exchange two" in message and "nothing is released" in message
    assert "not unmasked" in message


def test_local_rank_sum_names_the_secure_release():
    labels, scores = softmax_classes(60)
    with pytest.raises(ValueError, match="use mechanism='secure-rank-sum'"):
        _run(
            split_among_clients(labels, scores, 3),
            mechanism="rank-sum",
            mechanism_options=None,
            epsilon=1.0,
        )


def test_flower_returns_the_release_s_own_interval_of_the_ranked_shares():
    """``confidence`` reaches ``finish_release`` on Flower: the interval equals the one
    simulate's finish gives the same release. With a client lost inside exchange one the
    shares are those of the 5 ranked nodes (one whole draw); the command line's former
    ``with_interval`` over the 6 nodes asked counted 5/6 of a draw (too narrow)."""
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 2, 240)
    scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0.0, 1.0)
    ids = rng.integers(0, 6, labels.size)
    clients = [(scores[ids == k], labels[ids == k]) for k in range(6)]
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=0.5, options=OPTIONS, seed=1)
    out = evaluate_spec(
        spec, clients, repeats=3, vanishing_clients=[2], engine="in-process", confidence=0.9
    )
    assert out.num_reporting == 5 and out.interval is not None
    simulate = finish_release(
        spec,
        out.noisy_counts,
        num_examples=out.num_examples,
        num_clients=5,
        mechanism=spec.build(5),
        confidence=0.9,
    )
    np.testing.assert_allclose(out.interval.low, simulate.interval.low, rtol=1e-12)
    np.testing.assert_allclose(out.interval.high, simulate.interval.high, rtol=1e-12)
    np.testing.assert_allclose(
        out.interval.privacy_variance, simulate.interval.privacy_variance, rtol=1e-12
    )
    assert out.interval.confidence == 0.9 and out.interval.target == "population"
    import dataclasses

    former = with_interval(dataclasses.replace(out, interval=None), spec.build(6), confidence=0.9)
    ratio = former.interval.privacy_variance / out.interval.privacy_variance
    np.testing.assert_allclose(ratio, 5 / 6, rtol=1e-9)


def test_cli_multiclass_backend_flower_runs_secure_rank_sum(capsys, monkeypatch, tmp_path):
    """``dpauc multiclass --backend flower --mechanism secure-rank-sum`` equals the
    simulation with noise off; local ``rank-sum`` there is one line naming what works."""
    import pandas as pd

    from dpauc_tf.cli.main import main
    from tests.helpers.cli import cli_json

    labels, scores = softmax_classes(150, seed=8)
    frame = pd.DataFrame(scores, columns=["p0", "p1", "p2"])
    frame["y"] = labels
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    monkeypatch.setenv("DPAUC_FLOWER_ENGINE", "in-process")
    base = ["--scores", path, "--class-column", "y", "--score-columns", "p0,p1,p2"]
    base += ["--clients", "3", "--seed", "0", "--mechanism-option", f"resolution={RESOLUTION}"]
    noise_off = [*base, "--mechanism", "secure-rank-sum", "--epsilon", NOISE_OFF]
    simulated = cli_json(capsys, "multiclass", *noise_off)
    federated = cli_json(capsys, "multiclass", *noise_off, "--backend", "flower")
    assert federated["backend"] == "flower" and federated["num_reporting"] == 3
    for key in ("macro", "weighted", "class_aucs"):
        assert federated[key] == pytest.approx(simulated[key], abs=1e-12)
    argv = [*base, "--mechanism", "rank-sum", "--epsilon", "1", "--backend", "flower"]
    assert main(["multiclass", *map(str, argv)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--mechanism secure-rank-sum" in err
