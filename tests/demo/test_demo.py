"""The demo runs end to end on small settings (federated world only)."""

import pytest

pytest.importorskip("tensorflow_federated")


def test_demo_runs_and_writes_its_table_and_plots(tmp_path, capfd):
    from dpauc_tf.demo import main

    code = main(
        [
            "--data", "synthetic:6000",
            "--out", str(tmp_path),
            "--epochs", "1",
            "--clients", "3,10",
            "--repeats", "5",
        ]
    )  # fmt: skip
    assert code == 0
    out = capfd.readouterr().out
    for needle in ("exact (scikit-learn)", "TF AUC, T=1000", "secure-histogram, non-iid, K=10"):
        assert needle in out
    assert (tmp_path / "roc.png").stat().st_size > 10_000
    assert (tmp_path / "auc_vs_epsilon.png").stat().st_size > 10_000
    assert (tmp_path / "model" / "metrics.json").exists()
