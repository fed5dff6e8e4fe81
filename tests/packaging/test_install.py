"""The README's install lines work: the wheel installs into a fresh virtual environment, offline.

The wheel is built from a copy of the tracked files with setuptools' PEP 517 backend (what
``pip install .``, ``uv build`` and ``python -m build`` all call). A fresh venv (with its own
pip, from ``ensurepip``: no network) sees this environment's packages through a ``.pth`` file
(as ``--system-site-packages`` would), so ``pip install --no-index "WHEEL[extras]"`` resolves
every dependency as "already satisfied" instead of downloading it. Then the package and each
installed extra's modules are imported from the venv, not from the clone.

What this cannot test offline: pip downloading the dependencies themselves (PyPI). Only the
extras whose requirements this environment satisfies are installed and imported (in the
keras3 world: all but ``federated`` and ``jax``; the federated world's packaging is too old to
build, see ``test_distribution.py``).
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import tomllib


def _can_build() -> bool:
    """As in test_distribution.py: setuptools checks the licence with packaging >= 24.2."""
    try:
        major, minor = (
            int(part) for part in importlib.metadata.version("packaging").split(".")[:2]
        )
        importlib.metadata.version("setuptools")
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (24, 2)


REPO = Path(__file__).resolve().parents[2]
EXTRAS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
# What each extra makes importable (the library's module for it, or the package it adds).
EXTRA_MODULES = {
    "plot": ["dpauc_tf.experiments.plots", "matplotlib"],
    "parquet": ["pyarrow.parquet"],
    "tensorboard": ["tensorboard"],
    "jax": ["jax"],
    "beam": ["dpauc_tf.beam"],
    "tfma": ["dpauc_tf.beam.tfma_metric"],
    "flower": ["dpauc_tf.flower"],
    "spark": ["dpauc_tf.spark"],
    "federated": ["dpauc_tf.federated"],
    "keras3": ["dpauc_tf.keras"],
}


def _satisfied(extra: str) -> bool:
    """Every requirement of ``extra`` is installed here (an extra with a requirement that its
    marker leaves out, such as TFF outside Python 3.11, is not for this Python)."""
    from packaging.requirements import Requirement

    for text in EXTRAS[extra]:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            return False
        try:
            installed = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            return False
        if not requirement.specifier.contains(installed, prereleases=True):
            return False
    return True


AVAILABLE = sorted(extra for extra in EXTRAS if _satisfied(extra))


def test_every_extra_has_its_modules_listed():
    assert set(EXTRA_MODULES) == set(EXTRAS)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    if not _can_build():
        pytest.skip("needs setuptools and packaging >= 24.2")
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
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    code = "import sys; from setuptools import build_meta as b; b.build_wheel(sys.argv[1])"
    built = subprocess.run(
        [sys.executable, "-c", code, str(dist)], cwd=source, capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = dist.glob("dpauc_tf-*-py3-none-any.whl")

    env = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, timeout=300)
    python = env / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # This environment's packages, after the venv's own (so the wheel's copy comes first).
    here = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "_outer_environment.pth").write_text("\n".join(sorted(here)) + "\n")
    return wheel, env


def _run(env: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(env / "bin" / args[0]), *args[1:]],
        cwd=env.parent,  # not the clone: nothing is imported from it
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"PATH": f"{env / 'bin'}:/usr/bin:/bin", "TF_CPP_MIN_LOG_LEVEL": "3"},
    )


def test_wheel_installs_offline_with_its_extras_and_imports(venv):
    wheel, env = venv
    target = f"{wheel}[{','.join(AVAILABLE)}]" if AVAILABLE else str(wheel)
    installed = _run(env, "python", "-m", "pip", "install", "--no-index", target)
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-3000:]
    assert "Successfully installed dpauc-tf" in installed.stdout

    modules = ["dpauc_tf", "dpauc_tf.cli.main"] + [
        module for extra in AVAILABLE for module in EXTRA_MODULES[extra]
    ]
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "import dpauc_tf\n"
        "print(dpauc_tf.__file__)\n"
    )
    imported = _run(env, "python", "-c", script)
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert imported.stdout.strip().startswith(str(env)), imported.stdout  # the wheel's copy

    cli = _run(env, "dpauc", "--help")
    assert cli.returncode == 0 and "evaluate" in cli.stdout, cli.stderr[-2000:]


# The install lines the README may hold: each is one of the forms tested above (a clone's
# ``pip install .``, the wheel built by the same backend, a path dependency) or is marked as
# the registry line for when the package is published.
EXTRA = r"(?:{})(?:,(?:{}))*".format("|".join(EXTRAS), "|".join(EXTRAS))
FORMS = [
    rf'pip install (?:\.|"\.\[{EXTRA}\]")',
    r'uv pip install "\.\[federated\]" --override requirements/federated-overrides\.txt',
    r"uv build --wheel",
    r"pip install build && python -m build --wheel",
    r"pip install dist/dpauc_tf-\*\.whl",
    rf'pip install "\$\(ls dist/dpauc_tf-\*\.whl\)\[{EXTRA}\]"',
    rf"uv add /PATH/TO/dpauc_tf --extra {EXTRA}",
]
REGISTRY = rf'pip install (?:dpauc-tf|"dpauc-tf\[{EXTRA}\]")'
COMMAND = re.compile(r"(?:uv pip install|pip install|uv add|uv build|python -m build)[^`#\n]*")


def test_every_readme_install_line_is_a_tested_form():
    readme = (REPO / "README.md").read_text()
    seen = []
    for line in readme.splitlines():
        for match in COMMAND.finditer(line):
            command = match.group(0).strip().rstrip(")").strip()
            if command.startswith("pip install build") and "python -m build" in line:
                command = "pip install build && python -m build --wheel"
            elif command.startswith("python -m build"):
                continue  # the second half of the line above
            seen.append(command)
            if re.fullmatch(REGISTRY, command):
                assert "once published" in line, f"registry line not marked: {line!r}"
                continue
            assert any(re.fullmatch(form, command) for form in FORMS), (
                f"README install line not among the tested forms: {command!r}"
            )
    assert 'pip install ".[beam]"' in seen and "pip install dist/dpauc_tf-*.whl" in seen
    assert "dpauc-tf[flower] @ file:///" in readme  # the path dependency


def test_docs_pages_install_from_a_clone_until_published():
    for page in (REPO / "docs").glob("*.md"):
        if page.name in ("changelog.md", "flower.md"):  # flower.md: the Flower app's own
            continue
        for line in page.read_text().splitlines():
            if re.search(r"pip install \"?dpauc-tf", line):
                assert "once published" in line, f"{page.name}: {line}"


def test_spark_extra_brings_what_pyspark_needs_to_return_rows():
    """``pip install "dpauc-tf[spark]"`` installed no PyArrow: the first evaluate failed after
    31 s with "PyArrow >= 18.0.0 must be installed". The extra must bring pyspark's own SQL
    requirements (PyArrow, pandas)."""
    from packaging.requirements import Requirement

    try:
        pyspark_requires = importlib.metadata.requires("pyspark") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("pyspark is not installed in this world")
    needed = {
        Requirement(text).name
        for text in pyspark_requires
        if Requirement(text).marker is not None
        and Requirement(text).marker.evaluate({"extra": "sql"})
    }
    assert {"pyarrow", "pandas"} <= needed
    brought = set()
    for text in EXTRAS["spark"]:
        requirement = Requirement(text)
        brought.add(requirement.name)
        if requirement.name == "pyspark" and "sql" in requirement.extras:
            brought |= needed
    assert needed <= brought, f"the spark extra lacks {sorted(needed - brought)}"
