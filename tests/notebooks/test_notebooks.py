"""The notebooks run top to bottom (executed, with a time limit), are stored without outputs,
and assert what each is there to show (an ``assert`` that fails is an error cell here)."""

import importlib.util
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NEEDS_TFF = {"02_federated_evaluation.ipynb"}


def _notebooks():
    return sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


def test_there_are_notebooks():
    assert "01_keras_metric.ipynb" in _notebooks()


@pytest.mark.parametrize("name", _notebooks())
def test_notebook_is_stored_without_outputs(name):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"{name}: strip outputs"


@pytest.mark.parametrize("name", _notebooks())
def test_notebook_asserts_what_it_shows(name):
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    checks = [c for c in notebook.cells if c.cell_type == "code" and "\nassert " in "\n" + c.source]
    assert checks, f"{name} shows something but asserts nothing"


@pytest.mark.parametrize("name", _notebooks())
def test_notebook_runs_top_to_bottom(name, tmp_path):
    if name in NEEDS_TFF and importlib.util.find_spec("tensorflow_federated") is None:
        pytest.skip("needs TensorFlow Federated (federated world)")
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=240,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    assert not (NOTEBOOKS.parent / "plots").exists(), "notebooks write plots under runs/"
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert not errors
