"""The demo runs end to end on small settings, any number of times (federated world only)."""

import json
import re
from pathlib import Path

import pytest

SMALL = [
    "--data", "synthetic:6000",
    "--epochs", "1",
    "--clients", "3,10",
    "--repeats", "5",
]  # fmt: skip


def test_run_directory_is_new_for_every_run_and_out_is_refused_when_used(tmp_path, monkeypatch):
    """No TensorFlow: the choice of directory happens before any work."""
    from models import demo

    monkeypatch.chdir(tmp_path)
    parser = demo.build_parser()
    first = demo._run_directory(parser.parse_args([]), parser)
    first.mkdir(parents=True)
    second = demo._run_directory(parser.parse_args([]), parser)
    assert first != second and first.parent == second.parent == Path("runs/demo")
    (first / "roc.png").write_bytes(b"")
    with pytest.raises(SystemExit) as refused:
        demo._run_directory(parser.parse_args(["--out", str(first)]), parser)
    assert refused.value.code == 2
    assert demo._run_directory(parser.parse_args(["--out", str(first), "--overwrite"]), parser)


@pytest.fixture
def tff():
    return pytest.importorskip("tensorflow_federated")


def test_demo_runs_twice_in_one_directory(tff, tmp_path, monkeypatch, capfd):
    """``bash run.sh demo`` (a new run directory), then the same directory again: refused in
    one line, then replaced with ``--overwrite``. (A second plain run only picks another new
    directory: the test above.)"""
    from models.demo import main

    monkeypatch.chdir(tmp_path)
    assert main(SMALL) == 0
    first_out = capfd.readouterr().out
    (run,) = (tmp_path / "runs" / "demo").iterdir()
    assert f"run directory: {Path('runs/demo') / run.name}" in first_out
    first_metrics = (run / "model" / "metrics.json").read_text()

    # The table: noise-free figures marked as not private; every release row present.
    for needle in (
        "NOT PRIVATE",
        "exact AUC (scikit-learn)",
        "TF AUC, T=1000",
        "LABEL-DP RELEASES",
        "secure-histogram, non-iid, K=10",
    ):
        assert needle in first_out
    # A fresh seed, printed (two runs drew the same "releases" with a silent seed 0); the
    # Keras row names its mechanism (DPAUC's default); the table is the best epoch's.
    seed = int(re.search(r"seed: (\d+) \(--seed \1 repeats this run\)", first_out).group(1))
    assert "DPAUC in Keras (rank-sum)" in first_out
    metrics = json.loads(first_metrics)
    assert f"Test set of epoch {metrics['best_epoch']} (the best by validation AUC)" in first_out
    releases = first_out.split("LABEL-DP RELEASES")[1].split("epsilon: label DP")[0]
    assert "exact" not in releases.split("\n", 1)[1]
    if re.search(r" [01]\.0000 \*", releases):
        assert "degenerate release" in first_out

    with pytest.raises(SystemExit) as refused:
        main([*SMALL, "--out", str(run)])
    assert refused.value.code == 2
    assert "pass --overwrite" in capfd.readouterr().err

    again = [*SMALL, "--clients", "3", "--mechanisms", "histogram", "--seed", str(seed + 1)]
    assert main([*again, "--out", str(run), "--overwrite"]) == 0
    assert f"seed: {seed + 1} " in capfd.readouterr().out
    assert (run / "roc.png").stat().st_size > 10_000
    assert (run / "auc_vs_epsilon.png").stat().st_size > 10_000
    assert (run / "model" / "metrics.json").read_text() != first_metrics  # replaced
    assert len(list((tmp_path / "runs" / "demo").iterdir())) == 1
