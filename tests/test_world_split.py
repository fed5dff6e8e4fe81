"""How run.sh splits the suite between its worlds (its CHUNKS and WORLD_INDEPENDENT_TESTS): no
test directory is left out of a world, and a world-independent test that comes to import
TensorFlow fails instead of running in one world only."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUN_SH = (REPO / "run.sh").read_text()
CHUNK = re.compile(r'^\s+"([\w-]+)\|([\w.-]+)\|([^"]*)"$', re.M)


def _world_independent() -> list[str]:
    body = re.search(r"^WORLD_INDEPENDENT_TESTS=\((.*?)\)", RUN_SH, re.S | re.M).group(1)
    return body.split()


def _chunks() -> list[tuple[str, str, list[str]]]:
    return [(name, env, args.split()) for name, env, args in CHUNK.findall(RUN_SH)]


def test_the_world_independent_tests_exist_and_run_once_on_python_3_13():
    listed = _world_independent()
    assert listed and all((REPO / path).is_file() for path in listed), listed
    (chunk,) = [c for c in _chunks() if "tests.helpers.tensorflow_blocked" in c[2]]
    assert chunk[1] == ".venv-py313"
    assert "${WORLD_INDEPENDENT_TESTS[*]}" in chunk[2]
    # run.sh's --ignore leaves them out of the other chunks' directories, not of a file named
    named = {arg for c in _chunks() if c is not chunk for arg in c[2]}
    assert not named & set(listed), named & set(listed)


@pytest.mark.parametrize("env", [".venv", ".venv-keras3"])
def test_each_tensorflow_world_runs_every_test_directory(env):
    """The chunk of a world that runs ``tests`` leaves out exactly the directories that the
    world's other chunks run: a directory is never dropped from a world by the split."""
    chunks = [args for _, chunk_env, args in _chunks() if chunk_env == env]
    (rest,) = [args for args in chunks if args[0] == "tests"]
    ignored = {arg.removeprefix("--ignore=") for arg in rest if arg.startswith("--ignore=")}
    elsewhere = {arg for args in chunks if args is not rest for arg in args}
    assert ignored and ignored == elsewhere


def _pytest_with_the_blocker(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_probe.py").write_text(body)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    return subprocess.run(
        [*command, "-p", "tests.helpers.tensorflow_blocked", str(tmp_path / "test_probe.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


def test_the_blocker_fails_a_test_that_imports_tensorflow_even_through_importorskip(tmp_path):
    body = (
        "import importlib.util, pytest\n"
        "def test_import():\n"
        "    import tensorflow\n"
        "def test_importorskip():\n"
        "    pytest.importorskip('tensorflow')\n"
        "def test_asking_is_allowed():\n"
        "    assert importlib.util.find_spec('tensorflow') is not None\n"
        "def test_numpy_is_allowed():\n"
        "    import numpy\n"
    )
    done = _pytest_with_the_blocker(tmp_path, body)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "2 failed, 2 passed" in done.stdout, done.stdout[-3000:]
    assert "WorldDependentImport" in done.stdout
