"""``dpauc evaluate --mechanism-option KEY=VALUE`` reaches the mechanism on every backend.

The probe is the estimator: ``estimator=mann-whitney-smooth`` changes only the post-processing,
so with the same seed the released counts (hence the ROC points) are the same and the AUC
differs by the within-bucket correction. A backend that dropped the option would give the
same AUC; one that passed it to the noise would change the curve.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpauc_tf.cli.main import main
from tests.helpers.scores import write_score_csv

SMOOTH = ("--mechanism-option", "estimator=mann-whitney-smooth")


@pytest.fixture(scope="module")
def score_file(tmp_path_factory):
    rng = np.random.default_rng(5)
    labels = (rng.random(4000) < 0.3).astype(int)
    scores = 1 / (1 + np.exp(-(rng.normal(size=4000) + 1.2 * labels)))
    return write_score_csv(tmp_path_factory.mktemp("options") / "scores.csv", labels, scores)


def _common(score_file, mechanism="secure-histogram"):
    noise = ["--mechanism", mechanism, "--epsilon", "1", "--seed", "3", "--repeats", "2"]
    return ["--scores", score_file, *noise, "--num-thresholds", "30", "--clients", "4"]


def _check_only_the_estimate_changed(plain: dict, smooth: dict) -> None:
    assert smooth["mechanism_options"] == {"estimator": "mann-whitney-smooth"}
    assert plain["mechanism_options"] == {}
    assert smooth["roc"] == plain["roc"]  # the same release
    assert smooth["privacy"] == plain["privacy"]
    for a, b in zip(smooth["aucs"], plain["aucs"], strict=True):
        assert a != b and abs(a - b) < 0.02  # the within-bucket correction, nothing else


def test_an_option_reaches_the_mechanism(backend, score_file, evaluate_json):
    common = [*_common(score_file), "--backend", backend]
    _check_only_the_estimate_changed(evaluate_json(*common), evaluate_json(*common, *SMOOTH))


def test_options_change_the_noise_where_they_should(score_file, evaluate_json):
    common = _common(score_file, "tree-histogram")
    plain = evaluate_json(*common)
    split = evaluate_json(*common, "--mechanism-option", "positive_rate=0.3")
    assert split["mechanism_options"] == {"positive_rate": 0.3}
    assert split["privacy"] != plain["privacy"]  # the per-class scales are stated
    assert split["guaranteed_epsilon"] == plain["guaranteed_epsilon"] == 1.0
    listed = ["--mechanism-option", "budget=[1, 1, 1, 1]", "--mechanism-option", "branching=4"]
    assert evaluate_json(*common, *listed)["mechanism_options"]["budget"] == [1, 1, 1, 1]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("bogus=1", "takes no option 'bogus'; its options:"),
        ("budget=3", "budget needs one weight per level"),
        ("positive_rate=2", "positive_rate"),
        ("epsilon=2", "epsilon is set by --epsilon"),
        ("num-clients=3", "num_clients is set by --clients"),
        ("nokey", "expected KEY=VALUE"),
        ("positive_rate=NaN", "expected a finite number"),
    ],
)
def test_bad_options_are_one_line_errors(option, message, score_file, capsys):
    argv = ["evaluate", *_common(score_file, "tree-histogram"), "--mechanism-option", option]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_an_option_given_twice_is_refused(score_file, capsys):
    twice = ["--mechanism-option", "positive_rate=0.3", "--mechanism-option", "positive_rate=0.4"]
    assert main(["evaluate", *_common(score_file, "tree-histogram"), *twice]) == 2
    assert "given twice" in capsys.readouterr().err


def test_public_scores_false_keeps_the_score_histogram_private(backend, score_file, evaluate_json):
    """``bool("False")`` is True: the tree once published the exact score histogram here."""
    common = [*_common(score_file, "tree-histogram"), "--backend", backend]
    out = evaluate_json(*common, "--mechanism-option", "public_scores=False")
    assert out["mechanism_options"] == {"public_scores": False}
    assert "released exactly" not in out["privacy"]
    assert out["privacy"] == evaluate_json(*common)["privacy"]  # the default: both trees noisy


@pytest.mark.parametrize("value", ["no", "0", "off"])
def test_every_spelling_of_false_is_false(value, score_file, evaluate_json):
    common = _common(score_file, "tree-histogram")
    out = evaluate_json(*common, "--mechanism-option", f"public_scores={value}")
    assert out["mechanism_options"] == {"public_scores": False}
    assert "released exactly" not in out["privacy"]
    public = evaluate_json(*common, "--mechanism-option", "public_scores=yes")
    assert "the score histogram is released exactly" in public["privacy"]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("public_scores=maybe", "option public_scores must be true or false"),
        ("positive_rate=1e-300", "option positive_rate must be a finite number in [1e-06"),
        ("positive_share=1e-300", "option positive_share must be a finite number in [1e-06"),
        ("branching=2.5", "option branching must be an integer >= 2"),
    ],
)
def test_values_are_parsed_by_their_declared_type(option, message, score_file, capsys):
    argv = ["evaluate", *_common(score_file, "tree-histogram"), "--mechanism-option", option]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
