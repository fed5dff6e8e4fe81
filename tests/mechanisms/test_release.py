"""The one release path: ReleaseSpec builds and checks once, seeds come from one derivation,
finish_release gives one result type whose figures are the arrived reports' (dropout)."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest

from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms import get_mechanism
from dpauc_tf.mechanisms.release import AUCResult, ReleaseSpec, finish_release
from dpauc_tf.noise.seeds import derive_seed, make_seed
from dpauc_tf.simulation import client_histograms, simulate

T = 10


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(0)
    scores = rng.random(500)
    labels = (rng.random(500) < scores).astype(np.int64)
    return labels, scores, client_histograms(labels, scores, Thresholds.make(T))


def test_spec_is_checked_when_made():
    with pytest.raises(ValueError, match="unknown mechanism"):
        ReleaseSpec.make("no-such-mechanism", epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        ReleaseSpec.make("histogram", epsilon=-1.0)
    with pytest.raises(ValueError, match="seed"):
        ReleaseSpec.make("histogram", epsilon=1.0, seed=-1)
    with pytest.raises(ValueError, match="takes no option"):
        ReleaseSpec.make("histogram", epsilon=1.0, options={"nonsense": 1})


def test_spec_is_hashable_and_builds_once_per_number_of_clients():
    spec = ReleaseSpec.make("secure-histogram", epsilon=1.0, num_thresholds=T)
    assert hash(spec) == hash(ReleaseSpec.make("secure-histogram", epsilon=1.0, num_thresholds=T))
    assert spec.build(3) is spec.build(3)
    assert spec.build(3).num_clients == 3 and spec.build(5).num_clients == 5


def test_count_grid_is_the_mechanisms_own():
    assert (
        ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T).count_grid().num_thresholds
        == T
    )
    auc_only = ReleaseSpec.make("auc-only", epsilon=1.0, delta=1e-6, num_thresholds=T)
    assert auc_only.count_grid().num_thresholds == 2**17 + 1


def test_refusals_name_the_surface():
    with pytest.raises(ValueError, match="Spark releases bucket counts"):
        ReleaseSpec.make("score-noise", epsilon=1.0).check_releases_counts("Spark")
    spec = ReleaseSpec.make("auc-only", epsilon=1.0, delta=1e-6)
    spec.check_summable(1, "here")
    with pytest.raises(ValueError, match="cannot sum its releases over 3 clients"):
        spec.check_summable(3, "here")


def test_derive_seed_fresh_without_seed_distinct_per_key_and_stable():
    assert derive_seed(None, "a").numpy().tolist() != derive_seed(None, "a").numpy().tolist()
    assert derive_seed(3, "a").numpy().tolist() == derive_seed(3, "a").numpy().tolist()
    seeds = {
        tuple(derive_seed(3, key, client).numpy().tolist()) for key in "ab" for client in range(50)
    }
    assert len(seeds) == 100
    assert derive_seed(3, "a").numpy().tolist() != derive_seed(4, "a").numpy().tolist()
    # the derivation Beam used in 0.2 (blake2b of the repr of (seed, *keys)): seeded Beam
    # outputs are unchanged
    digest = hashlib.blake2b(repr((3, "a", 1)).encode(), digest_size=8).digest()
    expected = make_seed(int.from_bytes(digest, "big")).numpy().tolist()
    assert derive_seed(3, "a", 1).numpy().tolist() == expected
    with pytest.raises(TypeError):
        derive_seed(True, "a")
    with pytest.raises(ValueError):
        derive_seed(-5, "a")


def test_noise_off_equals_the_simulation(counts):
    _, _, (pos, neg) = counts
    spec = ReleaseSpec.make("histogram", epsilon=None, num_thresholds=T)
    release = spec.build().release(pos[0], neg[0], repeats=2)
    result = finish_release(spec, release, num_examples=float(pos.sum() + neg.sum()))
    expected = simulate(get_mechanism("none", epsilon=None, num_thresholds=T), pos, neg, repeats=2)
    assert isinstance(result, AUCResult)
    assert result.aucs.tolist() == expected.aucs.tolist()
    np.testing.assert_array_equal(result.fpr, expected.fpr)
    assert result.epsilon is None and result.epsilon_total is None
    assert result.num_examples == 500 and result.repeats == 2


def test_cost_of_repeats_and_slices(counts):
    _, _, (pos, neg) = counts
    spec = ReleaseSpec.make("histogram", epsilon=0.5, num_thresholds=T, seed=0)
    release = spec.build().release(pos[0], neg[0], seed=spec.seed_for("s"), repeats=3)
    result = finish_release(spec, release, num_examples=500.0, slices_per_example=2)
    assert result.epsilon == pytest.approx(0.5)
    assert result.epsilon_total == pytest.approx(spec.build().privacy_spent(6).best)
    assert result.epsilon_total <= 6 * 0.5 + 1e-9


def test_dropout_states_the_achieved_epsilon_for_one_release_and_the_whole(counts):
    _, _, (pos, neg) = counts
    spec = ReleaseSpec.make("secure-histogram", epsilon=1.0, num_thresholds=T, seed=1)
    mechanism = spec.build(10)
    reports = [
        mechanism.release(pos[0] * 0, neg[0] * 0, seed=spec.seed_for(c), repeats=1)
        for c in range(6)
    ]
    summed = {key: sum(r[key].numpy() for r in reports) for key in reports[0]}
    result = finish_release(spec, summed, num_examples=0.0, num_clients=10, num_reporting=6)
    achieved = mechanism.achieved_epsilon(6)
    assert achieved > 1.0
    assert result.epsilon == pytest.approx(achieved)
    assert result.statement.epsilon == pytest.approx(achieved)
    assert result.epsilon_total >= achieved - 1e-12
    assert result.num_clients == 10 and result.num_reporting == 6


def test_auc_only_has_no_curve_and_to_dict_is_json(counts):
    labels, scores, _ = counts
    spec = ReleaseSpec.make("auc-only", epsilon=100.0, delta=1e-6, seed=2)
    pos, neg = client_histograms(labels, scores, spec.count_grid())
    release = spec.build().release(pos[0], neg[0], seed=spec.seed_for(), repeats=2)
    result = finish_release(spec, release, num_examples=500.0, slice_key=("g", 1))
    assert result.fpr.shape == (2, 0) and not result.has_curve
    out = json.loads(json.dumps(result.to_dict()))
    assert out["roc"] is None and out["slice_key"] == ["g", 1]
    assert out["epsilon"] == pytest.approx(100.0) and len(out["aucs"]) == 2
    assert all(value is None or math.isfinite(value) for value in out["aucs"])


def test_list_options_are_frozen_so_the_spec_stays_hashable():
    spec = ReleaseSpec.make(
        "tree-histogram", epsilon=1.0, num_thresholds=15, options={"budget": [0.2, 0.3, 0.5]}
    )
    assert dict(spec.options)["budget"] == (0.2, 0.3, 0.5)
    assert spec.build() is spec.build()


def test_finish_takes_what_backends_patched_shares_and_unmasked_groups(counts):
    """``shares`` (asked), ``shares_arrived`` and ``unmasked_groups`` reach the statement;
    ``num_clients``/``num_reporting`` are only what the result states (the backends no
    longer patch them in afterwards)."""
    _, _, (pos, neg) = counts
    spec = ReleaseSpec.make("secure-histogram", epsilon=1.0, num_thresholds=T, seed=1)
    mechanism = spec.build(10)
    release = mechanism.aggregate().release(pos[0], neg[0], seed=spec.seed_for("x"), repeats=3)
    summed = {key: value.numpy() for key, value in release.items()}
    full = finish_release(spec, summed, num_examples=500.0, num_clients=7, shares=10,
                          shares_arrived=10)  # fmt: skip
    assert full.num_clients == 7 and full.num_reporting == 7
    assert full.epsilon == pytest.approx(1.0)  # the statement of all 10 shares
    short = finish_release(
        spec, summed, num_examples=500.0, num_clients=8, num_reporting=7, shares=10
    )
    assert short.epsilon == pytest.approx(mechanism.achieved_epsilon(7)) and short.epsilon > 1.0
    assert short.epsilon_total == pytest.approx(3 * short.epsilon)  # basic, a valid bound
    split = finish_release(spec, summed, num_examples=500.0, num_clients=10, num_reporting=9,
                           unmasked_groups=(6, 3))  # fmt: skip
    assert split.epsilon == pytest.approx(mechanism.achieved_epsilon(3))
    assert split.epsilon > short.epsilon and split.num_reporting == 9
    assert "groups of [6, 3] clients" in split.statement.noise
    assert split.epsilon_total == pytest.approx(3 * split.epsilon)
    assert split.delta_total == pytest.approx(min(1.0, 3 * split.delta))
    one_group = finish_release(spec, summed, num_examples=500.0, num_clients=10,
                               num_reporting=9, unmasked_groups=(9,))  # fmt: skip
    assert one_group.epsilon == pytest.approx(mechanism.achieved_epsilon(9))


def test_one_vs_rest_and_the_paired_comparison_finish_through_the_spec():
    """The class axis and the comparison come out of the one ``finish_release``."""
    from dpauc_tf.mechanisms.comparison import ComparisonResult, joint_counts
    from dpauc_tf.mechanisms.comparison_release import compare_models

    spec = ReleaseSpec.make(None, epsilon=None, num_classes=3, num_thresholds=4)
    pos = np.array([[0.0, 0, 2, 0, 0], [0, 1, 1, 0, 0], [0, 0, 0, 3, 0]])
    neg = np.array([[0.0, 2, 0, 0, 1], [0, 1, 1, 0, 0], [1, 2, 0, 0, 0]])
    release = spec.build().release(pos, neg, repeats=2)
    result = finish_release(spec, {k: v.numpy() for k, v in release.items()}, num_examples=9.0)
    assert isinstance(result, AUCResult) and result.num_classes == 3
    assert result.class_aucs.shape == (2, 3) and result.fpr.shape[:2] == (2, 3)
    assert result.aucs == pytest.approx(result.macro) and result.to_dict()["num_classes"] == 3
    with pytest.raises(ValueError, match="one-vs-rest"):
        finish_release(spec, {k: v.numpy() for k, v in release.items()}, num_examples=9.0,
                       confidence=0.9)  # fmt: skip
    rng = np.random.default_rng(3)
    labels = rng.random(400) < 0.4
    a, b = rng.random(400) + labels, rng.random(400)
    direct = compare_models(labels, a, b, epsilon=1.0, num_buckets=3, seed=4, method="histogram")
    paired = ReleaseSpec.make("paired-comparison", epsilon=1.0, seed=4)
    bucket_a = np.searchsorted(np.quantile(a, [1 / 3, 2 / 3]), a, side="left")
    bucket_b = np.searchsorted(np.quantile(b, [1 / 3, 2 / 3]), b, side="left")
    noisy = paired.build().release(*joint_counts(labels, bucket_a, bucket_b, (3, 3)), seed=4)
    finished = finish_release(paired, noisy, num_examples=400)
    assert isinstance(finished, ComparisonResult)
    assert finished.to_dict() == direct.to_dict()


def test_simulate_seeds_every_chunk_from_the_spec(counts):
    """The simulate backend's chunk i is seeded by ``spec.seed_for("simulate", i)``, and a
    ``seed=`` given beside a spec replaces the spec's (no seeding of its own)."""
    _, _, (pos, neg) = counts
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T, seed=3)
    result = simulate(spec, pos, neg, repeats=3)
    drawn = (
        spec.build(1).aggregate().release(pos, neg, seed=spec.seed_for("simulate", 0), repeats=3)
    )
    np.testing.assert_array_equal(result.noisy_counts["pos"], drawn["pos"].numpy().sum(1))
    import dataclasses

    other = simulate(dataclasses.replace(spec, seed=4), pos, neg, repeats=3)
    overridden = simulate(spec, pos, neg, repeats=3, seed=4)
    np.testing.assert_array_equal(overridden.noisy_counts["pos"], other.noisy_counts["pos"])
    assert not np.array_equal(overridden.noisy_counts["pos"], result.noisy_counts["pos"])


def test_the_spec_builds_the_weight_bounded_mechanism():
    """``max_weight`` is part of the release the spec describes: the spec builds the
    mechanism for weights in [0, W] (its law scaled), carries it in its fields, and refuses
    it where it does not apply, in one line."""
    spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T, max_weight=2.5)
    built = spec.build()
    assert built.max_weight == 2.5 and built.statement().noise_scale == pytest.approx(5.0)
    assert ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=T).build().name == built.name
    assert ReleaseSpec.from_fields(spec.to_fields()) == spec
    assert "max_weight" not in ReleaseSpec.make("histogram", epsilon=1.0).to_fields()
    with pytest.raises(ValueError, match="max_weight must be 1"):
        ReleaseSpec.make("secure-histogram", epsilon=1.0, max_weight=2.0)
    with pytest.raises(ValueError, match="binary release only"):
        ReleaseSpec.make("histogram", epsilon=1.0, num_classes=3, max_weight=2.0)
    with pytest.raises(ValueError, match="max_weight must be a finite number > 0"):
        ReleaseSpec.make("histogram", epsilon=1.0, max_weight=float("nan"))
