"""``dpauc reproduce`` end to end on small score directories (and synthetic table 2)."""

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest

from dpauc_tf.cli import main
from dpauc_tf.experiments.synthetic import binormal_score_set


@pytest.fixture(scope="module")
def score_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("run")
    for epoch, auc in ((0, 0.72), (1, 0.76)):
        s = binormal_score_set(3000, 750, auc, seed=epoch)
        pd.DataFrame({"label": s.labels, "score": s.scores}).to_csv(
            directory / f"scores_epoch{epoch}.csv", index=False
        )
    (directory / "metrics.json").write_text("{}")
    return directory


def test_table5_json_rows(capsys, score_dir):
    code = main(
        [
            "reproduce",
            "table5",
            "--scores",
            str(score_dir),
            "--seeds",
            "7",
            "--format",
            "json",
            "--no-progress",
        ]
    )
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 * 5 * 4
    assert {r["epoch"] for r in rows} == {0, 1}
    for r in rows:
        assert (
            r["table"] == 5 and r["epsilon"] == 1.0 and r["clients"] == 10 and r["setting"] == "IID"
        )
        assert r["repeats"] == 7 and r["std"] > 0
    paper = [r for r in rows if r["mechanism"] == "paper"]
    assert {r["threshold_grid"] for r in paper} == {"reference"}
    exact = {r["epoch"]: r["exact_auc"] for r in rows}
    assert exact[0] == pytest.approx(0.72, abs=1e-4) and exact[1] == pytest.approx(0.76, abs=1e-4)


def test_table4_csv_and_tf_grid(capsys, score_dir):
    code = main(
        [
            "reproduce",
            "table4",
            "--scores",
            str(score_dir),
            "--seeds",
            "3",
            "--format",
            "csv",
            "--threshold-grid",
            "tf",
            "--no-progress",
        ]
    )
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 2 * 96  # 64 paper and histogram rows, 32 rank-sum rows per epoch
    assert {r["setting"] for r in rows} == {"IID", "non-IID"}
    assert {r["clients"] for r in rows} == {"10", "1000"}
    rank = [r for r in rows if r["mechanism"] in ("rank-sum", "secure-rank-sum")]
    assert len(rank) == 2 * 32
    assert {r["threshold_grid"] for r in rows if r not in rank} == {"tf"}
    assert {(r["threshold_grid"], r["num_thresholds"]) for r in rank} == {("", "")}  # own grid

    # Distributed noise does not grow with K; local Laplace does.
    def std(mechanism, clients):
        return np.mean(
            [
                float(r["std"])
                for r in rows
                if r["mechanism"] == mechanism and r["clients"] == clients
            ]
        )

    assert std("secure-histogram", "1000") < std("histogram", "1000") / 3
    # The rank sums: secure aggregation stays at one noise whatever K (expected 1x); local
    # noise grows as sqrt(K) (expected 10x from K = 10 to 1000), still below local histogram
    assert std("secure-rank-sum", "1000") < 2 * std("secure-rank-sum", "10")
    assert std("rank-sum", "1000") > 4 * std("rank-sum", "10")
    assert std("secure-rank-sum", "1000") < std("rank-sum", "1000") / 3
    assert std("rank-sum", "10") < std("histogram", "10") / 2


def test_table2_markdown_and_plots_on_synthetic(capsys, tmp_path):
    code = main(
        ["reproduce", "table2", "--scores", "synthetic", "--plot", str(tmp_path), "--no-progress"]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "### Table 2" in text and "| 100000 |" in text
    assert (tmp_path / "score_densities_epoch2.png").stat().st_size > 10_000


def test_plots_for_table1_and_table4(capsys, score_dir, tmp_path):
    code = main(
        [
            "reproduce",
            "table4",
            "--scores",
            str(score_dir),
            "--seeds",
            "5",
            "--plot",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "auc_vs_epsilon_epoch1.png",
        "roc_bands_epoch1.png",
        "std_vs_clients_epoch1.png",
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (["table4", "--scores", "/nonexistent"], "not a directory"),
        (["table9", "--scores", "synthetic"], "invalid choice"),
        (["all", "--scores", "synthetic", "--seeds", "0"], ">= 1"),
    ],
)
def test_bad_reproduce_arguments(capsys, args, message):
    assert main(["reproduce", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpauc: error:") and message in err and err.count("\n") == 1


def test_directory_without_score_files(capsys, tmp_path):
    assert main(["reproduce", "table1", "--scores", str(tmp_path)]) == 2
    assert "no scores_epoch" in capsys.readouterr().err
