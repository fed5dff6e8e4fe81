"""``dpauc evaluate --backend beam`` on the local runner with 2 worker processes equals
``--backend simulate`` exactly with noise off (clients' reports summed), same JSON."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("apache_beam")

from dpauc_tf.cli import main
from tests.helpers.cli import evaluate_exact_json as run_json

AUC_FIELDS = ("exact_auc", "tf_auc", "auc_mean", "auc_std", "aucs", "num_undefined", "roc")


def test_beam_backend_two_workers_equals_simulate(capsys, tmp_path):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 3000)
    scores = 1 / (1 + np.exp(-(rng.normal(size=3000) + labels - 0.5)))
    path = tmp_path / "scores.csv"
    frame = pd.DataFrame({"score": scores, "label": labels, "client": rng.integers(0, 4, 3000)})
    frame.to_csv(path, index=False)
    common = ["--scores", path, "--mechanism", "none", "--num-thresholds", 50, "--repeats", 2]
    common += ["--client-column", "client"]
    simulated = run_json(capsys, *common, "--backend", "simulate")
    beam = run_json(capsys, *common, "--backend", "beam")  # DirectRunner, 2 processes
    assert beam["backend"] == "beam" and beam["num_clients"] == 4
    for field in AUC_FIELDS:
        assert beam[field] == simulated[field], field
    assert set(beam) == set(simulated)


def test_beam_backend_releases_auc_only_with_no_curve(capsys, tmp_path):
    """auc-only through --backend beam: counted on its own grid, an AUC and no curve (it
    failed after the release with "no curve to show")."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 4000)
    scores = 1 / (1 + np.exp(-(rng.normal(size=4000) + labels - 0.5)))
    path = tmp_path / "scores.csv"
    pd.DataFrame({"score": scores, "label": labels}).to_csv(path, index=False)
    out = run_json(
        capsys,
        *("--scores", path, "--mechanism", "auc-only", "--epsilon", 100, "--delta", 1e-6),
        *("--seed", 0, "--backend", "beam", "--beam-options=--runner=DirectRunner"),
    )
    assert out["backend"] == "beam" and out["roc"] is None
    assert out["count_thresholds"] == 2**17 + 1
    assert out["aucs"][0] == pytest.approx(roc_auc_score(labels, scores), abs=1e-3)


def _run_plain(capsys, *args):
    assert main(["evaluate", *map(str, args), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture()
def clients_files(tmp_path):
    """Three Parquet parts of 3,000 examples held by 10 non-IID clients (score ranges)."""
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, 3000)
    scores = 1 / (1 + np.exp(-(rng.normal(size=3000) + labels - 0.5)))
    clients = np.argsort(np.argsort(scores)) * 10 // 3000
    frame = pd.DataFrame({"score": scores, "label": labels, "client": clients})
    for index, part in enumerate(np.array_split(np.arange(3000), 3)):
        frame.iloc[part].to_parquet(tmp_path / f"part-{index}.parquet", index=False)
    frame.to_csv(tmp_path / "all.csv", index=False)
    return tmp_path


def test_beam_reads_the_files_with_its_own_io_not_the_driver(capsys, clients_files, monkeypatch):
    """Without --show-exact/--clients/--plot the files are read by Beam's sources (a glob of
    Parquet parts): the driver's reader is never called, and with noise off the release
    equals --backend simulate on the same file exactly (K = 10 non-IID clients)."""
    from dpauc_tf.cli import evaluate as cli_evaluate

    common = ["--mechanism", "none", "--num-thresholds", 50, "--client-column", "client"]
    simulated = _run_plain(capsys, "--scores", clients_files / "all.csv", *common)

    def no_driver_reading(*args, **kwargs):
        raise AssertionError("the driver read the file")

    monkeypatch.setattr(cli_evaluate, "count_scores", no_driver_reading)
    beam = _run_plain(
        capsys,
        *("--scores", clients_files / "part-*.parquet", *common, "--backend", "beam"),
        "--beam-options=--runner=DirectRunner",
    )
    assert beam["num_clients"] == simulated["num_clients"] == 10
    assert beam["num_examples"] == 3000
    for field in ("auc_mean", "aucs", "num_undefined", "roc"):
        assert beam[field] == simulated[field], field


def test_beam_io_noise_matches_the_simulation_over_seeds(capsys, clients_files):
    from scipy import stats

    common = ["--mechanism", "histogram", "--epsilon", 1, "--num-thresholds", 20, "--repeats", 200]
    common += ["--client-column", "client"]
    simulated = _run_plain(capsys, "--scores", clients_files / "all.csv", *common, "--seed", 1)
    beam = _run_plain(
        capsys,
        *("--scores", clients_files / "part-*.parquet", *common, "--seed", 2),
        *("--backend", "beam", "--beam-options=--runner=DirectRunner"),
    )
    assert beam["guaranteed_epsilon"] == simulated["guaranteed_epsilon"] == 1.0
    assert stats.ks_2samp(beam["aucs"], simulated["aucs"]).pvalue > 1e-3
    # the test can fail: the simulate backend at a doubled (or halved) noise scale is told apart
    for wrong in (0.5, 2):
        args = [*common, "--seed", 3]
        args[args.index("--epsilon") + 1] = wrong
        other = _run_plain(capsys, "--scores", clients_files / "all.csv", *args)
        assert stats.ks_2samp(beam["aucs"], other["aucs"]).pvalue < 1e-3, wrong


def test_beam_io_hostile_files(capsys, tmp_path):
    pd.DataFrame({"score": [0.2, 0.7], "label": [1, 2]}).to_csv(tmp_path / "bad.csv", index=False)
    args = ["evaluate", "--mechanism", "none", "--backend", "beam", "--format", "json"]
    args += ["--beam-options=--runner=DirectRunner"]
    assert main([*args, "--scores", str(tmp_path / "bad.csv")]) != 0
    assert capsys.readouterr().err.strip() == "dpauc: error: DPAUC: labels must be 0 or 1."
    assert main([*args, "--scores", str(tmp_path / "none-*.csv")]) != 0
    assert "no file matches" in capsys.readouterr().err
    assert main([*args, "--scores", str(tmp_path / "bad.csv"), "--label-column", "y"]) != 0
    assert "no column 'y' (--label-column)" in capsys.readouterr().err


def test_beam_runs_secure_rank_sum_from_files_and_from_memory(capsys, clients_files):
    """``--mechanism secure-rank-sum --client-column`` through Beam (two passes): from the
    Parquet parts (Beam's own IO) and from the examples in memory (``--show-exact``), at an
    epsilon whose discrete noise is 0, equals --backend simulate exactly (K = 10 non-IID
    clients); both state the secure statement of 10 shares. Central ``rank-sum`` runs too."""
    common = ["--mechanism", "secure-rank-sum", "--epsilon", 1e9, "--seed", 0]
    common += ["--mechanism-option", "resolution=1025", "--client-column", "client"]
    beam = ["--backend", "beam", "--beam-options=--runner=DirectRunner"]
    simulated = _run_plain(capsys, "--scores", clients_files / "all.csv", *common)
    from_files = _run_plain(capsys, "--scores", clients_files / "part-*.parquet", *common, *beam)
    in_memory = _run_plain(
        capsys, "--scores", clients_files / "all.csv", *common, *beam, "--show-exact"
    )
    for out in (from_files, in_memory):
        assert out["mechanism"] == "secure-rank-sum" and out["num_clients"] == 10
        assert out["aucs"] == simulated["aucs"] and out["privacy"] == simulated["privacy"]
    assert in_memory["aucs"][0] == pytest.approx(in_memory["exact_auc"], abs=1e-3)
    central = _run_plain(
        capsys,
        *("--scores", clients_files / "part-*.parquet", "--mechanism", "rank-sum"),
        *("--epsilon", 1, "--seed", 0, *beam),
    )
    assert central["mechanism"] == "rank-sum" and central["num_clients"] == 1
