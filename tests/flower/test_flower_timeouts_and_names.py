"""Flower: the figures after a dropout are the arrived reports', errors name what the user
called, and a client that never answers is a timeout that names it."""

from __future__ import annotations

import functools
import json
import threading

import numpy as np
import pytest

pytest.importorskip("flwr")

import dpauc_tf.flower.client as flower_client
from dpauc_tf.flower import evaluate as flower_evaluate_function
from tests.helpers.cli import cli_status
from tests.helpers.scores import normal_score_file

flower_evaluate = __import__("sys").modules["dpauc_tf.flower.evaluate"]
# Long enough for the honest clients on a loaded machine, short for a test.
TIMEOUT = 8


@pytest.fixture()
def score_file(tmp_path):
    return normal_score_file(tmp_path / "scores.csv", 200, seed=3)


@pytest.fixture(autouse=True)
def in_process(monkeypatch):
    monkeypatch.setenv("DPAUC_FLOWER_ENGINE", "in-process")


def _clients(k, n=30, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        labels = rng.integers(0, 2, n)
        out.append((np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0, 1), labels))
    return out


def _run(capsys, *argv):
    return cli_status(capsys, "evaluate", *argv)


# -- item 2: every figure the CLI states is the one the arrived reports achieve ----------------
def test_cli_pld_epsilon_after_a_dropout_is_not_the_full_noise_figure(
    score_file, capsys, monkeypatch
):
    monkeypatch.setattr(  # what --backend flower runs (dpauc_tf.backends.flower)
        flower_evaluate,
        "evaluate_spec",
        functools.partial(flower_evaluate.evaluate_spec, vanishing_clients=(1,)),
    )
    argv = ["--scores", score_file, "--mechanism", "secure-histogram", "--epsilon", "1"]
    argv += ["--clients", "4", "--seed", "0", "--backend", "flower", "--format", "json"]
    status, out = _run(capsys, *argv)
    assert status == 0, out.err
    result = json.loads(out.out)
    achieved = result["guaranteed_epsilon"]
    assert achieved > 1.0  # 3 of 4 shares arrived
    assert f"{achieved:g}" in result["privacy"]
    # before: 0.99999..., the PLD of the full noise: below what the release achieves
    assert result["pld_epsilon"] is None or result["pld_epsilon"] >= achieved
    assert "3 of 4 clients reported" in out.err
    status, table = _run(capsys, *argv[:-2], "--format", "table")
    assert status == 0
    pld_line = next(line for line in table.out.splitlines() if line.startswith("PLD epsilon"))
    assert "at delta" not in pld_line and "not computed" in pld_line


# -- item 3: errors name what the user called -------------------------------------------------
@pytest.mark.parametrize("name", ["auc-only", "score-noise"])
def test_flower_refusals_name_flower_not_tff(score_file, capsys, name):
    delta = {"delta": 1e-6} if name == "auc-only" else {}
    argv = ["--scores", score_file, "--mechanism", name, "--epsilon", "1"]
    argv += [f"--{key}={value}" for key, value in delta.items()]
    status, out = _run(capsys, *argv, "--backend", "flower")
    assert status == 2
    line = out.err.strip()
    assert "federated.evaluate" not in line and "--backend flower" in line, line
    assert len(line.splitlines()) == 1
    with pytest.raises(ValueError, match="Flower") as error:
        flower_evaluate_function(_clients(2), mechanism=name, epsilon=1.0, **delta)
    assert "federated.evaluate" not in str(error.value)


def test_round_timeout_is_flower_only_and_mirrors_the_default(score_file, capsys):
    from dpauc_tf.cli.arguments import DEFAULT_FLOWER_ROUND_TIMEOUT

    assert DEFAULT_FLOWER_ROUND_TIMEOUT == flower_evaluate.DEFAULT_ROUND_TIMEOUT
    argv = ["--scores", score_file, "--mechanism", "none", "--round-timeout", "5"]
    status, out = _run(capsys, *argv)
    assert status == 2 and "--round-timeout" in out.err and "--backend flower" in out.err
    status, out = _run(capsys, *argv[:-1], "0", "--backend", "flower")
    assert status == 2 and "positive" in out.err
    for bad in (0, -1.0, float("nan"), "10"):
        with pytest.raises(ValueError, match="round_timeout"):
            flower_evaluate_function(_clients(2), mechanism="none", epsilon=None, round_timeout=bad)


# -- item 4: a client that never answers is a timeout that names it ---------------------------
@pytest.fixture()
def hanging_client(monkeypatch):
    """Client ``hang`` (set the returned list) blocks in its report until the test ends."""
    release = threading.Event()
    which: list[int] = []
    reply = flower_client.evaluate_reply

    def slow_reply(message, labels, scores, **kwargs):
        # the in-process grid's node k + 1 is client (partition-id) k
        if message.metadata.dst_node_id - 1 in which:
            release.wait(60)
        return reply(message, labels, scores, **kwargs)

    monkeypatch.setattr(flower_client, "evaluate_reply", slow_reply)
    yield which
    release.set()


def test_a_client_that_never_answers_is_left_out_and_named(hanging_client):
    hanging_client.append(2)
    out = flower_evaluate_function(
        _clients(3),
        mechanism="none",
        epsilon=None,
        num_thresholds=10,
        round_timeout=TIMEOUT,
        engine="in-process",
    )
    assert out.num_reporting == 2 and out.round_report.unanswered == (2,)


def test_secagg_halted_by_a_silent_client_says_timeout_and_which(hanging_client):
    hanging_client.append(1)
    with pytest.raises(ValueError) as error:
        flower_evaluate_function(
            _clients(2), mechanism="secure-histogram", epsilon=1.0, num_thresholds=10,
            round_timeout=TIMEOUT, engine="in-process",
        )  # fmt: skip
    message = str(error.value)
    # before: "no report reached the server (SecAgg+ halts ...)", after an unbounded wait
    assert "timed out" in message and "[1]" in message and f"round_timeout={TIMEOUT:g} s" in message
    assert len(message.splitlines()) == 1


def test_cli_names_the_silent_clients(score_file, capsys, hanging_client):
    hanging_client.append(1)
    base = ["--scores", score_file, "--num-thresholds", "10", "--backend", "flower"]
    status, out = _run(
        capsys, *base, "--mechanism", "none", "--clients", "3", "--round-timeout", str(TIMEOUT)
    )
    assert status == 0
    assert "2 of 3 clients reported" in out.err and "[1] did not answer" in out.err
    status, out = _run(
        capsys, *base, "--mechanism", "secure-histogram", "--epsilon", "1", "--clients", "2",
        "--round-timeout", str(TIMEOUT),
    )  # fmt: skip
    assert status == 2
    error = [line for line in out.err.splitlines() if line.startswith("dpauc: error:")]
    assert len(error) == 1 and "timed out" in error[0] and "--round-timeout" in error[0]


# -- issue 30: the CLI's interval after a dropout is the release's own -------------------------
def test_cli_interval_after_a_dropout_counts_only_the_noise_that_arrived(
    score_file, capsys, monkeypatch
):
    """The CLI recomputed the interval with every client's noise share (4 of 4) where only
    3 arrived: too wide. It now uses the release's own (``with_interval``: the reports that
    arrived), the one ``finish_release(..., confidence=...)`` gives."""
    from dpauc_tf.mechanisms.intervals import release_interval
    from dpauc_tf.mechanisms.registry import get_mechanism

    released, original = [], flower_evaluate.evaluate_spec

    def evaluate_spec(*args, **kwargs):
        out = original(*args, vanishing_clients=(1,), **kwargs)
        released.append(out)
        return out

    monkeypatch.setattr(flower_evaluate, "evaluate_spec", evaluate_spec)
    argv = ["--scores", score_file, "--mechanism", "secure-histogram", "--epsilon", "1"]
    argv += ["--clients", "4", "--seed", "0", "--backend", "flower", "--format", "json"]
    argv += ["--confidence", "0.95", "--ci-target", "sample", "--num-thresholds", "20"]
    status, out = _run(capsys, *argv)
    assert status == 0, out.err
    first = json.loads(out.out)["releases"][0]
    (result,) = released
    assert (result.num_clients, result.num_reporting) == (4, 3)
    mechanism = get_mechanism("secure-histogram", epsilon=1.0, num_thresholds=20, num_clients=4)
    counts = {key: np.asarray(value) for key, value in result.noisy_counts.items()}

    def interval(copies):
        return release_interval(
            mechanism, counts, confidence=0.95, target="sample",
            num_examples=result.num_examples, copies=copies, estimate=result.aucs,
        )  # fmt: skip

    own, full = interval(0.75), interval(1.0)  # 3 of 4 shares arrived; before: all 4 counted
    assert first["ci_low"] == pytest.approx(float(own.low[0]))
    assert first["ci_high"] == pytest.approx(float(own.high[0]))
    from dpauc_tf.mechanisms.release import with_interval

    again = with_interval(result, mechanism, confidence=0.95, ci_target="sample").interval
    assert float(again.low[0]) == pytest.approx(first["ci_low"])
    assert float(full.high[0] - full.low[0]) > 1.05 * (first["ci_high"] - first["ci_low"])
