"""The package's layers import one way (DESIGN.md's shape of the code), checked on the source.

core <- noise <- privacy <- mechanisms <- io <- adapters (keras, federated, flower, beam,
spark, simulation, backends, cli, analysis, experiments). A module may import its own layer and the layers below it, never above.
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
    "backends",
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
    # a backend runs a spec on one engine: the engines' adapters are what it builds on
    "backends": {"simulation", "federated", "flower", "beam", "spark", "tf_startup"},
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


# Inside dpauc_tf/mechanisms/: the layers of the mechanisms package, lowest first (issue 31).
# A module imports (anywhere: module level, inside functions, under TYPE_CHECKING) only
# modules of its own layer or below; a new module must be placed in a layer here.
MECHANISM_LAYERS: list[set[str]] = [
    # the vocabulary: what a mechanism can take and how its law is named (pure Python)
    {"capabilities", "estimators", "class_split", "option_types", "laws"},
    {"base"},  # the protocol and its default law
    # the families: each owns its whole law
    {
        "histogram",
        "tree",
        "secure_histogram",
        "paper",
        "randomized_response",
        "score_noise",
        "auc_only",
        "rank_sum",
        "secure_rank_sum",
        "none",
    },
    {"weight_bound"},  # a decorator that scales a family's law
    {"registry"},  # names and summaries
    {"interval_flips", "interval_curvature", "intervals", "auto_grid"},  # generic law math
    # the estimands over a family's counts: one-vs-rest and the paired comparison
    {"multiclass", "comparison"},
    # their rank-sum releases (per-class rank sums; the rank-sum difference)
    {"multiclass_rank_sum", "comparison_rank_sum"},
    {"release"},  # the one release path (it builds and finishes every estimand)
    # faces built on the path
    {
        "arguments",  # the faces' release keywords -> the one spec
        "tensor_release",
        "multiclass_release",
        "comparison_release",
        "release_summaries",
    },
]


def _mechanism_imports(source: str, own: str) -> set[str]:
    """The modules of dpauc_tf.mechanisms that the module ``own`` (its ``source``) imports
    anywhere (relative imports resolved; ``from package import module`` counts the module)."""
    tree = ast.parse(source)
    package = "dpauc_tf.mechanisms"
    modules = {p.stem for p in (PACKAGE / "mechanisms").glob("*.py")}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from this package (level 1) or above
                base = ".".join(package.split(".")[: 3 - node.level] + ([base] if base else []))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["dpauc_tf", "mechanisms"] and len(parts) >= 3 and parts[2] in modules:
                found.add(parts[2])
    found.discard(own)
    return found


def _layer_violations(layers: list[set[str]], imports: dict[str, set[str]]) -> list[str]:
    rank = {module: i for i, layer in enumerate(layers) for module in layer}
    return sorted(
        f"{module} imports {other}"
        for module, others in imports.items()
        for other in others
        if rank[other] > rank[module]
    )


def _cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(imports.get(node, ())):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(imports):
        if node not in index:
            connect(node)
    return found


def _mechanism_graph() -> dict[str, set[str]]:
    return {
        path.stem: _mechanism_imports(path.read_text(), path.stem)
        for path in sorted((PACKAGE / "mechanisms").glob("*.py"))
        if path.stem != "__init__"  # loads its public names lazily, by name
    }


def test_mechanisms_import_by_their_layer_order_and_in_no_circle():
    graph = _mechanism_graph()
    placed = set().union(*MECHANISM_LAYERS)
    assert set(graph) <= placed, f"place {sorted(set(graph) - placed)} in MECHANISM_LAYERS"
    assert _layer_violations(MECHANISM_LAYERS, graph) == []
    assert _cycles(graph) == []  # function-level imports included


def test_the_mechanism_layer_check_can_fail():
    """An upward import (the registry read by the protocol) and a circle are both flagged."""
    graph = {"base": {"registry"}, "registry": {"base"}, "capabilities": set()}
    assert _layer_violations(MECHANISM_LAYERS, graph) == ["base imports registry"]
    assert _cycles(graph) == [["base", "registry"]]
    inside = "def f():\n    from .registry import capabilities_of\n"
    assert _mechanism_imports(inside, "base") == {"registry"}
