"""No two modules of dpauc_tf import each other, directly or through others (checked on the
source): the imports a module runs when it is loaded (module level, not inside a function,
which runs later) form no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dpauc_tf"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _load_time_imports(tree: ast.Module) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of the imports run at load time (under ``if`` and ``try`` too);
    ``if TYPE_CHECKING:`` blocks never run."""
    found: list[tuple[str, list[str]]] = []

    def visit(nodes):
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend((alias.name, []) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.append((node.module, [alias.name for alias in node.names]))
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(tree.body)
    return found


def import_graph() -> dict[str, set[str]]:
    """``{module: modules of dpauc_tf it imports at load time}``."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        edges = set()
        for module, names in _load_time_imports(ast.parse(path.read_text())):
            if module not in paths:
                continue
            # ``from package import submodule`` imports the submodule (the package is being
            # loaded already: a parent is always loaded before its submodules)
            submodules = {f"{module}.{n}" for n in names if f"{module}.{n}" in paths}
            edges.update(submodules)
            if not names or len(submodules) < len(names):
                edges.add(module)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_no_import_cycle_among_dpauc_tf_modules():
    graph = import_graph()
    assert len(graph) > 50 and "dpauc_tf.io.readers" in graph
    assert cycles(graph) == []


def test_the_cycle_check_can_fail():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    tree = ast.parse("import x\nif TYPE_CHECKING:\n    import y\ndef f():\n    import z\n")
    assert _load_time_imports(tree) == [("x", [])]
