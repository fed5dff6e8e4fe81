"""The template app's own ServerApp and ClientApp objects (examples/flower-app), run on the
in-process grid with the app's ``[tool.flwr.app.config]``: the same code ``flwr run`` loads
(tests/flower/test_flower_app.py), without Flower's runtime and Ray, so it runs on any
machine. Noise off, its AUC equals ``dpauc evaluate --backend simulate`` on the same
partitions, exactly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import tomllib

pytest.importorskip("flwr")
pytest.importorskip("keras")

from dpauc_tf.flower.local import run_in_process

APP = Path(__file__).resolve().parents[2] / "examples" / "flower-app"
NUM_NODES = 3


@pytest.fixture(scope="module")
def template():
    sys.path.insert(0, str(APP))
    try:
        from dpauc_app import client_app, server_app, task

        yield client_app.app, server_app.app, task
    finally:
        sys.path.remove(str(APP))


def _run(template, tmp_path, **overrides) -> dict:
    client, server, _ = template
    config = tomllib.loads((APP / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    result_file = tmp_path / "result.json"
    config = {**config, "num-server-rounds": 1, "result-file": str(result_file), **overrides}
    run_in_process(server, client, NUM_NODES, run_config=config)
    return json.loads(result_file.read_text())


@pytest.mark.parametrize("mechanism", ["histogram", "secure-histogram"])
def test_the_template_app_releases_with_its_config(template, tmp_path, capsys, mechanism):
    result = _run(template, tmp_path, mechanism=mechanism, epsilon=1.0)
    release = result["rounds"]["1"]
    assert release["mechanism"] == mechanism
    assert release["epsilon"] == pytest.approx(1.0)
    assert release["num_reporting"] == NUM_NODES == release["num_clients"]
    assert release["num_examples"] == NUM_NODES * 300
    out = capsys.readouterr().out
    assert f"dpauc round 1: private AUC {release['aucs'][0]:.4f}" in out
    assert f"epsilon 1, {NUM_NODES} of {NUM_NODES} clients reported" in out


def test_the_template_app_noise_off_equals_backend_simulate(template, tmp_path, capsys):
    _, _, task = template
    result = _run(template, tmp_path, mechanism="none", epsilon="none")
    release = result["rounds"]["1"]
    assert release["epsilon"] is None
    model = task.load_model()
    model.set_weights([np.asarray(w, np.float32) for w in result["final_weights"]])
    rows = ["score,label,client"]
    for node in range(NUM_NODES):
        features, labels = task.load_data(node, NUM_NODES, 300, 0)
        scores = model.predict(features, batch_size=1024, verbose=0).reshape(-1)
        rows += [f"{float(s)!r},{int(y)},{node}" for s, y in zip(scores, labels, strict=True)]
    path = tmp_path / "scores.csv"
    path.write_text("\n".join(rows) + "\n")
    from dpauc_tf.cli.main import main

    capsys.readouterr()
    status = main(
        [
            *("evaluate", "--scores", str(path), "--mechanism", "none"),
            *("--num-thresholds", "50", "--format", "json"),
        ]
    )
    simulated = json.loads(capsys.readouterr().out)
    assert status == 0 and simulated["backend"] == "simulate"
    assert release["aucs"] == simulated["aucs"]
    assert release["roc"] == simulated["roc"]
    assert release["num_examples"] == simulated["num_examples"]


def test_the_app_needs_no_private_name():
    """Everything the template app imports from dpauc_tf is public (in ``__all__``), and
    the server app never loads a node's data."""
    import ast

    import dpauc_tf.flower as flower

    for source in (APP / "dpauc_app").glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dpauc_tf"):
                for alias in node.names:
                    assert not alias.name.startswith("_"), (source.name, alias.name)
                    if node.module == "dpauc_tf.flower":
                        assert alias.name in flower.__all__, (source.name, alias.name)
    server = (APP / "dpauc_app" / "server_app.py").read_text()
    assert "load_data" not in server
