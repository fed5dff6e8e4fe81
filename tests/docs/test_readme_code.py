"""Every Python block of README.md runs as written, in a fresh process and an empty folder.

Five of the six blocks were fragments that raised ``NameError`` when copied (issue 34). Each
block runs in the world that has what it imports: a block importing a package that this world
lacks (TFF in the keras3 world; Beam, Spark or Flower in the federated world) is skipped here
and runs in the other world, so that every block runs somewhere in CI
(``test_every_block_runs_in_some_world`` names the worlds).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
# The top-level packages each world of run.sh installs, besides the library's own.
WORLD_PACKAGES = {
    "federated": {"tensorflow", "numpy", "pandas", "tensorflow_federated", "dpauc_tf"},
    "keras3": {"tensorflow", "numpy", "pandas", "apache_beam", "pyspark", "flwr", "dpauc_tf"},
}


def readme_blocks() -> list[str]:
    return BLOCK.findall((REPO / "README.md").read_text())


# What the library's integration modules need (they import it on first use, not on import).
INTEGRATION_NEEDS = {
    "dpauc_tf.federated": "tensorflow_federated",
    "dpauc_tf.beam": "apache_beam",
    "dpauc_tf.spark": "pyspark",
    "dpauc_tf.flower": "flwr",
}


def imported_packages(code: str) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    names = {module.split(".")[0] for module in modules}
    for module in modules:
        for integration, package in INTEGRATION_NEEDS.items():
            if module == integration or module.startswith(integration + "."):
                names.add(package)
    return names


def test_readme_has_the_blocks_it_had():
    assert len(readme_blocks()) >= 6


def test_every_block_runs_in_some_world():
    for code in readme_blocks():
        needed = imported_packages(code)
        assert any(needed <= packages for packages in WORLD_PACKAGES.values()), needed


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(readme_blocks())))
def test_readme_block_runs_as_written(index, tmp_path):
    code = readme_blocks()[index]
    missing = sorted(
        name for name in imported_packages(code) if importlib.util.find_spec(name) is None
    )
    if missing:
        pytest.skip(f"block {index + 1} needs {', '.join(missing)} (another world runs it)")
    # As in an activated virtual environment: its python first on PATH (Spark's Python
    # workers start the ``python3`` they find there).
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "VIRTUAL_ENV": str(Path(sys.executable).parents[1]),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PYTHONPATH": str(REPO),
    }
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=540,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, f"block {index + 1}:\n{code}\n{result.stderr[-3000:]}"
