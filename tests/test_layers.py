"""The package's layers import one way (DESIGN.md's shape of the code), checked on the source.

core <- noise <- privacy <- mechanisms <- adapters (keras, federated, cli, analysis,
experiments, demo). A module may import its own layer and the layers below it, never above.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpauc_tf"
ORDER = ["core", "noise", "privacy", "mechanisms"]
ADAPTERS = {
    "keras",
    "federated",
    "flower",
    "cli",
    "analysis",
    "experiments",
    "demo",
    "tf_startup",
    "beam",
    "spark",
}
MAX_LINES = 600


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "dpauc_tf" or len(parts) < 2:
        return None
    return parts[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_flow_one_way(path):
    own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    if own not in ORDER:
        return  # adapters may import every layer (and one another where they build on it)
    allowed = set(ORDER[: ORDER.index(own) + 1])
    for module in _imports(path):
        layer = _layer(module)
        if layer is None:
            continue
        assert layer in allowed, f"{path.relative_to(PACKAGE)} ({own}) imports {module}"


def test_no_layer_imports_an_adapter():
    for path in _modules():
        own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if own in ADAPTERS or own == "__init__" or own == "__main__":
            continue
        for module in _imports(path):
            assert _layer(module) not in ADAPTERS - {"tf_startup"}, (path, module)


def test_modules_stay_small():
    big = {
        str(p.relative_to(PACKAGE)): n
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not big, f"modules over {MAX_LINES} lines: {big}"
