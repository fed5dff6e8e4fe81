"""Table settings match DESIGN.md; the runner's rows are right on small data."""

import json

import numpy as np
import pytest

from dpauc_tf.experiments import tables
from dpauc_tf.experiments.synthetic import binormal_score_set
from dpauc_tf.io.scores import ScoreFileError, ScoreSet

REQUIRED = {
    "table",
    "epoch",
    "setting",
    "clients",
    "num_thresholds",
    "epsilon",
    "mechanism",
    "mean",
    "std",
    "exact_auc",
    "tf_auc",
}


def test_table4_settings_match_design():
    settings = tables.table_settings("table4")
    paper = [s for s in settings if s.mechanism == "paper"]
    assert {(s.partition, s.clients, s.epsilon) for s in paper} == {
        (p, k, e) for p in ("iid", "non-iid") for k in (10, 1000) for e in (8.0, 4.0, 2.0, 1.0)
    }
    assert {s.num_thresholds for s in settings} == {100}
    assert {s.threshold_grid for s in paper} == {"reference"}
    assert {s.threshold_grid for s in tables.table_settings("table4", "tf")} == {"tf"}


def test_table4_has_the_rank_sum_rows_after_the_papers():
    settings = tables.table_settings("table4")
    rank = [s for s in settings if s.mechanism in tables.RANK_SUM_MECHANISMS]
    assert {(s.mechanism, s.partition, s.clients, s.epsilon) for s in rank} == {
        (m, p, k, e)
        for m in ("rank-sum", "secure-rank-sum")
        for p in ("iid", "non-iid")
        for k in (10, 1000)
        for e in (8.0, 4.0, 2.0, 1.0)
    }
    assert len(rank) == 32 and settings[64:] == rank  # earlier rows keep their seeds
    for name in tables.RANK_SUM_MECHANISMS:  # not in the other tables
        assert all(s.mechanism != name for t in ("table1", "table3", "table5")
                   for s in tables.table_settings(t))  # fmt: skip


def test_table4_rank_sum_rows_law():
    """Secure aggregation: one noise whatever K; local noise per client: sqrt(K) times more
    (10x from K = 10 to 1000). Fails if the local rows drew the central law (1x) or the
    secure rows summed K draws (10x)."""
    runner = tables.TableRunner({0: binormal_score_set(4000, 1000, 0.75, seed=2)}, repeats=300)
    std, rows = {}, {}
    for name in tables.RANK_SUM_MECHANISMS:
        for k in (10, 1000):
            setting = tables.Setting(4, name, 1.0, 100, "non-iid", k)
            result = runner.run_setting(0, setting, seed=k)
            std[name, k] = result.std
            rows[name, k] = runner.row(0, setting, result)
    assert 7 < std["rank-sum", 1000] / std["rank-sum", 10] < 14
    assert 0.8 < std["secure-rank-sum", 1000] / std["secure-rank-sum", 10] < 1.25
    row = rows["secure-rank-sum", 1000]
    assert row["num_thresholds"] is None and row["threshold_grid"] is None  # own grid
    assert row["tf_num_thresholds"] == 1000 and row["undefined"] == 0
    assert row["guarantee"].startswith("secure-rank-sum") and row["clients"] == 1000
    assert rows["rank-sum", 10]["guarantee"].startswith("rank-sum: (1, 0)-DP")
    assert abs(rows["secure-rank-sum", 10]["mean"] - row["exact_auc"]) < 0.01


def test_table5_table1_table3_settings():
    t5 = [s for s in tables.table_settings("table5") if s.mechanism == "paper"]
    assert [s.num_thresholds for s in t5] == [10, 25, 50, 100, 200]
    assert {s.epsilon for s in t5} == {1.0}
    t1 = [s for s in tables.table_settings("table1") if s.mechanism == "rr"]
    assert {s.num_thresholds for s in t1} == {200}
    t3 = [s for s in tables.table_settings("table3") if s.mechanism == "score-noise"]
    assert [s.epsilon for s in t3] == list(tables.SCORE_NOISE_EPSILONS)
    assert tables.table_settings("table2") == []


@pytest.mark.parametrize("table", ["table1", "table3", "table4", "table5"])
def test_every_paper_row_has_project_rows_at_the_same_setting(table):
    settings = tables.table_settings(table)
    for paper in (s for s in settings if s.mechanism not in tables.PROJECT_MECHANISMS):
        for name in tables.PROJECT_MECHANISMS:
            assert any(
                s.mechanism == name
                and (s.epsilon, s.clients, s.partition, s.num_thresholds)
                == (paper.epsilon, paper.clients, paper.partition, paper.num_thresholds)
                for s in settings
            )


@pytest.fixture(scope="module")
def runner():
    return tables.TableRunner(
        {
            0: binormal_score_set(4000, 1000, 0.75, seed=0),
            1: binormal_score_set(4000, 1000, 0.8, seed=1),
        },
        repeats=8,
        seed=0,
    )


def test_rows_carry_the_required_fields(runner):
    rows = runner.run(["table1", "table3", "table5"], progress=False)
    assert len(rows) == 2 * (16 + 20 + 20)
    parsed = json.loads(tables.format_json(rows))
    for row in parsed:
        assert REQUIRED <= row.keys()
        assert row["repeats"] == 8
        assert 0 <= row["mean"] <= 1 and row["std"] >= 0
    row = next(r for r in rows if r["epoch"] == 1)
    assert row["exact_auc"] == pytest.approx(0.8, abs=1e-4)
    t5 = {r["num_thresholds"]: r["tf_auc"] for r in rows if r["table"] == 5 and r["epoch"] == 0}
    assert t5[10] < t5[200]  # coarse grids read low
    assert "### Table 3" in tables.format_markdown(rows)
    assert tables.format_csv(rows).splitlines()[0].startswith("table,epoch,setting")


def test_rows_are_reproducible_for_a_seed(runner):
    a = runner.run(["table5"], progress=False)
    b = tables.TableRunner(runner.score_sets, repeats=8, seed=0).run(["table5"], progress=False)
    c = tables.TableRunner(runner.score_sets, repeats=8, seed=1).run(["table5"], progress=False)
    assert [r["mean"] for r in a] == [r["mean"] for r in b]
    assert [r["mean"] for r in a] != [r["mean"] for r in c]


def test_table2_top_k_precision_and_recall():
    labels = np.array([1, 0, 1, 1, 0, 0, 0, 1, 0, 0] * 20)
    scores = np.linspace(1.0, 0.0, labels.size)
    runner = tables.TableRunner({0: ScoreSet.checked(labels, scores)}, repeats=2)
    rows = runner.top_k_rows(0)
    assert [r["top_k"] for r in rows] == [1, 10, 100]
    assert rows[1]["positives_in_top_k"] == 4
    assert rows[1]["precision"] == pytest.approx(0.4)
    assert rows[2]["recall"] == pytest.approx(40 / 80)


def test_more_clients_than_examples_is_an_error():
    runner = tables.TableRunner({0: ScoreSet.checked([0, 1, 1], [0.1, 0.5, 0.9])}, repeats=2)
    with pytest.raises(ScoreFileError, match="K must not exceed n"):
        runner.run(["table4"], progress=False)
