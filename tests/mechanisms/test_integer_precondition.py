"""A mechanism with integer noise refuses counts that are not integers in ``release`` itself.

The entry points (Keras metric, CLI, Beam, Flower, TFF) refuse fractional weights, but
``release`` is public: ``secure-histogram`` released ``[0, 2.5, 0]`` plus an integer share,
eagerly and in ``tf.function`` (the ``.5`` shows through: epsilon infinite), the secure tree
checked only eagerly, and ``rr`` returned fractional counts unflipped. Every integer-noise
mechanism now refuses them eagerly (``ValueError``) and in ``tf.function``
(``InvalidArgumentError``); none of them compiles under XLA (their samplers have no XLA
kernel), and a mechanism that does compile gets NaN there instead of the fraction.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.mechanisms import Capabilities, CountMechanism, get_mechanism
from dpauc_tf.mechanisms.registry import register_mechanism, unregister_mechanism

INTEGER_MECHANISMS = [
    ("secure-histogram", {}),
    ("secure-histogram", {"family": "skellam"}),
    ("secure-tree-histogram", {}),
    ("secure-tree-histogram", {"family": "skellam"}),
    ("secure-tree-histogram", {"public_scores": True}),
    ("histogram", {"noise": "discrete"}),
    ("histogram-public-scores", {"noise": "discrete"}),
    ("rr", {}),
]
IDS = [
    f"{name}-{'-'.join(map(str, options.values())) or 'default'}"
    for name, options in INTEGER_MECHANISMS
]
FRACTIONAL = [
    ([0.0, 2.5, 0.0], [0.0, 1.0, 0.0]),
    ([0.0, 2.0, 0.0], [0.0, 1.0, 0.25]),
    ([0.0, np.inf, 0.0], [0.0, 1.0, 0.0]),
    ([0.0, np.nan, 0.0], [0.0, 1.0, 0.0]),
]


def _build(name, options):
    delta = 1e-6 if options.get("family") == "skellam" else None
    mechanism = get_mechanism(
        name, epsilon=1.0, num_thresholds=2, delta=delta, num_clients=3, **options
    )
    assert mechanism.capabilities.integer_counts
    return mechanism


@pytest.mark.parametrize(("name", "options"), INTEGER_MECHANISMS, ids=IDS)
@pytest.mark.parametrize(("pos", "neg"), FRACTIONAL)
def test_eager_release_refuses_counts_that_are_not_integers(name, options, pos, neg):
    mechanism = _build(name, options)
    for repeats in (None, 3):
        with pytest.raises(ValueError, match="needs integer counts"):
            mechanism.release(tf.constant(pos, tf.float64), tf.constant(neg), 0, repeats)


@pytest.mark.parametrize(("name", "options"), INTEGER_MECHANISMS, ids=IDS)
def test_integer_positives_do_not_truncate_fractional_negatives(name, options):
    """``release`` once cast ``neg`` to ``pos``'s dtype before making both float: integer
    positives turned negatives [0, 1, 0.25] into [0, 1, 0], which passed the check."""
    mechanism = _build(name, options)
    with pytest.raises(ValueError, match="needs integer counts"):
        mechanism.release(tf.constant([0, 2, 0], tf.int64), tf.constant([0.0, 1.0, 0.25]), 0)


@pytest.mark.parametrize(("name", "options"), INTEGER_MECHANISMS, ids=IDS)
def test_release_in_tf_function_refuses_counts_that_are_not_integers(name, options):
    mechanism = _build(name, options)

    @tf.function
    def release(pos, neg):
        return mechanism.release(pos, neg, seed=0)

    for dtype in (tf.float64, tf.float32):
        with pytest.raises(tf.errors.InvalidArgumentError, match="needs integer counts"):
            release(tf.constant([0.0, 2.5, 0.0], dtype), tf.constant([0.0, 1.0, 0.0], dtype))
    out = release(tf.constant([0.0, 2.0, 0.0]), tf.constant([1.0, 1.0, 0.0]))  # integers: fine
    assert all(bool(tf.reduce_all(tf.math.is_finite(v))) for v in out.values())


@pytest.mark.parametrize(("name", "options"), INTEGER_MECHANISMS, ids=IDS)
def test_release_under_xla_publishes_nothing(name, options):
    """These mechanisms do not compile under XLA at all (capability xla=False)."""
    mechanism = _build(name, options)
    assert not mechanism.capabilities.xla
    release = tf.function(lambda pos, neg: mechanism.release(pos, neg, seed=0), jit_compile=True)
    with pytest.raises(tf.errors.InvalidArgumentError):
        release(tf.constant([0.0, 2.5, 0.0], tf.float64), tf.constant([0.0, 1.0, 0.0], tf.float64))


@pytest.mark.parametrize("kind", [tf.int32, tf.int64])
def test_integer_dtypes_are_integers(kind):
    mechanism = _build("secure-histogram", {})
    release = mechanism.release(tf.constant([0, 2, 0], kind), tf.constant([1, 1, 0], kind), 0)
    assert bool(tf.reduce_all(release["pos"] == tf.round(release["pos"])))


class _RoundedLaplace(CountMechanism):
    """A registered integer-noise mechanism that compiles under XLA (rounded Laplace)."""

    name = "toy-rounded-laplace"
    capabilities = Capabilities(integer_counts=True, xla=True)
    noise_stddev = 1.0

    def _noisy_release(self, pos, neg, seed):
        noise = tf.round(tf.random.stateless_normal(tf.shape(pos), seed, dtype=pos.dtype))
        return {"pos": pos + noise, "neg": neg + noise}

    def to_confusion(self, release):  # pragma: no cover
        raise NotImplementedError

    def dp_event(self):  # pragma: no cover
        raise NotImplementedError

    def statement(self):  # pragma: no cover
        raise NotImplementedError


def test_under_xla_a_fraction_becomes_nan_not_a_release():
    """XLA drops assertions: the counts of a refused release are NaN there."""
    register_mechanism(_RoundedLaplace, summary="toy")
    try:
        mechanism = get_mechanism("toy-rounded-laplace", epsilon=1.0, num_thresholds=2)
        release = tf.function(lambda p, n: mechanism.release(p, n, seed=0), jit_compile=True)
        pos = tf.constant([0.0, 2.5, 0.0], tf.float64)
        out = release(pos, tf.constant([0.0, 1.0, 0.0], tf.float64))
        assert all(bool(tf.reduce_all(tf.math.is_nan(v))) for v in out.values())
        fine = release(tf.constant([0.0, 2.0, 0.0], tf.float64), tf.zeros(3, tf.float64))
        assert bool(tf.reduce_all(tf.math.is_finite(fine["pos"])))
        with pytest.raises(ValueError, match="needs integer counts"):
            mechanism.release(pos, tf.zeros(3, tf.float64), seed=0)
    finally:
        unregister_mechanism("toy-rounded-laplace")


@pytest.mark.parametrize("name", ["histogram", "tree-histogram", "paper"])
def test_continuous_mechanisms_still_take_fractions(name):
    mechanism = get_mechanism(name, epsilon=1.0, num_thresholds=2)
    release = tf.function(lambda p, n: mechanism.release(p, n, seed=0), jit_compile=True)
    for run in (mechanism.release, release):
        out = run(tf.constant([0.0, 2.5, 0.0]), tf.constant([0.0, 1.0, 0.0]))
        assert all(bool(tf.reduce_all(tf.math.is_finite(v))) for v in out.values())
