"""``dpauc evaluate --confidence``: the releases list in JSON, the interval in the other
formats, refusals, and no ``+- 0.000000 over 1 repeat(s)`` for one release."""

from __future__ import annotations

import numpy as np
import pytest

from dpauc_tf.cli.main import main


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    rng = np.random.default_rng(0)
    labels = (rng.random(3000) < 0.3).astype(int)
    values = 1 / (1 + np.exp(-rng.normal(labels * 0.95, 1.0)))
    path = tmp_path_factory.mktemp("ci") / "scores.csv"
    rows = "\n".join(f"{y},{s:.6f}" for y, s in zip(labels, values, strict=True))
    path.write_text("label,score\n" + rows + "\n")
    return str(path)


def test_json_has_one_object_per_release(scores, evaluate_json):
    common = ("--scores", scores, "--mechanism", "histogram", "--epsilon", 1, "--seed", 0)
    out = evaluate_json(*common, "--repeats", 3, "--confidence", 0.95)
    assert out["confidence"] == 0.95 and out["ci_target"] == "population"
    assert [r["auc"] for r in out["releases"]] == out["aucs"]
    for release in out["releases"]:
        assert release["ci_low"] < release["auc"] < release["ci_high"]
        assert release["ci_target"] == "population" and 0 < release["privacy_share"] < 1
    assert "releases" in out["private_fields"]
    sample = evaluate_json(*common, "--repeats", 3, "--confidence", 0.95, "--ci-target", "sample")
    assert sample["aucs"] == out["aucs"]  # the same releases, a narrower interval
    for wide, narrow in zip(out["releases"], sample["releases"], strict=True):
        assert wide["ci_low"] < narrow["ci_low"] and narrow["ci_high"] < wide["ci_high"]
    plain = evaluate_json(*common)
    assert "releases" not in plain and "confidence" not in plain


def test_table_and_csv_show_the_interval(scores, capsys):
    common = ["evaluate", "--scores", scores, "--mechanism", "histogram", "--epsilon", "1"]
    assert main([*common, "--seed", "0"]) == 0
    table = capsys.readouterr().out
    assert "+- 0.000000" not in table and "repeat(s)" not in table
    assert main([*common, "--seed", "0", "--confidence", "0.9"]) == 0
    table = capsys.readouterr().out
    assert "interval" in table and "90%, population AUC" in table and "privacy share" in table
    assert main([*common, "--seed", "0", "--confidence", "0.9", "--format", "csv"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split(",")
    assert {"ci_low", "ci_high", "ci_target", "privacy_share"} <= set(header)


@pytest.mark.parametrize("value", ["0", "1", "95", "x"])
def test_bad_confidence_is_one_line(scores, value, capsys):
    argv = ["evaluate", "--scores", scores, "--mechanism", "histogram", "--epsilon", "1"]
    assert main([*argv, "--confidence", value]) == 2
    assert "--confidence" in capsys.readouterr().err


def test_score_noise_is_refused(scores, capsys):
    argv = ["evaluate", "--scores", scores, "--mechanism", "score-noise", "--epsilon", "1"]
    assert main([*argv, "--confidence", "0.95"]) == 2
    err = capsys.readouterr().err
    assert "no interval" in err and "Traceback" not in err


def test_beam_backend_gives_the_interval_too(scores, evaluate_json):
    pytest.importorskip("apache_beam")
    out = evaluate_json(
        "--scores", scores, "--mechanism", "histogram", "--epsilon", 1, "--seed", 0,
        "--backend", "beam", "--confidence", 0.95,
    )  # fmt: skip
    (release,) = out["releases"]
    assert release["ci_low"] < release["auc"] < release["ci_high"]


# -- issue 30: the markdown row has the interval; no "undefined" beside a defined AUC ----------
def test_markdown_has_the_interval_columns(scores, capsys):
    """docs/intervals.md promises CSV/Markdown columns; --format markdown dropped them."""
    argv = ["evaluate", "--scores", scores, "--mechanism", "histogram", "--epsilon", "1"]
    assert main([*argv, "--seed", "0", "--confidence", "0.95", "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    header = [cell.strip() for cell in text.splitlines()[0].strip("|").split("|")]
    assert {"ci_low", "ci_high", "ci_target", "privacy_share"} <= set(header)
    assert "interval: 95% for the population AUC" in text


def test_interval_line_never_calls_a_defined_auc_undefined():
    from dpauc_tf.cli.intervals import interval_lines

    release = {"auc": 0.7, "ci_low": None, "ci_high": None, "ci_target": "population",
               "privacy_share": None}  # fmt: skip
    line = interval_lines({"confidence": 0.95, "releases": [release]})[0]
    assert "AUC is undefined" not in line
    undefined = dict(release, auc=None)
    line = interval_lines({"confidence": 0.95, "releases": [undefined, release]})[0]
    assert "first release's AUC is undefined" in line


def test_a_small_test_set_never_prints_an_undefined_interval_beside_an_auc(tmp_path, capsys):
    """A 5-example file at epsilon 1, histogram-public-scores, population target: DeLong's
    variance of the projected counts was NaN beside a defined AUC."""
    path = tmp_path / "tiny.csv"
    path.write_text("label,score\n1,0.9\n0,0.2\n0,0.4\n1,0.6\n0,0.1\n")
    argv = ["evaluate", "--scores", str(path), "--mechanism", "histogram-public-scores"]
    argv += ["--epsilon", "1", "--num-thresholds", "10", "--confidence", "0.95"]
    argv += ["--repeats", "50", "--format", "json"]
    assert main([*argv, "--seed", "3"]) == 0
    import json

    out = json.loads(capsys.readouterr().out)
    for release in out["releases"]:
        assert (release["auc"] is None) == (release["ci_low"] is None), release


def test_the_interval_is_the_backends_own(scores, evaluate_json, monkeypatch):
    """``--confidence`` reaches the backend: its ``finish_release`` computes the interval
    (issue 31), and the command never patches the result afterwards (a patch through
    ``with_interval`` would raise here)."""
    from dpauc_tf.mechanisms import release

    def patched(*args, **kwargs):
        raise AssertionError("the command recomputed the interval")

    monkeypatch.setattr(release, "with_interval", patched)
    common = ("--scores", scores, "--epsilon", 1, "--seed", 0, "--confidence", 0.9)
    for extra in ((), ("--clients", 3), ("--mechanism", "secure-histogram", "--clients", 3)):
        out = evaluate_json(*common, *extra)
        (first,) = out["releases"]
        assert first["ci_low"] < first["auc"] < first["ci_high"], extra
