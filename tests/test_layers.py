"""The package's layers import one way (DESIGN.md's shape of the code), checked on the source.

core <- noise <- privacy <- mechanisms <- io <- adapters (keras, federated, flower, beam,
spark, simulation, cli, analysis, experiments). A module may import its own layer and the layers below it, never above.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpauc_tf"
ORDER = ["core", "noise", "privacy", "mechanisms", "io"]
ADAPTERS = {
    "keras",
    "federated",
    "flower",
    "cli",
    "analysis",
    "experiments",
    "tf_startup",
    "beam",
    "spark",
    "simulation",
}
# Modules hold one concept; a line cap only carved satellites off whole modules (issue 31:
# "replace the line cap by one concept per module"). This bound flags a runaway module only.
MAX_LINES = 1000


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


# What each adapter may import besides the layers: one another only where it builds on it.
# No library module imports the command line (every command-line face lives in cli/).
ADAPTER_IMPORTS = {
    "keras": set(),
    "federated": {"keras"},  # build_fed_eval wraps the Keras metric
    "flower": set(),
    "beam": {"tf_startup"},
    "spark": {"tf_startup"},
    "analysis": set(),
    "experiments": {"simulation"},  # the paper's tables run the simulate backend
    "simulation": set(),
    "tf_startup": set(),
    "cli": ADAPTERS | {"spark"},
    "__main__": {"cli"},
    # The top-level package loads its public names lazily (importlib): it imports no layer.
    "__init__": set(),
}


def _violations(own: str, modules: set[str]) -> list[str]:
    """The imports of a module of ``own`` (a layer or an adapter) that flow the wrong way."""
    if own in ORDER:
        allowed = set(ORDER[: ORDER.index(own) + 1])
    elif own == "__init__":
        allowed = set()
    else:
        allowed = set(ORDER) | ADAPTER_IMPORTS[own] | {own}
    return sorted(m for m in modules if (layer := _layer(m)) is not None and layer not in allowed)


def _own(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def _checked_modules() -> list[Path]:
    """The modules whose imports a rule restricts: the command line may import every layer
    and adapter (no case of it could fail), so its modules are left out."""
    return [path for path in _modules() if _own(path) != "cli"]


@pytest.mark.parametrize("path", _checked_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_flow_one_way(path):
    own = _own(path)
    assert own in ORDER or own in ADAPTER_IMPORTS, f"{own}: a package the layer test ignores"
    bad = _violations(own, _imports(path))
    assert not bad, f"{path.relative_to(PACKAGE)} ({own}) imports {bad}"


def test_the_layer_check_can_fail():
    """The checker flags each kind of wrong-way import (so the cases above can fail)."""
    assert _violations("core", {"dpauc_tf.mechanisms.base"}) == ["dpauc_tf.mechanisms.base"]
    assert _violations("flower", {"dpauc_tf.cli.main"}) == ["dpauc_tf.cli.main"]
    assert _violations("analysis", {"dpauc_tf.cli.formats"}) == ["dpauc_tf.cli.formats"]
    assert _violations("keras", {"dpauc_tf.federated"}) == ["dpauc_tf.federated"]
    assert _violations("beam", {"dpauc_tf.core.thresholds", "numpy"}) == []
    assert _violations("io", {"dpauc_tf.simulation"}) == ["dpauc_tf.simulation"]
    assert _violations("mechanisms", {"dpauc_tf.io.scores"}) == ["dpauc_tf.io.scores"]
    assert _violations("flower", {"dpauc_tf.experiments.tables"}) == ["dpauc_tf.experiments.tables"]
    assert _violations("__init__", {"dpauc_tf.core.curve"}) == ["dpauc_tf.core.curve"]
    assert _violations("__main__", {"dpauc_tf.keras.metric"}) == ["dpauc_tf.keras.metric"]
    # Every module the parametrized test checks has a rule that some import breaks.
    for path in _checked_modules():
        assert _violations(_own(path), {"dpauc_tf.cli.main", "dpauc_tf.keras.metric"}), path


def test_no_layer_imports_an_adapter():
    for path in _modules():
        own = _own(path)
        if own in ADAPTERS or own == "__init__" or own == "__main__":
            continue
        for module in _imports(path):
            assert _layer(module) not in ADAPTERS - {"tf_startup"}, (path, module)


def test_no_module_runs_away():
    big = {
        str(p.relative_to(PACKAGE)): n
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert not big, f"modules over {MAX_LINES} lines: {big}"
