"""The command line as a newcomer meets it (issue 24): compact Markdown, client ids only from
a named column, fields only where they mean something, one progress convention, a readable
plot, a TFF message a wheel user can act on, and a ``reproduce`` summary."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pandas as pd
import pytest

from dpauc_tf.cli.main import build_parser, main
from tests.helpers.cli import run_cli as _run


@pytest.fixture(scope="module")
def client_file(tmp_path_factory):
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, 600)
    scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0, 1)
    path = tmp_path_factory.mktemp("ux") / "scores.csv"
    frame = pd.DataFrame({"score": scores, "label": labels, "client": rng.integers(0, 5, 600)})
    frame.to_csv(path, index=False)
    return str(path)


BASE = ["--mechanism", "histogram", "--epsilon", "1", "--num-thresholds", "20", "--seed", "0"]


def test_markdown_is_one_row_per_setting_with_the_statement_once(capsys, client_file):
    out = _run(
        capsys, "evaluate", "--scores", client_file, *BASE, "--repeats", 25, "--format", "markdown"
    ).out
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert len(table) == 3  # header, rule, one row (before: one row per repeat, 29 columns)
    assert len(table[0].split("|")) - 2 <= 12
    assert out.count("neighbours:") == 1 and out.count("Laplace(") == 1
    assert "auc_mean" in table[0] and "privacy:" in out


def test_a_column_named_client_is_not_read_as_clients_unless_named(capsys, client_file):
    args = ["evaluate", "--scores", client_file, *BASE, "--format", "json"]
    plain = _run(capsys, *args)
    out = json.loads(plain.out)
    assert out["num_clients"] == 1  # before: 5, per-client noise, silently
    hints = [line for line in plain.err.splitlines() if "--client-column client" in line]
    assert len(hints) == 1  # one line (the noise warning of a small file may come beside it)
    named = json.loads(_run(capsys, *args, "--client-column", "client").out)
    assert named["num_clients"] == 5
    assert named["auc_std"] != out["auc_std"] or named["aucs"] != out["aucs"]


def test_fields_only_where_they_mean_something(capsys, client_file, tmp_path):
    out = json.loads(
        _run(capsys, "evaluate", "--scores", client_file, *BASE, "--format", "json").out
    )
    assert out["num_undefined"] == 0
    for key in ("undefined_note", "partition", "thresholds_file"):
        assert key not in out, key
    tiny = tmp_path / "tiny.csv"
    tiny.write_text("score,label\n0.1,0\n0.9,1\n0.4,0\n0.7,1\n")
    noisy = ["--mechanism", "histogram", "--epsilon", "0.01", "--repeats", "40", "--seed", "0"]
    out = json.loads(_run(capsys, "evaluate", "--scores", tiny, *noisy, "--format", "json").out)
    assert out["num_undefined"] > 0 and out["undefined_note"]
    parted = ["--clients", "2", "--format", "json"]
    out = json.loads(_run(capsys, "evaluate", "--scores", client_file, *BASE, *parted).out)
    assert out["partition"] == "iid"


@pytest.mark.parametrize("command", ["evaluate", "reproduce", "audit"])
def test_every_subcommand_has_the_same_progress_flags(capsys, command):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert "--progress {auto,on,off}" in text and "--no-progress" in text
    required = {
        "evaluate": ["--scores", "s.csv", "--mechanism", "none"],
        "reproduce": ["table5", "--scores", "synthetic"],
        "audit": ["--mechanism", "histogram", "--epsilon", "1"],
    }[command]
    parser = build_parser()
    assert parser.parse_args([command, *required]).progress == "auto"
    assert parser.parse_args([command, *required, "--no-progress"]).progress == "off"
    assert parser.parse_args([command, *required, "--progress", "on"]).progress == "on"


def test_audit_shows_progress_when_asked(capsys):
    argv = ["audit", "--mechanism", "histogram", "--epsilon", "1", "--samples", "2000"]
    captured = _run(capsys, *argv, "--seed", "0", "--progress", "on")
    assert "audit histogram" in captured.err  # the bar's label


def test_tff_message_names_the_install_a_wheel_user_has(capsys, client_file, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "tensorflow_federated" else real(name, *a),
    )
    assert main(["evaluate", "--scores", client_file, *BASE, "--backend", "tff"]) == 2
    err = capsys.readouterr().err
    assert 'pip install ".[federated]"' in err and "3.11" in err and ".venv" not in err
    assert ".venv" not in err


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib")
@pytest.mark.parametrize("repeats", [1, 5, 40])
def test_roc_plot_title_fits_and_bands_only_with_repeats(repeats):
    from dpauc_tf.experiments import plots

    rng = np.random.default_rng(0)
    fpr = np.sort(rng.random((repeats, 30)), axis=1)
    tpr = np.sqrt(fpr)
    title = "secure-tree-histogram, epsilon 0.5, 1000 client(s), 100 release(s), long words"
    fig = plots.roc_band_figure(None, {"secure-tree-histogram": (fpr, tpr)}, title)
    renderer = fig.canvas.get_renderer()
    fig.canvas.draw()
    box, frame = fig._suptitle.get_window_extent(renderer), fig.bbox
    assert box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y1 <= frame.y1  # not clipped
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any("5-95" in label for label in labels) == (repeats >= 20)
    assert (repeats == 1) == ("noisy release" in labels)
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.fixture(scope="module")
def score_dir(tmp_path_factory):
    from dpauc_tf.experiments.synthetic import binormal_score_set

    directory = tmp_path_factory.mktemp("run")
    for epoch, auc in ((0, 0.72), (1, 0.76)):
        s = binormal_score_set(3000, 750, auc, seed=epoch)
        pd.DataFrame({"label": s.labels, "score": s.scores}).to_csv(
            directory / f"scores_epoch{epoch}.csv", index=False
        )
    return directory


@pytest.mark.parametrize("fmt", ["markdown", "table"])
def test_reproduce_prints_the_summary_and_every_row_on_request(capsys, score_dir, fmt):
    argv = ["reproduce", "table5", "--scores", score_dir, "--seeds", 3, "--format", fmt]
    out = _run(capsys, *argv, "--no-progress").out
    lines = out.splitlines()
    rows = [line for line in lines if line.startswith("| ")] if fmt == "markdown" else lines
    header = next(line for line in rows if "histogram-public-scores" in line)
    assert "paper" in header and "secure-histogram" in header  # mechanisms as columns
    assert out.count("0.7") >= 5 and "epoch 1" in out and "K = 10" in out
    if fmt == "markdown":
        assert len(rows) == 1 + 5  # header + |Theta| in {10, 25, 50, 100, 200} (before: 40)
    full = _run(capsys, *argv, "--no-progress", "--all-rows").out
    assert full.count("secure-histogram") >= 2 * 5  # every epoch and setting
