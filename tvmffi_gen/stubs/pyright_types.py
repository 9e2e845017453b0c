"""pyright's printed result of a function (``oracle.py``) as a stub's annotation.

pyright prints a class by its own name (``Expr``), and in full (``tvm.ir.expr.Call``) where two
classes of one name meet in one type: the probe puts a class of each name several classes of
the running process share beside every result (``World.ambiguous``), so those are printed in
full. A name is read as the class of the running process (``Collection.world_classes``) with
that full name, or the one with that short name; a name neither tells, or any form a stub cannot spell
(a callable's signature, a type variable ``T@f``, ``Self@C``, a module, ``Never``), leaves the
result ``Incomplete``, as it was. ``Unknown`` inside a type is ``Incomplete`` (``list[Unknown]``
is ``list[Incomplete]``); a ``Literal`` of strings, numbers or booleans is its class (``str``),
what a hand-written stub declares.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable

from .collected import ReturnSource

__all__ = ["World", "stub_annotation"]

#: typing's names pyright prints, spelled through the stubs' ``import typing as _t``
_TYPING = {
    "Any", "Iterator", "Iterable", "Generator", "AsyncIterator", "AsyncIterable", "AsyncGenerator",
    "Coroutine", "Awaitable", "Sequence", "MutableSequence", "Mapping", "MutableMapping", "Collection",
    "Container", "Reversible", "AbstractSet", "MutableSet", "Hashable", "Sized",
}  # fmt: skip

#: classes pyright names that no module binds (``types``' own)
_STDLIB = {
    "NotImplementedType": ReturnSource("class", "types:NotImplementedType"),
    "ModuleType": ReturnSource("class", "types:ModuleType"),
    "FunctionType": ReturnSource("class", "types:FunctionType"),
    "EllipsisType": ReturnSource("class", "types:EllipsisType"),
    "TracebackType": ReturnSource("class", "types:TracebackType"),
}

_BUILTINS = {n for n, v in vars(builtins).items() if isinstance(v, type)}


class _Unspellable(Exception):
    """A part of pyright's type a stub cannot name."""


class World:
    """The classes of the running process (``Collection.world_classes``), to read pyright's
    names with."""

    def __init__(self, classes: dict[str, ReturnSource]) -> None:
        self.classes = classes
        self.by_short: dict[str, list[str]] = {}
        for full in sorted(classes):
            self.by_short.setdefault(full.rsplit(".", 1)[-1], []).append(full)

    def ambiguous(self) -> list[str]:
        """The names several classes share: pyright must print them in full (``oracle.py``)."""
        return sorted(n for n, fulls in self.by_short.items() if len(fulls) > 1 and n.isidentifier())

    def lookup(self, name: str) -> ReturnSource | None:
        """The class pyright's ``name`` denotes (a dotted name is a class's full name), None when
        no class of the running process, or more than one, has it."""
        if "." in name:
            return self.classes.get(name)
        found = self.by_short.get(name, [])
        return self.classes[found[0]] if len(found) == 1 else _STDLIB.get(name) if not found else None


def stub_annotation(printed: str, world: World, spell: Callable[[ReturnSource], str | None]) -> str | None:
    """The annotation a stub writes for pyright's ``printed`` result of a function (``spell``
    names a class as the stub does), None when it would say nothing more than ``Incomplete`` or
    cannot be spelled."""
    try:
        tree = ast.parse(printed, mode="eval").body
    except SyntaxError:
        return None
    try:
        text = _Spell(world, spell).type(tree)
    except _Unspellable:
        return None
    return None if text in ("Incomplete", "Incomplete | None") else text


class _Spell:
    def __init__(self, world: World, spell: Callable[[ReturnSource], str | None]) -> None:
        self.world = world
        self.spell = spell

    def type(self, node: ast.expr) -> str:
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr)) or _is_literal(node):
            return " | ".join(dict.fromkeys(self._union(node)))
        if isinstance(node, ast.Constant) and node.value is None:
            return "None"
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.name(ast.unparse(node))
        if isinstance(node, ast.Subscript):
            head = ast.unparse(node.value)
            args = [self._argument(a) for a in _elements(node.slice)]
            return f"{self.name(head)}[{', '.join(args)}]"
        raise _Unspellable(ast.unparse(node))

    def _union(self, node: ast.expr) -> list[str]:
        """The members of a union (a ``Literal``'s values as their classes)."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return [*self._union(node.left), *self._union(node.right)]
        if isinstance(node, ast.Subscript) and _is_literal(node):
            return [self._literal_class(v) for v in _elements(node.slice)]
        return [self.type(node)]

    def _argument(self, node: ast.expr) -> str:
        if isinstance(node, ast.Constant) and node.value is Ellipsis:
            return "..."
        if isinstance(node, ast.Tuple) and not node.elts:
            return "()"
        if isinstance(node, ast.List):  # a callable's parameters: not spelled
            raise _Unspellable(ast.unparse(node))
        return self.type(node)

    def _literal_class(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name) and node.id in ("True", "False"):
            return "bool"
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes, int, float, bool)):
            return type(node.value).__name__
        if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
            return self._literal_class(node.operand)
        raise _Unspellable(ast.unparse(node))  # an enum member

    def name(self, name: str) -> str:
        if name == "Unknown":
            return "Incomplete"
        if name == "LiteralString":
            return "str"
        if name in ("None", "NoneType"):
            return "None"
        local = self.world.lookup(name)
        if name in _BUILTINS and (local is None or local.target == f"builtins:{name}"):
            return name
        if name in _TYPING and (local is None or local.target.split(":")[0] in ("typing", "collections.abc")):
            return f"_t.{name}"
        if local is None:
            raise _Unspellable(name)
        spelled = self.spell(local)
        if spelled is None:
            raise _Unspellable(name)
        return spelled


def _is_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Subscript) and ast.unparse(node.value) == "Literal"


def _elements(node: ast.expr) -> list[ast.expr]:
    """A subscript's arguments (``tuple[()]``'s one: the empty tuple)."""
    return list(node.elts) if isinstance(node, ast.Tuple) and node.elts else [node]
