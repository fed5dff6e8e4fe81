"""The training entry point: metrics.json, score files, data resolution, DP-SGD accounting."""

import json

import numpy as np
import pytest

from models.train import (
    DPSGDConfig,
    TrainConfig,
    dp_sgd_epsilon,
    evaluation_seed,
    load_scores,
    main,
    train,
)

EPOCH_KEYS = {
    "epoch", "exact_auc", "tf_auc", "dp_auc", "dp_epsilon", "dp_mechanism", "num_thresholds",
    "train_loss", "examples_per_second", "validation_auc",
}  # fmt: skip


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    config = TrainConfig(
        data="synthetic:20000", out=str(out), epochs=2, batch_size=256, seed=0,
        embedding_dim=4, hidden_units=(32, 16), verbose=0, progress=False,
    )  # fmt: skip
    return out, train(config)


def test_metrics_json_per_epoch(synthetic_run):
    out, report = synthetic_run
    written = json.loads((out / "metrics.json").read_text())
    assert written == json.loads(json.dumps(report))
    assert [row["epoch"] for row in written["epochs"]] == [0, 1]
    for row in written["epochs"]:
        assert EPOCH_KEYS <= set(row)
        assert row["dp_epsilon"] == 1.0 and row["dp_mechanism"] == "rank-sum"  # DPAUC's default
        assert row["num_thresholds"] == 1000
        assert abs(row["tf_auc"] - row["exact_auc"]) < 0.01
        assert 0.0 <= row["dp_auc"] <= 1.0
        assert row["dp_delta"] == 0.0 == row["dp_delta_total"]
        assert row["examples_per_second"] > 0 and row["train_loss"] > 0
    assert written["epochs"][0]["exact_auc"] > 0.65  # the planted signal is learnt
    assert written["epochs"][1]["dp_epsilon_total"] == 2.0
    # early stopping's choice and the baseline on the same split (issue 24)
    summary, best = written["summary"], written["best_epoch"]
    assert summary["model_test_auc"] == written["epochs"][best]["exact_auc"]
    assert summary["model_validation_auc"] == max(r["validation_auc"] for r in written["epochs"])
    assert written["baseline"]["test_auc"] > 0.6 and summary["train_seconds"] > 0
    assert summary["model_minus_baseline"] == pytest.approx(
        summary["model_test_auc"] - written["baseline"]["test_auc"]
    )
    data = written["data"]
    assert data["validation_rows"] > 0 and data["rare_id_count"] >= 2


def test_scores_files_match_the_reported_auc(synthetic_run):
    from sklearn.metrics import roc_auc_score

    out, report = synthetic_run
    for row in report["epochs"]:
        labels, scores = load_scores(out / row["scores_file"])
        assert row["scores_file"].startswith(f"scores_epoch{row['epoch']}.")
        assert len(labels) == report["data"]["test_rows"]
        assert set(np.unique(labels)) == {0, 1}
        assert roc_auc_score(labels, scores) == pytest.approx(row["exact_auc"], abs=1e-6)


def test_cli_with_prepared_directory(synthetic_run, tmp_path, capsys):
    out, _ = synthetic_run
    args = ["--data", str(out / "data"), "--out", str(tmp_path), "--epochs", "1",
            "--batch-size", "512", "--hidden-units", "8", "--embedding-dim", "2",
            "--num-thresholds", "200", "--dp-auc-epsilon", "4", "--verbose", "0"]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "DP AUC (eps=4)" in printed and "exact AUC" in printed
    row = json.loads((tmp_path / "metrics.json").read_text())["epochs"][0]
    assert row["num_thresholds"] == 200 and row["dp_epsilon"] == 4.0


def test_cli_errors(tmp_path, capsys):
    assert main(["--data", str(tmp_path / "nothing"), "--out", str(tmp_path)]) == 1
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["--data", str(tmp_path), "--out", str(tmp_path / "o")]) == 1
    assert "not a prepared data directory" in capsys.readouterr().err
    assert main(["--data", "synthetic:lots", "--out", str(tmp_path)]) == 1


def test_dp_sgd_epsilon_accounting():
    base = DPSGDConfig(noise_multiplier=1.1, l2_norm_clip=1.0, delta=1e-5)
    one = dp_sgd_epsilon(60_000, 256, 1, base)
    three = dp_sgd_epsilon(60_000, 256, 3, base)
    assert one["steps"] == 234 and three["steps"] == 702
    assert 0 < one["epsilon"] < three["epsilon"]
    noisier = dp_sgd_epsilon(60_000, 256, 3, DPSGDConfig(noise_multiplier=2.0))
    assert noisier["epsilon"] < three["epsilon"]
    grouped = dp_sgd_epsilon(60_000, 256, 3, DPSGDConfig(noise_multiplier=1.1, num_microbatches=32))
    assert grouped["effective_noise_multiplier"] == pytest.approx(0.55)
    assert grouped["epsilon"] > three["epsilon"]


def test_evaluation_seeds_differ_per_epoch():
    assert evaluation_seed(None, 0) is None
    assert evaluation_seed(0, 0) != evaluation_seed(0, 1)
    assert evaluation_seed(0, 1) == evaluation_seed(0, 1)


def test_dp_sgd_needs_tensorflow_privacy(tmp_path, synthetic_run):
    out, _ = synthetic_run
    try:
        import tensorflow_privacy  # noqa: F401
    except ImportError:
        config = TrainConfig(
            data=str(out / "data"), out=str(tmp_path), epochs=1, verbose=0, dp_sgd=DPSGDConfig()
        )
        with pytest.raises(RuntimeError, match="tensorflow-privacy"):
            train(config)
        return
    config = TrainConfig(
        data=str(out / "data"), out=str(tmp_path), epochs=1, batch_size=256, seed=0,
        embedding_dim=2, hidden_units=(8,), verbose=0,
        dp_sgd=DPSGDConfig(noise_multiplier=1.0, l2_norm_clip=1.0, num_microbatches=16),
    )  # fmt: skip
    report = train(config)
    row = report["epochs"][0]
    assert row["dp_sgd_epsilon"] > 0
    assert row["dp_sgd"]["steps"] == report["data"]["train_rows"] // 256
    assert 0.0 <= row["exact_auc"] <= 1.0


def test_real_criteo_three_epochs(criteo_combined_file, tmp_path):
    config = TrainConfig(data=str(criteo_combined_file), out=str(tmp_path), epochs=3, seed=0,
                         verbose=0, progress=False)  # fmt: skip
    report = train(config)
    aucs = [row["exact_auc"] for row in report["epochs"]]
    print("real Criteo test AUC per epoch:", [round(a, 4) for a in aucs])
    data = report["data"]
    assert data["train_rows"] + data["validation_rows"] + data["test_rows"] == 19_532
    assert max(aucs) > 0.68


def run_files(directory):
    """{name: bytes} of a run directory's own files (the prepared data/ left out)."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def small_run_args(data, out, epochs):
    return ["--data", str(data), "--out", str(out), "--epochs", str(epochs),
            "--batch-size", "1024", "--hidden-units", "8", "--embedding-dim", "2",
            "--num-thresholds", "100", "--verbose", "0"]  # fmt: skip


def test_second_run_into_the_same_out_is_refused(synthetic_run, tmp_path, capsys, monkeypatch):
    import shutil

    import models.train as train_module

    first_out, _ = synthetic_run
    out = tmp_path / "run"
    shutil.copytree(first_out, out)
    before = run_files(out)
    assert {"scores_epoch0.parquet", "scores_epoch1.parquet"} <= set(before)

    def no_data(config):
        raise AssertionError("the data were resolved before the output directory was checked")

    monkeypatch.setattr(train_module, "resolve_data", no_data)
    capsys.readouterr()
    assert main(small_run_args(out / "data", out, epochs=1)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "--overwrite" in err
    assert run_files(out) == before
    # a leftover score file alone (a crashed run, no metrics.json) is refused as well
    (out / "metrics.json").unlink()
    (out / "scores_epoch1.parquet").unlink()
    assert main(small_run_args(out / "data", out, epochs=1)) == 1
    assert "scores_epoch0.parquet" in capsys.readouterr().err


def test_overwrite_replaces_the_previous_run(synthetic_run, tmp_path):
    import shutil

    first_out, _ = synthetic_run
    out = tmp_path / "run"
    shutil.copytree(first_out, out)
    (out / "scores_epoch7.csv").write_text("label,score\n1,0.5\n")  # stale, from an older run
    (out / "notes.txt").write_text("mine")  # not a run file: kept
    assert main([*small_run_args(out / "data", out, epochs=1), "--overwrite"]) == 0
    names = {p.name for p in out.iterdir() if p.is_file()}
    assert names == {"metrics.json", "manifest.json", "notes.txt", "scores_epoch0.parquet"}
    manifest = json.loads((out / "manifest.json").read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    assert manifest["scores_files"] == {"0": "scores_epoch0.parquet"}
    assert manifest["config"]["epochs"] == 1 and manifest["config"] == metrics["config"]
    assert manifest["run_id"] == metrics["run_id"] and manifest["complete"] is True
    assert manifest["started"] <= manifest["finished"]


def test_manifest_lists_this_runs_score_files(synthetic_run):
    out, report = synthetic_run
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["scores_files"] == {
        str(row["epoch"]): row["scores_file"] for row in report["epochs"]
    }
    assert manifest["run_id"] == report["run_id"] and manifest["metrics_file"] == "metrics.json"
    assert manifest["config"] == json.loads(json.dumps(report["config"]))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--dp-auc-mechanism", "no-such-mechanism"], "no-such-mechanism"),
        (["--dp-auc-epsilon", "-1"], "epsilon"),
        (["--dp-auc-epsilon", "nan"], "epsilon"),
        (["--dp-auc-mechanism", "paper-gaussian"], "delta"),
        (["--num-thresholds", "1"], "threshold"),
        (["--epochs", "-1"], "epochs"),
        (["--epochs", "0"], "epochs"),
        (["--batch-size", "0"], "batch"),
        (["--seed", "-3"], "seed"),
        (["--test-fraction", "1.5"], "fraction"),
        (["--min-count", "0"], "min"),
        (["--learning-rate", "-0.1"], "learning"),
    ],
)
def test_bad_options_fail_before_any_data_or_training(
    tmp_path, capsys, monkeypatch, options, message
):
    import models.train as train_module

    def no_data(config):
        raise AssertionError("the data were resolved: validation came too late")

    monkeypatch.setattr(train_module, "resolve_data", no_data)
    monkeypatch.setattr(train_module, "prepare_synthetic", no_data)
    out = tmp_path / "out"
    args = ["--data", "synthetic:2000", "--out", str(out), "--verbose", "0", *options]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert message in err.lower()
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("mechanism", ["auc-only", "paper-gaussian"])
def test_a_delta_mechanism_asks_for_an_option_that_exists(tmp_path, capsys, mechanism):
    """The error names a flag of this command, and that flag, as suggested, works."""
    import re

    from models.train import build_parser

    out = tmp_path / "out"
    args = ["--data", "synthetic:3000", "--out", str(out), "--epochs", "1", "--batch-size",
            "512", "--hidden-units", "8", "--embedding-dim", "2", "--verbose", "0",
            "--num-thresholds", "100", "--dp-auc-mechanism", mechanism]  # fmt: skip
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    known = {flag for action in build_parser()._actions for flag in action.option_strings}
    flags = re.findall(r"--[a-z][a-z-]+", err)
    assert flags and set(flags) <= known, err
    suggested = re.search(r"e\.g\. (--[a-z-]+ \S+)", err).group(1).split()
    assert main(args + suggested) == 0, capsys.readouterr().err
    row = json.loads((out / "metrics.json").read_text())["epochs"][0]
    assert row["dp_delta"] == float(suggested[1]) == row["dp_delta_total"]
    assert row["dp_mechanism"] == mechanism
    # auc-only releases NaN on a test split this small (its bound; docs/auc_only.md)
    assert 0.0 <= row["dp_auc"] <= 1.0 or (mechanism == "auc-only" and np.isnan(row["dp_auc"]))
