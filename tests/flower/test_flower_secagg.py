"""dpauc_tf.flower.secagg: SecAgg+'s neighbourhood settings, their validation, and the
groups the server can unmask (pure Python); then through Flower's own SecAggPlusWorkflow
on the in-process grid (small K, fast)."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from dpauc_tf.flower.secagg import SecAggSettings, default_num_shares, unmasked_groups


@pytest.mark.parametrize(
    "num_clients, num_shares, threshold",
    [(2, 2, 2), (3, 3, 2), (7, 7, 4), (8, 7, 4), (10, 9, 5), (20, 11, 6), (100, 15, 8)],
)
def test_default_settings(num_clients, num_shares, threshold):
    s = SecAggSettings.for_clients(num_clients)
    assert (s.num_shares, s.reconstruction_threshold) == (num_shares, threshold)
    assert s.dropout_tolerance == num_shares - threshold
    assert s.max_colluders == threshold - 1


def test_default_neighbourhood_grows_like_log_k():
    sizes = {k: default_num_shares(k) for k in (10, 100, 1000, 10_000, 100_000)}
    assert sizes == {10: 9, 100: 15, 1000: 21, 10_000: 29, 100_000: 35}
    assert all(k % 2 == 1 for k in sizes.values())


def test_fractions_are_read_as_flower_reads_them():
    assert SecAggSettings.for_clients(10, 1.0, 0.5).num_shares == 10
    assert SecAggSettings.for_clients(10, 1.0, 0.5).reconstruction_threshold == 5
    assert SecAggSettings.for_clients(10, 0.4).num_shares == 5  # 4 is even: 5
    assert SecAggSettings.for_clients(10, 0.1).num_shares == 10  # too small: all
    assert SecAggSettings.for_clients(10, 9, 0.1).reconstruction_threshold == 2


def test_flower_arguments():
    assert SecAggSettings.for_clients(10, 10, 5).flower_arguments == {
        "num_shares": 1.0,
        "reconstruction_threshold": 5,
    }
    assert SecAggSettings.for_clients(10, 5, 5).flower_arguments == {
        "num_shares": 5,
        "reconstruction_threshold": 1.0,
    }


@pytest.mark.parametrize(
    "args, message",
    [
        ((1,), "at least 2 clients"),
        ((10, 11), r"num_shares must be at most the number of clients \(10\), got 11"),
        ((10, 4), "num_shares must be odd"),
        ((10, 1), "num_shares must be at least 3"),
        ((10, 0), "num_shares must be at least 3"),
        ((10, -3), "num_shares must be at least 3"),
        ((10, 5, 6), r"reconstruction_threshold must be in \[2, num_shares = 5\], got 6"),
        ((10, 5, 1), r"reconstruction_threshold must be in \[2, num_shares = 5\], got 1"),
        ((10, 1.5), r"num_shares as a fraction must be in \(0, 1\]"),
        ((10, float("nan")), r"num_shares as a fraction must be in \(0, 1\]"),
        ((10, 5, 0.0), r"reconstruction_threshold as a fraction must be in \(0, 1\]"),
        ((10, "5"), "num_shares must be an integer or a fraction"),
        ((10, True), "num_shares must be an integer or a fraction"),
    ],
)
def test_nonsense_settings_give_one_line_errors(args, message):
    with pytest.raises(ValueError, match=message) as error:
        SecAggSettings.for_clients(*args)
    assert "\n" not in str(error.value)


def _ring(num_clients: int, num_shares: int) -> dict[int, set[int]]:
    """Flower's SecAgg+ neighbourhoods over positions 0..K-1 (its ring, unshuffled)."""
    half = num_shares >> 1
    return {i: {(i + o) % num_clients for o in range(-half, half + 1)} for i in range(num_clients)}


def test_the_ring_stays_one_group_while_fewer_than_k_minus_1_clients_are_missing():
    num_clients, num_shares = 11, 5
    ring = _ring(num_clients, num_shares)
    for missing in range(num_shares - 1):
        for gone in itertools.combinations(range(num_clients), missing):
            active = set(range(num_clients)) - set(gone)
            assert unmasked_groups(ring, active) == [len(active)]
    # k - 1 missing clients can cut it: two on each side of client 0 isolate it
    assert sorted(unmasked_groups(ring, set(range(num_clients)) - {1, 2, 9, 10})) == [1, 6]


def test_all_to_all_neighbourhoods_are_always_one_group():
    full = _ring(8, 8)
    assert unmasked_groups(full, {0, 4}) == [2]
    assert unmasked_groups(full, set()) == []


# --- through Flower's SecAggPlusWorkflow (in-process grid) -------------------------------

T = 6


@pytest.fixture(scope="module")
def clients():
    pytest.importorskip("flwr")
    rng = np.random.default_rng(5)
    out = []
    for _ in range(9):
        labels = rng.integers(0, 2, 30)
        out.append((np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0, 1), labels))
    return out


def _evaluate(clients, **kwargs):
    from dpauc_tf.flower import evaluate

    return evaluate(
        clients,
        mechanism="secure-histogram",
        epsilon=1.0,
        num_thresholds=T,
        seed=2,
        engine="in-process",
        **kwargs,
    )


def test_flower_runs_the_ring_it_is_given(clients, monkeypatch):
    import importlib

    flower_evaluate = importlib.import_module("dpauc_tf.flower.strategy")  # where the round runs
    seen = []
    original = flower_evaluate.unmasked_groups

    def spy(neighbours, active):
        seen.append(neighbours)
        return original(neighbours, active)

    monkeypatch.setattr(flower_evaluate, "unmasked_groups", spy)
    out = _evaluate(clients, num_shares=5, reconstruction_threshold=3)
    (neighbours,) = seen
    assert len(neighbours) == 9 and all(len(n) == 5 for n in neighbours.values())
    assert all(a in neighbours[b] for a in neighbours for b in neighbours[a])  # symmetric
    assert out.round_report.secagg == SecAggSettings(9, 5, 3)
    assert out.round_report.unmasked_groups == (9,) and out.num_reporting == 9
    assert out.epsilon == pytest.approx(1.0)


def test_flower_uses_the_threshold_it_is_given(clients):
    # 2 of 4 left: below the default majority (3), enough for a threshold of 2
    with pytest.raises(ValueError, match="no report reached the server"):
        _evaluate(clients[:4], vanishing_clients=(0, 1))
    out = _evaluate(clients[:4], vanishing_clients=(0, 1), reconstruction_threshold=2)
    assert out.num_reporting == 2 and out.round_report.secagg.reconstruction_threshold == 2


def test_a_ring_split_by_dropouts_states_the_smallest_groups_epsilon(clients):
    from dpauc_tf import get_mechanism

    mechanism = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=T, num_clients=6)
    state = random.getstate()
    try:
        for seed in range(30):  # Flower shuffles the ring with `random`: find a split one
            random.seed(seed)
            try:
                out = _evaluate(clients[:6], num_shares=3, vanishing_clients=(0, 3))
            except ValueError:  # the two were neighbours: a neighbourhood lost its majority
                continue
            break
        else:
            pytest.fail("no ring of 6 left the two vanishing clients apart")
    finally:
        random.setstate(state)
    assert out.num_reporting == 4 and len(out.round_report.unmasked_groups) == 2
    smallest = min(out.round_report.unmasked_groups)
    assert sum(out.round_report.unmasked_groups) == 4
    assert out.epsilon == pytest.approx(mechanism.achieved_epsilon(smallest))
    assert out.epsilon > mechanism.achieved_epsilon(4) > 1.0
    assert "split SecAgg+'s neighbourhoods" in out.statement.noise


def test_secagg_settings_are_for_secure_mechanisms_only(clients):
    from dpauc_tf.flower import evaluate

    with pytest.raises(ValueError, match="secure mechanisms only"):
        evaluate(clients[:3], mechanism="histogram", epsilon=1.0, num_shares=3)
    with pytest.raises(ValueError, match="num_shares must be at most the number of clients"):
        _evaluate(clients[:3], num_shares=5)


def test_flowers_masks_come_from_32_bit_seeds():
    """docs/flower.md (trust model): Flower folds a mask's 32-byte seed into 32 bits, so two
    seeds with the same fold give the same mask. If Flower widens its seeds, this fails and
    the page must change."""
    pytest.importorskip("flwr")
    from flwr.common.secure_aggregation.secaggplus_utils import pseudo_rand_gen

    seed = bytes(range(32))
    flip = bytes([0xA5, 0x5A, 0xFF, 0x01])
    other = bytes(a ^ b for a, b in zip(seed[:8], flip * 2, strict=True)) + seed[8:]
    assert other != seed
    (mask,) = pseudo_rand_gen(seed, 2**32, [(64,)])
    (same,) = pseudo_rand_gen(other, 2**32, [(64,)])
    (different,) = pseudo_rand_gen(seed[:31] + b"\x00", 2**32, [(64,)])
    np.testing.assert_array_equal(mask, same)
    assert not np.array_equal(mask, different)
