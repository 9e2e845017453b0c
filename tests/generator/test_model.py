"""Model and rendering from snapshots alone (no library): names, collisions, types, mypy."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from tvmffi_gen.model.builder import build_model
from tvmffi_gen.model.naming import Scope, py_name, sanitize, snake_case
from tvmffi_gen.model.typemap import Annotator, SchemaError, parse_schema
from tvmffi_gen.registry.snapshot import FieldSnap, FunctionSnap, MethodSnap, Snapshot, TypeSnap
from tvmffi_gen.render.package import render_package
from tvmffi_gen.render.suppressions import PYRIGHT_RULES_OFF, modules_on_import_cycles
from tvmffi_gen.verify.checkers import run_mypy, run_pyright
from tvmffi_gen.write.writer import apply_plan, plan_output

from mypy_reports import lines_by_package


def fn_schema(ret: Any, *params: Any) -> dict[str, Any]:
    return {"type": "ffi.Function", "named_args": {"return": [ret], "params": list(params)}}


INT = {"type": "int"}
STR = {"type": "ffi.String"}


def obj(key: str) -> dict[str, Any]:
    return {"type": key}


def make_snapshot(types: list[TypeSnap], functions: list[FunctionSnap]) -> Snapshot:
    return Snapshot(
        library="libfake.so",
        library_path="/nonexistent/libfake.so",
        tvm_ffi_version=[0, 1, 16],
        types=types,
        functions=functions,
        external_types={"ffi.Object": [], "ffi.Array": ["ffi.Object"], "other.Base": ["ffi.Object"]},
    )


# --------------------------------------------------------------------------------------------
# naming
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("def", "def_"),
        ("class", "class_"),
        ("match", "match_"),
        ("type", "type_"),
        ("int", "int_"),
        ("my-field", "my_field"),
        ("3d", "_3d"),
        ("", "__"),
        ("__init__", "x__init__"),
        ("_ffi_fn_x", "x_ffi_fn_x"),
        ("ok_name", "ok_name"),
    ],
)
def test_py_name(raw: str, expected: str) -> None:
    assert py_name(raw) == expected


def test_scope_appends_underscores_in_claim_order() -> None:
    scope = Scope()
    assert [scope.claim(n) for n in ["IntImm", "IntImm", "IntImm", "def"]] == ["IntImm", "IntImm_", "IntImm__", "def_"]


def test_snake_case() -> None:
    assert snake_case("TestIntPair") == "test_int_pair"
    assert snake_case("IRModule") == "ir_module"
    assert sanitize("a.b") == "a_b"


# --------------------------------------------------------------------------------------------
# schemas
# --------------------------------------------------------------------------------------------
def annotate(schema: Any, pos: str = "return") -> str:
    warnings: list[str] = []
    ann = Annotator(resolve_object=lambda k: None, warn=warnings.append)
    return ann.annotate(parse_schema(schema), pos)  # type: ignore[arg-type]


def test_schema_forms() -> None:
    arr_int = {"type": "ffi.Array", "args": [INT]}
    assert annotate(arr_int) == "_rt.Array[int]"
    assert annotate(arr_int, "param") == "_abc.Sequence[int]"
    assert annotate({"type": "ffi.Map", "args": [STR, arr_int]}, "param") == "_abc.Mapping[str, _abc.Sequence[int]]"
    assert annotate({"type": "Optional", "args": [INT]}) == "int | None"
    assert annotate({"type": "Variant", "args": [INT, STR, {"type": "Optional", "args": [INT]}]}) == "int | str | None"
    assert annotate({"type": "DataType"}, "param") == "_rt.DataType | str"
    assert annotate({"type": "ffi.Tensor"}, "param") == "_rt.Tensor | _rt.DLPackExporter"
    # both function forms: args with the return type first, and named_args
    assert annotate({"type": "ffi.Function", "args": [INT, STR]}, "param") == "_abc.Callable[[str], int]"
    assert annotate(fn_schema(INT, STR), "param") == "_abc.Callable[[str], int]"
    assert annotate({"type": "ffi.Function"}, "param") == "_abc.Callable[..., _t.Any]"


def _names_qualified(text: str) -> set[str]:
    """The names an expression reads an attribute of (``_abc`` in ``_abc.Sequence[int]``)."""
    tree = ast.parse(text, mode="eval")
    return {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}


def test_annotations_record_the_aliases_their_text_names() -> None:
    """What a module imports comes from the aliases recorded with each annotation: exactly the
    ones its text names, at any depth, and none of a member a union or Any leaves out."""
    arr = {"type": "ffi.Array", "args": [{"type": "ffi.Tensor"}]}
    fn = fn_schema({"type": "DataType"}, {"type": "void*"}, {"type": "ffi.Shape"})
    schemas: list[Any] = [
        INT,
        arr,
        fn,
        {"type": "ffi.Map", "args": [STR, arr]},
        {"type": "ffi.Dict", "args": [{"type": "Device"}, fn]},
        {"type": "Tuple", "args": [INT, {"type": "ffi.Tensor"}]},
        {"type": "Optional", "args": [{"type": "ffi.Shape"}]},
        {"type": "NestedMsg", "args": [{"type": "void*"}]},
        {"type": "UnchangedOr", "args": [INT]},
        {"type": "ffi.Function"},
        {"type": "x.Unknown"},
    ]
    ann = Annotator(resolve_object=lambda k: None, warn=lambda _m: None)
    for schema in schemas:
        for pos in ("arg", "param", "return"):
            made = ann.annotation(parse_schema(schema), pos)  # type: ignore[arg-type]
            assert made.aliases == _names_qualified(made.text), (schema, pos, made)
    # a union holding Any is Any: the members it drops (void* names _ctypes) import nothing
    for key, text in [("Variant", "_t.Any"), ("Tuple", "_rt.Array[_t.Any]")]:
        made = ann.annotation(parse_schema({"type": key, "args": [{"type": "void*"}, {"type": "Any"}]}), "return")
        assert made.text == text and made.aliases == _names_qualified(text), made
    # a class the resolver names brings the aliases it recorded; a plain string names none
    from tvmffi_gen.model.typemap import runtime_class

    resolved = Annotator(resolve_object=lambda k: runtime_class("Object"), warn=lambda _m: None)
    assert resolved.annotation(parse_schema(obj("x.Node")), "return").aliases == {"_rt"}
    plain = Annotator(resolve_object=lambda k: "Node", warn=lambda _m: None)
    assert plain.annotation(parse_schema({"type": "Optional", "args": [obj("x.Node")]}), "return").aliases == set()


@pytest.mark.parametrize("bad", ["{", "[]", {"type": 3}, {"type": "ffi.Array", "args": "x"}, {"no": "type"}])
def test_malformed_schemas_raise_schema_error(bad: Any) -> None:
    with pytest.raises(SchemaError):
        parse_schema(bad)


# --------------------------------------------------------------------------------------------
# a synthetic registry with every collision the naming rule covers
# --------------------------------------------------------------------------------------------
def collision_snapshot() -> Snapshot:
    types = [
        TypeSnap(
            "ir.IntImm",
            ["ffi.Object"],
            doc="An integer immediate.",
            fields=[
                FieldSnap("value", schema=INT, offset=24, size=8, static_type_index=1),
                FieldSnap("def", schema=STR, writable=True),
                FieldSnap("type_key", schema=STR),
                FieldSnap("span", schema=obj("ir.Span")),
            ],
            methods=[
                MethodSnap("value", schema=fn_schema(INT, obj("ir.IntImm"))),
                MethodSnap("make", schema=fn_schema(obj("ir.IntImm"), INT), is_static=True),
            ],
            init="method",
            init_schema=fn_schema(obj("ffi.Object"), INT),
        ),
        TypeSnap("ir.Span", ["ffi.Object"], fields=[FieldSnap("source", schema=obj("tir.Stmt"))]),
        TypeSnap(
            "ir.Node",
            ["ffi.Object"],
            methods=[MethodSnap("show", schema=fn_schema(STR, obj("ir.Node")))],
            init="auto",
            fields=[FieldSnap("k", schema=INT, kw_only=True), FieldSnap("d", schema=INT, has_default=True, default=3)],
        ),
        TypeSnap(
            "tir.Stmt",
            ["ffi.Object", "ir.Node"],
            fields=[FieldSnap("span", schema=obj("ir.Span"))],
            methods=[MethodSnap("show", schema=fn_schema(INT, obj("tir.Stmt"), INT))],
        ),
        TypeSnap(
            "tir.For",
            ["ffi.Object", "ir.Node", "tir.Stmt"],
            fields=[FieldSnap("class", schema={"type": "ffi.Array", "args": [obj("tir.Stmt")]})],
        ),
        TypeSnap(
            "tir.ext.Weird-Name", ["ffi.Object", "other.Base"], fields=[FieldSnap("x", schema=obj("no.SuchType"))]
        ),
        TypeSnap("tir.Bad", ["ffi.Object"], fields=[FieldSnap("y", schema="{not json")]),
    ]
    functions = [
        FunctionSnap("ir.IntImm", schema=fn_schema(obj("ir.IntImm"), INT)),
        FunctionSnap("tir.ext", schema=fn_schema(INT)),  # collides with the subpackage tir.ext
        FunctionSnap("tir.print", schema=fn_schema({"type": "None"}, obj("tir.For"))),
        FunctionSnap("toplevel", schema=None),
    ]
    return make_snapshot(types, functions)


def test_collisions_follow_the_rule() -> None:
    warnings: list[str] = []
    model = build_model(collision_snapshot(), "pkg", warn=warnings.append)
    ir = model.modules[("ir",)]
    assert [c.name for c in ir.classes if c.type_key == "ir.IntImm"] == ["IntImm"]
    assert [f.name for f in ir.functions] == ["IntImm_"]
    intimm = model.classes["ir.IntImm"]
    assert [f.name for f in intimm.fields] == ["value", "def_", "type_key_", "span"]
    assert [m.name for m in intimm.methods] == ["value_", "make"]
    tir = model.modules[("tir",)]
    assert ("ext", "tir.ext") in tir.subpackages
    assert [f.name for f in tir.functions] == ["ext_", "print"]  # print is not a reserved word
    weird = model.classes["tir.ext.Weird-Name"]
    assert weird.name == "Weird_Name" and weird.base.text == "_rt.Object"
    assert any("no.SuchType" in w for w in warnings)
    assert any("tir.Bad.y" in w and "malformed" in w for w in warnings)
    assert model.classes["tir.For"].fields[0].name == "class_"


def test_prefixes_keep_their_namespaces_and_the_library_s_exported_functions() -> None:
    snap = make_snapshot(
        [TypeSnap("testing.A", ["ffi.Object"]), TypeSnap("other.B", ["ffi.Object"])],
        [
            FunctionSnap("testing.f", schema=fn_schema(INT)),
            FunctionSnap("other.g", schema=fn_schema(INT)),
            FunctionSnap("fold_scale", schema=fn_schema(INT, INT), exported=True),
        ],
    )
    model = build_model(snap, "pkg", ["testing"])
    assert set(model.classes) == {"testing.A"}
    kept = {(ns, f.name, f.exported) for ns, mod in model.modules.items() for f in mod.functions}
    assert kept == {(("testing",), "f", False), ((), "fold_scale", True)}


def test_auto_init_leaves_out_the_inherited_fields_its_native_init_does_not_take() -> None:
    base = TypeSnap(
        "ir.Type",
        ["ffi.Object"],
        init="auto",
        fields=[FieldSnap("span", schema=STR, has_default=True, default=""), FieldSnap("ty", schema=INT)],
    )
    prim = TypeSnap(
        "ir.PrimType",
        ["ffi.Object", "ir.Type"],
        init="auto",
        init_excluded=["span"],
        fields=[FieldSnap("dtype", schema=STR), FieldSnap("span", schema=STR)],
    )
    model = build_model(make_snapshot([base, prim], []), "pkg")
    names = lambda key: [p.name for p in model.classes[key].init.params]  # noqa: E731
    assert names("ir.Type") == ["ty", "span"]
    # its own field of the same name stays (only inherited ones are left out)
    assert names("ir.PrimType") == ["ty", "dtype", "span"]
    prim.fields = [FieldSnap("dtype", schema=STR)]
    model = build_model(make_snapshot([base, prim], []), "pkg")
    assert names("ir.PrimType") == ["ty", "dtype"]


def _unnamed_init(key: str, *params: Any, fields: list[FieldSnap], ancestors: list[str] | None = None) -> TypeSnap:
    """A type whose ``__ffi_init__`` schema names no parameter (``refl::init<...>``)."""
    schema = {"type": "ffi.Function", "args": [obj(key), *params]}
    return TypeSnap(key, ancestors or ["ffi.Object"], init="method", init_schema=schema, fields=fields)


def test_an_unnamed_init_taking_the_fields_one_to_one_is_named_after_them() -> None:
    pair = _unnamed_init("g.Pair", INT, INT, fields=[FieldSnap("a", schema=INT), FieldSnap("b", schema=INT)])
    # ancestors' fields first, as declared: the derived init takes (base, own)
    base = TypeSnap("g.Base", ["ffi.Object"], init="none", fields=[FieldSnap("name", schema=STR)])
    derived = _unnamed_init(
        "g.Derived", STR, INT, fields=[FieldSnap("n", schema=INT)], ancestors=["ffi.Object", "g.Base"]
    )
    swapped = _unnamed_init("g.Swapped", STR, INT, fields=[FieldSnap("a", schema=INT), FieldSnap("s", schema=STR)])
    fewer = _unnamed_init("g.Fewer", INT, fields=[FieldSnap("a", schema=INT), FieldSnap("b", schema=INT)])
    fn = FunctionSnap("g.f", schema={"type": "ffi.Function", "args": [INT, INT, INT]})
    model = build_model(make_snapshot([pair, base, derived, swapped, fewer], [fn]), "pkg")

    def params(key: str) -> list[tuple[str, str]]:
        init = model.classes[key].init
        assert init is not None
        return [(p.name, p.kind) for p in init.params]

    # named after the fields, and still positional-only: the native init takes no keywords
    assert params("g.Pair") == [("a", "posonly"), ("b", "posonly")]
    assert params("g.Derived") == [("name", "posonly"), ("n", "posonly")]
    # types in another order, or another number of them: nothing says which field is which
    assert params("g.Swapped") == [("_0", "posonly"), ("_1", "posonly")]
    assert params("g.Fewer") == [("_0", "posonly")]
    # one note for the run counts what stays unnamed (Swapped 2, Fewer 1, f 2) and says the fix
    assert len(model.notes) == 1 and model.notes[0].startswith("5 parameters of 3 functions,"), model.notes
    assert "numpydoc `Parameters` section" in model.notes[0] and "README" in model.notes[0]
    assert model.warnings == []


def test_basedpyright_rules_off_are_the_ones_each_module_needs() -> None:
    """ir and tir name each other's types (ir.Span -> tir.Stmt, tir.Stmt derives from ir.Node):
    an import cycle; tir.ext and the root are on none. tir.Stmt.show overrides ir.Node.show."""
    model = build_model(collision_snapshot(), "pkg")
    assert modules_on_import_cycles(model) == {("ir",), ("tir",)}
    files = render_package(model)

    def rules_off(rel: str) -> list[str]:
        prefix = "# pyright: "
        return [line[len(prefix) :] for line in files[rel].splitlines() if line.startswith(prefix)]

    assert rules_off("ir/__init__.py") == ["reportImportCycles=false", "reportMissingSuperCall=false"]
    assert "reportImplicitOverride=false" in rules_off("tir/__init__.py")
    # tir.Stmt.show(int) -> int overrides ir.Node.show() -> str: mypy's ignore is on its line
    assert "reportIncompatibleMethodOverride=false" in rules_off("tir/__init__.py")
    assert "reportImportCycles=false" not in rules_off("tir/ext/__init__.py")
    assert "reportImportCycles=false" not in rules_off("__init__.py")
    assert rules_off("visitors.py") == []
    for rel in files:  # pyright and Pylance report a rule they do not know as an error
        for rule in rules_off(rel):
            assert rule.split("=")[0] in PYRIGHT_OWN_RULES, (rel, rule)
    for rule in PYRIGHT_RULES_OFF:  # each directive follows the reason the file gives for it
        text = files["tir/__init__.py"]
        if f"# pyright: {rule}=false" in text:
            before = text.split(f"# pyright: {rule}=false", 1)[0].rstrip().splitlines()[-1]
            assert before.endswith(":") and before.startswith("# "), (rule, before)


#: Rules pyright itself has among those generated files may turn off (checked against pyright
#: 1.1.414's "unknown diagnostic rule" error, which it also reports for reportAny and the other
#: basedpyright-only rules).
PYRIGHT_OWN_RULES = {
    "reportImplicitOverride",
    "reportIncompatibleMethodOverride",
    "reportIncompatibleVariableOverride",
    "reportImportCycles",
    "reportMissingSuperCall",
}


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_synthetic_package_is_clean_in_basedpyright_default_mode(tmp_path: Path) -> None:
    """Incompatible overrides carry mypy's ``# type: ignore``, which that mode does not read."""
    root = tmp_path / "pkg"
    apply_plan(plan_output(root, render_package(build_model(collision_snapshot(), "pkg")), "test"))
    problems, report = run_pyright(root, mode="default")
    assert problems == 0, report


def _cycle_snapshot() -> Snapshot:
    # a.X refers to b.Y and b.Y to a.X; b.Z derives from a.X
    types = [
        TypeSnap("a.X", ["ffi.Object"], fields=[FieldSnap("y", schema=obj("b.Y"))]),
        TypeSnap("b.Y", ["ffi.Object"], fields=[FieldSnap("x", schema={"type": "Optional", "args": [obj("a.X")]})]),
        TypeSnap("b.Z", ["ffi.Object", "a.X"], methods=[MethodSnap("peer", schema=fn_schema(obj("a.X"), obj("b.Z")))]),
    ]
    return make_snapshot(types, [])


def _functions_only_snapshot() -> Snapshot:
    return make_snapshot([], [FunctionSnap("f.add", schema=fn_schema(INT, INT, INT))])


@pytest.fixture(scope="module")
def checked_packages(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    """The synthetic packages the tests below check with mypy --strict (``pkg``: the collision
    snapshot, ``cyc``: cross-namespace cycles, ``fnpkg``: functions only), written to one folder
    and checked in one mypy run (each run spends about a second before it reaches them): the
    folder, and by package the report's lines on it and those on no package (mypy's own)."""
    folder = tmp_path_factory.mktemp("synthetic")
    snapshots = {"pkg": collision_snapshot(), "cyc": _cycle_snapshot(), "fnpkg": _functions_only_snapshot()}
    for name, snap in snapshots.items():
        apply_plan(plan_output(folder / name, render_package(build_model(snap, name)), "test"))
    errors, report = run_mypy(folder / "pkg", extra_files=[folder / name for name in snapshots])
    return folder, lines_by_package(errors, report, snapshots)  # mypy writes paths relative to folder


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_synthetic_package_renders_parses_and_passes_mypy(
    checked_packages: tuple[Path, dict[str, list[str]]],
) -> None:
    model = build_model(collision_snapshot(), "pkg")
    files = render_package(model)
    for rel, text in files.items():
        if rel.endswith(".py"):
            ast.parse(text, rel)
    folder, reports = checked_packages
    root = folder / "pkg"
    assert reports["pkg"] == [], "\n".join(reports["pkg"])
    # the override of show() with another signature is marked, and only that one
    tir = (root / "tir" / "__init__.py").read_text()
    assert tir == files["tir/__init__.py"] and tir.count("# type: ignore[override, misc]") == 1


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_cross_namespace_cycles_type_check(checked_packages: tuple[Path, dict[str, list[str]]]) -> None:
    folder, reports = checked_packages
    assert reports["cyc"] == [], "\n".join(reports["cyc"])
    b = (folder / "cyc" / "b" / "__init__.py").read_text()
    assert "import cyc.a as _ffi_ns_a" in b  # runtime import for the base class


def test_snapshot_json_round_trip() -> None:
    snap = collision_snapshot()
    again = Snapshot.from_json(snap.to_json())
    assert again == snap
    assert json.loads(snap.to_json())["format"] == 1


def test_names_follow_python_identifiers_nfkc_normalised() -> None:
    # valid identifiers stay as they are (naïve, Ωmega); Python reads identifiers NFKC-normalised,
    # so the generator writes that form (ﬁle -> file), not a spelling getattr would miss
    assert [sanitize(n) for n in ["naïve", "Ωmega", "ﬁle", "a·b", "x-y", "²d", "名前"]] == [
        "naïve",
        "Ωmega",
        "file",
        "a·b",
        "x_y",
        "_2d",
        "名前",
    ]
    model = build_model(
        make_snapshot(
            [TypeSnap("u.Café", ["ffi.Object"], fields=[FieldSnap("naïve", schema=INT), FieldSnap("ﬁle", schema=INT)])],
            [FunctionSnap("u.naïve_sum", schema=fn_schema(INT, INT))],
        ),
        "upkg",
    )
    cls = model.classes["u.Café"]
    assert cls.name == "Café" and [f.name for f in cls.fields] == ["naïve", "file"]
    assert [f.name for f in model.modules[("u",)].functions] == ["naïve_sum"]


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_a_package_without_types_has_a_valid_visitors_module(
    checked_packages: tuple[Path, dict[str, list[str]]],
) -> None:
    folder, reports = checked_packages
    files = render_package(build_model(_functions_only_snapshot(), "fnpkg"))
    assert "visitors.py" in files
    assert (folder / "fnpkg" / "visitors.py").read_text() == files["visitors.py"]
    tree = ast.parse(files["visitors.py"])
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert sorted(classes) == ["Mapper", "Mutator", "Visitor", "Walker"]
    assert reports["fnpkg"] == [], "\n".join(reports["fnpkg"])


def test_standard_imports_are_the_ones_a_module_uses() -> None:
    """The model decides the standard imports (no pruning of the rendered text): every one a
    committed module has is used in it, and every alias it uses is imported; an emptied group
    leaves no doubled blank line."""
    import re

    from tvmffi_gen.render.import_lines import STANDARD_IMPORTS, standard_import_groups

    from conftest import ROOT

    assert standard_import_groups({"_t", "_bind"}) == [
        ["import typing as _t"],
        ["from tvmffi_runtime import bind as _bind"],
    ]
    assert standard_import_groups({"_t"}) == [["import typing as _t"]]
    lines = {alias: line for group in STANDARD_IMPORTS for alias, line in group.items()}
    for path in [
        *(ROOT / "generated/tvmffi_testing").rglob("*.py"),
        *(ROOT / "examples/add_one/add_one_pkg").rglob("*.py"),
    ]:
        text = path.read_text()
        for alias, line in lines.items():
            uses = re.findall(rf"(?<![\w.]){alias}\.", text)
            assert (line in text.split("\n")) == bool(uses), (path, alias)
        assert "\n\n\n\nimport" not in text and "annotations\n\n\n" not in text, path


def test_registration_is_read_back_as_rendered() -> None:
    """The one spelling of a registered class (``model.registration``): each class the renderer
    writes is found under its type key, constructible or not, and a helper class is not."""
    from tvmffi_gen.model.registration import registered_key

    long_key = "geo." + "Long" * 30  # too long for its decorator's line
    snap = make_snapshot(
        [
            TypeSnap("geo.Point", ["ffi.Object"], init="auto", fields=[FieldSnap("x", schema=INT)]),
            TypeSnap(long_key, ["ffi.Object"]),
        ],
        [],
    )
    files = render_package(build_model(snap, "geopkg", []))
    tree = ast.parse(files["geo/__init__.py"])
    keys = {n.name: registered_key(n) for n in tree.body if isinstance(n, ast.ClassDef)}
    assert "\n@_bind.register(\n" in files["geo/__init__.py"]  # the long one is broken over lines
    assert sorted(v for v in keys.values() if v) == sorted(["geo.Point", long_key])
    helper = ast.parse("@other.register('geo.Point')\nclass H: ...\n").body[0]
    assert isinstance(helper, ast.ClassDef) and registered_key(helper) is None
