"""``dpauc evaluate --thresholds FILE``: an explicit grid, taken as Keras takes it.

With noise off the released AUC equals ``tf.keras.metrics.AUC(thresholds=...)`` on the same
examples, on every backend; a file that is not a list of finite numbers is a one-line error.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from dpauc_tf.cli.main import main
from tests.helpers.scores import write_score_csv


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(11)
    labels = (rng.random(2000) < 0.35).astype(int)
    scores = 1 / (1 + np.exp(-(rng.normal(size=2000) + labels)))
    folder = tmp_path_factory.mktemp("explicit")
    path = write_score_csv(folder / "scores.csv", labels, scores)
    # uneven, unsorted, with a duplicate: Keras sorts and keeps duplicates
    grid = [0.62, 0.2, 0.45, 0.45, 0.8, 0.33, 0.9, 0.51]
    grid_path = folder / "grid.txt"
    grid_path.write_text("0.62, 0.2\n0.45 0.45\n0.8\n0.33,0.9,0.51\n")
    return path, str(grid_path), grid, scores, labels


def test_noise_off_equals_keras_with_those_thresholds(backend, data, evaluate_json):
    path, grid_path, grid, scores, labels = data
    keras = tf.keras.metrics.AUC(thresholds=grid)
    keras.update_state(labels, scores)
    out = evaluate_json(
        "--scores", path, "--mechanism", "none", "--thresholds", grid_path,
        "--clients", "3", "--backend", backend, "--show-exact",
    )  # fmt: skip
    assert out["num_thresholds"] == len(grid) + 2 and out["threshold_grid"] == "explicit"
    assert out["thresholds_file"] == grid_path
    assert out["auc_mean"] == pytest.approx(float(keras.result()), abs=1e-6)
    assert out["tf_auc"] == pytest.approx(float(keras.result()), abs=1e-6)  # the same grid
    assert len(out["roc"]["fpr"]) == len(grid) + 2


def test_a_noisy_release_counts_on_the_file_s_grid(data, evaluate_json, capsys):
    path, grid_path, grid, _, _ = data
    common = ["--scores", path, "--mechanism", "histogram", "--epsilon", "1", "--seed", "0"]
    out = evaluate_json(*common, "--thresholds", grid_path)
    assert out["count_thresholds"] == len(grid) + 2 and len(out["roc"]["tpr"]) == len(grid) + 2
    assert main(["evaluate", *common, "--thresholds", grid_path, "--show-exact"]) == 0
    table = capsys.readouterr().out
    assert f"{len(grid) + 2} (explicit grid from {grid_path})" in table
    assert f"(thresholds from {grid_path})" in table


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("0.2, abc\n", "not a number: 'abc'"),
        ("0.2\ninf\n", "not a finite number"),
        ("0.2 nan", "not a finite number"),
        ("\n \n", "no thresholds in the file"),
        (None, "cannot read it"),
        (b"\xff\xfe0.5", "cannot read it: not UTF-16 text"),
        (b"0.2\n\xe9\n", "cannot read it: not UTF-8 text (byte 0xe9 at offset 4)"),
        ("0.2\n\u200b0.5\n", "(it holds U+200B ZERO WIDTH SPACE: characters that do not show"),
    ],
)
def test_a_bad_file_is_a_one_line_error(content, message, data, tmp_path, capsys):
    path = data[0]
    grid = tmp_path / "grid.txt"
    if isinstance(content, bytes):
        grid.write_bytes(content)
    elif content is not None:
        grid.write_text(content)
    argv = ["evaluate", "--scores", path, "--mechanism", "histogram", "--epsilon", "1"]
    assert main([*argv, "--thresholds", str(grid)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(
    "encoded",
    [
        "\ufeff0.62, 0.2\n0.45\r\n0.8\n".encode(),  # UTF-8 with a byte-order mark (Notepad)
        "0.62, 0.2\n0.45\r\n0.8\n".encode("utf-16"),  # UTF-16 with its mark
    ],
)
def test_a_file_with_a_byte_order_mark_is_read(encoded, data, tmp_path, evaluate_json):
    path = data[0]
    grid = tmp_path / "grid.txt"
    grid.write_bytes(encoded)
    out = evaluate_json("--scores", path, "--mechanism", "none", "--thresholds", grid)
    assert out["num_thresholds"] == 4 + 2 and out["threshold_grid"] == "explicit"
