"""Hostile use of ``dpauc evaluate``, of integer seeds and of secure-aggregation guarantees.

Runs in both worlds (no TFF needed); the TFF pipe tests are in tests/federated.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from dpauc_tf.cli import main
from dpauc_tf.io.scores import ScoreFileError, ScoreSet
from dpauc_tf.mechanisms.secure_histogram import SecureHistogram
from dpauc_tf.mechanisms.tree import SecureTreeHistogram
from dpauc_tf.noise.samplers import laplace
from dpauc_tf.noise.seeds import make_seed
from dpauc_tf.noise.shares import polya_difference


def _strict_json(text: str):
    """json.loads that refuses NaN / Infinity (which are not JSON)."""

    def refuse(constant):
        raise AssertionError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def _write(tmp_path, name, **columns):
    path = tmp_path / name
    pd.DataFrame(columns).to_csv(path, index=False)
    return path


@pytest.fixture
def frame():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 200)
    return {"score": rng.random(200), "label": labels}


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("dpauc: error: "), err
    return lines[0]


# -- one class: the AUC is undefined --------------------------------------------------------
@pytest.mark.parametrize("label", [0, 1])
def test_one_class_file_gives_valid_json_with_null_aucs(capsys, tmp_path, frame, label):
    path = _write(tmp_path, "one.csv", score=frame["score"], label=np.full(200, label))
    args = ["evaluate", "--scores", str(path), "--mechanism", "histogram", "--epsilon", "1"]
    args += ["--show-exact"]  # without it a private mechanism releases: test_evaluate_exact_opt_in
    assert main([*args, "--seed", "0", "--format", "json"]) == 0
    captured = capsys.readouterr()
    result = _strict_json(captured.out)  # before: "exact_auc": NaN, not JSON
    for key in ("exact_auc", "tf_auc", "auc_mean", "auc_std", "aucs", "roc"):
        assert result[key] is None, key
    assert "labels are" in result["auc_undefined"]
    warning = [line for line in captured.err.splitlines() if line.strip()]
    assert len(warning) == 1 and warning[0].startswith("dpauc: warning: AUC is undefined")
    assert main([*args, "--format", "table"]) == 0
    table = capsys.readouterr().out
    assert "private AUC      undefined" in table and "exact AUC        undefined" in table


# -- a misspelled client column is an error, the default one is optional ---------------------
def test_explicit_client_column_must_exist(capsys, tmp_path, frame):
    path = _write(tmp_path, "c.csv", **frame, client=np.arange(200) % 4)
    base = ["evaluate", "--scores", str(path), "--mechanism", "none", "--format", "json"]
    assert main([*base, "--client-column", "clinet"]) == 2
    assert "'clinet'" in _one_error_line(capsys.readouterr().err)
    assert main([*base, "--client-column", "client"]) == 0
    assert json.loads(capsys.readouterr().out)["num_clients"] == 4
    assert main(base) == 0  # a column named "client" is not read as client ids unless named
    captured = capsys.readouterr()
    assert json.loads(captured.out)["num_clients"] == 1 and "--client-column" in captured.err
    no_client = _write(tmp_path, "n.csv", **frame)
    assert main(["evaluate", "--scores", str(no_client), "--mechanism", "none"]) == 0
    capsys.readouterr()


def test_a_client_column_that_is_the_label_column_is_refused(capsys, tmp_path, frame):
    """Clients made from the labels reveal them: round one's bucket totals per client are the
    per-label score histograms (the release's label-DP statement would be false)."""
    path = _write(tmp_path, "l.csv", **frame)
    args = ["evaluate", "--scores", str(path), "--epsilon", "1", "--client-column", "label"]
    assert main(args) == 2
    assert "the client column is the label column" in _one_error_line(capsys.readouterr().err)


# -- absurd sizes are refused up front -------------------------------------------------------
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--num-thresholds", "1000000000"], "<= 1000000"),
        (["--num-thresholds", "1000000", "--repeats", "1000"], "the limit is 50000000"),
        (["--seed", str(2**64)], "<= 18446744073709551615"),
        (["--seed", "-1"], ">= 0"),
    ],
)
def test_absurd_arguments_are_one_line_errors(capsys, tmp_path, frame, extra, message):
    path = _write(tmp_path, "s.csv", **frame)
    args = ["evaluate", "--scores", str(path), "--mechanism", "histogram", "--epsilon", "1"]
    assert main([*args, *extra]) == 2
    assert message in _one_error_line(capsys.readouterr().err)


# -- client ids of mixed types or missing ----------------------------------------------------
def test_mixed_type_client_ids_are_a_clear_error():
    with pytest.raises(ScoreFileError, match="client ids mix types"):
        ScoreSet.checked([0, 1, 0], [0.1, 0.2, 0.3], np.array([1, "a", 1], dtype=object))


def test_empty_client_cell_is_a_clear_cli_error(capsys, tmp_path, frame):
    clients = np.array(["a", "b"] * 100, dtype=object)
    clients[5] = None  # an empty CSV cell: pandas reads NaN among strings
    path = _write(tmp_path, "m.csv", **frame, client=clients)
    args = ["evaluate", "--scores", str(path), "--mechanism", "none", "--client-column", "client"]
    assert main(args) == 2
    line = _one_error_line(capsys.readouterr().err)
    # streaming reads name the first bad row (clients[5] is the 6th example)
    assert "row 6: client id is missing" in line and "not supported" not in line


# -- integer seeds: one stream per integer ---------------------------------------------------
SEEDS = [0, 1, 2**63 - 2, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1]


def test_every_integer_seed_up_to_2_64_gives_its_own_stream():
    seeds = {tuple(make_seed(s).numpy().tolist()) for s in SEEDS}
    assert len(seeds) == len(SEEDS)  # before: 2**63 - 1 gave [0, 0], the seed of 0
    noise = {tuple(laplace([8], 1.0, make_seed(s)).numpy().round(12)) for s in SEEDS}
    assert len(noise) == len(SEEDS)
    assert make_seed(7).numpy().tolist() == [7, 0]  # seeds below 2**63 - 1 unchanged
    assert make_seed(np.uint64(2**64 - 1)).numpy().tolist() == [2**63 - 1, 1]


@pytest.mark.parametrize("seed", [-1, 2**64, 2**70])
def test_out_of_range_integer_seeds_are_refused(seed):
    with pytest.raises(ValueError, match=r"\[0, 2\*\*64 - 1\]"):
        make_seed(seed)


# -- collusion against secure aggregation ---------------------------------------------------
@pytest.mark.parametrize("cls", [SecureHistogram, SecureTreeHistogram])
@pytest.mark.parametrize("family, delta", [("discrete-laplace", None), ("skellam", 1e-6)])
def test_colluding_epsilon_is_the_shortfall_of_the_honest_shares(cls, family, delta):
    k = 8
    m = cls(epsilon=1.0, num_thresholds=15, delta=delta, num_clients=k, family=family)
    assert m.colluding_epsilon(0) == pytest.approx(1.0)
    values = [m.colluding_epsilon(c) for c in range(k + 1)]
    assert all(b > a for a, b in itertools.pairwise(values[:-1]))  # grows with c
    assert values[1] > 1.0 and math.isinf(values[k])
    for c in (1, 3):
        assert values[c] == pytest.approx(m.achieved_epsilon(k - c))
    # after dropout, colluders among the reporters remove their shares too
    assert m.colluding_epsilon(2, num_reporting=6) == pytest.approx(m.achieved_epsilon(4))
    with pytest.raises(ValueError):
        m.colluding_epsilon(-1)


def test_colluding_epsilon_matches_the_noise_that_is_left():
    """The honest shares' sum, sampled: its log-probability ratio at 0 vs 1 is what
    colluding_epsilon says (per unit of the L1 = 2 sensitivity), far above epsilon / 2."""
    k, c = 4, 3
    m = SecureHistogram(epsilon=1.0, num_thresholds=3, num_clients=k)
    n = 400_000
    honest = polya_difference([n, k - c], m.noise_scale, k, make_seed(11), tf.float64)
    left = tf.reduce_sum(honest, axis=1).numpy()
    p0, p1 = np.mean(left == 0), np.mean(left == 1)
    empirical = math.log(p0 / p1)
    claimed_unit = m.colluding_epsilon(c) / 2
    assert empirical == pytest.approx(claimed_unit, rel=0.05)
    assert empirical > 1.5 * (m.epsilon / 2)  # the full-noise claim would be false here
