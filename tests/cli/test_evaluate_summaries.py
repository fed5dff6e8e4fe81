"""``dpauc evaluate --max-fpr --tpr-at-fpr --fpr-at-tpr --calibration-bins``: the numbers
equal scikit-learn with noise off on every backend, cost no extra epsilon, appear in every
format, and hostile flags get a one-line error or a null."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from dpauc_tf.cli.main import main
from dpauc_tf.core.curve_summaries import partial_auc_grid_bound
from dpauc_tf.core.thresholds import Thresholds


def _write(path, labels, values):
    rows = "\n".join(f"{y},{s:.6f}" for y, s in zip(labels, values, strict=True))
    path.write_text("label,score\n" + rows + "\n")
    return str(path)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(0)
    labels = (rng.random(3000) < 0.3).astype(int)
    values = np.round(1 / (1 + np.exp(-rng.normal(labels * 0.95 - 0.5, 1.0))), 6)
    path = _write(tmp_path_factory.mktemp("summaries") / "scores.csv", labels, values)
    return path, labels, values


def _direct_ece(labels, scores, num_bins):
    bins = np.clip(np.ceil(scores * num_bins).astype(int) - 1, 0, num_bins - 1)
    return sum(
        (bins == k).mean() * abs(scores[bins == k].mean() - labels[bins == k].mean())
        for k in range(num_bins)
        if (bins == k).any()
    )


FLAGS = ("--max-fpr", 0.1, "--tpr-at-fpr", 0.05, "--fpr-at-tpr", 0.8, "--calibration-bins", 10)


def test_noise_off_equals_scikit_learn_on_every_backend(data, backend, evaluate_json):
    path, labels, values = data
    out = evaluate_json(
        "--scores", path, "--mechanism", "none", "--num-thresholds", 201, "--backend", backend,
        *FLAGS,
    )  # fmt: skip
    grid = Thresholds.make(201)
    bucketed = grid.bucketize_numpy(values)
    assert out["partial_auc"] == pytest.approx(
        roc_auc_score(labels, bucketed, max_fpr=0.1), abs=1e-9
    )
    pos = np.bincount(bucketed, labels, grid.num_buckets)
    neg = np.bincount(bucketed, 1 - labels, grid.num_buckets)
    bound = float(partial_auc_grid_bound(pos, neg, 0.1))  # the grid's, of the raw scores
    assert abs(out["partial_auc"] - roc_auc_score(labels, values, max_fpr=0.1)) <= bound + 1e-12
    assert out["average_precision"] == pytest.approx(
        average_precision_score(labels, bucketed), abs=1e-9
    )
    assert out["ece"] == pytest.approx(_direct_ece(labels, values, 10), abs=1e-6)
    predicted = values > out["tpr_at_fpr_threshold"]
    assert predicted[labels == 1].mean() == pytest.approx(out["tpr_at_fpr"])
    assert predicted[labels == 0].mean() == pytest.approx(out["tpr_at_fpr_achieved_fpr"])
    assert out["tpr_at_fpr_achieved_fpr"] <= 0.05
    assert len(out["reliability"]) == 10
    assert "partial_auc" in out["exact_fields"]  # no noise: nothing private


def test_noise_off_with_clients_equals_scikit_learn_on_every_backend(
    tmp_path, backend, evaluate_json
):
    """The release summed over clients (one of them holds only negatives) gives the numbers
    of the pooled file: each backend sums the clients' counts before any summary."""
    rng = np.random.default_rng(1)
    labels = (rng.random(600) < 0.3).astype(int)
    values = np.round(1 / (1 + np.exp(-rng.normal(labels * 1.5 - 0.5, 1.0))), 6)
    clients = np.repeat(["a", "b", "c"], 200)
    labels[clients == "c"] = 0
    rows = "\n".join(f"{c},{y},{s:.6f}" for c, y, s in zip(clients, labels, values, strict=True))
    path = tmp_path / "clients.csv"
    path.write_text("client,label,score\n" + rows + "\n")
    out = evaluate_json(
        "--scores", path, "--mechanism", "none", "--backend", backend,
        "--client-column", "client", "--max-fpr", 0.2, "--calibration-bins", 10,
    )  # fmt: skip
    bucketed = Thresholds.make(201).bucketize_numpy(values)
    assert out["num_thresholds"] == 201  # fitted to the ten bins
    assert out["partial_auc"] == pytest.approx(
        roc_auc_score(labels, bucketed, max_fpr=0.2), abs=1e-9
    )
    assert out["average_precision"] == pytest.approx(
        average_precision_score(labels, bucketed), abs=1e-9
    )
    assert out["ece"] == pytest.approx(_direct_ece(labels, values, 10), abs=1e-6)


def test_no_extra_epsilon_and_the_privacy_sentence_says_so(data, evaluate_json):
    path = data[0]
    common = ("--scores", path, "--mechanism", "histogram", "--epsilon", 1, "--seed", 0)
    plain = evaluate_json(*common, "--num-thresholds", 201)
    out = evaluate_json(*common, "--num-thresholds", 201, *FLAGS)
    assert out["aucs"] == plain["aucs"]  # the same release
    assert (out["epsilon_total"], out["delta_total"]) == (plain["epsilon_total"], 0.0)
    assert out["privacy"].startswith(plain["privacy"])
    assert "no extra epsilon" in out["privacy"]
    for name in ("partial_auc", "tpr_at_fpr", "fpr_at_tpr", "average_precision", "ece"):
        assert out[f"{name}_ci_low"] <= out[name] <= out[f"{name}_ci_high"], name
        assert name in out["private_fields"]
    assert "partial_auc_max_fpr" not in out["private_fields"]  # a setting, public


def test_issue_example_json_reports_partial_auc_and_ece(data, evaluate_json):
    """The issue's command as written (no grid flag): a summary asks for a curve, so the
    default mechanism is histogram (not rank-sum), and ten bins fit the default grid moved
    to 201 thresholds (200 has 199 buckets, which ten bins would split)."""
    out = evaluate_json("--scores", data[0], "--epsilon", 1, "--max-fpr", 0.1,
                        "--calibration-bins", 10)  # fmt: skip
    assert out["mechanism"] == "histogram" and out["num_thresholds"] == 201
    assert out["partial_auc"] is not None and out["ece"] is not None
    assert len(out["reliability"]) == 10
    assert evaluate_json("--scores", data[0], "--epsilon", 1)["num_thresholds"] == 200


def test_table_and_csv_carry_the_numbers(data, capsys):
    common = ["--scores", data[0], "--mechanism", "histogram", "--epsilon", "1", "--seed", "0"]
    common += ["--num-thresholds", "201", *map(str, FLAGS)]
    assert main(["evaluate", *common]) == 0
    table = capsys.readouterr().out
    for text in ("partial AUC", "TPR at FPR", "FPR at TPR", "avg precision", "ECE (10 bins)"):
        assert text in table
    assert "no extra epsilon" in table
    assert main(["evaluate", *common, "--format", "csv"]) == 0
    header, _row = capsys.readouterr().out.strip().splitlines()[:2]
    for column in ("partial_auc", "tpr_at_fpr_threshold", "ece", "reliability_9_positive_rate"):
        assert column in header.split(",")


@pytest.mark.parametrize(
    "flags, message",
    [
        (("--max-fpr", "0"), "--max-fpr: expected a number in (0, 1], got '0': a maximum"),
        (("--max-fpr", "nan"), "--max-fpr: expected a number in (0, 1], got 'nan'"),
        (("--max-fpr", "-0.1"), "--max-fpr: expected a number in (0, 1], got '-0.1'"),
        (("--max-fpr", "1.5"), "--max-fpr: expected a number in (0, 1], got '1.5'"),
        (("--max-fpr", "one"), "--max-fpr: expected a number in (0, 1], got 'one'"),
        (("--tpr-at-fpr", "2"), "expected a number in [0, 1]"),
        (("--calibration-bins", "0"), "expected an integer >= 1"),
        (("--num-thresholds", "200", "--calibration-bins", "10"), "e.g. --num-thresholds 201"),
        (("--num-thresholds", "11", "--calibration-bins", "20"), "split the grid's buckets"),
        (("--calibration-bins", "100000000"), "is more than 1,000,000"),  # not minutes
        (("--calibration-bins", "999999"), "more bins than its"),
        (("--fpr-at-tpr", "inf"), "expected a number in [0, 1]"),
    ],
)
def test_hostile_flags_get_one_line_errors(data, capsys, flags, message):
    assert main(["evaluate", "--scores", data[0], "--mechanism", "none", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_a_mechanism_without_a_curve_is_refused(data, capsys):
    argv = ["evaluate", "--scores", data[0], "--mechanism", "auc-only", "--epsilon", "1"]
    assert main([*argv, "--delta", "1e-6", "--max-fpr", "0.1"]) == 2
    assert "releases only the AUC, no curve" in capsys.readouterr().err


def test_max_fpr_one_is_the_auc(data, evaluate_json):
    out = evaluate_json("--scores", data[0], "--mechanism", "none", "--max-fpr", 1)
    assert out["partial_auc"] == pytest.approx(out["aucs"][0], abs=1e-12)


def test_one_class_file_gives_nulls_under_noise(tmp_path, evaluate_json):
    values = np.linspace(0.01, 0.99, 200)
    path = _write(tmp_path / "one.csv", np.ones(200, int), values)
    out = evaluate_json(
        "--scores", path, "--mechanism", "histogram", "--epsilon", 1, "--seed", 1,
        "--num-thresholds", 11, "--max-fpr", 0.1, "--calibration-bins", 5,
    )  # fmt: skip
    json.dumps(out, allow_nan=False)  # nulls, never NaN
    # the noise may invent negatives: a number in [0, 1] or null, never NaN or an error
    assert out["partial_auc"] is None or 0.0 <= out["partial_auc"] <= 1.0
    assert out["ece"] is not None and sum(b["count"] for b in out["reliability"]) == 200


@pytest.mark.parametrize("label", [0, 1])
def test_one_class_file_without_noise_gives_nulls(tmp_path, evaluate_json, capsys, label):
    """Without noise the command sees that the file has one class and draws no release (the
    AUC is undefined, auc_undefined says why): every number asked for is there, null, in
    JSON and CSV; never NaN, never an error."""
    path = _write(tmp_path / "one.csv", np.full(50, label), np.linspace(0.01, 0.99, 50))
    flags = ["--scores", str(path), "--mechanism", "none", "--num-thresholds", "11"]
    flags += [*map(str, FLAGS[:6]), "--calibration-bins", "5"]
    out = evaluate_json(*flags)
    json.dumps(out, allow_nan=False)
    assert "auc_undefined" in out
    for name in ("partial_auc", "tpr_at_fpr", "fpr_at_tpr", "average_precision", "ece"):
        assert out[name] is None and out[f"{name}_ci_low"] is None, name
    assert out["reliability"] is None and out["ece_bins"] == 5
    assert main(["evaluate", *flags, "--format", "csv"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split(",")
    assert "partial_auc" in header and "ece" in header
    assert main(["evaluate", *flags]) == 0
    assert "partial AUC" in capsys.readouterr().out


def test_empty_bins_are_null(tmp_path, evaluate_json):
    values = np.array([0.05, 0.06, 0.07, 0.95, 0.96, 0.97])
    path = _write(tmp_path / "gaps.csv", np.array([0, 1, 0, 1, 1, 0]), values)
    out = evaluate_json(
        "--scores", path, "--mechanism", "none", "--num-thresholds", 11,
        "--calibration-bins", 5,
    )  # fmt: skip
    empty = out["reliability"][1:4]
    assert all(b["count"] == 0 and b["positive_rate"] is None for b in empty)
    assert out["ece"] == pytest.approx(_direct_ece(np.array([0, 1, 0, 1, 1, 0]), values, 5))


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib")
def test_plot_adds_the_reliability_diagram(data, tmp_path, evaluate_json):
    plot = tmp_path / "roc.png"
    out = evaluate_json(
        "--scores", data[0], "--mechanism", "histogram", "--epsilon", 1, "--seed", 0,
        "--num-thresholds", 201, "--calibration-bins", 10, "--plot", plot,
    )  # fmt: skip
    assert out["reliability_plot"] == str(tmp_path / "roc-reliability.png")
    assert (tmp_path / "roc-reliability.png").stat().st_size > 5000


def test_repeats_carry_every_release_summaries_in_json(data, evaluate_json, capsys):
    """--repeats 3: JSON carries each release's numbers (as ``aucs`` each AUC), the first
    equal to the flat fields; csv and the table still work."""
    common = ["--scores", data[0], "--mechanism", "histogram", "--epsilon", "1", "--seed", "0"]
    base = [*common, "--num-thresholds", "201", *map(str, FLAGS)]
    common = [*base, "--repeats", "3"]
    out = evaluate_json(*common)
    per_release = out["release_summaries"]
    assert len(per_release) == len(out["aucs"]) == 3
    assert per_release[0]["partial_auc"]["value"] == out["partial_auc"]
    assert per_release[0]["ece"]["value"] == out["ece"]
    assert len({r["average_precision"]["value"] for r in per_release}) == 3  # noise differs
    assert "release_summaries" in out["private_fields"]
    assert main(["evaluate", *common, "--format", "csv"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 4  # header + 3 releases
    assert main(["evaluate", *common]) == 0
    assert "partial AUC" in capsys.readouterr().out
    assert "release_summaries" not in evaluate_json(*base)  # one release: the flat fields
