"""Small registries that broke the generator once, each pinned where the property tests
(``test_properties``) found it: registry names equal to the generated modules' import aliases,
overrides mypy accepts or rejects, members named like inherited enum entries or like their
class, None defaults on non-Optional fields, opaque pointers, names holding quotes, backslashes
or newlines, and ancestries that form a cycle. Each builds and renders; most also pass
mypy --strict, with a user's program that mypy must tell the exact types of their API."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import tvmffi_runtime as rt
from tvmffi_gen.model.builder import build_model
from tvmffi_gen.registry.snapshot import FieldSnap, FunctionSnap, MethodSnap, Snapshot, TypeSnap
from tvmffi_gen.render.package import render_package

from conftest import ROOT
from mypy_reports import revealed_types
from registry_checks import declared_fields, mypy_errors_each


def _snap(types: list[TypeSnap], functions: list[FunctionSnap]) -> Snapshot:
    return Snapshot(
        "libx.so", "/nonexistent/libx.so", [0, 1, 16], types, functions, {"ffi.Object": [], "ffi.Enum": ["ffi.Object"]}
    )


INT = {"type": "int"}
ARR_INT = {"type": "ffi.Array", "args": [INT]}


@dataclass(frozen=True)
class MypyCase:
    """A registry that must pass mypy --strict, and what a user's program importing its module
    ``a`` (as ``from PKG import a``) must be told of its API: in a function taking ``params``,
    each ``(expression, revealed type)`` of ``reveals``, ``PKG`` standing for the package's name.
    "0 errors" alone would pass a package whose every member were ``Any``."""

    make: Callable[[], Snapshot]
    reveals: tuple[tuple[str, str], ...]
    params: str

    def program(self, package: str) -> str:
        lines = [f"from {package} import a", "", "", f"def main({self.params}) -> None:"]
        lines += [f"    reveal_type({expr})" for expr, _ in self.reveals]
        return "\n".join(lines) + "\n"

    def expected(self, package: str) -> list[str]:
        return [revealed.replace("PKG", package) for _, revealed in self.reveals]


#: The registries that must pass mypy --strict, by name: all are checked in one mypy run, with
#: their programs (the ``mypy_results`` fixture), each test reads its own package's result.
MYPY_CASES: dict[str, MypyCase] = {}


def _mypy_case(
    *reveals: tuple[str, str], params: str = ""
) -> Callable[[Callable[[], Snapshot]], Callable[[], Snapshot]]:
    def register(make: Callable[[], Snapshot]) -> Callable[[], Snapshot]:
        MYPY_CASES[make.__name__] = MypyCase(make, reveals, params)
        return make

    return register


@pytest.fixture(scope="module")
def mypy_results() -> dict[str, tuple[int, str]]:
    with warnings.catch_warnings():  # as the mark on each of these tests did
        warnings.filterwarnings("ignore", "The recursion limit will not be reset")
        packages = {
            f"pkg_{name}": render_package(build_model(case.make(), f"pkg_{name}")) for name, case in MYPY_CASES.items()
        }
        programs = {f"pkg_{name}": case.program(f"pkg_{name}") for name, case in MYPY_CASES.items()}
        results = mypy_errors_each(packages, programs)
    return {name[len("pkg_") :]: result for name, result in results.items()}


def _assert_clean_and_typed(mypy_results: dict[str, tuple[int, str]], name: str) -> None:
    """Case ``name``'s package and program pass mypy --strict, and the program is told the types."""
    errors, report = mypy_results[name]
    assert errors == 0, report
    assert revealed_types(report) == MYPY_CASES[name].expected(f"pkg_{name}"), report


def test_names_equal_to_generated_import_aliases_do_not_break_import() -> None:
    # The naming rule's reserved names: registry names equal to the module's import aliases
    # (_bind, _rt, _t, _abc) must be renamed, or the module rebinds the alias and fails at import.
    functions = [
        FunctionSnap("a._bind", schema={"type": "ffi.Function", "args": [INT, INT]}),
        FunctionSnap("a.f", schema=None),
    ]
    types = [TypeSnap("a._rt", ["ffi.Object"])]
    files = render_package(build_model(_snap(types, functions), "pkg"))
    namespace: dict[str, Any] = {"__name__": "pkg.a"}
    code = files["a/__init__.py"].replace("@_bind.register(", "@_bind_register_stub(")  # type a._rt is not loaded
    namespace["_bind_register_stub"] = lambda *a, **k: lambda cls: cls
    exec(compile(code, "pkg/a/__init__.py", "exec"), namespace)
    assert callable(namespace["f"])
    assert namespace["_bind"] is __import__("tvmffi_runtime.bind").bind
    assert namespace["_rt"] is rt


@_mypy_case(
    ("a.f([1], 2)", "tvmffi_runtime.containers.Array[int]"),
    ("a.f(_rt_=[1], _t_=2)", "tvmffi_runtime.containers.Array[int]"),  # the renamed parameters are still keywords
    ("k._bind_", "int"),
    ("k._abc_", "tvmffi_runtime.containers.Array[int]"),
    ("a.K(1, [2])", "PKG.a.K"),
    params="k: a.K",
)
def parameters_named_like_generated_import_aliases() -> Snapshot:
    named = {
        "type": "ffi.Function",
        "named_args": {
            "return": [ARR_INT],
            "params": [{"type": "ffi.Array", "args": [INT], "name": "_rt"}, {**INT, "name": "_t"}],
        },
    }
    types = [
        TypeSnap(
            "a.K",
            ["ffi.Object"],
            init="auto",
            fields=[FieldSnap("_bind", schema=INT), FieldSnap("_abc", schema=ARR_INT)],
        )
    ]
    return _snap(types, [FunctionSnap("a.f", schema=named)])


def test_parameters_named_like_generated_import_aliases_pass_mypy(mypy_results: dict[str, tuple[int, str]]) -> None:
    _assert_clean_and_typed(mypy_results, "parameters_named_like_generated_import_aliases")


@_mypy_case(
    ("a.Sub.value_", "PKG.a.Kind"),  # the inherited entries, renamed in Kind
    ("a.Sub.other", "PKG.a.Kind"),
    ("s.value__", "int"),  # Sub's field and method, renamed past them
    ("s.other_()", "int"),
    params="s: a.Sub",
)
def members_named_like_inherited_enum_entries() -> Snapshot:
    # An ancestor's enum entries are taken names in a derived class's scope.
    types = [
        TypeSnap("a.Kind", ["ffi.Object", "ffi.Enum"], enum_entries=["value", "other"]),
        TypeSnap(
            "a.Sub",
            ["ffi.Object", "ffi.Enum", "a.Kind"],
            fields=[FieldSnap("value", schema=INT)],
            methods=[MethodSnap("other", schema={"type": "ffi.Function", "args": [INT, {"type": "a.Sub"}]})],
        ),
    ]
    return _snap(types, [])


def test_members_named_like_inherited_enum_entries_pass_mypy(mypy_results: dict[str, tuple[int, str]]) -> None:
    _assert_clean_and_typed(mypy_results, "members_named_like_inherited_enum_entries")


@_mypy_case(
    ("c.ro_to_rw", "int"),
    ("p.any_to_int", "Any"),  # no schema: Any, as the registry says
    ("c.any_to_int", "int"),
    ("p.obj_to_sub", "tvmffi_runtime._object.Object"),
    ("c.obj_to_sub", "PKG.a.C"),
    ("p.covariant()", "tvmffi_runtime._object.Object"),
    ("c.covariant()", "PKG.a.C"),
    ("c.wider('anything')", "int"),
    params="p: a.P, c: a.C",
)
def compatible_overrides() -> Snapshot:
    # Only overrides mypy rejects get `# type: ignore[...]` (on the line mypy
    # reports), so --strict's unused-ignore check passes for compatible ones.
    p_ref, c_ref, obj = {"type": "a.P"}, {"type": "a.C"}, {"type": "ffi.Object"}

    def fn(ret: Any, *params: Any) -> Any:
        return {"type": "ffi.Function", "args": [ret, *params]}

    parent = TypeSnap(
        "a.P",
        ["ffi.Object"],
        fields=[
            FieldSnap("ro_to_rw", schema=INT),  # read-only -> writable, same type
            FieldSnap("any_to_int", schema=None),  # Any -> int
            FieldSnap("obj_to_sub", schema=obj),  # Object -> a subclass
            FieldSnap("rw_to_ro", schema=INT, writable=True),  # a real error, but on another line
        ],
        methods=[
            MethodSnap("covariant", schema=fn(obj, p_ref)),  # returns Object -> returns C
            MethodSnap("wider", schema=fn(INT, p_ref, INT)),  # takes int -> takes Any
        ],
    )
    child = TypeSnap(
        "a.C",
        ["ffi.Object", "a.P"],
        fields=[
            FieldSnap("ro_to_rw", schema=INT, writable=True),
            FieldSnap("any_to_int", schema=INT),
            FieldSnap("obj_to_sub", schema=c_ref),
            FieldSnap("rw_to_ro", schema=INT),
        ],
        methods=[
            MethodSnap("covariant", schema=fn(c_ref, c_ref)),
            MethodSnap("wider", schema=fn(INT, c_ref, {"type": "Any"})),
        ],
    )
    return _snap([parent, child], [])


def test_compatible_overrides_pass_mypy(mypy_results: dict[str, tuple[int, str]]) -> None:
    _assert_clean_and_typed(mypy_results, "compatible_overrides")


@_mypy_case(
    ("p.x", "tvmffi_runtime.containers.Map[str, int]"),
    ("c.x", "tvmffi_runtime.containers.Array[int]"),
    params="p: a.P, c: a.C",
)
def writable_field_overriding_a_parent_field_of_another_type() -> Snapshot:
    # The `# type: ignore[override]` must sit where mypy reports the override
    # (the `@property` line when the field has a setter).
    types = [
        TypeSnap(
            "a.P",
            ["ffi.Object"],
            fields=[FieldSnap("x", schema={"type": "ffi.Map", "args": [{"type": "ffi.String"}, INT]})],
        ),
        TypeSnap("a.C", ["ffi.Object", "a.P"], fields=[FieldSnap("x", schema=ARR_INT, writable=True)]),
    ]
    return _snap(types, [])


def test_writable_field_overriding_a_parent_field_of_another_type_passes_mypy(
    mypy_results: dict[str, tuple[int, str]],
) -> None:
    _assert_clean_and_typed(mypy_results, "writable_field_overriding_a_parent_field_of_another_type")


def test_child_members_sanitising_to_an_inherited_name_stay_distinct() -> None:
    # 'my-f' sanitises to 'my_f', the name of an inherited field that 'my_f' overrides: sharing
    # one Python name would make 'my-f' silently read 'my_f'.
    p_ref, c_ref = {"type": "a.P"}, {"type": "a.C"}

    def method(self_ref: Any) -> Any:
        return {"type": "ffi.Function", "args": [INT, self_ref]}

    types = [
        TypeSnap(
            "a.P",
            ["ffi.Object"],
            fields=[FieldSnap("my_f", schema=INT)],
            methods=[MethodSnap("my_m", schema=method(p_ref))],
        ),
        TypeSnap(
            "a.C",
            ["ffi.Object", "a.P"],
            fields=[FieldSnap("my-f", schema=INT), FieldSnap("my_f", schema=INT)],
            methods=[MethodSnap("my-m", schema=method(c_ref)), MethodSnap("my_m", schema=method(c_ref))],
        ),
    ]
    model = build_model(_snap(types, []), "pkg")
    child = model.classes["a.C"]
    names = [f.name for f in child.fields] + [m.name for m in child.methods]
    assert len(set(names)) == len(names), names
    # and the rendered module binds each name once
    tree = ast.parse(render_package(model)["a/__init__.py"])
    bound = [
        t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)
    ]
    bound += [
        node.target.id for node in tree.body if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    ]
    assert len(bound) == len(set(bound)), sorted(bound)
    # each field of C is declared once, under its own registry name
    class_c = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == child.name)
    assert set(declared_fields(class_c)) == {"my-f", "my_f"}
    # and each method is its own def, decorated with its own registry name (``replace``, the
    # generated one, has a decorator that names none)
    methods = {
        node.name: [ast.literal_eval(a) for d in node.decorator_list if isinstance(d, ast.Call) for a in d.args]
        for node in class_c.body
        if isinstance(node, ast.FunctionDef) and any(isinstance(d, ast.Call) for d in node.decorator_list)
    }
    assert sorted(methods.values()) == [["a.C", "my-m"], ["a.C", "my_m"]], methods


@_mypy_case(("a.Mode.Mode_", "PKG.a.Mode"), ("a.Mode.Other", "PKG.a.Mode"))
def enum_entry_named_like_its_class() -> Snapshot:
    # An entry named like its class must not be spelled `Mode: _t.ClassVar[Mode]` inside class
    # Mode, where `Mode` would name the entry.
    types = [TypeSnap("a.Mode", ["ffi.Object", "ffi.Enum"], enum_entries=["Mode", "Other"])]
    return _snap(types, [])


def test_enum_entry_named_like_its_class_passes_mypy(mypy_results: dict[str, tuple[int, str]]) -> None:
    _assert_clean_and_typed(mypy_results, "enum_entry_named_like_its_class")


@_mypy_case(
    ("a.K()", "PKG.a.K"),
    ("k.span", "PKG.a.Span"),
    ("k.n", "int"),
    params="k: a.K",
)
def none_default_on_non_optional_field() -> Snapshot:
    # A None default on a non-Optional field (a nullable ObjectRef defaulting to null) must not
    # render as `span: Span = None`, which mypy --strict rejects.
    fields = [
        FieldSnap("span", schema={"type": "a.Span"}, has_default=True, default=None),
        FieldSnap("n", schema=INT, has_default=True, default=None),
    ]
    types = [TypeSnap("a.Span", ["ffi.Object"]), TypeSnap("a.K", ["ffi.Object"], init="auto", fields=fields)]
    return _snap(types, [])


def test_none_default_on_non_optional_field_passes_mypy(mypy_results: dict[str, tuple[int, str]]) -> None:
    _assert_clean_and_typed(mypy_results, "none_default_on_non_optional_field")


@_mypy_case(("a.f(None)", "ctypes.c_void_p | None"))
def void_pointer_schema() -> Snapshot:
    # 'void*' (TVM FFI's opaque pointer) is annotated with _ctypes.c_void_p, which
    # the module must import.
    void_p = {"type": "void*"}
    fn = FunctionSnap("a.f", schema={"type": "ffi.Function", "args": [void_p, void_p]})
    return _snap([], [fn])


def test_void_pointer_schema_passes_mypy(mypy_results: dict[str, tuple[int, str]]) -> None:
    _assert_clean_and_typed(mypy_results, "void_pointer_schema")


@pytest.mark.parametrize("bad", ['quo"te', "new\nline", "back\\nslash"], ids=["quote", "newline", "backslash"])
def test_registry_names_with_quotes_backslashes_newlines_are_kept_exactly(bad: str) -> None:
    # Registry names go into string literals escaped, so the output parses and
    # every runtime lookup (FieldAccess, TypeMethod, enum_entry, register, GlobalFunction) gets
    # the exact name.
    types = [
        TypeSnap("a.X", ["ffi.Object"], fields=[FieldSnap(bad, schema=INT)], methods=[MethodSnap(bad)]),
        TypeSnap("a.E", ["ffi.Object", "ffi.Enum"], enum_entries=[bad]),
        TypeSnap(f"a.{bad}T", ["ffi.Object"]),
    ]
    files = render_package(build_model(_snap(types, [FunctionSnap(f"a.{bad}")]), "pkg"))
    tree = ast.parse(files["a/__init__.py"])
    literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    # FieldAccess, TypeMethod, enum_entry, register and GlobalFunction each get the exact name
    assert {bad, f"a.{bad}T", f"a.{bad}"} <= literals, sorted(x for x in literals if "\n" not in x)[:20]
    ast.parse(files["_lib.py"])


CYCLE_SCRIPT = """
import sys
sys.path[:0] = [{root!r}, {runtime!r}]
from tvmffi_gen.model.builder import build_model
from tvmffi_gen.model.package import GenerationError
from tvmffi_gen.registry.snapshot import Snapshot, TypeSnap
cases = {{
    "two-cycle": [TypeSnap("a.X", ["ffi.Object", "a.Y"]), TypeSnap("a.Y", ["ffi.Object", "a.X"])],
    "self": [TypeSnap("a.X", ["ffi.Object", "a.X"])],
    "duplicate-key": [TypeSnap("a.X", ["ffi.Object"]), TypeSnap("a.X", ["ffi.Object", "a.X"])],
}}
for name, types in cases.items():
    try:
        build_model(Snapshot("libx.so", "/x/libx.so", [0, 1, 16], types, [], {{"ffi.Object": []}}), "pkg")
    except GenerationError as exc:
        print(name, "REFUSED", exc)
    else:
        print(name, "BUILT")
"""


def test_cyclic_ancestry_in_a_snapshot_is_refused_not_hung() -> None:
    # Ancestor lists that form a cycle, or a type key listed twice, come only from a hand-made or
    # corrupted --from-snapshot file; a naive ancestor walk loops forever on them while memory
    # grows. Run in a child with a time and memory limit, so a hang fails instead of stalling.
    code = CYCLE_SCRIPT.format(root=str(ROOT), runtime=str(ROOT / "runtime"))
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", limit + textwrap.dedent(code)], capture_output=True, text=True, timeout=5
        )
    except subprocess.TimeoutExpired:
        pytest.fail("build_model did not return within 5 s on a snapshot with cyclic ancestry")
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert lines["two-cycle"].startswith("REFUSED") and "cycle" in lines["two-cycle"], lines
    assert lines["self"].startswith("REFUSED"), lines
    assert lines["duplicate-key"].startswith("REFUSED") and "a.X" in lines["duplicate-key"], lines
