"""The closed vocabularies (``dpauc_tf.core.vocabulary.Vocabulary``): one Enum per concept,
validated where a value enters, equal to its string, the same strings in JSON and in the
command line's choices. Pure Python: no TensorFlow."""

from __future__ import annotations

import argparse
import enum
import json

import pytest

from dpauc_tf.cli.formats import OutputFormat
from dpauc_tf.core.partitions import Partition
from dpauc_tf.core.vocabulary import Curve, SummationMethod, ThresholdGrid, Vocabulary
from dpauc_tf.io.paths import ScoreFormat
from dpauc_tf.mechanisms.capabilities import Capabilities, Protected, Released
from dpauc_tf.mechanisms.laws import Average, IntervalTarget, NoiseKind
from dpauc_tf.mechanisms.option_types import OptionKind, OptionType

VOCABULARIES = [
    (Curve, "`curve`", ("ROC", "PR", "PRGAIN")),
    (SummationMethod, "`summation_method`", ("interpolation", "minoring", "majoring")),
    (ThresholdGrid, "threshold_grid", ("tf", "reference")),
    (IntervalTarget, "target", ("sample", "population")),
    (Average, "average", ("macro", "weighted", "micro")),
    (NoiseKind, "noise", ("continuous", "discrete")),
    (Protected, "protected", ("labels", "scores", "nothing")),
    (Released, "released", ("curve", "auc")),
    (OptionKind, "option_kind", ("bool", "int", "float", "choice", "budget", "text", "any")),
    (ScoreFormat, "format", ("csv", "parquet", "tfrecord")),
    (OutputFormat, "format", ("table", "json", "markdown", "csv")),
    (Partition, "partition", ("iid", "non-iid", "label-skewed")),
]


@pytest.mark.parametrize("vocabulary, argument, values", VOCABULARIES)
def test_a_member_is_its_string(vocabulary, argument, values):
    assert vocabulary.values() == values
    for value in values:
        member = vocabulary(value)
        assert member == value and hash(member) == hash(value) and {value: 1}[member] == 1
        assert str(member) == f"{member}" == value
        assert json.dumps({"x": member}) == json.dumps({"x": value})
        assert vocabulary(member) is member is vocabulary.from_str(value.upper())


@pytest.mark.parametrize("vocabulary, argument, values", VOCABULARIES)
@pytest.mark.parametrize("hostile", ["", "nope", None, 1, 0.5, b"tf", ["macro"]])
def test_anything_else_is_one_line_naming_the_argument_and_its_values(
    vocabulary, argument, values, hostile
):
    with pytest.raises(ValueError) as info:
        vocabulary(hostile)
    message = str(info.value)
    assert "\n" not in message
    assert message == (f"{argument} must be one of {', '.join(map(repr, values))}, got {hostile!r}")


def test_another_enums_member_of_the_same_value_is_taken():
    """Keras' ``metrics_utils.AUCCurve`` / ``AUCSummationMethod`` are plain Enums."""

    class KerasCurve(enum.Enum):
        PR = "PR"

    class KerasSummation(enum.Enum):
        MINORING = "minoring"

    assert Curve(KerasCurve.PR) is Curve.PR
    assert SummationMethod(KerasSummation.MINORING) is SummationMethod.MINORING


def test_dataclass_fields_are_validated_where_they_enter():
    capabilities = Capabilities(protects="Scores", releases="AUC")
    assert (capabilities.protects, capabilities.releases) == ("scores", "auc")
    assert type(capabilities.releases) is str and type(OptionType("INT").kind) is str
    with pytest.raises(ValueError, match="released must be one of 'curve', 'auc'"):
        Capabilities(releases="roc")
    with pytest.raises(ValueError, match="option_kind must be one of"):
        OptionType("integer")


def test_the_command_line_choices_are_the_enums_values():
    from dpauc_tf.cli.main import build_parser

    def choices(*argv: str) -> dict[str, tuple]:
        parser = build_parser()
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return {
            action.dest: tuple(action.choices)
            for action in sub.choices[argv[0]]._actions
            if action.choices is not None
        }

    evaluate = choices("evaluate")
    assert evaluate["threshold_grid"] == ThresholdGrid.values()
    assert evaluate["ci_target"] == IntervalTarget.values()
    assert choices("multiclass")["average"] == Average.values()
    assert choices("reproduce")["threshold_grid"] == ThresholdGrid.values()
    assert evaluate["format"] == choices("audit")["format"] == OutputFormat.values()


def test_a_subclass_names_its_argument_from_its_class():
    class OneWay(Vocabulary):
        ONLY = "only"

    with pytest.raises(ValueError, match=r"^one_way must be one of 'only', got 'two'$"):
        OneWay("two")
