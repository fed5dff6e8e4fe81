"""Hostile input (hypothesis): every call returns a valid AUC in [0, 1] or raises the documented error.

Documented errors: ``ValueError``/``TypeError`` for bad arguments (epsilon, delta, mechanism
name, threshold grid) and ``tf.errors.InvalidArgumentError`` for bad data (labels not 0/1,
scores outside [0, 1] or not finite, weights outside [0, 1]). Nothing may fall back to "no
noise": only an explicit ``epsilon=None`` does that.

Run with ``--hypothesis-show-statistics`` to see how many cases were tried.
"""

import math

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dpauc_tf.core.counts import bucket_counts
from dpauc_tf.core.thresholds import Thresholds
from dpauc_tf.mechanisms import get_mechanism, list_mechanisms, mechanism_class, private_auc
from dpauc_tf.noise import exact as exact_noise

NOISY = list_mechanisms(private=True)
DOCUMENTED = (ValueError, TypeError, tf.errors.InvalidArgumentError)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

hostile_floats = st.one_of(
    st.sampled_from([0.0, 1.0, 0.5, 0.5, -0.0, 1e-300, 1 - 1e-16, math.nan, math.inf, -math.inf]),
    st.floats(0.0, 1.0),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
)
labels = st.one_of(
    st.sampled_from([0.0, 1.0]), st.sampled_from([0.0, 1.0, 2.0, -1.0, 0.5, math.nan])
)
weights = st.one_of(
    st.sampled_from([0.0, 1.0, 0.25]),
    st.sampled_from([1e30, 2.0, -1.0, math.nan, math.inf]),
    st.floats(0.0, 1.0),
)


@st.composite
def batches(draw):
    n = draw(st.integers(0, 40))
    hostile = draw(st.booleans())  # half the batches are valid data with edge cases
    one_class = draw(st.booleans())
    if one_class:
        y = [draw(st.sampled_from([0.0, 1.0]))] * n
    else:
        y = draw(
            st.lists(labels if hostile else st.sampled_from([0.0, 1.0]), min_size=n, max_size=n)
        )
    score = (
        hostile_floats if hostile else st.one_of(st.sampled_from([0.0, 1.0, 0.5]), st.floats(0, 1))
    )
    s = draw(st.lists(score, min_size=n, max_size=n))
    weight = weights if hostile else st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0, 1))
    w = draw(st.one_of(st.none(), st.lists(weight, min_size=n, max_size=n)))
    return np.array(y, np.float64), np.array(s, np.float64), None if w is None else np.array(w)


def _valid(y, s, w) -> bool:
    with np.errstate(invalid="ignore"):
        ok = bool(np.all((y == 0) | (y == 1)) and np.all((s >= 0) & (s <= 1)))
        if w is not None:
            ok = ok and bool(np.all((w >= 0) & (w <= 1)))
    return ok


epsilons = st.one_of(
    st.floats(0.01, 100.0),
    st.sampled_from([0.5, 1.0, 8.0]),
    st.sampled_from([0.0, -1.0, math.nan, math.inf, -math.inf, None, True, "1"]),
)


@settings(SETTINGS, max_examples=200)
@given(
    batch=batches(),
    num_thresholds=st.sampled_from([1, 2, 3, 4, 7, 200, 20_000]),
    grid=st.sampled_from(["tf", "tf", "tf", "reference", "nope"]),
    name=st.sampled_from([*NOISY, *NOISY, "none", "no-such-mechanism", ""]),
    epsilon=epsilons,
    seed=st.one_of(st.none(), st.integers(0, 2**62), st.sampled_from([-1])),
)
def test_pipeline_returns_valid_auc_or_raises_documented_error(
    batch, num_thresholds, grid, name, epsilon, seed
):
    _check_pipeline(batch, num_thresholds, grid, name, epsilon, seed)


@settings(SETTINGS, max_examples=150)
@given(
    batch=batches(),
    num_thresholds=st.sampled_from([2, 4, 7, 200, 20_000]),
    grid=st.sampled_from(["tf", "reference"]),
    name=st.sampled_from(NOISY),
    epsilon=st.one_of(st.floats(0.01, 100.0), st.none()),
    seed=st.one_of(st.none(), st.integers(0, 2**62)),
)
def test_hostile_data_with_valid_arguments(batch, num_thresholds, grid, name, epsilon, seed):
    if grid == "reference" and num_thresholds < 4:
        num_thresholds = 4
    _check_pipeline(batch, num_thresholds, grid, name, epsilon, seed)


def _check_pipeline(batch, num_thresholds, grid, name, epsilon, seed):
    y, s, w = batch
    try:
        thresholds = Thresholds.make(num_thresholds, grid)
    except (ValueError, TypeError):
        assert num_thresholds < 2 or grid == "nope" or (grid == "reference" and num_thresholds < 4)
        event("raised: bad threshold grid")
        return
    try:
        pos, neg = bucket_counts(y, s, thresholds, sample_weight=w, dtype=tf.float64)
    except tf.errors.InvalidArgumentError:
        assert not _valid(y, s, w)
        event("raised: invalid data")
        return
    assert _valid(y, s, w), "invalid data was counted without an error"
    delta = 1e-5 if name in list_mechanisms() and mechanism_class(name).requires_delta else None
    try:
        mechanism = get_mechanism(name, epsilon=epsilon, num_thresholds=num_thresholds, delta=delta)
    except (ValueError, TypeError):
        bad_epsilon = not (
            epsilon is None
            or (isinstance(epsilon, float) and math.isfinite(epsilon) and epsilon > 0)
        )
        assert bad_epsilon or name not in list_mechanisms() or name == "none"
        event("raised: bad epsilon or mechanism name")
        return
    if epsilon is None:
        assert mechanism.name == "none"  # the one explicit, documented no-noise path
    else:
        assert mechanism.name == name and mechanism.noise_stddev > 0
        assert math.isfinite(mechanism.statement().epsilon)
    try:
        out = private_auc(mechanism, pos, neg, seed=seed, repeats=2)
    except ValueError as error:
        # integer noise, or totals released as label-free (weights of 1 only): whole counts
        integer_only = mechanism.capabilities.integer_counts or mechanism.capabilities.unit_weights
        fractional = not (
            np.all(pos.numpy() == np.round(pos.numpy()))
            and np.all(neg.numpy() == np.round(neg.numpy()))
        )
        assert seed == -1 or (integer_only and fractional and "integer" in str(error))
        event("raised: bad seed or fractional weights for integer noise")
        return
    auc = out.aucs
    assert auc.shape == (2,)
    # NaN is the documented answer where the AUC is undefined (one class; for noisy releases,
    # an estimated class total that is not positive; rr: debiasing undefined), never a 0.
    assert np.all(np.isnan(auc) | ((auc >= 0) & (auc <= 1))), auc
    one_class = float(np.sum(pos)) <= 0 or float(np.sum(neg)) <= 0
    if epsilon is None:
        assert np.all(np.isnan(auc) == one_class), auc
    event(f"returned an AUC ({'no noise' if epsilon is None else 'noisy'})")


@SETTINGS
@given(
    name=st.sampled_from(NOISY),
    epsilon=st.sampled_from([0.0, -0.5, -1e-300, math.nan, math.inf, -math.inf, "1", True]),
)
def test_no_silent_zero_noise_for_bad_epsilon(name, epsilon):
    with pytest.raises((ValueError, TypeError)):
        get_mechanism(name, epsilon=epsilon, num_thresholds=10, delta=1e-5)


@pytest.mark.parametrize("name", ["", "None", "laplace", "HISTOGRAM", "histogram "])
def test_unknown_mechanism_names_raise(name):
    with pytest.raises(ValueError, match="unknown mechanism"):
        get_mechanism(name, epsilon=1.0, num_thresholds=10)


def test_none_mechanism_needs_an_explicit_none_epsilon():
    with pytest.raises(ValueError):
        get_mechanism("none", epsilon=1.0, num_thresholds=10)


@st.composite
def integer_histograms(draw):
    buckets = draw(st.integers(3, 30))
    counts = st.lists(st.integers(0, 10**6), min_size=buckets, max_size=buckets)
    return draw(counts), draw(counts)


@SETTINGS
@given(
    histograms=integer_histograms(),
    epsilon=st.floats(0.01, 50.0),
    name=st.sampled_from(["histogram", "histogram-public-scores"]),
)
def test_discrete_noise_on_hostile_integer_counts(histograms, epsilon, name):
    pos, neg = (tf.constant(h, tf.float64) for h in histograms)
    mechanism = get_mechanism(
        name, epsilon=epsilon, num_thresholds=pos.shape[0] - 1, noise="discrete"
    )
    noisy = mechanism.release(pos, neg, seed=None)["pos"].numpy()
    assert np.all(noisy == np.round(noisy))
    release = mechanism.release(pos, neg, seed=0)
    auc = float(mechanism.estimate_auc(release))
    confusion = mechanism.released_confusion(release)
    num_pos = float(confusion.tp[0] + confusion.fn[0])
    num_neg = float(confusion.fp[0] + confusion.tn[0])
    if num_pos > 0 and num_neg > 0:
        assert 0.0 <= auc <= 1.0
    else:  # the documented answer where the AUC is undefined
        assert np.isnan(auc)


@SETTINGS
@given(
    scale=st.one_of(
        st.floats(1e-3, 1e6),
        st.sampled_from([0.0, -1.0, math.nan, math.inf, 1e300]),
    ),
    size=st.integers(0, 50),
)
def test_exact_samplers_return_integers_or_raise(scale, size):
    for sampler in (exact_noise.discrete_laplace_sample, exact_noise.discrete_gaussian_sample):
        try:
            draws = sampler(scale, size, seed=0)
        except ValueError:
            assert not (0 < scale <= 1e4) or not math.isfinite(scale)
            continue
        assert draws.shape == (size,) and draws.dtype == np.int64
