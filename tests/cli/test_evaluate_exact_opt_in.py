"""``dpauc evaluate`` publishes the private release only: exact label statistics (exact and
TensorFlow AUCs, the positive count, a one-class warning, the exact curve) need
``--show-exact``, and every format says which fields are private and which exact."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from dpauc_tf.cli.main import main
from tests.helpers.scores import normal_score_file, write_score_csv

EXACT = ("exact_auc", "exact_auc_method", "exact_auc_max_error", "tf_auc", "num_positives")
RELEASE = ["auc_mean", "auc_std", "aucs", "num_undefined", "roc"]


@pytest.fixture()
def score_file(tmp_path):
    return normal_score_file(tmp_path / "s.csv", 120, seed=5)


def _args(score_file, backend, *extra):
    return [
        "--scores", score_file, "--mechanism", "secure-histogram", "--epsilon", "1",
        "--clients", "3", "--num-thresholds", "10", "--repeats", "2", "--seed", "0",
        "--backend", backend, *extra,
    ]  # fmt: skip


def test_json_holds_no_exact_statistic_unless_asked_on_every_backend(
    backend, evaluate_json, score_file
):
    out = evaluate_json(*_args(score_file, backend))
    for key in EXACT:
        assert key not in out, key  # before: printed by default beside the release
    assert out["private_fields"] == RELEASE and out["exact_fields"] == []
    shown = evaluate_json(*_args(score_file, backend, "--show-exact"))
    assert all(key in shown for key in EXACT)
    assert shown["exact_fields"] == list(EXACT) and shown["private_fields"] == RELEASE
    assert shown["aucs"] == out["aucs"]  # the same release, with or without the flag


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_every_format_names_private_fields_and_hides_exact_ones(capsys, score_file, fmt):
    assert main(["evaluate", *_args(score_file, "simulate"), "--format", fmt]) == 0
    text = capsys.readouterr().out
    for word in ("exact_auc", "tf_auc", "num_positives", "exact AUC", "TensorFlow AUC"):
        assert word not in text, word
    assert "positive)" not in text  # the table's "(P positive)"
    assert main(["evaluate", *_args(score_file, "simulate"), "--format", fmt, "--show-exact"]) == 0
    shown = capsys.readouterr().out
    if fmt == "table":
        assert "private (label DP): auc_mean" in text and "exact values hidden" in text
        assert "exact AUC" in shown and "NOT private" in shown and "positive)" in shown
        return
    if fmt == "markdown":  # one row for the setting; the fields named once below it
        assert "fields: private (label DP): auc_mean" in text and "exact values hidden" in text
        assert "fields: private (label DP): auc_mean" in shown and "NOT private" in shown
        assert "exact_auc" in shown and "tf_auc" in shown
        return
    row = next(csv.DictReader(io.StringIO(text)))
    assert row["private_fields"] == "auc auc_mean auc_std num_undefined"
    assert row["exact_fields"] in ("", "-")
    assert "exact_auc" in shown and "num_positives" in shown


def test_mechanism_none_says_nothing_is_private(evaluate_json, score_file):
    out = evaluate_json("--scores", score_file, "--mechanism", "none")
    assert out["private_fields"] == [] and out["exact_fields"] == RELEASE


def test_a_one_class_file_is_released_like_any_other_without_show_exact(
    capsys, evaluate_json, tmp_path
):
    """Refusing a one-class file publishes that its labels are all 0: one label away from a
    file that would be released. Without --show-exact both are released."""
    rng = np.random.default_rng(1)
    scores = rng.random(100)
    one_class = write_score_csv(tmp_path / "one.csv", np.zeros(100), scores)
    one_positive = write_score_csv(tmp_path / "two.csv", np.eye(100)[0], scores)
    base = ["--mechanism", "histogram", "--epsilon", "1", "--repeats", "3", "--seed", "0"]
    a = evaluate_json("--scores", one_class, *base)
    err_a = capsys.readouterr().err
    b = evaluate_json("--scores", one_positive, *base)
    assert "auc_undefined" not in a and "warning" not in err_a  # before: a warning, no release
    assert set(a) == set(b) and len(a["aucs"]) == len(b["aucs"]) == 3
    shown = evaluate_json("--scores", one_class, *base, "--show-exact")
    assert "labels are 0" in shown["auc_undefined"] and shown["aucs"] is None
    assert "auc_undefined" in shown["exact_fields"]


def test_the_plot_draws_the_exact_curve_only_with_show_exact(score_file, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")  # --plot checks it is there
    from dpauc_tf.experiments import plots

    seen = []
    monkeypatch.setattr(plots, "roc_band", lambda exact, *a, **k: seen.append(exact))
    args = _args(score_file, "simulate", "--plot", str(tmp_path / "p.png"), "--format", "json")
    assert main(["evaluate", *args]) == 0
    assert main(["evaluate", *args, "--show-exact"]) == 0
    assert seen[0] is None and seen[1] is not None
