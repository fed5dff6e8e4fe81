"""dpauc_tf.beam: counting equals bucket_counts, merges are associative, one release per
slice, slice accounting, noise off equals the simulation, the noise is the mechanism's."""

from __future__ import annotations

import math

import numpy as np
import pytest

beam = pytest.importorskip("apache_beam")

import tensorflow as tf  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402
from scipy import stats  # noqa: E402

from dpauc_tf.beam import CountBuckets, PrivateAUC  # noqa: E402
from dpauc_tf.beam.counting import BucketCounts  # noqa: E402
from dpauc_tf.beam.pipeline import run_and_collect  # noqa: E402
from dpauc_tf.beam.release import _release  # noqa: E402
from dpauc_tf.core.counts import bucket_counts  # noqa: E402
from dpauc_tf.core.thresholds import Thresholds  # noqa: E402
from dpauc_tf.mechanisms import get_mechanism  # noqa: E402
from dpauc_tf.mechanisms.release import ReleaseSpec  # noqa: E402
from dpauc_tf.simulation import client_histograms, simulate  # noqa: E402

T = 10
N = 600
NOISE_SLICES = 150
EPSILON = 1.0
AUC_ONLY_EPSILON = 200.0


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    scores = rng.random(N)
    labels = (rng.random(N) < scores).astype(np.int64)
    groups = rng.integers(0, 2, N)
    clients = rng.integers(0, 3, N)
    return scores, labels, groups, clients


def _examples(data):
    scores, labels, groups, _ = data
    return [(f"g{g}", (s, y)) for s, y, g in zip(scores, labels, groups, strict=True)]


@pytest.fixture(scope="module")
def pipeline_out(data):
    """One in-process pipeline with every branch the tests look at (Beam is slow to start)."""
    clients = data[3]
    examples = _examples(data)
    overlapping = [(["all", key], ex) for key, ex in examples]
    per_client = [(key, int(c), ex) for (key, ex), c in zip(examples, clients, strict=True)]
    one_class = [("pos-only", (0.7, 1)), ("pos-only", (0.2, 1)), ("mixed", (0.9, 1))]
    one_class.append(("mixed", (0.1, 0)))
    noise = [(i, (0.55, i % 2)) for i in range(NOISE_SLICES)]
    scores, labels, groups, _ = data
    # a batch of every example keyed "all" and its subsets keyed by group, as separate
    # elements: every example is in two slices though every element names one
    batched = [("all", (scores, labels))]
    batched += [(f"g{g}", (scores[groups == g], labels[groups == g])) for g in (0, 1)]
    branches = {
        "off": (examples, dict(epsilon=None)),
        "disjoint": (examples, dict(epsilon=EPSILON, seed=1, max_slices_per_example=1)),
        "disjoint-undeclared": (examples, dict(epsilon=EPSILON, seed=1)),
        "overlapping": (overlapping, dict(epsilon=EPSILON, seed=2, max_slices_per_example=2)),
        "batched": (batched, dict(epsilon=EPSILON, seed=5)),
        "batched-declared": (batched, dict(epsilon=EPSILON, seed=5, max_slices_per_example=2)),
        "auc-only": (
            [("all", (scores, labels))],
            dict(mechanism="auc-only", epsilon=AUC_ONLY_EPSILON, delta=1e-6, seed=6),
        ),
        "clients-off": (per_client, dict(epsilon=None, per_client=True)),
        "clients-secure": (
            per_client,
            dict(mechanism="secure-histogram", epsilon=EPSILON, seed=3, per_client=True),
        ),
        "one-class": (one_class, dict(epsilon=None)),
        "noise": (noise, dict(epsilon=EPSILON, seed=4)),
        "empty": ([], dict(epsilon=EPSILON)),
    }

    def build(pipeline):
        outputs = []
        for name, (elements, options) in branches.items():
            options = {"num_thresholds": T, **options}
            mechanism = options.pop("mechanism", "histogram")
            outputs.append(
                pipeline
                | f"Create-{name}" >> beam.Create(elements)
                | f"AUC-{name}" >> PrivateAUC(mechanism, **options)
                | f"Tag-{name}" >> beam.Map(lambda r, name=name: (name, r))
            )
        return outputs | beam.Flatten()

    results, releases = run_and_collect(build, PipelineOptions(["--runner=DirectRunner"]))
    by_branch = {}
    for name, release in results:
        by_branch.setdefault(name, {})[release.slice_key] = release
    return by_branch, releases


# -- counting ---------------------------------------------------------------------------------
def _counts(fn, parts):
    accumulators = []
    for part in parts:
        acc = fn.create_accumulator()
        for element in part:
            acc = fn.add_input(acc, element)
        accumulators.append(acc)
    return fn.extract_output(fn.merge_accumulators(accumulators))


@pytest.mark.parametrize("grid", ["tf", "reference"])
def test_counting_equals_bucket_counts_and_merges_associatively(data, grid):
    scores, labels, _, _ = data
    thresholds = Thresholds.make(T, grid)
    pos, neg = bucket_counts(labels, scores, thresholds)
    fn = CountBuckets(thresholds, flush_size=64)
    singles = [(s, y) for s, y in zip(scores, labels, strict=True)]
    splits = [
        [singles],
        [singles[:1], singles[1:250], singles[250:]],
        [[(scores[i : i + 37], labels[i : i + 37])] for i in range(0, N, 37)],
        [singles[i::7] for i in range(7)],
    ]
    for parts in splits:
        out = _counts(fn, parts)
        np.testing.assert_array_equal(out.pos, pos.numpy())
        np.testing.assert_array_equal(out.neg, neg.numpy())


def test_counts_stay_exact_past_two_to_the_24():
    fn = CountBuckets(Thresholds.make(3))
    big = BucketCounts(np.full(4, 2.0**24), np.full(4, 2.0**24))
    out = fn.merge_accumulators([big, fn.add_input(fn.create_accumulator(), (0.9, 1))])
    assert out.pos.tolist() == [2**24, 2**24, 2**24 + 1, 2**24] and out.pos.dtype == np.float64


@pytest.mark.parametrize(
    "element, message",
    [
        ((float("nan"), 1), "predictions must be finite"),
        ((0.5, 2), "labels must be 0 or 1"),
        ((1.5, 0), "predictions must be finite and in [0, 1]"),
        ((0.5, 1, 3.0), "sample weights must be in [0, 1]"),
        ((0.5,), "an example is (score, label)"),
        (([0.1, 0.2], [1]), "2 scores but 1 labels"),
        (("x", 1), "must be numbers"),
        # one-hot labels / two-class scores: raveled, every example would count twice
        (([[0.2, 0.8], [0.6, 0.4]], [[0, 1], [1, 0]]), "one value per example"),
        (([0.2, 0.8], [[0, 1], [1, 0]]), "one value per example"),
        (([0.2, 0.8], [1, 0], [[1, 1], [1, 1]]), "one value per example"),
    ],
)
def test_bad_examples_give_one_line_errors(element, message):
    fn = CountBuckets(Thresholds.make(T))
    with pytest.raises(ValueError, match=None) as info:
        fn.extract_output(fn.add_input(fn.create_accumulator(), element))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_unit_dimensions_are_one_value_per_example():
    fn = CountBuckets(Thresholds.make(T))
    flat = fn.extract_output(fn.add_input(fn.create_accumulator(), ([0.2, 0.8], [0, 1])))
    column = fn.extract_output(
        fn.add_input(fn.create_accumulator(), ([[0.2], [0.8]], [[0], [1]], [[1], [1]]))
    )
    assert column.pos.tolist() == flat.pos.tolist() and column.neg.tolist() == flat.neg.tolist()
    assert column.num_examples == 2


def test_fractional_weight_refused_for_integer_noise():
    fn = CountBuckets(Thresholds.make(T), integer_weights=True)
    with pytest.raises(ValueError, match="integer noise"):
        fn.extract_output(fn.add_input(fn.create_accumulator(), (0.5, 1, 0.5)))


@pytest.mark.parametrize("mechanism", ["rank-sum", "auc-only", "histogram-public-scores"])
def test_label_free_totals_refuse_weights_other_than_1(mechanism):
    """Issue 30: a weight that depends on the label (class weights) would show in the totals
    these mechanisms release as label-free: refused in one line naming class_weight. Every
    result's num_examples counts rows (the weights' sum would give the positives here)."""
    delta = 1e-6 if mechanism == "auc-only" else None
    examples = [(0.9, 1, 0.5), (0.2, 0, 1.0), (0.6, 1, 0.5)]
    with pytest.raises(Exception, match="class_weight"):
        run_and_collect(
            lambda p: (
                p
                | beam.Create([("all", example) for example in examples])
                | PrivateAUC(mechanism, epsilon=1.0, delta=delta, num_thresholds=T)
            )
        )
    fn = CountBuckets(Thresholds.make(T))
    acc = fn.create_accumulator()
    for example in examples:
        acc = fn.add_input(acc, example)
    assert fn.extract_output(acc).num_examples == 3


def test_score_noise_is_refused():
    with pytest.raises(ValueError, match="changes every example before counting"):
        PrivateAUC("score-noise", epsilon=1.0, num_thresholds=T)


# -- seeds ------------------------------------------------------------------------------------
def test_seeds_reproducible_distinct_per_slice_and_fresh_without_seed():
    counts = BucketCounts.zeros(T)

    def noise(seed, *keys):
        spec = ReleaseSpec.make("histogram", epsilon=EPSILON, num_thresholds=T, seed=seed)
        return _release(spec, counts, spec.seed_for(*keys), 1)["pos"]

    np.testing.assert_array_equal(noise(0, "a"), noise(0, "a"))
    assert not np.array_equal(noise(0, "a"), noise(0, "b"))
    assert not np.array_equal(noise(0, "a"), noise(1, "a"))
    assert not np.array_equal(noise(None, "a"), noise(None, "a"))


# -- the pipeline -----------------------------------------------------------------------------
def test_one_release_per_slice(pipeline_out):
    by_branch, releases = pipeline_out
    # off 2 + disjoint 2 + 2 + overlapping 3 + batched 3 + 3 + auc-only 1 + one-class 2 +
    # noise 150; per client 3 clients x 2 slices, twice; the empty input none.
    expected = 2 + 2 + 2 + 3 + 3 + 3 + 1 + 2 + NOISE_SLICES + 2 * 6
    assert releases == expected
    assert "empty" not in by_branch
    assert sorted(by_branch["overlapping"]) == ["all", "g0", "g1"]


def test_noise_off_equals_the_simulation(pipeline_out, data):
    by_branch, _ = pipeline_out
    scores, labels, groups, _ = data
    thresholds = Thresholds.make(T)
    none = get_mechanism("none", epsilon=None, num_thresholds=T)
    for group in (0, 1):
        mask = groups == group
        pos, neg = client_histograms(labels[mask], scores[mask], thresholds)
        expected = simulate(none, pos, neg, repeats=1)
        for branch in ("off", "clients-off"):
            got = by_branch[branch][f"g{group}"]
            assert got.aucs.tolist() == expected.aucs.tolist()
            np.testing.assert_array_equal(got.fpr, expected.fpr)
            np.testing.assert_array_equal(got.tpr, expected.tpr)
            assert got.epsilon is None and got.num_examples == mask.sum()
    assert by_branch["clients-off"]["g0"].num_clients == 3


def test_slice_accounting_disjoint_parallel_overlapping_adds(pipeline_out):
    by_branch, _ = pipeline_out
    mechanism = get_mechanism("histogram", epsilon=EPSILON, num_thresholds=T)
    for release in by_branch["disjoint"].values():
        assert release.slices_per_example == 1
        assert release.epsilon == pytest.approx(EPSILON)
        assert release.epsilon_total == pytest.approx(EPSILON)
    for release in by_branch["overlapping"].values():
        assert release.slices_per_example == 2
        assert release.epsilon == pytest.approx(EPSILON)
        assert release.epsilon_total == pytest.approx(mechanism.privacy_spent(2).best)
        assert release.epsilon_total == pytest.approx(2 * EPSILON)


def test_undeclared_slices_are_accounted_for_the_worst_case(pipeline_out):
    """The transform cannot see which elements hold the same example: without a declared
    bound every example may be in every slice (disjoint input is charged for 2 slices)."""
    by_branch, _ = pipeline_out
    mechanism = get_mechanism("histogram", epsilon=EPSILON, num_thresholds=T)
    for release in by_branch["disjoint-undeclared"].values():
        assert release.slices_per_example == 2
        assert release.epsilon_total == pytest.approx(mechanism.privacy_spent(2).best)


def test_batched_elements_state_the_true_epsilon(pipeline_out):
    """A batch keyed "all" and its subsets keyed by group, sent as separate elements: every
    example is in two slices. The whole output costs 2 epsilon (the old statement: 1)."""
    by_branch, _ = pipeline_out
    mechanism = get_mechanism("histogram", epsilon=EPSILON, num_thresholds=T)
    for release in by_branch["batched"].values():
        assert release.epsilon == pytest.approx(EPSILON)
        assert release.epsilon_total >= 2 * EPSILON - 1e-9
        assert release.epsilon_total == pytest.approx(mechanism.privacy_spent(3).best)
    for release in by_branch["batched-declared"].values():
        assert release.slices_per_example == 2
        assert release.epsilon_total == pytest.approx(2 * EPSILON)


def test_an_element_past_the_declared_bound_is_refused():
    elements = [(["all", "g0"], (0.5, 1))]
    with pytest.raises(Exception, match="names 2 slices but max_slices_per_example=1"):
        run_and_collect(
            lambda p: (
                p
                | beam.Create(elements)
                | PrivateAUC(epsilon=EPSILON, num_thresholds=T, max_slices_per_example=1)
            ),
            PipelineOptions(["--runner=DirectRunner"]),
        )


def test_per_client_pairs_give_one_line_error():
    with pytest.raises(Exception, match=r"per_client=True\) takes \(slice_keys, client_id"):
        run_and_collect(
            lambda p: (
                p
                | beam.Create([("all", (0.5, 1))])
                | PrivateAUC(epsilon=None, num_thresholds=T, per_client=True)
            ),
            PipelineOptions(["--runner=DirectRunner"]),
        )


def test_auc_only_counts_on_its_own_grid_and_releases_no_curve(pipeline_out, data):
    """auc-only counts on its fine grid (the T-threshold grid would bias its AUC), and the
    slice has an AUC and an empty curve instead of failing after the release."""
    from sklearn.metrics import roc_auc_score

    by_branch, _ = pipeline_out
    scores, labels, _, _ = data
    release = by_branch["auc-only"]["all"]
    exact = roc_auc_score(labels, scores)
    coarse = simulate(
        get_mechanism("none", epsilon=None, num_thresholds=T),
        *client_histograms(labels, scores, Thresholds.make(T)),
        repeats=1,
    ).aucs[0]
    assert abs(coarse - exact) > 1e-3  # the T grid is visibly off
    assert release.auc_or_none == pytest.approx(exact, abs=5e-4)
    assert release.fpr.shape == (1, 0) and release.tpr.shape == (1, 0)
    assert release.epsilon == pytest.approx(AUC_ONLY_EPSILON)


def test_auc_only_per_client_is_refused_before_any_work():
    with pytest.raises(ValueError, match="cannot sum its releases over"):
        PrivateAUC("auc-only", epsilon=1.0, delta=1e-6, per_client=True)


def test_one_class_slice_gives_null_auc(pipeline_out):
    by_branch, _ = pipeline_out
    assert by_branch["one-class"]["pos-only"].auc_or_none is None
    assert by_branch["one-class"]["mixed"].auc_or_none == 1.0


def test_secure_reports_are_integers_summed_over_the_slice_clients(pipeline_out):
    by_branch, _ = pipeline_out
    for release in by_branch["clients-secure"].values():
        assert release.num_clients == 3 and release.epsilon == pytest.approx(EPSILON)
        for value in release.noisy_counts.values():
            np.testing.assert_array_equal(value, np.round(value))


def test_noise_is_laplace_with_the_mechanism_scale_and_differs_per_slice(pipeline_out):
    by_branch, _ = pipeline_out
    scale = get_mechanism("histogram", epsilon=EPSILON, num_thresholds=T).noise_scale
    pos = np.stack([r.noisy_counts["pos"][0] for r in by_branch["noise"].values()])
    neg = np.stack([r.noisy_counts["neg"][0] for r in by_branch["noise"].values()])
    truth_pos = np.zeros_like(pos)
    bucket = int(Thresholds.make(T).bucketize(tf.constant([0.55])).numpy()[0])
    keys = list(by_branch["noise"])
    truth_pos[:, bucket] = [k % 2 for k in keys]
    truth_neg = np.zeros_like(neg)
    truth_neg[:, bucket] = [1 - k % 2 for k in keys]
    noise = np.concatenate([(pos - truth_pos).ravel(), (neg - truth_neg).ravel()])
    assert stats.kstest(noise, stats.laplace(scale=scale).cdf).pvalue > 1e-3
    assert stats.kstest(noise, stats.laplace(scale=scale / 2).cdf).pvalue < 1e-6
    assert stats.kstest(noise, stats.laplace(scale=scale * 2).cdf).pvalue < 1e-6
    # independent noise per slice: no two slices share a draw
    assert len({tuple(row) for row in pos.round(9)}) == NOISE_SLICES
    assert abs(np.corrcoef(pos[:-1].ravel(), pos[1:].ravel())[0, 1]) < 0.1
    assert math.isfinite(by_branch["noise"][0].epsilon_total)
