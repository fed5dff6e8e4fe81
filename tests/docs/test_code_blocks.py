"""Every Python block of README.md and docs/*.md runs as written, in a fresh process and an
empty folder.

Five of the README's six blocks, and most of the docs' blocks, were fragments that raised
``NameError`` when copied (issue 34). One case per block, with an id like ``docs/beam.md#2``.
Each block runs in the world that has what it imports: a block importing a package that this
world lacks (TFF in the keras3 world; Beam, TFMA, Spark or Flower in the federated world;
``KERAS_BACKEND = "jax"``, which needs JAX and Keras 3: the Python 3.13 world) is skipped here
and runs in another world, so that every block runs somewhere in CI (``test_every_block_runs_in_some_world``
names the worlds).

A block that is an excerpt of a larger file and cannot run alone (a Flower ``ClientApp``
function that runs only under ``flwr run``) is fenced ```` ```py ```` instead of
```` ```python ````, and the text just before it names the test that runs the same code:
"runs in `tests/...py`" (``test_every_python_block_runs_or_names_its_test``).
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
DOC_PAGES = sorted(
    f"docs/{path.name}" for path in (REPO / "docs").glob("*.md") if path.name != "changelog.md"
)
PAGES = ["README.md", *DOC_PAGES]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
# Every fenced block's info string, and the text before it (for the excerpt's marker).
FENCE = re.compile(r"^```([^\n`]*)\n.*?^```[ \t]*$", re.S | re.M)
PYTHON_INFO = {"python", "py", "python3", "py3", "pycon"}
EXCERPT_MARK = re.compile(r"runs in\s+`(tests/[\w/.-]+\.py)`")
# The top-level packages each world of run.sh installs, besides the library's own (the
# Python 3.13 world runs here only the blocks that need JAX: the others run in the first two).
WORLD_PACKAGES = {
    "federated": {"tensorflow", "numpy", "pandas", "tensorflow_federated", "dpauc_tf", "keras"},
    "keras3": {
        "tensorflow",
        "numpy",
        "pandas",
        "apache_beam",
        "tensorflow_model_analysis",
        "pyspark",
        "flwr",
        "dpauc_tf",
        "keras",
    },
    "py313": {"tensorflow", "numpy", "pandas", "dpauc_tf", "keras", "jax"},
}
STANDARD = {"os", "json", "pathlib"}


def page_blocks() -> list[tuple[str, str]]:
    """``(id, code)`` of every ```` ```python ```` block: ``docs/beam.md#2`` is its second."""
    blocks = []
    for page in PAGES:
        for number, code in enumerate(BLOCK.findall((REPO / page).read_text()), start=1):
            blocks.append((f"{page}#{number}", code))
    return blocks


BLOCKS = page_blocks()


# What the library's integration modules need (they import it on first use, not on import).
INTEGRATION_NEEDS = {
    "dpauc_tf.federated": "tensorflow_federated",
    "dpauc_tf.beam": "apache_beam",
    "dpauc_tf.beam.tfma_metric": "tensorflow_model_analysis",
    "dpauc_tf.spark": "pyspark",
    "dpauc_tf.flower": "flwr",
}
BACKEND = re.compile(r"""KERAS_BACKEND["']\]\s*=\s*["'](\w+)["']""")


def imported_packages(code: str) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
    names = {module.split(".")[0] for module in modules} - STANDARD
    for module in modules:
        for integration, package in INTEGRATION_NEEDS.items():
            if module == integration or module.startswith(integration + "."):
                names.add(package)
    names |= set(BACKEND.findall(code))  # KERAS_BACKEND = "jax" needs JAX
    return names


def test_pages_have_the_blocks_they_had():
    counts = {}
    for block_id, _ in BLOCKS:
        page = block_id.split("#")[0]
        counts[page] = counts.get(page, 0) + 1
    assert counts["README.md"] >= 6
    assert sum(n for page, n in counts.items() if page.startswith("docs/")) >= 23
    assert len([page for page in counts if page.startswith("docs/")]) >= 14


def test_every_block_runs_in_some_world():
    for block_id, code in BLOCKS:
        needed = imported_packages(code)
        assert any(needed <= packages for packages in WORLD_PACKAGES.values()), (block_id, needed)


def test_every_python_block_runs_or_names_its_test():
    """A Python block is either run here (```` ```python ````) or an excerpt (```` ```py ````)
    whose text just before names an existing test that runs the same code."""
    excerpts = 0
    for page in PAGES:
        text = (REPO / page).read_text()
        for match in FENCE.finditer(text):
            info = match.group(1).strip().split(" ")[0].lower()
            if info not in PYTHON_INFO or info == "python":
                continue
            where = f"{page}, block at line {text[: match.start()].count(chr(10)) + 1}"
            assert info == "py", f"{where}: fence ```{info}: use ```python (run) or ```py"
            before = text[max(0, match.start() - 400) : match.start()]
            cited = EXCERPT_MARK.findall(before)
            assert cited, f"{where}: a ```py excerpt must say 'runs in `tests/...py`' before it"
            assert (REPO / cited[-1]).is_file(), f"{where}: {cited[-1]} does not exist"
            excerpts += 1
    assert excerpts <= 3, "prefer blocks that run (```python) to excerpts"


def test_the_excerpt_rule_catches_an_unmarked_block(tmp_path, monkeypatch):
    """The rule above fails on an excerpt with no test named, and on a test that is absent."""
    docs = tmp_path / "docs"
    docs.mkdir()
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PAGES", ["docs/x.md"])
    (docs / "x.md").write_text("Some text.\n\n```py\nx = app\n```\n")
    with pytest.raises(AssertionError, match="must say"):
        test_every_python_block_runs_or_names_its_test()
    (docs / "x.md").write_text("It runs in `tests/absent.py`:\n\n```py\nx = app\n```\n")
    with pytest.raises(AssertionError, match="does not exist"):
        test_every_python_block_runs_or_names_its_test()


def _keras_major() -> int:
    from importlib.metadata import version

    return int(version("keras").split(".")[0])


def _other_world_runs(needed: set[str]) -> bool:
    return any(needed <= WORLD_PACKAGES[world] for world in ("federated", "keras3"))


@pytest.mark.slow
@pytest.mark.parametrize("block_id, code", BLOCKS, ids=[block_id for block_id, _ in BLOCKS])
def test_block_runs_as_written(block_id, code, tmp_path):
    needed = imported_packages(code)
    missing = sorted(name for name in needed if importlib.util.find_spec(name) is None)
    if missing:
        pytest.skip(f"{block_id} needs {', '.join(missing)} (another world runs it)")
    if BACKEND.search(code) and _keras_major() < 3:
        pytest.skip(f"{block_id} sets KERAS_BACKEND, which Keras 2 ignores (Keras 3 runs it)")
    if sys.version_info >= (3, 13) and _other_world_runs(needed):
        pytest.skip(f"{block_id} runs in the federated or keras3 world")
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
    env.pop("KERAS_BACKEND", None)  # the block sets it when it needs one
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=540,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, f"{block_id}:\n{code}\n{result.stderr[-3000:]}"
