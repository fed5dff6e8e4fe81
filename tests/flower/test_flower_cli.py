"""``dpauc evaluate --backend flower``: the same JSON as the other backends."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.helpers.cli import cli_status
from tests.helpers.scores import normal_score_file


@pytest.fixture()
def score_file(tmp_path):
    return normal_score_file(tmp_path / "scores.csv", 300, seed=3)


def _run(capsys, *argv):
    return cli_status(capsys, "evaluate", *argv, "--format", "json")


@pytest.mark.skipif(importlib.util.find_spec("flwr") is None, reason="needs flwr")
def test_flower_backend_noise_off_equals_simulate(score_file, capsys, monkeypatch):
    monkeypatch.setenv("DPAUC_FLOWER_ENGINE", "in-process")
    common = [
        "--scores",
        score_file,
        "--mechanism",
        "none",
        "--num-thresholds",
        "20",
        "--clients",
        "10",
        "--partition",
        "non-iid",
        "--seed",
        "0",
    ]
    status, flower = _run(capsys, *common, "--backend", "flower")
    assert status == 0, flower.err
    status, simulated = _run(capsys, *common)
    assert status == 0
    flower, simulated = json.loads(flower.out), json.loads(simulated.out)
    assert flower.pop("backend") == "flower" and simulated.pop("backend") == "simulate"
    assert flower == simulated


@pytest.mark.skipif(importlib.util.find_spec("flwr") is None, reason="needs flwr")
def test_flower_backend_secure_mechanism_json(score_file, capsys, monkeypatch):
    monkeypatch.setenv("DPAUC_FLOWER_ENGINE", "in-process")
    status, out = _run(
        capsys,
        "--scores",
        score_file,
        "--mechanism",
        "secure-histogram",
        "--epsilon",
        "1",
        "--num-thresholds",
        "10",
        "--clients",
        "4",
        "--repeats",
        "3",
        "--seed",
        "1",
        "--backend",
        "flower",
    )
    assert status == 0, out.err
    result = json.loads(out.out)
    assert len(result["aucs"]) == 3 and result["guaranteed_epsilon"] == pytest.approx(1.0)
    status, out = _run(
        capsys,
        "--scores",
        score_file,
        "--mechanism",
        "secure-histogram",
        "--epsilon",
        "1",
        "--backend",
        "flower",
    )
    assert status == 2
    assert (
        out.err.strip()
        == "dpauc: error: SecAgg+ needs at least 2 clients; use a local mechanism for one"
    )


@pytest.mark.skipif(importlib.util.find_spec("flwr") is not None, reason="flwr is installed")
def test_flower_backend_without_flower_is_one_line(score_file, capsys):
    status, out = _run(capsys, "--scores", score_file, "--mechanism", "none", "--backend", "flower")
    assert status == 2
    assert out.err.strip().endswith('"dpauc_tf-VERSION-py3-none-any.whl[flower]"')
    assert len(out.err.strip().splitlines()) == 1


@pytest.mark.skipif(importlib.util.find_spec("flwr") is None, reason="needs flwr")
def test_flower_backend_gives_an_interval_from_the_summed_reports(score_file, capsys, monkeypatch):
    """--confidence on --backend flower: the interval of the summed release, the same one the
    simulate backend computes from the same release (the backend returns the AUCResult)."""
    monkeypatch.setenv("DPAUC_FLOWER_ENGINE", "in-process")
    common = ["--scores", score_file, "--mechanism", "histogram", "--epsilon", "1"]
    common += ["--num-thresholds", "10", "--clients", "5", "--seed", "0", "--repeats", "3"]
    status, out = _run(capsys, *common, "--backend", "flower", "--confidence", "0.9")
    assert status == 0, out.err
    result = json.loads(out.out)
    assert result["confidence"] == 0.9 and len(result["releases"]) == 3
    for release, auc in zip(result["releases"], result["aucs"], strict=True):
        assert release["auc"] == auc
        assert release["ci_low"] <= auc <= release["ci_high"]
    # the interval's width is the simulate backend's at the same noise (5 local releases summed)
    status, sim = _run(capsys, *common, "--confidence", "0.9")
    assert status == 0, sim.err
    simulated = json.loads(sim.out)["releases"][0]
    width = result["releases"][0]["ci_high"] - result["releases"][0]["ci_low"]
    assert width == pytest.approx(simulated["ci_high"] - simulated["ci_low"], rel=0.5)
