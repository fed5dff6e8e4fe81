"""Every mechanism option has a declared type, and every value is parsed by it.

``bool("False")`` is ``True``: a tree read ``public_scores`` with ``bool()``, so
``--mechanism-option public_scores=False`` (or ``no``) published the exact score histogram.
Values now go through the registry's one parser (:func:`parse_options`), from the command
line and from Python alike; a constructor given a non-bool refuses it.
"""

from __future__ import annotations

import inspect
from typing import ClassVar

import numpy as np
import pytest

from dpauc_tf.mechanisms import CountMechanism, get_mechanism, list_mechanisms
from dpauc_tf.mechanisms.estimators import AUCEstimator
from dpauc_tf.mechanisms.laws import NoiseKind
from dpauc_tf.mechanisms.option_types import OPTION_TYPES, OptionType
from dpauc_tf.mechanisms.registry import (
    BUILTIN_MECHANISMS,
    check_mechanism_options,
    mechanism_options,
    option_type,
    parse_options,
    register_mechanism,
    unregister_mechanism,
)
from dpauc_tf.mechanisms.tree import SecureTreeHistogram, TreeHistogram
from dpauc_tf.noise.shares import FAMILIES

FALSE = ["False", "false", "FALSE", "no", "No", "off", "0", " false ", 0, False, np.False_]
TRUE = ["True", "true", "yes", "on", "1", 1, True, np.True_]
PUBLIC = ("tree-histogram", "secure-tree-histogram")


def _tree(name, **options):
    return get_mechanism(name, epsilon=1.0, num_thresholds=15, num_clients=3, **options)


@pytest.mark.parametrize("name", PUBLIC)
@pytest.mark.parametrize("value", FALSE, ids=repr)
def test_public_scores_false_in_any_spelling_keeps_the_histogram_private(name, value):
    mechanism = _tree(name, public_scores=value)
    assert mechanism.public_scores is False
    release = mechanism.release(np.ones(16) * 3, np.ones(16), seed=0)
    assert "total" not in release and "neg_tree" in release  # the totals are not published
    assert "score histogram is released exactly" not in mechanism.statement().neighbouring


@pytest.mark.parametrize("value", TRUE, ids=repr)
def test_public_scores_true_in_any_spelling(value):
    assert _tree("tree-histogram", public_scores=value).public_scores is True


@pytest.mark.parametrize("value", ["maybe", "", "2", 2, -1, 0.0, 1.0, None, [True], "Falsch"])
def test_a_value_that_is_not_a_bool_is_refused_in_one_line(value):
    with pytest.raises(ValueError, match="option public_scores must be true or false") as error:
        _tree("tree-histogram", public_scores=value)
    assert "\n" not in str(error.value) and "tree-histogram" in str(error.value)


@pytest.mark.parametrize("cls", [TreeHistogram, SecureTreeHistogram])
@pytest.mark.parametrize("value", ["False", "no", 0, None, 1.0])
def test_the_constructor_refuses_a_non_bool(cls, value):
    """The classes are public too: a string there is never truthy."""
    with pytest.raises(TypeError, match="public_scores must be True or False"):
        cls(epsilon=1.0, num_thresholds=15, public_scores=value)


def test_every_builtin_option_has_a_declared_type():
    for spec in BUILTIN_MECHANISMS:
        for option in mechanism_options(spec.name):
            assert option in OPTION_TYPES, f"{spec.name}.{option} has no declared type"
    # the declared choices are the ones the mechanisms check
    assert OPTION_TYPES["estimator"].choices == tuple(e.value for e in AUCEstimator)
    assert OPTION_TYPES["noise"].choices == NoiseKind.values()
    assert OPTION_TYPES["family"].choices == FAMILIES


@pytest.mark.parametrize(
    ("name", "option", "text", "parsed"),
    [
        ("histogram", "positive_rate", "0.25", 0.25),
        ("histogram", "positive_share", " 0.7", 0.7),
        ("histogram", "noise", "discrete", "discrete"),
        ("tree-histogram", "branching", "2", 2),
        ("tree-histogram", "branching", 8.0, 8),
        ("tree-histogram", "budget", "uniform", "uniform"),
        ("tree-histogram", "budget", "[1, 2, 3]", (1.0, 2.0, 3.0)),
        ("tree-histogram", "budget", [1, 2, 3], (1.0, 2.0, 3.0)),
        ("secure-histogram", "num_clients", "4", 4),
        ("secure-histogram", "family", "skellam", "skellam"),
        ("score-noise", "resolution", "101", 101),
        ("auc-only", "count_share", "0.1", 0.1),
    ],
)
def test_text_is_parsed_by_the_declared_type(name, option, text, parsed):
    value = parse_options(name, {option: text})[option]
    assert value == parsed and type(value) is type(parsed)


@pytest.mark.parametrize(
    ("name", "option", "value", "accepted"),
    [
        ("histogram", "positive_rate", 1e-300, r"in \[1e-06, 0.999999\]"),
        ("histogram", "positive_share", 1e-300, r"in \[1e-06, 0.999999\]"),
        ("histogram", "positive_rate", 1 - 1e-12, r"in \[1e-06, 0.999999\]"),
        ("secure-histogram", "positive_share", 1e-300, r"in \[1e-06, 0.999999\]"),
        ("tree-histogram", "positive_rate", "x", "a finite number"),
        ("tree-histogram", "positive_rate", True, "a finite number"),
        ("tree-histogram", "positive_rate", "nan", "a finite number"),
        ("tree-histogram", "branching", 2.5, "an integer >= 2"),
        ("tree-histogram", "branching", 1, "an integer >= 2"),
        ("tree-histogram", "budget", "nope", "'auc' or 'uniform' or a list"),
        ("tree-histogram", "budget", [1, -1, 1], "'auc' or 'uniform' or a list"),
        ("histogram", "noise", "Discrete", "one of 'continuous', 'discrete'"),
        ("histogram", "estimator", "mw", "one of 'mann-whitney'"),
        ("secure-histogram", "family", "gauss", "one of 'discrete-laplace', 'skellam'"),
        ("secure-histogram", "num_clients", 0, "an integer >= 1"),
        ("score-noise", "resolution", 10**9, r"an integer in \[2, 4194305\]"),
        ("auc-only", "count_share", 1e-300, r"in \[1e-06, 0.999999\]"),
    ],
)
def test_a_value_out_of_its_declared_range_is_one_clear_line(name, option, value, accepted):
    """positive_rate=1e-300 was a raw ZeroDivisionError, positive_share=1e-300 'Can't convert
    Python sequence with a value out of range'."""
    delta = 1e-6 if name == "auc-only" else None
    with pytest.raises(ValueError, match=f"option {option} must be .*{accepted}") as error:
        get_mechanism(name, epsilon=1.0, num_thresholds=15, delta=delta, **{option: value})
    assert "\n" not in str(error.value) and repr(value) in str(error.value)


@pytest.mark.parametrize("value", [1e-300, 1e-7, 1 - 1e-7])
def test_the_constructors_refuse_extreme_splits_too(value):
    from dpauc_tf.mechanisms.histogram import HistogramLaplace
    from dpauc_tf.mechanisms.secure_histogram import SecureHistogram

    for cls in (HistogramLaplace, SecureHistogram, TreeHistogram):
        for option in ("positive_share", "positive_rate"):
            with pytest.raises(ValueError, match=r"must be in \[1e-06, 0.999999\]"):
                cls(epsilon=1.0, num_thresholds=15, **{option: value})


@pytest.mark.parametrize("value", [1e-6, 1 - 1e-6])
def test_the_ends_of_the_range_give_finite_noise_and_the_same_epsilon(value):
    for name in ("histogram", "secure-histogram", "tree-histogram"):
        for option in ("positive_share", "positive_rate"):
            mechanism = get_mechanism(name, epsilon=1.0, num_thresholds=15, **{option: value})
            release = mechanism.release(np.ones(16) * 3, np.ones(16), seed=0)
            assert all(np.all(np.isfinite(v)) for v in release.values())
            assert mechanism.statement().epsilon == 1.0


class _Toy(CountMechanism):
    """An outside mechanism with one declared and two undeclared options."""

    name = "toy-options"
    option_types: ClassVar = {"level": OptionType("int", minimum=1, maximum=5)}

    def __init__(self, epsilon, num_thresholds, delta=None, loud=False, level=3, tag=None):
        super().__init__(epsilon=epsilon, num_thresholds=num_thresholds, delta=delta)
        self.loud, self.level, self.tag = loud, level, tag

    noise_stddev = 1.0

    def _noisy_release(self, pos, neg, seed):
        return {"pos": pos, "neg": neg}

    def to_confusion(self, release):  # pragma: no cover - not released here
        raise NotImplementedError

    def dp_event(self):  # pragma: no cover
        raise NotImplementedError

    def statement(self):  # pragma: no cover
        raise NotImplementedError


def test_an_outside_mechanism_declares_or_infers_its_option_types():
    register_mechanism(_Toy, summary="toy")
    try:
        assert option_type("toy-options", "loud").kind == "bool"  # from its default
        assert option_type("toy-options", "tag").kind == "any"  # default None: as given
        toy = get_mechanism("toy-options", epsilon=1.0, num_thresholds=4, loud="no", level="2")
        assert toy.loud is False and toy.level == 2
        with pytest.raises(ValueError, match=r"option level must be an integer in \[1, 5\]"):
            get_mechanism("toy-options", epsilon=1.0, num_thresholds=4, level=9)
        with pytest.raises(ValueError, match="option loud must be true or false"):
            get_mechanism("toy-options", epsilon=1.0, num_thresholds=4, loud="loud")
    finally:
        unregister_mechanism("toy-options")
    with pytest.raises(TypeError, match="OptionType"):
        register_mechanism(type("Bad", (_Toy,), {"option_types": {"level": int}}), summary="toy")


@pytest.mark.parametrize(
    ("key", "argument"),
    [
        ("num_clients", "secure_shares="),
        ("epsilon", "epsilon="),
        ("delta", "delta="),
        ("num_thresholds", "num_thresholds="),
    ],
)
def test_reserved_keys_are_refused_naming_the_argument(key, argument):
    with pytest.raises(ValueError, match=f"cannot set {key}; it is set by {argument}") as error:
        check_mechanism_options(
            "secure-histogram", {key: 1000}, entry="somewhere", num_clients="secure_shares="
        )
    assert str(error.value).startswith("somewhere: ") and "\n" not in str(error.value)


def test_check_mechanism_options_parses_and_refuses_unknown_names():
    parsed = check_mechanism_options(
        "tree-histogram", {"public_scores": "no"}, entry="e", num_clients="x"
    )
    assert parsed == {"public_scores": False}
    assert check_mechanism_options("histogram", None, entry="e", num_clients="x") == {}
    with pytest.raises(ValueError, match="unknown mechanism"):
        check_mechanism_options("nope", {}, entry="e", num_clients="x")


def test_options_of_every_mechanism_are_parsed_in_get_mechanism():
    """A smoke check over the registry: each mechanism's defaults pass their own types."""
    for name in list_mechanisms(private=True):
        cls = BUILTIN_MECHANISMS[[s.name for s in BUILTIN_MECHANISMS].index(name)].load()
        parameters = inspect.signature(cls.__init__).parameters
        for option in mechanism_options(name):
            default = parameters[option].default
            if default is not None:
                assert option_type(name, option).parse(option, default) == default


def test_docs_options_table_is_the_registry():
    from pathlib import Path

    from dpauc_tf.mechanisms.registry import options_markdown

    text = (Path(__file__).resolve().parents[2] / "docs" / "mechanisms.md").read_text()
    start = text.index("<!-- options-table:start -->") + len("<!-- options-table:start -->")
    end = text.index("<!-- options-table:end -->")
    assert text[start:end].strip() == options_markdown()
