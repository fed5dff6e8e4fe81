"""What a user installs: one top-level package, no stray files, one version, the licence.

The wheel and the sdist are built from a copy of the tracked files with setuptools' own
PEP 517 backend (no network: the build backend is already installed in the environment).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _can_build() -> bool:
    """setuptools validates the licence expression with packaging >= 24.2 (the federated world
    pins an older packaging; the keras3 worlds build)."""
    from importlib.metadata import PackageNotFoundError, version

    if importlib.util.find_spec("setuptools") is None:
        return False
    try:
        major, minor = (int(part) for part in version("packaging").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (24, 2)


pytestmark = pytest.mark.skipif(not _can_build(), reason="needs setuptools and packaging >= 24.2")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    source = tmp_path_factory.mktemp("source")
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            target = source / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target)
    out = tmp_path_factory.mktemp("dist")
    for hook in ("build_wheel", "build_sdist"):  # one process each: setuptools keeps state
        code = f"import sys; from setuptools import build_meta as b; b.{hook}(sys.argv[1])"
        result = subprocess.run(
            [sys.executable, "-c", code, str(out)], cwd=source, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return wheel, sdist


def test_wheel_installs_only_dpauc_tf(built):
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"dpauc_tf"}, top
    # The demo trains the Wide & Deep model (models/, not shipped): it is not in the wheel.
    assert not [n for n in names if n.rsplit("/", 1)[-1] == "demo.py" or n.startswith("models/")]
    for layer in ("core", "noise", "privacy", "mechanisms", "keras", "federated", "cli"):
        assert f"dpauc_tf/{layer}/__init__.py" in names
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(metadata).decode()
        entry_points = archive.read(metadata.replace("METADATA", "entry_points.txt")).decode()
        licences = [n for n in names if "/licenses/" in n]
    assert "License-Expression: Apache-2.0" in text
    assert "Requires-Python: >=3.10" in text
    assert "Programming Language :: Python :: 3.13" in text
    assert "Provides-Extra: plot" in text and "Provides-Extra: parquet" in text
    assert "dpauc = dpauc_tf.cli:main" in entry_points
    assert any(n.endswith("LICENSE") for n in licences)


def test_sdist_has_no_tests_or_repository_only_code(built):
    _, sdist = built
    with tarfile.open(sdist) as archive:
        names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    assert "pyproject.toml" in names and "LICENSE" in names
    stray = [
        n
        for n in names
        if n.split("/")[0] in {"tests", "notebooks", "benchmarks", "models", "data_prep"}
    ]
    assert not stray, stray[:10]
