"""``dpauc compare``: two files or two columns, every format, one-line refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpauc_tf.cli.main import main
from dpauc_tf.mechanisms.comparison_release import compare_models


@pytest.fixture
def pair(tmp_path):
    rng = np.random.default_rng(0)
    n = 3000
    labels = (rng.random(n) < 0.3).astype(int)
    a = rng.normal(size=n) + 1.0 * labels
    b = 0.8 * a + 0.6 * rng.normal(size=n) + 0.4 * labels
    sa, sb = (1 / (1 + np.exp(-a))).tolist(), (1 / (1 + np.exp(-b))).tolist()
    one = tmp_path / "both.csv"
    one.write_text(
        "score,score_b,label\n"
        + "".join(f"{x!r},{y!r},{z}\n" for x, y, z in zip(sa, sb, labels, strict=True))
    )
    file_a, file_b = tmp_path / "a.csv", tmp_path / "b.csv"
    file_a.write_text(
        "score,label\n" + "".join(f"{x!r},{z}\n" for x, z in zip(sa, labels, strict=True))
    )
    file_b.write_text(
        "score,label\n" + "".join(f"{y!r},{z}\n" for y, z in zip(sb, labels, strict=True))
    )
    return labels, sa, sb, one, file_a, file_b


def test_two_files_and_two_columns_give_the_api_result(capsys, pair):
    labels, sa, sb, one, file_a, file_b = pair
    expected = compare_models(labels, np.array(sa), np.array(sb), 1.0, seed=5).to_dict()
    runs = [
        ["--scores", file_a, "--scores-b", file_b],
        ["--scores", one, "--score-column-b", "score_b"],
    ]
    for argv in runs:
        assert main(["compare", *map(str, argv), "--epsilon", "1", "--seed", "5",
                     "--format", "json"]) == 0  # fmt: skip
        out = json.loads(capsys.readouterr().out)
        assert out["difference"] == pytest.approx(expected["difference"])
        assert out["p_value"] == pytest.approx(expected["p_value"])
        assert out["ci_low"] < out["difference"] < out["ci_high"]
        assert "paired-comparison" in out["privacy"] and out["epsilon"] == 1.0


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_every_format(capsys, pair, fmt):
    *_, one, _, _ = pair
    argv = ["compare", "--scores", str(one), "--score-column-b", "score_b", "--epsilon", "1"]
    assert main([*argv, "--seed", "1", "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert "p_value" in out and "difference" in out


def test_refusals_are_one_line(capsys, pair, tmp_path):
    labels, _, sb, one, file_a, _ = pair
    other = tmp_path / "other.csv"
    flipped = labels.copy()
    flipped[:3] = 1 - flipped[:3]
    other.write_text(
        "score,label\n" + "".join(f"{y!r},{z}\n" for y, z in zip(sb, flipped, strict=True))
    )
    short = tmp_path / "short.csv"
    short.write_text("score,label\n0.5,1\n0.2,0\n")
    cases = [
        (["--scores", str(one), "--epsilon", "1"], "--scores-b FILE or --score-column-b"),
        (["--scores", str(file_a), "--scores-b", str(other), "--epsilon", "1"], "labels of"),
        (["--scores", str(file_a), "--scores-b", str(short), "--epsilon", "1"], "2 examples"),
        (["--scores", str(one), "--score-column-b", "nope", "--epsilon", "1"], "nope"),
        (["--scores", str(one), "--score-column-b", "score_b", "--epsilon", "0"], "epsilon"),
    ]
    for argv, message in cases:
        assert main(["compare", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("dpauc: error:") and message in err and "\n" not in err


# -- issue 30: impossible values are projected and the swamping noise is named ----------------
def test_thirty_examples_give_possible_values_and_a_warning(capsys, tmp_path):
    """On 30 examples the noisy AUCs fell outside [0, 1], the difference beyond +-1 and the
    interval far outside [-1, 1], with no warning."""
    rng = np.random.default_rng(1)
    labels = (rng.random(30) < 0.4).astype(int)
    a, b = rng.random(30).tolist(), rng.random(30).tolist()
    path = tmp_path / "small.csv"
    path.write_text(
        "score,score_b,label\n"
        + "".join(f"{x!r},{y!r},{z}\n" for x, y, z in zip(a, b, labels, strict=True))
    )
    argv = ["compare", "--scores", str(path), "--score-column-b", "score_b", "--epsilon", "1"]
    seen_outside = 0
    for seed in range(20):
        assert main([*argv, "--seed", str(seed), "--format", "json"]) == 0
        captured = capsys.readouterr()
        out = json.loads(captured.out)
        if out["difference"] is None:
            continue
        assert 0.0 <= out["auc_a"] <= 1.0 and 0.0 <= out["auc_b"] <= 1.0, out
        assert -1.0 <= out["ci_low"] <= out["difference"] <= out["ci_high"] <= 1.0, out
        assert "swamps the signal" in captured.err and out["warning"], captured.err
        seen_outside += "outside the possible range" in out["warning"]
    assert seen_outside  # some seeds put a raw value outside its range


def test_a_clear_comparison_has_no_warning(pair):
    labels, sa, sb, *_ = pair
    result = compare_models(labels, sa, sb, epsilon=1.0, seed=0)
    assert result.warning is None and -1 < result.ci_low < result.ci_high < 1


# -- issue 32: the rank-sum default, its clients and its refusals ------------------------------
def test_the_default_is_the_rank_sum_difference_and_histogram_options_need_their_method(
    capsys, pair
):
    """compare_models and dpauc compare default to the rank sums (docs/comparison.md has the
    size and power); --num-buckets and --positive-rate were silently ignored by rank-sum."""
    *_, one, _, _ = pair
    argv = ["compare", "--scores", str(one), "--score-column-b", "score_b", "--epsilon", "1"]
    assert main([*argv, "--seed", "2", "--format", "json"]) == 0
    assert "paired-comparison-rank-sum" in json.loads(capsys.readouterr().out)["privacy"]
    for extra, name in (
        (["--num-buckets", "8"], "num_buckets"),
        (["--positive-rate", "0.3"], "positive_rate"),
        (["--num-buckets", "8", "--clients", "3"], "num_buckets"),
        (["--secure"], "secure=True needs num_clients"),
        (["--method", "histogram", "--clients", "3"], "need method='rank-sum'"),
    ):
        assert main([*argv, *extra]) == 2, extra
        err = capsys.readouterr().err.strip()
        assert err.startswith("dpauc: error:") and name in err and "\n" not in err, err
    assert main([*argv, "--method", "histogram", "--num-buckets", "8", "--format", "json"]) == 0
    assert "rank-sum" not in json.loads(capsys.readouterr().out)["privacy"]


def test_clients_and_secure_shares_from_the_command_line(capsys, pair):
    labels, sa, sb, one, *_ = pair
    argv = ["compare", "--scores", str(one), "--score-column-b", "score_b", "--epsilon", "1"]
    for extra in (["--clients", "4"], ["--clients", "4", "--secure"]):
        assert main([*argv, *extra, "--seed", "3", "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        expected = compare_models(
            labels, sa, sb, 1.0, seed=3, num_clients=4, secure="--secure" in extra
        )
        assert out["difference"] == pytest.approx(expected.difference)
        assert out["ci_low"] < out["difference"] < out["ci_high"]
    assert main([*argv, "--clients", "0"]) == 2
    assert "expected an integer >= 1, got 0" in capsys.readouterr().err
    for flags, message in (  # the CLI's shared argument types, one line each
        (["--seed", "-1"], "--seed: expected an integer >= 0, got -1"),
        (["--method", "histogram", "--num-buckets", "65"], "expected an integer <= 64, got 65"),
        (["--confidence", "1"], "--confidence: must be in (0, 1), got 1"),
    ):
        assert main([*argv, *flags]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert (
        main(["compare", "--scores", str(one), "--score-column-b", "score_b", "--epsilon", "nan"])
        == 2
    )
    assert "--epsilon: must be finite and > 0, got nan" in capsys.readouterr().err


def test_hostile_rank_sum_inputs_give_a_number_a_null_or_one_line(capsys, tmp_path):
    """One class, every score tied (D = 0: the difference is exactly 0, its test undefined),
    one example, a NaN score."""
    rng = np.random.default_rng(4)
    n = 200
    a, b = rng.random(n), rng.random(n)
    files = {
        "one class": (np.ones(n, int), a, b),
        "all tied": (rng.integers(0, 2, n), np.full(n, 0.5), np.full(n, 0.5)),
        "one example": (np.array([1]), np.array([0.3]), np.array([0.6])),
        "nan": (rng.integers(0, 2, n), np.where(np.arange(n) == 3, np.nan, a), b),
    }
    outcome = {}
    for name, (labels, sa, sb) in files.items():
        path = tmp_path / f"{name.replace(' ', '_')}.csv"
        path.write_text(
            "score,score_b,label\n"
            + "".join(
                f"{x!r},{y!r},{z}\n"
                for x, y, z in zip(sa.tolist(), sb.tolist(), labels.tolist(), strict=True)
            )
        )
        for extra in ([], ["--clients", "3", "--secure"]):
            argv = ["compare", "--scores", str(path), "--score-column-b", "score_b"]
            code = main([*argv, "--epsilon", "1", "--seed", "0", "--format", "json", *extra])
            captured = capsys.readouterr()
            if code == 2:
                err = captured.err.strip()
                assert err.startswith("dpauc: error:") and "\n" not in err, err
                outcome[name] = f"error: {err}"
                continue
            assert code == 0
            out = json.loads(captured.out)
            diff = out["difference"]
            assert diff is None or -1.0 <= diff <= 1.0, out
            assert out["p_value"] is None or 0.0 <= out["p_value"] <= 1.0, out
            outcome[name] = out
    assert outcome["nan"].startswith("error")
    tied = outcome["all tied"]
    assert isinstance(tied, dict), tied
    assert tied["difference"] == 0.0 and tied["p_value"] is None  # D = 0: exact, no test
    assert "swamps the signal" in (outcome["one class"]["warning"] or "")
