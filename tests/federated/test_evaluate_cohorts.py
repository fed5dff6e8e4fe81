"""``evaluate`` over iterables, samplers and cohorts: same results as a list, same privacy."""

from __future__ import annotations

import numpy as np
import pytest

tff = pytest.importorskip("tensorflow_federated")

from dpauc_tf.core.partitions import iid_partition  # noqa: E402
from dpauc_tf.federated import client_data_from_partition, evaluate, iter_client_data  # noqa: E402

pytestmark = pytest.mark.federated

K, N, T = 10, 400, 10


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    labels = (rng.random(N) < 0.4).astype(np.float32)
    scores = (1 / (1 + np.exp(-(rng.normal(size=N) + labels)))).astype(np.float32)
    return scores, labels, iid_partition(N, K, seed=0)


def _list(data):
    return client_data_from_partition(*data, K)


def _generator(data):
    return iter_client_data(*data, K)


def _same(a, b):
    assert a.auc == b.auc and a.num_reporting == b.num_reporting and a.epsilon == b.epsilon
    for key in a.noisy_counts:
        np.testing.assert_array_equal(a.noisy_counts[key], b.noisy_counts[key])


@pytest.mark.parametrize("mechanism", ["histogram", "secure-histogram"])
def test_a_generator_gives_the_list_result_noise_off_and_on(data, mechanism):
    for epsilon in (None, 1.0):
        common = dict(mechanism=mechanism, epsilon=epsilon, num_thresholds=T, seed=7)
        listed = evaluate(_list(data), cohort_size=4, **common)
        shares = {"num_clients": K} if mechanism.startswith("secure") else {}
        streamed = evaluate(_generator(data), cohort_size=4, **shares, **common)
        sampled = evaluate(lambda: _generator(data), cohort_size=4, **shares, **common)
        _same(listed, streamed)
        _same(listed, sampled)
        assert streamed.num_clients == K == streamed.num_reporting


def test_the_cohort_size_does_not_change_the_result(data):
    # Noise off: exactly equal. Secure noise (integers, per-client seeds): also exact.
    for mechanism, epsilon in (("histogram", None), ("secure-histogram", 1.0)):
        results = [
            evaluate(
                _list(data),
                mechanism=mechanism,
                epsilon=epsilon,
                num_thresholds=T,
                seed=1,
                cohort_size=size,
            )
            for size in (3, K)
        ]
        for other in results[1:]:
            _same(results[0], other)
    # Local float noise: the same draws, summed in another order.
    three, whole = (
        evaluate(
            _list(data),
            mechanism="histogram",
            epsilon=1.0,
            num_thresholds=T,
            seed=2,
            cohort_size=size,
        )
        for size in (3, K)
    )
    assert three.auc == pytest.approx(whole.auc, abs=1e-9)
    np.testing.assert_allclose(three.noisy_counts["pos"], whole.noisy_counts["pos"], atol=1e-9)


def test_secure_cohorts_count_the_shares_that_reported(data):
    clients = _list(data)[:7]
    out = evaluate(
        iter(clients),
        mechanism="secure-histogram",
        epsilon=1.0,
        num_thresholds=T,
        seed=0,
        secure_shares=10,
        cohort_size=3,
    )
    assert out.num_reporting == 7 and out.epsilon > 1.0
    assert "only 7 of 10 shares reported" in out.statement.noise


def test_empty_inputs_and_wrong_counts_are_clear_errors(data):
    with pytest.raises(ValueError, match="need at least one client"):
        evaluate([], epsilon=None, num_thresholds=T)
    with pytest.raises(ValueError, match="yielded none"):
        evaluate(iter([]), epsilon=None, num_thresholds=T)
    with pytest.raises(ValueError, match="pass num_clients="):
        evaluate(_generator(data), mechanism="secure-histogram", epsilon=1.0, num_thresholds=T)
    with pytest.raises(ValueError, match="pass num_clients="):
        evaluate(_generator(data), epsilon=None, num_thresholds=T, dropout=0.2)
    with pytest.raises(ValueError, match="yielded 10 clients, not num_clients=12"):
        evaluate(_generator(data), epsilon=None, num_thresholds=T, num_clients=12)
    with pytest.raises(ValueError, match="more than num_clients=5"):
        evaluate(_generator(data), epsilon=None, num_thresholds=T, num_clients=5, cohort_size=6)
    with pytest.raises(ValueError, match="cohort_size"):
        evaluate(_list(data), epsilon=None, num_thresholds=T, cohort_size=0)
    with pytest.raises(TypeError, match="client_data must be"):
        evaluate(42, epsilon=None, num_thresholds=T)


def test_a_client_without_examples_reports_zero_counts(data):
    empty = (np.zeros(0, np.float32), np.zeros(0, np.float32))
    clients = _list(data)
    with_empty = evaluate(iter([empty, *clients]), epsilon=None, num_thresholds=T, cohort_size=4)
    without = evaluate(clients, epsilon=None, num_thresholds=T)
    assert with_empty.auc == without.auc and with_empty.num_reporting == K + 1
    np.testing.assert_array_equal(with_empty.noisy_counts["pos"], without.noisy_counts["pos"])
    dropped = evaluate(
        _generator(data), epsilon=None, num_thresholds=T, dropout=0.3, num_clients=K, seed=4
    )
    listed = evaluate(_list(data), epsilon=None, num_thresholds=T, dropout=0.3, seed=4)
    _same(dropped, listed)
    assert dropped.num_reporting == 7
