"""No two modules of dpauc_tf import each other, directly or through others (checked on the
source). Two readings: the imports a module runs when it is loaded (module level, under ``if``
and ``try`` too), and every import, those inside functions included (a function-level import
that closes a circle only postpones it: issue 31 counted 140 of them holding circles)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "dpauc_tf"


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def _imports(tree: ast.Module, package: str, *, in_functions: bool) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of the imports of ``tree`` (a module of ``package``): those run at
    load time, and with ``in_functions`` those inside functions and methods too. ``if
    TYPE_CHECKING:`` blocks never run; relative imports are resolved against ``package``."""
    found: list[tuple[str, list[str]]] = []
    parts = package.split(".")

    def absolute(node: ast.ImportFrom) -> str | None:
        if node.level == 0:
            return node.module
        base = parts[: len(parts) - (node.level - 1)]  # level 1: the package itself
        return ".".join([*base, *([node.module] if node.module else [])]) or None

    def visit(nodes):
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend((alias.name, []) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                name = absolute(node)
                if name:
                    found.append((name, [alias.name for alias in node.names]))
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.With):
                visit(node.body)
            elif isinstance(node, ast.ClassDef):
                visit(node.body)  # a class body runs at load time
            elif in_functions and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(node.body)
            elif in_functions and isinstance(node, (ast.For, ast.While, ast.AsyncFor)):
                visit(node.body)
                visit(node.orelse)
            elif in_functions and isinstance(node, ast.AsyncWith):
                visit(node.body)

    visit(tree.body)
    return found


def import_graph(package: Path = PACKAGE, *, in_functions: bool = False) -> dict[str, set[str]]:
    """``{module: modules of the package it imports}``: at load time, or anywhere in its
    source with ``in_functions``."""
    paths = {_module_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        own = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        tree = ast.parse(path.read_text())
        for module, names in _imports(tree, own, in_functions=in_functions):
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


def test_no_load_time_import_cycle_among_dpauc_tf_modules():
    graph = import_graph()
    assert len(graph) > 50 and "dpauc_tf.io.readers" in graph
    assert cycles(graph) == []


def test_no_import_cycle_among_dpauc_tf_modules_counting_function_level_imports():
    graph = import_graph(in_functions=True)
    assert len(graph) > 50 and "dpauc_tf.io.readers" in graph
    assert cycles(graph) == []


def test_the_cycle_check_can_fail():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    tree = ast.parse("import x\nif TYPE_CHECKING:\n    import y\ndef f():\n    import z\n")
    assert _imports(tree, "p", in_functions=False) == [("x", [])]
    assert _imports(tree, "p", in_functions=True) == [("x", []), ("z", [])]


def _write_package(root: Path, files: dict[str, str]) -> Path:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return root / "pkg"


def test_a_circle_held_by_a_function_level_import_is_found(tmp_path):
    """A synthetic package: ``a`` imports ``b`` at load time, ``b`` imports ``a`` inside a
    method (relative import) and ``c`` inside a function; ``c`` imports ``a`` at load time."""
    package = _write_package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": (
                "class B:\n    def f(self):\n        from . import a\n"
                "def g():\n    if True:\n        from pkg.c import h\n"
            ),
            "pkg/c.py": "import pkg.a\ndef h():\n    pass\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/d.py": "def f():\n    from ..a import x\n",
        },
    )
    assert cycles(import_graph(package)) == []
    graph = import_graph(package, in_functions=True)
    assert graph["pkg.b"] == {"pkg.a", "pkg.c"} and graph["pkg.sub.d"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
