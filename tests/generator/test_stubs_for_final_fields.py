"""How ``--stubs-for`` declares a read-only registry field (issue 35, 8): ``Final[T]``, which every
language server shows with its type and as read-only (jedi labels a property ``property name``,
with no type), except where a checker would refuse it: a class deriving from it declares the name
again (no ``Final`` name may be redeclared), or the module binds ``Final`` to something else.

The whole path, from a library through stubgen, is test_stubs_for.py's (``Var.name``); here each
exception on a registry built by hand.
"""

from __future__ import annotations

from tvmffi_gen.registry.snapshot import FieldSnap, TypeSnap
from tvmffi_gen.stubs.collected import Collection, RegisteredClass
from tvmffi_gen.stubs.registry_text import class_members, names_below
from tvmffi_gen.stubs.resolve import StubContext

STR = {"type": "str"}


def _collection() -> Collection:
    """``t.Base`` (read-only ``name`` and ``size``) and ``t.Leaf`` deriving from it, whose stub
    body declares ``name`` again (as tvm's ``DataflowVar`` annotates ``name: str``)."""
    base = TypeSnap("t.Base", ["ffi.Object"], fields=[FieldSnap("name", schema=STR), FieldSnap("size", schema=STR)])
    leaf = TypeSnap("t.Leaf", ["ffi.Object", "t.Base"])
    return Collection(
        package="pkg",
        types={"t.Base": base, "t.Leaf": leaf},
        classes={
            "t.Base": RegisteredClass("pkg.nodes", "Base", paths=["pkg.nodes.Base", "pkg.Base"]),
            "t.Leaf": RegisteredClass("pkg.nodes", "Leaf", paths=["pkg.nodes.Leaf"], bases=["pkg.nodes.Base"]),
        },
    )


def _members(
    module_names: frozenset[str] = frozenset(), declarations: dict[str, tuple[list[str], set[str]]] | None = None
) -> str:
    data = _collection()
    below = names_below(data, {"t.Leaf": {"name"}}, declarations or {})
    ctx = StubContext(data, {k: c.path for k, c in data.classes.items()}, "pkg.nodes", module_names=module_names)
    text = class_members(ctx, "t.Base", set(), set(), below.get("t.Base", set()))
    assert ("from typing import Final" in ctx.imports) == ("Final" in text)
    return text


def test_a_field_no_class_below_declares_again_is_final() -> None:
    assert "    size: Final[str]\n" in _members()


def test_a_field_a_class_below_declares_again_stays_a_property() -> None:
    text = _members()
    assert "    @property\n    def name(self) -> str: ...\n" in text
    assert "name: Final" not in text


def test_a_module_binding_final_itself_keeps_properties() -> None:
    text = _members(module_names=frozenset({"Final"}))
    assert "Final" not in text
    assert "    @property\n    def size(self) -> str: ...\n" in text


def test_a_field_an_unregistered_class_below_declares_again_stays_a_property() -> None:
    """tvm's tile ops: Python classes deriving (through one another) from a registered class whose
    path they import by another name (``pkg.Base``, a re-export), declaring ``op: Incomplete``."""
    declarations = {
        "pkg.ops.Unary": (["pkg.Base"], set()),
        "pkg.ops.Zero": (["pkg.ops.Unary"], {"size"}),
    }
    text = _members(declarations=declarations)
    assert "    @property\n    def size(self) -> str: ...\n" in text
    assert "size: Final" not in text
