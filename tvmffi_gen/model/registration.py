"""How a generated module marks a class as a registered type: the ``@_bind.register(type_key)``
decorator. Written by the renderer (``decorator_head``), read back from a module's syntax tree
(``registered_key``) where the source is all there is: a ``--use`` package's classes
(``model.uses``) and the API of a module in the output folder (``write.api_changes``); with it,
where a registered class declares its fields (``class_statements``)."""

from __future__ import annotations

import ast

from ..registry.runtime_files import fields_class

__all__ = ["DECORATOR", "class_statements", "decorator_head", "registered_key"]

#: The decorator a registered class carries, as the generated code spells it (its alias
#: ``_bind`` is the one every generated module imports ``tvmffi_runtime.bind`` under).
DECORATOR = ("_bind", "register")


def decorator_head() -> str:
    """``@_bind.register(``: the decorator's text before its arguments (the type key first, then
    keywords such as ``constructible=False``)."""
    return f"@{'.'.join(DECORATOR)}("


def registered_key(cls: ast.ClassDef) -> str | None:
    """The type key the class is registered under, or None for a class without the decorator."""
    for deco in cls.decorator_list:
        if (
            isinstance(deco, ast.Call)
            and isinstance(deco.func, ast.Attribute)
            and isinstance(deco.func.value, ast.Name)
            and (deco.func.value.id, deco.func.attr) == DECORATOR
            and deco.args
            and isinstance(deco.args[0], ast.Constant)
            and isinstance(deco.args[0].value, str)
        ):
            return deco.args[0].value
    return None


def class_statements(cls: ast.ClassDef) -> list[ast.stmt]:
    """The statements of a registered class's body that declare its members, each field
    declaration of its nested fields class (``register`` puts them on the class) in that class's
    place; a package generated before the nested class declares its fields in the body itself."""
    out: list[ast.stmt] = []
    for stmt in cls.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == fields_class():
            out += stmt.body
        else:
            out.append(stmt)
    return out
