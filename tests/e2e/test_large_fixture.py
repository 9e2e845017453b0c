"""A large synthetic library (tests/fixtures/large_ir.py) through the whole generator.

The library has nested namespaces that reference each other in cycles, registry names that are
Python keywords, a function named like a class and functions named like subnamespaces, an
8-level inheritance chain across namespaces, containers of objects, enums, and all three kinds of
constructors. The package generated for it must be ``mypy --strict`` clean, typecheck a user
program, and work at run time (checked in a fresh interpreter).

The last tests check naming rules for names this fixture's kind of registry can hold (module
aliases, enum members, a namespace named like the loader) on tiny hand-written snapshots that
need no compiler.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tvmffi_gen.cli.main import main
from tvmffi_gen.registry.snapshot import FieldSnap, FunctionSnap, Snapshot, TypeSnap
from tvmffi_gen.verify.checkers import run_mypy, run_pyright

from conftest import ROOT, build_shared
from fixtures.large_ir import FILLER_KINDS, Plan, make_plan, make_source
from mypy_reports import lines_by_package, mypy_by_program

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md

# 3 namespaces x 8 types x 24 functions: 35 types (24 regular, an 8-level chain, 3 enums) and
# 75 functions. g++ -O0 takes ~25-35 s for it on a 2-core machine (cached in tests/_build after).
CONFIG = {"n_namespaces": 3, "types_per_ns": 8, "funcs_per_ns": 24, "seed": 0}
PKG = "bigpkg"

# Registry short names whose Python names the naming rule (docs/generated-packages.md) changes.
RENAMED_FUNCTIONS = {
    "T0": "T0_",  # collides with the class big.ns<i>.T0 (classes claim first)
    "sub": "sub_",  # collides with the subpackage big.ns<i>.sub (subpackages claim first)
    "ns0": "ns0_",  # big.ns0 the function vs big.ns0 the subpackage
    "lambda": "lambda_",  # keyword
    "match": "match_",  # soft keyword
    "None": "None_",  # keyword
    "with-dash": "with_dash",  # sanitised
    "2fast": "_2fast",  # leading digit
}
RENAMED_FIELDS = {
    "def": "def_",
    "class": "class_",
    "lambda": "lambda_",
    "match": "match_",
    "type": "type_",
    "None": "None_",
    "same_as": "same_as_",
}


@pytest.fixture(scope="module")
def plan() -> Plan:
    return make_plan(**CONFIG)


@pytest.fixture(scope="module")
def big_lib(have_gxx: bool) -> Path:
    start = time.perf_counter()
    lib = build_shared("large_ir", make_source(**CONFIG), extra=["-O0"])
    print(f"large_ir library ready in {time.perf_counter() - start:.1f} s: {lib}")
    return lib


@pytest.fixture(scope="module")
def big_pkg(big_lib: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("large") / PKG
    assert main([str(big_lib), "-o", str(out), "-q"]) == 0
    return out


def _env(pkg: Path) -> dict[str, str]:
    return {
        "PYTHONPATH": f"{pkg.parent}:{ROOT / 'runtime'}",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONDONTWRITEBYTECODE": "1",  # keep the generated folder exactly as generated
    }


def _run(pkg: Path, code: str, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=_env(pkg), timeout=120
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def _module_of(key: str) -> str:
    return ".".join([PKG, *key.split(".")[:-1]])


def _py_function_name(name: str) -> str:
    short = name.rsplit(".", 1)[-1]
    return RENAMED_FUNCTIONS.get(short, short)


# --------------------------------------------------------------------------------------------
# Generation and static checks
# --------------------------------------------------------------------------------------------
def test_fixture_source_has_what_it_promises(plan: Plan) -> None:
    summary = plan.summary()
    assert summary["types"] == 3 * 8 + 8 + 3 and summary["functions"] >= 3 * 24
    keys = {t.key for t in plan.types}
    assert {"big.ns0.T3", "big.ns0.sub.T1", "big.ns1.T0", "big.ns0.Color"} <= keys
    chain = plan.chain
    assert len(chain) >= 6 and len({c.key.rsplit(".", 1)[0] for c in chain}) >= 4  # crosses namespaces
    names = {f.name for f in plan.functions}
    assert {"big.ns0.T0", "big.ns0.sub", "big.ns0", "big.ns1.lambda"} <= names
    # cycles between namespaces: ns0 -> ns1 -> ns2 -> ns0 through peer fields
    peers = {
        t.key.split(".")[1]: f.target.split(".")[1]
        for t in plan.types
        if t.index == 0 and t.kind == "init"
        for f in t.fields
        if f.reg == "peer" and f.target
    }
    assert peers == {"ns0": "ns1", "ns1": "ns2", "ns2": "ns0"}
    source = make_source(**CONFIG)
    assert source == make_source(**CONFIG)  # deterministic for a seed
    for needle in (
        '.def_ro("def"',
        '"class"',
        "refl::EnumDef<",
        "refl::init<int64_t, String>()",
        "refl::init(false)",
        "refl::kw_only(true)",
        ".def_static(",
        "Array<",
        "Map<String, ",
        "Optional<",
    ):
        assert needle in source, needle


def test_generation_writes_every_namespace(big_pkg: Path, plan: Plan) -> None:
    files = {p.relative_to(big_pkg).as_posix() for p in big_pkg.rglob("*.py")}
    for ns in ("big", "big/ns0", "big/ns0/sub", "big/ns1", "big/ns1/sub", "big/ns2", "big/ns2/sub"):
        assert f"{ns}/__init__.py" in files, sorted(files)
    for t in plan.types:
        text = (big_pkg / Path(*t.key.split(".")[:-1]) / "__init__.py").read_text()
        assert re.search(rf"^class {t.key.rsplit('.', 1)[1]}\(", text, re.M), t.key


def test_regeneration_is_up_to_date(big_pkg: Path, big_lib: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(big_lib), "-o", str(big_pkg), "--check"]) == 0, capsys.readouterr().out


def test_mypy_strict_has_no_errors(mypy_report: dict[str, list[str]]) -> None:
    assert mypy_report[""] == [], "\n".join(mypy_report["all"])


def test_pyright_strict_has_no_errors(big_pkg: Path) -> None:
    errors, report = run_pyright(big_pkg)
    assert errors == 0, report


def test_basedpyright_default_mode_reports_nothing(big_pkg: Path) -> None:
    """Nested namespaces naming each other's types (import cycles through the imports made for
    type checking) and overriding methods: no errors or warnings in basedpyright's default mode."""
    problems, report = run_pyright(big_pkg, mode="default")
    assert problems == 0, report


USER_PROGRAM = """
from bigpkg import big
from bigpkg.big import ns0, ns1, ns2
from bigpkg.big.ns0 import sub as sub0
from bigpkg.big.ns2.sub import Level7
import tvmffi_runtime as rt

a: ns0.T0 = ns0.T0(5, "a")
b = ns1.T0(7, "b")
n: int = ns0.peer_id(b) + ns0.sum_ids([b, b]) + a.add(1) + a.count()
s: str = a.describe() + a.name
by_name: rt.Map[str, ns1.T0] = ns0.index([b])
maybe: ns2.T0 | None = ns0.first([ns2.T0(1, "c")])
linked: ns0.T0 = ns0.link(a, b)
peer: ns1.T0 | None = linked.peer
t1 = sub0.T1(3, "x", None, table={}, scale=2.0)
t1.scale = 0.5
t1.items = []
kw = ns0.T7(1, def_=4, class_="c", match_=9, None_=False, table={})
k: int = kw.def_ + kw.match_ + kw.lambda__(1)
flag: bool = kw.None_
made: ns0.T0 = ns0.T0_(9)
count: int = big.ns0_() + ns0.sub_() + ns0.lambda_(2) + sub0.depth()
deep: Level7 = ns0.make_deep(1)
total: int = deep.total() + ns0.chain_first(deep) + Level7(1, "l").v7
color: ns0.Color = ns0.color("Red")
red: ns0.Color = ns0.Color.Red
cls_entry: ns0.Color = ns0.Color.class_
name: str = ns0.color_name(color) + red.name
sized = ns0.T4(1, table={})
sz: int = sized.size + sized.size_()
"""

# (statement, expected mypy error code): each on its own line of one program, one mypy run.
WRONG_STATEMENTS = [
    ('ns0.peer_id(ns0.T0(1, "x"))', "arg-type"),  # a type of the wrong namespace
    ('ns0.chain_first(ns0.T0(1, "x"))', "arg-type"),  # not in the chain
    ("ns0.T2(1)", "arg-type"),  # not constructible: __init__ takes NoReturn
    ('ns0.T0(1, "x").id = 3', "misc"),  # read-only field: "Cannot assign to final attribute"
    ('ns0.T0(1, "x").def_', "attr-defined"),  # only keyword-named fields are renamed
    ("ns0.T4(1, table={}).size()", "operator"),  # the field wins the name; the method is size_
    ('ns0.T4(1, table={}).scale = "s"', "assignment"),
    ("ns0.T4(1)", "call-arg"),  # missing the required keyword-only `table`
    ("ns0.T0(1)", "call-arg"),
    ('ns0.lambda_("x")', "arg-type"),
]


WRONG_HEADER = ["from bigpkg.big import ns0"]

# test_nested_namespaces_are_imported_on_first_use: run, then checked with `x: int = obj.id`
ATTR_CODE = f"import {PKG}\nobj = {PKG}.big.ns0.T0(1, 'a')\nprint(type(obj).__name__)\n"


@pytest.fixture(scope="module")
def mypy_report(big_pkg: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """One mypy --strict run (mypy over this package costs seconds) over the package and the
    programs of the tests below, each in its own file (none imports another): the report's
    lines by program file name; "" holds those on no program (the package's, mypy's own
    failure), "all" every line."""
    folder = tmp_path_factory.mktemp("large_programs")
    programs = {
        "prog.py": "\n".join(USER_PROGRAM.strip().splitlines()) + "\n",
        "wrong.py": "\n".join(WRONG_HEADER + [s for s, _ in WRONG_STATEMENTS]) + "\n",
        "attr_prog.py": ATTR_CODE.replace("print(type(obj).__name__)\n", "x: int = obj.id\n"),
    }
    return mypy_by_program(big_pkg, programs, folder)


def test_user_program_typechecks(mypy_report: dict[str, list[str]]) -> None:
    # the program and the package modules it imports
    assert mypy_report["prog.py"] + mypy_report[""] == [], "\n".join(mypy_report["all"])


def test_wrong_programs_fail_with_expected_codes(mypy_report: dict[str, list[str]]) -> None:
    header = WRONG_HEADER
    report = "\n".join(mypy_report["all"])
    by_line: dict[int, list[str]] = {}
    for line in mypy_report["wrong.py"]:
        m = re.match(r".*wrong\.py:(\d+): error: .*\[([a-z-]+)\]$", line)
        if m:
            by_line.setdefault(int(m.group(1)), []).append(m.group(2))
    for i, (stmt, code) in enumerate(WRONG_STATEMENTS, start=len(header) + 1):
        assert code in by_line.get(i, []), f"line {i} `{stmt}`: expected [{code}], got {by_line.get(i)}\n{report}"


# --------------------------------------------------------------------------------------------
# Run time, in a fresh interpreter
# --------------------------------------------------------------------------------------------
RUNTIME_SCRIPT = r"""
import importlib, json, sys
data = json.loads(sys.argv[1])
PKG = data["pkg"]
from bigpkg import big
from bigpkg.big import ns0, ns1, ns2

def cls_of(key):
    mod = importlib.import_module(".".join([PKG, *key.split(".")[:-1]]))
    return getattr(mod, key.rsplit(".", 1)[1])

types = {t["key"]: t for t in data["types"]}

def build(key, ident, name="n"):
    t, cls = types[key], cls_of(key)
    if t["kind"] == "init":
        obj = cls(ident, name)
    elif t["kind"] == "auto":
        obj = cls(ident, name, table={})
    else:
        obj = cls.make(ident, name, build(t["link"], ident + 1))
    assert type(obj) is cls, (type(obj), cls)
    return obj

# every type is a class of its namespace module, of the right base
for t in data["all_types"]:
    cls = cls_of(t["key"])
    assert cls.__name__ == t["key"].rsplit(".", 1)[1] and cls.__module__ == ".".join([PKG, *t["key"].split(".")[:-1]])

# regular types: construction, fields, methods, containers across namespaces
for key, t in types.items():
    obj = build(key, 40 + t["index"], "nm")
    assert obj.id == 40 + t["index"] and obj.name == "nm", key
    assert obj.describe() == f"{key}#{obj.id}" and obj.add(2) == obj.id + 2 and obj.count() == 0, key
    assert obj.peer is None and len(obj.items) == 0 and len(obj.table) == 0, key
    assert type(cls_of(key).make(1, "m", *( [build(t["link"], 2)] if t["kind"] == "none" else [] ))) is cls_of(key)
    maker = getattr(importlib.import_module(".".join([PKG, *key.split(".")[:-1]])), f"make_T{t['index']}")
    assert maker(1, "m", *([build(t["link"], 2)] if t["kind"] == "none" else [])).id == 1
    if t["kind"] == "auto":
        assert obj.scale == 1.5
        obj.scale = 2.5; obj.id = 99; obj.name = "renamed"
        assert (obj.scale, obj.id, obj.name) == (2.5, 99, "renamed")
        obj.peer = build(t["peer"], 1)
        assert type(obj.peer) is cls_of(t["peer"]) and obj.peer.id == 1
        obj.items = [build(t["items"], 2), build(t["items"], 3)]
        assert [x.id for x in obj.items] == [2, 3] and obj.count() == 2
        assert all(type(x) is cls_of(t["items"]) for x in obj.items)
        obj.table = {"k": build(t["table"], 4)}
        assert obj.table["k"].id == 4 and type(obj.table["k"]) is cls_of(t["table"])
        try:
            obj.peer = build(t["table"], 5) if t["table"] != t["peer"] else 5
        except TypeError:
            pass
        else:
            raise AssertionError("a peer of the wrong type was accepted")
    else:
        try:
            obj.id = 1
        except AttributeError:
            pass
        else:
            raise AssertionError("read-only field was writable")
    if t["kind"] == "none":
        assert obj.link.id == obj.id + 1 and type(obj.link) is cls_of(t["link"])
        try:
            cls_of(key)()
        except TypeError as exc:
            assert key in str(exc)
        else:
            raise AssertionError("a type without __ffi_init__ was constructed")
    if t["keyword"]:
        if t["kind"] == "auto":
            kw = cls_of(key)(5, def_=4, class_="c", match_=9, type_="T", None_=False, same_as_=-3, table={})
            assert (kw.def_, kw.class_, kw.match_, kw.type_, kw.None_, kw.same_as_) == (4, "c", 9, "T", False, -3)
            dflt = cls_of(key)(5, table={})
            dflts = (dflt.def_, dflt.class_, dflt.match_, dflt.type_, dflt.None_, dflt.same_as_)
            assert dflts == (10, "cls", 3, "ty", True, 0)
            kw.def_ = 7
            assert kw.def_ == 7 and kw.lambda__(1) == 8
        else:
            assert (obj.def_, obj.class_, obj.match_, obj.type_, obj.None_, obj.same_as_) == (
                obj.id * 10, "cls:nm", obj.id + 1, "ty", True, -obj.id), key
            assert obj.lambda_ is None and obj.lambda__(4) == 4 + obj.id * 10
        assert obj.same_as(obj) and obj.type_key == key  # the runtime members are not shadowed
    if t["size"]:
        assert obj.size == (100 if t["kind"] == "auto" else obj.id + 100) and obj.size_() == obj.count()

# functions named like a class / a subnamespace / a keyword
assert type(ns0.T0_(9)) is ns0.T0 and ns0.T0_(9).name == "T0"
assert [ns.sub_() for ns in (ns0, ns1, ns2)] == [0, 1, 2]
assert big.ns0_() == 3 and ns1.lambda_(21) == 42
from bigpkg.big.ns1 import sub as sub1
assert sub1.depth() == 2

# cross-namespace functions and containers
a, b, c = ns0.T0(5, "a"), ns1.T0(7, "b"), ns2.T0(1, "c")
assert ns0.peer_id(b) == 7 and ns1.peer_id(c) == 1 and ns2.peer_id(a) == 5
assert ns0.sum_ids([b, ns1.T0(3, "d")]) == 10
idx = ns0.index([b])
assert list(idx.keys()) == ["b"] and type(idx["b"]) is ns1.T0
assert ns0.first([]) is None and ns0.first([c]).same_as(c)
linked = ns0.link(a, b)
assert type(linked) is ns0.T0 and linked.peer.same_as(b) and linked.id == 5
assert type(linked.table["x"]) is ns2.T0 and linked.table["x"].id == 7
try:
    ns0.peer_id(a)
except TypeError:
    pass
else:
    raise AssertionError("peer_id accepted a type of the wrong namespace")

# enums
red = ns0.color("Red")
assert isinstance(red, ns0.Color) and red.same_as(ns0.Color.Red) and red.name == "Red"
assert ns0.Color.class_.name == "class" and ns0.color("class").same_as(ns0.Color.class_)
assert ns1.color_name(ns1.Color.Green) == "Green"

# the inheritance chain: 8 levels over 6 modules
deep = ns0.make_deep(10)
levels = data["chain"]
assert type(deep) is cls_of(levels[-1])
assert [f"{c.__module__}.{c.__name__}" for c in type(deep).__mro__[: len(levels)]] == [
    PKG + "." + k for k in reversed(levels)]
assert [getattr(deep, f"v{k}") for k in range(len(levels))] == [10 + k for k in range(len(levels))]
assert deep.total() == sum(10 + k for k in range(len(levels))) and deep.level() == len(levels) - 1
assert ns0.chain_first(deep) == 10 and isinstance(deep, ns0.Level0)
last = cls_of(levels[-1])(1, "lbl", 2)
assert (last.v0, last.label, last.v1, last.v2, last.anchor) == (1, "lbl", 2, 2, None)
last.anchor = a
assert last.anchor.same_as(a)

# filler functions, by kind
samples = {
    "add2": ((2, 3), 5), "mul3": ((2, 3, 4), 24), "concat": (("a", "b"), "ab"),
    "scale": ((2.0, 1.5), 3.0), "negate": ((True,), False), "sum_arr": (([1, 2, 3],), 6),
    "keys": (({"a": 1},), ["a"]), "or_default": ((None,), -1), "noop": ((), None),
    "type_key_of": ((a,), "big.ns0.T0"),
}
for f in data["fillers"]:
    mod = importlib.import_module(".".join([PKG, *f["name"].split(".")[:-1]]))
    args, want = samples[f["kind"]]
    got = getattr(mod, f["py"])(*args)
    got = list(got) if f["kind"] == "keys" else got
    assert got == want, (f, got)
print("OK", len(types), len(data["fillers"]))
"""


def _runtime_data(plan: Plan) -> dict[str, Any]:
    regular = []
    for t in plan.types:
        if t.kind not in ("init", "auto", "none"):
            continue
        targets = {f.reg: f.target for f in t.fields if f.target}
        regular.append(
            {
                "key": t.key,
                "kind": t.kind,
                "index": t.index,
                "peer": targets["peer"],
                "items": targets["items"],
                "table": targets["table"],
                "link": targets.get("link"),
                "keyword": any(f.reg == "def" for f in t.fields),
                "size": any(f.reg == "size" for f in t.fields),
            }
        )
    fillers = [
        {"name": f.name, "kind": f.kind, "py": _py_function_name(f.name)}
        for f in plan.functions
        if f.kind in FILLER_KINDS
    ]
    return {
        "pkg": PKG,
        "types": regular,
        "all_types": [{"key": t.key} for t in plan.types],
        "chain": [t.key for t in plan.chain],
        "fillers": fillers,
    }


def test_package_works_at_run_time(big_pkg: Path, plan: Plan) -> None:
    data = _runtime_data(plan)
    out = _run(big_pkg, RUNTIME_SCRIPT, json.dumps(data))
    assert out.split() == ["OK", str(len(data["types"])), str(len(data["fillers"]))]


def test_values_of_unimported_namespaces_come_back_typed(big_pkg: Path, plan: Plan) -> None:
    last = plan.chain[-1].key
    code = textwrap.dedent(
        f"""
        import sys
        import {PKG}.big.ns0 as ns0
        assert "{_module_of(last)}" not in sys.modules
        deep = ns0.make_deep(1)
        print(type(deep).__module__, type(deep).__name__)
        """
    )
    assert _run(big_pkg, code).split() == [_module_of(last), last.rsplit(".", 1)[1]]


def test_importing_the_root_package_imports_no_namespace(big_pkg: Path) -> None:
    code = f"import sys, {PKG}; print(sorted(m for m in sys.modules if m.startswith('{PKG}.big')))"
    assert _run(big_pkg, code).strip() == "[]"


def test_nested_namespaces_are_imported_on_first_use(big_pkg: Path, mypy_report: dict[str, list[str]]) -> None:
    """Every package imports its subpackages on first use, not only the root: ``import bigpkg;
    bigpkg.big.ns0.T0`` works at run time, and mypy sees ``ns0`` (not ``Module has no attribute
    "ns0"`` [attr-defined])."""
    proc = subprocess.run([sys.executable, "-c", ATTR_CODE], capture_output=True, text=True, env=_env(big_pkg))
    run_time_ok = proc.returncode == 0 and proc.stdout.strip() == "T0"
    errors = mypy_report["attr_prog.py"] + mypy_report[""]
    report = "\n".join(mypy_report["all"])
    assert run_time_ok and errors == [], f"run time: {proc.stderr.strip().splitlines()[-1:]}\nmypy: {report}"


# --------------------------------------------------------------------------------------------
# Naming rules for names this kind of registry can hold, on tiny snapshots (no compiler needed)
# --------------------------------------------------------------------------------------------
_INT = {"type": "int"}


def _fn(name: str) -> FunctionSnap:
    return FunctionSnap(name=name, schema={"type": "ffi.Function", "named_args": {"params": [_INT], "return": [_INT]}})


def _field(name: str, offset: int) -> FieldSnap:
    return FieldSnap(name=name, schema=_INT, writable=True, offset=offset, size=8, static_type_index=1, flags=1)


def _snapshot(types: list[TypeSnap], functions: list[FunctionSnap]) -> Snapshot:
    return Snapshot(
        library="libprobe.so",
        library_path="/nonexistent/libprobe.so",
        tvm_ffi_version=[0, 1, 16],
        types=types,
        functions=functions,
        external_types={"ffi.Object": [], "ffi.Enum": ["ffi.Object"]},
    )


def _generate_from(snapshot: Snapshot, tmp_path: Path, name: str = "probepkg") -> Path:
    snap_file = tmp_path / f"{name}.json"
    snap_file.write_text(snapshot.to_json())
    out = tmp_path / name
    assert main(["--from-snapshot", str(snap_file), "-o", str(out), "-q"]) == 0
    return out


def _aliases_snapshot() -> Snapshot:
    box = TypeSnap(type_key="probe.Box", ancestors=["ffi.Object"], fields=[_field("v", 24)], init="auto", final=True)
    sub = TypeSnap(
        type_key="probe._rt.Thing", ancestors=["ffi.Object"], fields=[_field("v", 24)], init="auto", final=True
    )
    return _snapshot([box, sub], [_fn("probe._t"), _fn("probe._bind"), _fn("probe._abc"), _fn("probe.ok")])


def _auto_init_snapshot() -> Snapshot:
    k = TypeSnap(
        type_key="probe.K",
        ancestors=["ffi.Object"],
        fields=[_field("_bind", 24), _field("_rt", 32)],
        init="auto",
        final=True,
    )
    return _snapshot([k], [])


def _enum_snapshot() -> Snapshot:
    shape = TypeSnap(
        type_key="probe.Shape",
        ancestors=["ffi.Object", "ffi.Enum"],
        enum_entries=["name", "ordinal", "value", "Square"],
        final=True,
    )
    return _snapshot([shape], [])


@pytest.fixture(scope="module")
def probes(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], dict[str, list[str]]]:
    """The packages of the snapshots below, generated into one folder and checked by
    one mypy --strict run (each run spends about a second before it reaches the package): each
    package's folder, and the report's lines on it and those on no package (mypy's own)."""
    folder = tmp_path_factory.mktemp("probes")
    snapshots = {"aliaspkg": _aliases_snapshot(), "autopkg": _auto_init_snapshot(), "enumpkg": _enum_snapshot()}
    pkgs = {name: _generate_from(snap, folder, name) for name, snap in snapshots.items()}
    errors, report = run_mypy(pkgs["aliaspkg"], extra_files=list(pkgs.values()))
    return pkgs, lines_by_package(errors, report, pkgs)  # mypy writes paths relative to folder


def test_module_import_aliases_are_reserved(probes: tuple[dict[str, Path], dict[str, list[str]]]) -> None:
    """Functions, classes or subpackages named ``_t``, ``_rt``, ``_bind``, ``_abc`` are renamed: under
    those names they would shadow the aliases every generated module imports (mypy [no-redef], and
    an AttributeError at import where the module's code then uses the alias)."""
    pkgs, reports = probes
    # the subpackage `probe._rt` would replace the `_rt` alias of `probe` once imported
    assert not (pkgs["aliaspkg"] / "probe" / "_rt").exists(), (
        "subpackage named `_rt` next to `import tvmffi_runtime as _rt`"
    )
    assert reports["aliaspkg"] == [], "\n".join(reports["aliaspkg"])


def test_auto_init_parameters_do_not_shadow_module_aliases(
    probes: tuple[dict[str, Path], dict[str, list[str]]],
) -> None:
    """A field registered as ``_bind`` is not the parameter ``_bind`` of ``__init__``, whose body
    calls ``_bind.construct_auto(...)`` (on the int, mypy [attr-defined] and an AttributeError)."""
    assert probes[1]["autopkg"] == [], "\n".join(probes[1]["autopkg"])


def test_enum_entries_do_not_hide_enum_members(probes: tuple[dict[str, Path], dict[str, list[str]]]) -> None:
    """An entry registered as ``name`` is not the class attribute ``name``: mypy rejects that
    ([assignment]: base class Enum defines it as str), and it would replace the ``name`` property
    of every entry at run time (``Shape.Square.name`` would be the entry ``name``)."""
    assert probes[1]["enumpkg"] == [], "\n".join(probes[1]["enumpkg"])


def test_namespace_named_lib_does_not_shadow_the_loader(tmp_path: Path) -> None:
    """The namespace ``_lib`` is not the subpackage ``_lib/``, which would shadow the generated
    ``_lib.py`` (the library loader), so that ``import pkg`` never loaded the library."""
    x = TypeSnap(type_key="_lib.X", ancestors=["ffi.Object"], fields=[_field("v", 24)], init="auto", final=True)
    pkg = _generate_from(_snapshot([x], []), tmp_path)
    assert (pkg / "_lib.py").is_file()
    assert not (pkg / "_lib" / "__init__.py").exists(), "both _lib.py and _lib/ were written"
