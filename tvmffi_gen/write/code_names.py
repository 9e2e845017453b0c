"""The names a piece of Python code binds and the names it uses, read from its ``ast``.

What regeneration needs to know about code it did not write: which names a user's member binds
(to find one that clashes with a generated member), which module-level names it reads (to find
one the library dropped), and the string names an ``__all__`` lists.
"""

from __future__ import annotations

import ast

from ..registry.runtime_files import fields_class

__all__ = ["bound_names", "listed_names", "module_names", "star_imported", "target_names", "used_names"]


def target_names(target: ast.expr) -> list[str]:
    """Names an assignment target binds (``a``, ``a, *b``; not ``a.x`` or ``a[0]``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in target_names(t)]
    return []


def bound_names(body: list[ast.stmt]) -> list[str]:
    """Names statements bind in their scope: defs, classes, assignment and annotation targets,
    imports, also inside ``if``/``try``/``with``/``for`` blocks (augmented assignments extend a
    name rather than bind it, and ``from __future__`` binds nothing). A generated class's
    nested fields class binds its fields too: ``register`` puts them on the class."""
    names: list[str] = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(stmt.name)
            if isinstance(stmt, ast.ClassDef) and stmt.name == fields_class():
                names += bound_names(stmt.body)
        elif isinstance(stmt, ast.Assign):
            names += [n for t in stmt.targets for n in target_names(t)]
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.append(stmt.target.id)
        elif isinstance(stmt, ast.Import):
            names += [a.asname or a.name.split(".")[0] for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and stmt.module != "__future__":
            names += [a.asname or a.name for a in stmt.names if a.name != "*"]
        elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            if isinstance(stmt, ast.For):
                names += target_names(stmt.target)
            for part in ("body", "orelse", "finalbody"):
                names += bound_names(getattr(stmt, part, []))
            for handler in getattr(stmt, "handlers", []):
                names += bound_names(handler.body)
    return names


def module_names(text: str) -> set[str]:
    """The names a module's top level binds."""
    return set(bound_names(ast.parse(text).body))


def used_names(tree: ast.Module) -> set[str]:
    """Names a piece of code reads that it does not bind itself (parameters, locals, imports,
    nested definitions): the names it needs from its module."""
    used: set[str] = set()
    local: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            (used if isinstance(n.ctx, ast.Load) else local).add(n.id)
        elif isinstance(n, ast.arg):
            local.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not tree.body[0]:
            local.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            local.update(a.asname or a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            local.add(n.name)
    return used - local


def listed_names(tree: ast.Module) -> list[str] | None:
    """The names of ``__all__ = [...]`` (or a tuple) when it lists string literals, else None."""
    if len(tree.body) != 1 or not isinstance(tree.body[0], (ast.Assign, ast.AnnAssign)):
        return None
    value = tree.body[0].value
    if not isinstance(value, (ast.List, ast.Tuple)):
        return None
    names = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return names if len(names) == len(value.elts) else None


def star_imported(tree: ast.Module) -> bool:
    """Whether the code holds a ``from MODULE import *`` anywhere (it may bind any name)."""
    return any(a.name == "*" for s in ast.walk(tree) if isinstance(s, ast.ImportFrom) for a in s.names)
