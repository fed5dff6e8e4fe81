"""The rank-sum releases over clients in Beam (issue 32): ``secure-rank-sum`` in two passes
and ``rank-sum`` with local noise. Without noise (an epsilon so large that the discrete noise
is 0) they equal scikit-learn and the simulate backend exactly; with noise their releases
follow the simulation's law (a two-sample test that a halved or doubled scale fails);
hostile clients (one class, empty, all tied) give the right number; a client lost between
the passes and a slice too large for round two's sum are refused in one line. One spec
builds PrivateAUC and TFMA's combiner."""

from __future__ import annotations

import numpy as np
import pytest

beam = pytest.importorskip("apache_beam")

from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402
from scipy import stats  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

from dpauc_tf.beam import PrivateAUC  # noqa: E402
from dpauc_tf.beam.counting import BucketCounts  # noqa: E402
from dpauc_tf.beam.pipeline import run_and_collect  # noqa: E402
from dpauc_tf.beam.rank_sums import (  # noqa: E402
    finish_secure,
    local_release,
    round_one,
    round_two,
)
from dpauc_tf.mechanisms.release import ReleaseSpec  # noqa: E402
from dpauc_tf.simulation import client_histograms, simulate  # noqa: E402

EXACT_EPSILON = 1e9  # discrete Laplace of scale 2D / eps_S: 0 with probability ~1
EPSILON = 1.0
REPEATS = 150
K = 3
N = 240
P_VALUE = 1e-3
OPTIONS = {"resolution": 1025}  # a small counting grid (fast); the 1/400 score grid fits it


def _data():
    """Scores on a grid of 1/400 (ties across and inside clients), K clients, and hostile
    ones: client 3 holds only positives, client 4 only ties, client 5 nothing."""
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 401, N) / 400
    labels = (rng.random(N) < 0.3 + 0.4 * scores).astype(np.int64)
    clients = rng.integers(0, K, N)
    hostile = [
        (3, np.array([0.9, 0.2, 0.55]), np.array([1, 1, 1])),  # one class
        (4, np.full(5, 0.5), np.array([0, 1, 1, 0, 1])),  # every score tied
        (5, np.zeros(0), np.zeros(0, np.int64)),  # no example
    ]
    return scores, labels, clients, hostile


def _elements(data):
    scores, labels, clients, hostile = data
    out = [("all", int(c), (scores[clients == c], labels[clients == c])) for c in range(K)]
    return out + [("all", c, (s, y)) for c, s, y in hostile]


def _all(data):
    scores, labels, _, hostile = data
    every_score = np.concatenate([scores, *[s for _, s, _ in hostile]])
    every_label = np.concatenate([labels, *[y for _, _, y in hostile]])
    return every_score, every_label


@pytest.fixture(scope="module")
def data():
    return _data()


@pytest.fixture(scope="module")
def results(data):
    """One in-process pipeline with every branch (Beam is slow to start)."""
    elements = _elements(data)
    branches = {
        "secure-exact": dict(mechanism="secure-rank-sum", epsilon=EXACT_EPSILON, seed=0),
        "local-exact": dict(mechanism="rank-sum", epsilon=EXACT_EPSILON, seed=0),
        "secure": dict(mechanism="secure-rank-sum", epsilon=EPSILON, seed=1, repeats=REPEATS),
        "local": dict(mechanism="rank-sum", epsilon=EPSILON, seed=2, repeats=REPEATS),
    }
    for options in branches.values():
        options["mechanism_options"] = OPTIONS

    def build(pipeline):
        created = pipeline | beam.Create(elements)
        outputs = [
            created
            | f"AUC-{name}" >> PrivateAUC(per_client=True, **options)
            | f"Tag-{name}" >> beam.Map(lambda r, name=name: (name, r))
            for name, options in branches.items()
        ]
        return outputs | beam.Flatten()

    found, releases = run_and_collect(build, PipelineOptions(["--runner=DirectRunner"]))
    return dict(found), releases


def _simulated(data, mechanism, epsilon, seed, repeats=1):
    scores, labels = _all(data)
    spec = ReleaseSpec.make(mechanism, epsilon=epsilon, seed=seed, options=OPTIONS)
    pos, neg = client_histograms(labels, scores, spec.count_grid())
    # the summed counts of K + 3 clients: the rank sums' law depends on them and on K only
    zeros = np.zeros((K + 2, pos.shape[1]))
    # secure: the K + 3 shares of one noise; local: each client's own law (K + 3 draws)
    built = spec.build(K + 3) if spec.capabilities.secure else spec.build()
    pos, neg = np.vstack([pos, zeros]), np.vstack([neg, zeros])
    return simulate(built, pos, neg, seed=seed, repeats=repeats)


def test_noise_off_equals_scikit_learn_and_simulate_with_hostile_clients(data, results):
    found, _ = results
    expected = roc_auc_score(*reversed(_all(data)))
    secure = found["secure-exact"]
    assert secure.mechanism == "secure-rank-sum" and secure.num_clients == K + 3
    assert secure.num_examples == N + 8
    assert secure.aucs[0] == pytest.approx(expected, abs=1e-12)
    simulated = _simulated(data, "secure-rank-sum", EXACT_EPSILON, 0)
    assert secure.aucs.tolist() == simulated.aucs.tolist()
    assert secure.noisy_counts["rank_sum"].tolist() == simulated.noisy_counts["rank_sum"].tolist()
    assert secure.epsilon == EXACT_EPSILON
    local = found["local-exact"]
    assert local.mechanism == "rank-sum" and local.num_clients == K + 3
    assert local.aucs[0] == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("name, mechanism", [("secure", "secure-rank-sum"), ("local", "rank-sum")])
def test_noise_follows_the_simulation_and_a_wrong_scale_fails(data, results, name, mechanism):
    """The released rank sum and count of REPEATS Beam releases against the simulation's
    (another seed): the same law passes (Kolmogorov-Smirnov, and Mann-Whitney on the
    distances from the exact values); a halved or doubled noise scale (epsilon doubled or
    halved) fails the second."""
    found, _ = results
    beam_out = found[name].noisy_counts
    exact = found["secure-exact"].noisy_counts  # noise 0: the exact S and P
    assert found[name].aucs.size == REPEATS
    for factor, same in ((1.0, True), (2.0, False), (0.5, False)):
        simulated = _simulated(data, mechanism, EPSILON * factor, 7, REPEATS).noisy_counts
        for key in ("rank_sum", "num_pos"):
            ours, theirs = (np.abs(out[key] - exact[key][0]) for out in (beam_out, simulated))
            scale = stats.mannwhitneyu(ours, theirs).pvalue
            if same:
                law = stats.ks_2samp(beam_out[key], simulated[key]).pvalue
                assert min(law, scale) > P_VALUE, (key, law, scale)
            else:
                assert scale < P_VALUE, (key, factor, scale)


def test_every_client_report_is_counted(results):
    _, releases = results
    # per branch: K + 3 round-two reports (secure) or one local release per slice
    assert releases == 2 * (K + 3) + 2


def _counts(pos, neg) -> BucketCounts:
    counts = BucketCounts(np.asarray(pos, np.float64), np.asarray(neg, np.float64))
    counts.rows = int(np.sum(pos) + np.sum(neg))
    return counts


def _protocol(spec, clients):
    """Both passes and the finish, as the pipeline runs them, on counts given directly."""
    items = [(("s", c), counts) for c, counts in enumerate(clients)]
    totals = {"s": sum(round_one(item, spec)[1] for item in items)}
    reports = [round_two(item, spec, 1, totals, {"s": len(items)})[1] for item in items]
    limbs = {key: sum(r[0][key] for r in reports) for key in reports[0][0]}
    examples = sum(r[1] for r in reports)
    return finish_secure(("s", (limbs, examples, len(items))), spec, totals, 1, {})


def test_a_client_lost_between_the_passes_is_refused_in_one_line():
    """A Beam runner retries a failed bundle, so a pass-two report is not lost in one
    pipeline; a pass two summed without one of pass one's clients (their reports joined to
    another pass one's totals) is refused by the finish, nothing is estimated."""
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=EPSILON, seed=0, options=OPTIONS)
    buckets = spec.count_grid().num_buckets
    rng = np.random.default_rng(1)
    clients = [_counts(rng.integers(0, 3, buckets), rng.integers(0, 3, buckets)) for _ in range(3)]
    items = [(("s", c), counts) for c, counts in enumerate(clients)]
    totals = {"s": sum(round_one(item, spec)[1] for item in items)}
    reports = [round_two(item, spec, 2, totals, {"s": 3})[1] for item in items[:2]]
    limbs = {key: sum(r[0][key] for r in reports) for key in reports[0][0]}
    examples = sum(r[1] for r in reports)
    with pytest.raises(ValueError, match=r"lost \(or added\) between the rounds") as info:
        finish_secure(("s", (limbs, examples, 2)), spec, totals, 1, {})
    assert "\n" not in str(info.value)


def test_counts_near_the_modular_width_give_the_right_number_or_one_line():
    """Three billion examples (round two's sum needs 62 bits) give the AUC of the counts; four
    billion need 63, past what Beam sums: refused in one line, not wrapped silently."""
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=EXACT_EPSILON, seed=0)
    buckets = spec.count_grid().num_buckets
    pos, neg = np.zeros(buckets), np.zeros(buckets)
    pos[[10, 90_000]], neg[[10, 5_000]] = [2e8, 1.3e9], [1.0e9, 0.5e9]
    half = [_counts(pos / 2, neg / 2), _counts(pos / 2, neg / 2)]
    out = _protocol(spec, half)
    # positives at 90,000 beat every negative, at 10 tie those at 10 and lose to those at 5,000
    expected = (1.3e9 * 1.5e9 + 2e8 * 1.0e9 / 2) / (1.5e9 * 1.5e9)
    assert out.num_examples == 3e9
    assert out.aucs[0] == pytest.approx(expected, rel=1e-9)
    with pytest.raises(ValueError, match="63-bit sum") as info:
        _protocol(
            spec, [*half, _counts(np.zeros(buckets), np.where(np.arange(buckets) == 7, 1e9, 0))]
        )
    assert "\n" not in str(info.value)
    # rank-sum with local noise: the slice's release from the summed counts, the same limits
    local = ReleaseSpec.make("rank-sum", epsilon=EXACT_EPSILON, seed=0)
    out = local_release(("s", (_counts(pos, neg), 2)), local, 1, 1, {})
    assert out.aucs[0] == pytest.approx(expected, rel=1e-9) and out.num_clients == 2
    with pytest.raises(ValueError, match="beyond what int64 rank sums hold") as info:
        local_release(("s", (_counts(pos * 2, neg * 2), 2)), local, 1, 1, {})
    assert "\n" not in str(info.value)


def test_a_ready_spec_is_the_whole_release():
    spec = ReleaseSpec.make("secure-rank-sum", epsilon=1.0, seed=3)
    transform = PrivateAUC(spec=spec, per_client=True)
    assert transform.spec is spec and transform.rank_sums
    with pytest.raises(ValueError, match="do not pass epsilon, seed with it"):
        PrivateAUC(spec=spec, epsilon=1.0, seed=4)
    with pytest.raises(TypeError, match="needs epsilon="):
        PrivateAUC("histogram")
    with pytest.raises(ValueError, match="name the mechanism"):
        PrivateAUC(epsilon=1.0, mechanism_options={"family": "skellam"})
    # auc-only's releases cannot be summed: refused before any work, naming it
    with pytest.raises(ValueError, match="'auc-only' releases one AUC"):
        PrivateAUC("auc-only", epsilon=1.0, delta=1e-6, per_client=True)


def test_tfma_metric_releases_through_the_same_combiner():
    pytest.importorskip("tensorflow_model_analysis")
    from dpauc_tf.beam import tfma_metric
    from dpauc_tf.beam.release import ReleaseCounts

    spec = ReleaseSpec.make(None, epsilon=1.0)
    keys = tfma_metric._dpauc_computations(epsilon=1.0)[0].keys
    combiner = tfma_metric._DPAUCCombiner(keys, None, spec, False, 2, {})
    assert isinstance(combiner, ReleaseCounts)
    accumulator = combiner.create_accumulator()
    accumulator = ReleaseCounts.add_input(combiner, accumulator, ([0.9, 0.2, 0.6], [1, 0, 1]))
    values = combiner.extract_output(accumulator)
    assert values[keys[3]] == spec.mechanism == "rank-sum"
    assert values[keys[1]] == 1.0 and 1.0 < values[keys[2]] <= 2.0 + 1e-9  # two slices
