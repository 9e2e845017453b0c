"""The rules ``tvmffi-gen --stubs-for PKG`` applies, tested on its functions directly: ``--exclude``
globs, the pinned release, public paths, generic arguments, the stubtest allowlist, and what
Apache TVM converts at the boundary that the registry's schemas do not say.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tvmffi_gen.stubs.conversions import Conversions


def test_exclude_globs_drop_whole_subtrees() -> None:
    from tvmffi_gen.stubs.importing import excluded

    assert excluded("tvm.contrib.hexagon.tools", ["tvm.contrib.*"])
    assert excluded("tvm.contrib", ["tvm.contrib"])
    assert not excluded("tvm.contribution", ["tvm.contrib"])
    assert not excluded("tvm.ir", ["tvm.contrib.*"])


def test_the_project_pins_the_stubbed_release() -> None:
    from tvmffi_gen.stubs.project import pinned_requirement

    assert pinned_requirement("apache-tvm", "0.27.0.post1") == "apache-tvm==0.27.*"
    assert pinned_requirement("mypkg", "") == "mypkg"


def test_public_path_is_the_shortest_exported_one() -> None:
    from tvmffi_gen.stubs.collected import RegisteredClass
    from tvmffi_gen.stubs.resolve import public_path

    info = RegisteredClass(
        "tvm.ir.prim.expr",
        "Ramp",
        paths=["tvm.ir.prim.expr.Ramp", "tvm.tirx.Ramp", "tvm.tirx.script.ramp", "tvm._hidden.Ramp"],
    )
    exports = {"tvm.tirx": {"Ramp"}, "tvm.ir.prim.expr": {"Ramp"}, "tvm._hidden": {"Ramp"}}
    assert public_path(info, exports) == "tvm.tirx.Ramp"
    # a path whose stub module does not export the name is not used
    assert public_path(info, {"tvm.ir.prim.expr": {"Ramp"}}) == "tvm.ir.prim.expr.Ramp"


def test_bare_generics_get_explicit_any_arguments() -> None:
    import libcst as cst

    from tvmffi_gen.stubs.fill_annotations import _spell_generics, stdlib_generic_names

    text = "from typing import Callable\nfrom .ir import Type\n"
    generic = stdlib_generic_names(text)

    def spell(annotation: str) -> str:
        new, _ = _spell_generics(cst.parse_expression(annotation), generic)
        return cst.Module([]).code_for_node(new)

    assert spell("list | None") == "list[Incomplete] | None"
    assert spell("dict[str, tuple]") == "dict[str, tuple[Incomplete, ...]]"
    assert spell("Callable") == "Callable[..., Incomplete]"
    assert spell("Type") == "Type"  # the package's own class named Type, not typing.Type
    assert spell("_tvm_ir.Type") == "_tvm_ir.Type"


def test_unmatched_excludes_are_the_globs_naming_no_module_or_package(tmp_path: Path) -> None:
    from tvmffi_gen.stubs.importing import unmatched_excludes

    pkg = tmp_path / "pkg"
    (pkg / "sub" / "deep").mkdir(parents=True)
    (pkg / "data").mkdir()  # no __init__.py: not a package
    for rel in ("__init__.py", "a.py", "sub/__init__.py", "sub/deep/__init__.py", "sub/deep/x.py", "data/y.py"):
        (pkg / rel).write_text("")
    globs = ["pkg.a", "pkg.sub", "pkg.sub.deep.*", "pkg.data", "pkg.data.y", "pkg.b*", "other", "pkg"]
    assert unmatched_excludes("pkg", [str(pkg)], globs) == ["pkg.data", "pkg.data.y", "pkg.b*", "other"]
    # a package that is a single module: only its own name matches
    assert unmatched_excludes("mod", [], ["mod", "mod.*", "m*"]) == ["mod.*"]


def test_the_allowlist_names_registry_members_no_stub_can_declare() -> None:
    from tvmffi_gen.stubs.allowlist import stubtest_allowlist
    from tvmffi_gen.stubs.collected import Collection

    field = {
        "name": "def",
        "doc": "",
        "schema": None,
        "writable": False,
        "has_default": False,
        "init": True,
        "kw_only": False,
    }
    data = {
        "package": "pkg",
        "ffi_api": {},
        "failed": {},
        "types": {"pkg.Stmt": {"ancestors": [], "fields": [field], "methods": [], "init": "method"}},
        "classes": {"pkg.Stmt": {"module": "pkg.stmt", "qualname": "Stmt", "python_init": True, "bases": []}},
    }
    text = stubtest_allowlist(Collection.from_dict(data), {"pkg.stmt": "class Stmt:\n    x: int\n"})
    assert "\npkg\\.stmt\\.Stmt\\.def\n" in text
    assert "# Registry members whose names are Python keywords" in text


class TestWhatTvmConvertsAtTheBoundary:
    """Apache TVM's C++ converts Python numbers into an ``ir.Expr`` argument, a dtype string or
    ``tvm_ffi.dtype`` into an ``ir.PrimType`` one, and reads a null ``ir.Span`` as None; the
    registry's schemas say none of it, so the stubs add it by type key. A collection made by hand
    (the keys and schemas as apache-tvm registers them), so CI needs no apache-tvm."""

    @staticmethod
    def _stubs(conversions: Conversions | None = None) -> dict[str, str]:
        from tvmffi_gen.stubs.collected import Collection
        from tvmffi_gen.stubs.conversions import BUILTIN
        from tvmffi_gen.stubs.rewrite import augment

        def cls(module: str, name: str, bases: list[str]) -> dict[str, object]:
            return {
                "module": module,
                "qualname": name,
                "paths": [f"{module}.{name}"],
                "bases": bases,
                "inherited": [],
                "late": {},
                "python_init": False,
                "hashable": True,
            }

        def fld(name: str, schema: dict[str, object]) -> dict[str, object]:
            return {
                "name": name,
                "schema": schema,
                "writable": False,
                "doc": "",
                "init": True,
                "has_default": False,
                "kw_only": False,
            }

        expr: dict[str, object] = {"type": "ir.Expr"}
        span: dict[str, object] = {"type": "ir.Span"}
        prim: dict[str, object] = {"type": "ir.PrimType"}
        obj = ["ffi.Object"]
        # the schema of ir.shape (result first), which ShapeExpr's hand-written __init__ forwards to
        shape_schema: dict[str, object] = {
            "type": "ffi.Function",
            "args": [
                {"type": "ffi.Array", "args": [expr]},
                {"type": "ffi.Array", "args": [expr]},
                {"type": "Optional", "args": [expr]},
            ],
        }
        data = {
            "package": "tvm",
            "modules": {"tvm.ir": {"path": "tvm/ir/__init__.py"}, "tvm.ir._ffi_api": {"path": "tvm/ir/_ffi_api.py"}},
            "classes": {
                "ir.Expr": cls("tvm.ir", "Expr", []),
                "ir.Span": cls("tvm.ir", "Span", []),
                "ir.PrimType": cls("tvm.ir", "PrimType", []),
                "ir.Cast": cls("tvm.ir", "Cast", ["tvm.ir.Expr"]),
                "my.Expr": cls("tvm.ir", "MyExpr", []),
                "ir.ShapeExpr": {
                    **cls("tvm.ir", "ShapeExpr", ["tvm.ir.Expr"]),
                    "python_init": True,
                    # its hand-written __init__ forwards values and span to ir.shape (child.py)
                    "forwards": {
                        "global_name": "ir.shape",
                        "via": "_ffi_api.shape",
                        "count": 2,
                        "params": {"values": 0, "span": 1},
                        "named": {"span": ["ir.Expr"]},  # the class its annotation names (Expr)
                        "schema": shape_schema,
                    },
                },
            },
            "types": {
                "ir.Expr": {"ancestors": obj, "fields": [fld("span", span)], "methods": [], "init": None},
                "ir.Span": {"ancestors": obj, "fields": [], "methods": [], "init": None},
                "ir.PrimType": {"ancestors": obj, "fields": [], "methods": [], "init": None},
                "ir.Cast": {
                    "ancestors": [*obj, "ir.Expr"],
                    "fields": [fld("dtype", prim), fld("value", expr)],
                    "methods": [],
                    "init": "auto",
                },
                "ir.ShapeExpr": {"ancestors": [*obj, "ir.Expr"], "fields": [], "methods": [], "init": None},
                "my.Expr": {
                    "ancestors": obj,
                    "fields": [fld("other", {"type": "my.Expr"})],
                    "methods": [],
                    "init": "auto",
                },
            },
            "ffi_api": {
                "tvm.ir._ffi_api": [
                    {
                        "name": "cast",
                        "global_name": "ir.cast",
                        "doc": "",
                        "schema": {"type": "ffi.Function", "args": [expr, prim, expr, span]},
                    },
                    {
                        "name": "shape",
                        "global_name": "ir.shape",
                        "doc": "",
                        "schema": shape_schema,
                    },
                    {
                        "name": "visit",
                        "global_name": "ir.visit",
                        "doc": "",
                        "schema": {
                            "type": "ffi.Function",
                            "args": [{"type": "None"}, {"type": "ffi.Function", "args": [expr, expr]}],
                        },
                    },
                ]
            },
        }
        stubs = {
            "tvm.ir": "class Expr: ...\nclass Span: ...\nclass PrimType: ...\nclass Cast(Expr): ...\n"
            "class MyExpr: ...\n"
            "class ShapeExpr(Expr):\n"
            "    def __init__(self, values: list[Expr] | tuple[Expr, ...], span: Expr | None = None, note: str = '') "
            "-> None: ...\n",
            "tvm.ir._ffi_api": "",
        }
        out, _ = augment(Collection.from_dict(data), stubs, conversions or BUILTIN)
        return out

    def test_arguments_accept_what_tvm_converts_at_every_depth(self) -> None:
        api = self._stubs()["tvm.ir._ffi_api"]
        assert (
            "def cast(_0: _tvm_ir.PrimType | str | _tvm_ffi.dtype, _1: _tvm_ir.Expr | int | float, "
            "_2: _tvm_ir.Span | None, /) -> _tvm_ir.Expr:"
        ) in api
        assert (
            "def shape(_0: _abc.Sequence[_tvm_ir.Expr | int | float], _1: _tvm_ir.Expr | int | float | None, /)"
            " -> _tvm_ffi.Array[_tvm_ir.Expr]:"
        ) in api
        # a callback receives what native code sends (an Expr as it is) and may return a number
        assert "def visit(_0: _abc.Callable[[_tvm_ir.Expr], _tvm_ir.Expr | int | float], /) -> None:" in api

    def test_fields_read_a_null_span_as_none_and_constructors_accept_numbers(self) -> None:
        ir = self._stubs()["tvm.ir"]
        # read-only fields are Final (no class below declares them again); the module's own classes
        # are named by their own names
        assert "    span: Final[Span | None]\n" in ir
        assert "    value: Final[Expr]\n" in ir  # what a field gives is an Expr as it is
        assert (
            "    def __init__(self, span: Span | None, dtype: PrimType | str | _tvm_ffi.dtype, "
            "value: Expr | int | float) -> None: ..."
        ) in ir
        # another package's types named alike are left as their schemas say
        assert "    def __init__(self, other: MyExpr) -> None: ..." in ir

    def test_a_constructor_forwarding_to_a_registry_function_takes_what_it_converts(self) -> None:
        ir = self._stubs()["tvm.ir"]
        # the package's members first, then the schema's (Expr also a number, at any depth); a
        # member already there is not repeated, by its text (None) or as the class the package's
        # annotation names (its Expr, the schema's Expr); what is not forwarded is as written
        assert (
            "    def __init__(self, values: list[Expr] | tuple[Expr, ...] | _abc.Sequence[Expr | int | float], "
            "span: Expr | None | int | float = ..., note: str = ...) -> None: ..."
        ) in ir, ir

    def test_a_users_conversions_file_adds_to_the_built_in_ones(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from tvmffi_gen.stubs.conversions import ENV_VAR, load_conversions
        from tvmffi_gen.stubs.errors import StubsError

        mine = tmp_path / "mine.json"
        mine.write_text(json.dumps({"accepted": {"my.Expr": ["int"], "ir.Expr": ["bool"]}}))
        monkeypatch.setenv(ENV_VAR, str(mine))
        conversions = load_conversions()
        assert conversions.accepted["ir.Expr"] == ("int", "float", "bool")  # added to tvm's
        ir = self._stubs(conversions)["tvm.ir"]
        assert "    def __init__(self, other: MyExpr | int) -> None: ..." in ir
        mine.write_text(json.dumps({"accepted": {"my.Expr": ["int; import os"]}}))
        with pytest.raises(StubsError, match=r"mine\.json: accepted\['my\.Expr'\]: expected a list of annotations"):
            load_conversions()
        monkeypatch.setenv(ENV_VAR, str(tmp_path / "missing.json"))
        with pytest.raises(StubsError, match=r"missing\.json: not a readable JSON file"):
            load_conversions()


def test_union_text_keeps_the_written_members_first_and_drops_repeated_ones() -> None:
    import libcst as cst

    from tvmffi_gen.stubs.forwarders import union_text

    def widened(written: str, extra: str) -> str | None:
        new = union_text(cst.parse_expression(written), extra)
        return None if new is None else cst.Module([]).code_for_node(new)

    assert widened("Span | None", "_tvm_ir.Span | None") == "Span | None | _tvm_ir.Span"
    assert widened("int | None", "None | int") is None  # nothing to add
    assert widened("Optional[int]", "int") == "Optional[int] | int"  # a member is compared as a whole
    assert widened("_t.Any", "int") is None and widened("Incomplete", "int") is None  # takes anything
    # a generic whose arguments take anything already takes every spelling of it
    assert widened("Callable[..., Incomplete] | None", "_abc.Callable[[int], int]") is None
    assert widened("Callable | None", "_abc.Callable[[int], int]") is None  # bare, spelled out later
    assert widened("list[Incomplete]", "_abc.Sequence[int]") == "list[Incomplete] | _abc.Sequence[int]"


_FORWARDERS = """
from typing import Optional

import tvm_ffi
from tvm_ffi import get_global_func


class _Api:  # a namespace, as an _ffi_api module is
    Bytes = get_global_func("ffi.Bytes")
    Contains = get_global_func("ffi.ArrayContains")


api = _Api()


def plain(x):
    return x


class Forward:
    def __init__(self, data: bytes, note: str = "") -> None:
        \"\"\"A docstring.\"\"\"
        self.__init_handle_by_constructor__(api.Bytes, data)


class Named:
    def __init__(self, arr: "tvm_ffi.Array | None", item: Optional[tvm_ffi.Map]) -> None:
        self.__init_handle_by_constructor__(api.Contains, arr, item)


class Keyword:
    def __init__(self, data: bytes) -> None:
        self.__init_handle_by_constructor__(api.Bytes, data=data)


class FfiInit:  # tvm_ffi's idiom: the type's own registered __ffi_init__
    def __init__(self, fn):
        self.__ffi_init__(fn)


class Expression:
    def __init__(self, data: bytes) -> None:
        self.__init_handle_by_constructor__(api.Bytes, bytes(data))


class Star:
    def __init__(self, *data: bytes) -> None:
        self.__init_handle_by_constructor__(api.Bytes, data)


class Statements:
    def __init__(self, data: bytes) -> None:
        data = data or b"x"
        self.__init_handle_by_constructor__(api.Bytes, data)


class NotRegistry:
    def __init__(self, data: bytes) -> None:
        self.__init_handle_by_constructor__(plain, data)


class Missing:
    def __init__(self, data: bytes) -> None:
        self.__init_handle_by_constructor__(api.Nothing, data)
"""


def test_forwarding_constructors_are_read_from_their_source(tmp_path: Path) -> None:
    import importlib
    import sys

    from tvmffi_gen.stubs.forwarders import forwarding

    (tmp_path / "fwd_probe.py").write_text(_FORWARDERS)
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("fwd_probe")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fwd_probe", None)
    record, why = forwarding(mod.Forward.__init__)
    assert why == "forwards" and record is not None
    assert (record.global_name, record.via, record.count, record.params) == (
        "ffi.Bytes",
        "api.Bytes",
        1,
        {"data": 0},
    )
    assert record.schema is not None and record.named == {}  # bytes: no registered class
    named, _ = forwarding(mod.Named.__init__)
    assert named is not None and named.named == {"arr": ["ffi.Array"], "item": ["ffi.Map"]}
    assert forwarding(mod.Keyword.__init__) == (None, "keyword arguments")
    assert forwarding(mod.Expression.__init__) == (None, "an argument is not a parameter")
    assert forwarding(mod.Star.__init__) == (None, "an argument is not a parameter")
    assert forwarding(mod.Statements.__init__) == (None, "other statements")
    assert forwarding(mod.NotRegistry.__init__) == (None, "callee is not a tvm_ffi.Function")
    assert forwarding(mod.Missing.__init__) == (None, "callee not found")
    assert forwarding(object.__init__) == (None, "not a plain function")
    # self.__ffi_init__(...) forwards to the __ffi_init__ of the type the class is registered for
    assert forwarding(mod.FfiInit.__init__) == (None, "no type key")
    assert forwarding(mod.FfiInit.__init__, "no.SuchType") == (None, "type key not registered")
    assert forwarding(mod.FfiInit.__init__, "ffi.Object") == (None, "no schema")


def test_the_pruned_libcst_walk_rewrites_as_a_full_walk_does() -> None:
    """``StubTransformer`` descends only into what can hold a class, a function or an annotated
    assignment; ``FillAnnotations`` over it gives the text a walk of every node gives, also for a
    function whose body holds a compound statement (descended into) and a nested class."""
    import libcst as cst

    from tvmffi_gen.stubs.fill_annotations import FillAnnotations
    from tvmffi_gen.stubs.transforms import DeclaredMetaclass

    class Full(FillAnnotations):
        def on_visit(self, node: cst.CSTNode) -> bool:
            return cst.CSTTransformer.on_visit(self, node)

    source = (
        "import typing\n"
        "x: list\n"
        "def f(a, b: dict = None, *c: tuple, d: typing.Callable = 1, **e) -> list: ...\n"
        "def g(a: list) -> dict:\n"
        "    if a:\n"
        "        def inner(y: set, z=None) -> type: ...\n"
        "    ...\n"
        "class C:\n"
        "    attr: frozenset\n"
        "    def m(self, cls: type, q: list = []) -> None: ...\n"
        "    @staticmethod\n"
        "    def s(v) -> tuple: ...\n"
        "    class D:\n"
        "        def n(self, w: dict) -> set: ...\n"
        "if typing.TYPE_CHECKING:\n"
        "    def h(k: list = None): ...\n"
    )
    generic = {"list", "dict", "tuple", "set", "frozenset", "type", "typing.Callable"}
    pruned, full = FillAnnotations(generic), Full(generic)
    text = cst.parse_module(source).visit(pruned).code
    assert text == cst.parse_module(source).visit(full).code
    assert pruned.used and full.used
    assert "def inner(y: set[Incomplete], z: Incomplete = ...) -> type[Incomplete]: ..." in text
    assert "def h(k: list[Incomplete] | None = ...) -> Incomplete: ..." in text
    assert "        def n(self, w: dict[Incomplete, Incomplete]) -> set[Incomplete]: ..." in text
    meta = DeclaredMetaclass({"C.D"})
    assert "class D(metaclass=type):" in cst.parse_module(source).visit(meta).code


def test_a_result_of_a_runtime_type_the_package_registers_again_is_its_class() -> None:
    """tvm registers ``tvm.runtime.Module`` for ``ffi.Module``: a returned module is one of those
    at run time, a parameter still takes any ``tvm_ffi.Module``; a package that registers nothing
    for the key (tvm_ffi itself) keeps tvm_ffi's spelling."""
    from tvmffi_gen.model.typemap import TypeRef
    from tvmffi_gen.stubs.collected import Collection, RegisteredClass
    from tvmffi_gen.stubs.resolve import StubContext

    module = TypeRef("ffi.Module")
    listed = TypeRef("ffi.Array", (module,))
    tvm = Collection("tvm", classes={"ffi.Module": RegisteredClass("tvm.runtime.module", "Module")})
    ctx = StubContext(tvm, {"ffi.Module": "tvm.runtime.Module"}, "tvm.relax")
    assert ctx.annotate(module, "return", "f") == "_tvm_runtime.Module"
    assert ctx.annotate(listed, "return", "f") == "_tvm_ffi.Array[_tvm_runtime.Module]"
    assert ctx.annotate(module, "param", "f") == "_tvm_ffi.Module"
    ffi = Collection("tvm_ffi", classes={"ffi.Module": RegisteredClass("tvm_ffi.module", "Module")})
    ctx = StubContext(ffi, {"ffi.Module": "tvm_ffi.Module"}, "tvm_ffi.cpp")
    assert ctx.annotate(module, "return", "f") == "_tvm_ffi.Module"


def test_registry_members_follow_the_package_generators_rules() -> None:
    # one rule each, as the package's constructors have them: a parameter whose native default is
    # None takes None whatever its schema says, and a malformed schema is a warning naming the field
    from tvmffi_gen.stubs.collected import Collection
    from tvmffi_gen.stubs.rewrite import augment

    def fld(name: str, schema: object, **more: object) -> dict[str, object]:
        return {"name": name, "schema": schema, "writable": True, "doc": "", "init": True, "kw_only": False, **more}

    data = {
        "package": "pkg",
        "modules": {"pkg": {"path": "pkg/__init__.py"}},
        "classes": {
            "pkg.Node": {
                "module": "pkg",
                "qualname": "Node",
                "paths": ["pkg.Node"],
                "bases": [],
                "inherited": [],
                "late": {},
                "python_init": False,
                "hashable": True,
            }
        },
        "types": {
            "pkg.Node": {
                "ancestors": ["ffi.Object"],
                "fields": [
                    fld("bad", {"type": 3}, has_default=False),
                    fld("label", {"type": "ffi.String"}, has_default=True, default=None),
                ],
                "methods": [],
                "init": "auto",
            }
        },
    }
    out, warnings = augment(Collection.from_dict(data), {"pkg": "class Node: ...\n"})
    assert "def __init__(self, bad: _t.Any, label: str | None = ...) -> None: ..." in out["pkg"], out["pkg"]
    assert warnings == [
        "field pkg.Node.bad: malformed type schema (expected an object with a 'type' string, got"
        " {'type': 3}); typed as Any"
    ], warnings
