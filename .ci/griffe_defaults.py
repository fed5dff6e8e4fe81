"""A griffe extension for the docs site: parameter defaults that name a module constant show
its value (``num_thresholds=200``, not ``num_thresholds=DEFAULT_NUM_THRESHOLDS``).

Only constants whose value is a short literal (a number, a string, None, a bool) are shown.
Loaded by mkdocs.yml (``extensions: [.ci/griffe_defaults.py:ConstantDefaults]``).
"""

from __future__ import annotations

import ast
import re
from typing import Any

import griffe

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _literal(value: str) -> bool:
    """A short constant: a literal, or arithmetic on number literals (``1 << 20``)."""
    try:
        tree = ast.parse(value, mode="eval")
    except SyntaxError:
        return False
    allowed = (ast.Expression, ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop)
    return len(value) <= 40 and all(isinstance(node, allowed) for node in ast.walk(tree))


def _value_of(scope: griffe.Object, name: str) -> str | None:
    try:
        path = scope.resolve(name.split(".")[0])
        member = scope.modules_collection[path + name[len(name.split(".")[0]) :]]
        if member.is_alias:
            member = member.final_target
    except Exception:  # unresolvable (external, not loaded): keep the name
        return None
    if not member.is_attribute or member.value is None:
        return None
    value = str(member.value)
    return value if _literal(value) else None


class ConstantDefaults(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        seen: set[int] = set()

        def walk(obj: griffe.Object) -> None:
            if id(obj) in seen or obj.is_alias:
                return
            seen.add(id(obj))
            # a dataclass's fields: its synthesized __init__ takes their values as defaults
            parent = obj.parent
            if obj.is_attribute and parent is not None and parent.is_class:
                value = obj.value
                if value is not None and NAME.fullmatch(str(value)):
                    literal = _value_of(parent, str(value))
                    if literal is not None:
                        obj.value = literal
            if obj.is_function:
                for parameter in obj.parameters:
                    default = parameter.default
                    if default is None or not NAME.fullmatch(str(default)):
                        continue
                    value = _value_of(obj.parent or obj, str(default))
                    if value is not None:
                        parameter.default = value
            elif obj.is_attribute and obj.parent is not None and obj.parent.is_class:
                # a dataclass field: its __init__ (griffe's dataclasses extension, which may
                # run after this one) takes the field's value as the parameter's default
                if obj.value is not None and NAME.fullmatch(str(obj.value)):
                    value = _value_of(obj.parent, str(obj.value))
                    if value is not None:
                        obj.value = value
            for member in obj.members.values():
                if not member.is_alias:
                    walk(member)

        walk(pkg)
