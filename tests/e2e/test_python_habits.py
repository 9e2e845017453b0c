"""Generated classes behave like Python's own (issue 20): ``match`` with positional and keyword
patterns (``__match_args__``), ``replace``/``__replace__``, ``tvmffi_runtime.fields()``, and
keyword calls of functions whose parameter names are known.

The main check is a user's program in a folder of its own (outside the repository, no
configuration of ours): a small constant folder over tests/fixtures/fold_ir.cc, run on both
runtime paths and checked by mypy --strict and basedpyright strict. Python here is 3.11, so
``copy.replace`` itself cannot run: ``__replace__`` (what it calls) is tested directly.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tvmffi_gen.cli.main import main
from tvmffi_gen.model.builder import build_model
from tvmffi_gen.registry.snapshot import FieldSnap, FunctionSnap, MethodSnap, Snapshot, TypeSnap
from tvmffi_gen.verify.checkers import run_mypy, run_pyright

from conftest import ROOT, build_shared

FIXTURE = ROOT / "tests" / "fixtures" / "fold_ir.cc"
both_paths = pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])


@pytest.fixture(scope="module")
def user(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's folder holding the generated package ``foldpkg`` (and nothing of ours)."""
    lib = build_shared("fold_ir", FIXTURE.read_text())
    root = tmp_path_factory.mktemp("user_project")
    assert main([str(lib), "-o", str(root / "foldpkg"), "-q"]) == 0
    return root


def _run(root: Path, script: Path | str, pure: bool) -> str:
    # the runtime as installed, the package beside the script: nothing of ours on the path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TVMFFI_RUNTIME_PURE")}
    if pure:
        env["TVMFFI_RUNTIME_PURE"] = "1"
    if isinstance(script, str):
        path = root / "snippet.py"
        path.write_text("import tvmffi_runtime as rt\nfrom foldpkg.foldir import *\n" + textwrap.dedent(script))
        script = path
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=root, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip()


def _file_of(entry: str) -> str:
    """The name of the file a checker's report entry is on (mypy writes the path relative to the
    folder it ran in, pyright an absolute one)."""
    return Path(entry.split(":", 1)[0]).name


@pytest.fixture(scope="module")
def checked(user: Path) -> dict[str, list[str]]:
    """Each checker's report over ``FOLDER`` (fold_checked.py) and ``WRONG`` (wrong.py) in the
    user's folder, both in one run of each checker (neither imports the other)."""
    programs = [user / "fold_checked.py", user / "wrong.py"]
    programs[0].write_text(FOLDER)
    programs[1].write_text(WRONG)
    return {
        name: run(user / "foldpkg", programs)[1].splitlines()
        for name, run in (("mypy", run_mypy), ("pyright", run_pyright))
    }


# --------------------------------------------------------------------------------------------
# the user's program: what docs/generated-packages.md's example of a pass shows
# --------------------------------------------------------------------------------------------
FOLDER = '''\
"""Constant folding over foldpkg's IR: match, replace, fields() and a keyword call."""

from __future__ import annotations

from typing import assert_type

import tvmffi_runtime as rt
from foldpkg import fold_divmod, fold_scale
from foldpkg.foldir import Add, Const, Expr, Mul, Neg, Var


def fold(e: Expr) -> Expr:
    """``e`` with constant subtrees folded; an unchanged node is returned as it is."""
    match e:
        case Add(Const(x), Const(y)):  # positional patterns, in constructor order
            assert_type(x, int)
            return Const(x + y, span=e.span)
        case Mul(a=Const(value=x), b=Const(value=y)):  # keyword patterns
            assert_type(y, int)
            return Const(fold_scale(value=x, factor=y), span=e.span)  # a keyword call
        case Add(a, b) | Mul(a, b):
            assert_type(a, Expr)
            new_a, new_b = fold(a), fold(b)
            if new_a.same_as(a) and new_b.same_as(b):
                return e
            return fold(e.replace(a=new_a, b=new_b))  # a new node; e stays as it is
        case Neg(x=Const(value=v)):  # no positional order: match Neg by keyword
            return Const(-v)
        case _:
            return e


def show(node: object) -> str:
    """A generic printer: every field fields() lists, but the source location."""
    if not isinstance(node, rt.Object):
        return repr(node)
    parts = [f"{f.name}={show(getattr(node, f.name))}" for f in rt.fields(node) if f.name != "span"]
    return f"{type(node).__name__}({', '.join(parts)})"


def main() -> None:
    src = Add(Mul(Const(2), Const(3)), Add(Var("x"), Add(Const(1), Neg(Const(4)))), span="f.py:1")
    before = show(src)
    out = fold(src)
    print(show(out))
    assert show(src) == before, "the pass changed its input"
    assert out.span == "f.py:1" and not out.same_as(src)

    c = Const(1, span="a.py:3")
    d = c.replace(value=2)
    assert_type(d, Const)
    assert (c.value, d.value, d.span) == (1, 2, "a.py:3"), (c, d)
    e = d.__replace__(span="b.py:4")  # what copy.replace(d, span=...) calls on Python 3.13+
    assert (d.span, e.span, e.value) == ("a.py:3", "b.py:4", 2)
    print([(f.name, f.type, f.read_only, f.has_default) for f in rt.fields(Add)])

    quotient, remainder = fold_divmod(a=17, b=5)  # a tuple result whose items are documented
    result = fold_divmod(17, 5)
    assert_type(result.remainder, int)
    assert (quotient, remainder, result.quotient, result) == (3, 2, 3, (3, 2)), result
    print(result)


main()
'''

EXPECTED_FOLD = "Add(a=Const(value=6), b=Add(a=Var(name='x'), b=Const(value=-3)))"


@both_paths
def test_a_constant_folder_runs_in_a_users_folder(user: Path, pure: bool) -> None:
    program = user / "fold.py"
    program.write_text(FOLDER)
    out = _run(user, program, pure).splitlines()
    backend = _run(user, "from tvmffi_runtime._backend import accelerated\nprint(not accelerated())", pure)
    assert backend == str(pure)  # the path under test is the one in use
    assert out[0] == EXPECTED_FOLD
    assert out[1] == (
        "[('span', <class 'str'>, False, True), ('a', <class 'foldpkg.foldir.Expr'>, True, False),"
        " ('b', <class 'foldpkg.foldir.Expr'>, True, False)]"
    )
    assert out[2] == "FoldDivmodResult(quotient=3, remainder=2)"


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_the_constant_folder_is_clean_under_both_checkers(checked: dict[str, list[str]]) -> None:
    # nothing but wrong.py's errors: none on the folder, none in the package
    rest = {name: [entry for entry in report if _file_of(entry) != "wrong.py"] for name, report in checked.items()}
    assert rest == {"mypy": [], "pyright": []}


WRONG = """\
from foldpkg import fold_divmod
from foldpkg.foldir import Add, Const, Expr, Neg

def f(e: Expr) -> None:
    match e:
        case Const(x):
            s: str = x
        case _:
            pass
    Const(1).replace(value="two")
    Const(1).replace(nope=1)
    Const(1).replace(2)
    t: Add = Const(1).replace(value=2)
    u: str = fold_divmod(1, 2).quotient
"""


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_narrowed_and_replace_types_are_enforced_by_both_checkers(checked: dict[str, list[str]]) -> None:
    for name, report in checked.items():
        lines = {entry.split(":")[1] for entry in report if _file_of(entry) == "wrong.py"}
        for line in (7, 10, 11, 12, 13, 14):
            assert str(line) in lines, (name, line, report)


# --------------------------------------------------------------------------------------------
# run-time behaviour (both paths)
# --------------------------------------------------------------------------------------------
@both_paths
def test_match_args_follow_the_constructor(user: Path, pure: bool) -> None:
    out = _run(
        user,
        """
        print(Add.__match_args__, Const.__match_args__, Tagged.__match_args__, "__match_args__" in vars(Neg))
        match Neg(Const(1)):
            case Neg(x=Const(value=v)):
                print("keyword", v)
        try:
            match Neg(Const(1)):
                case Neg(x):
                    pass
        except TypeError as exc:
            print(exc)
        """,
        pure,
    ).splitlines()
    assert out == [
        "('a', 'b', 'span') ('value', 'span') ('label',) False",
        "keyword 1",
        "Neg() accepts 0 positional sub-patterns (1 given)",
    ]


@both_paths
def test_replace_copies_or_rebuilds_and_never_changes_the_source(user: Path, pure: bool) -> None:
    out = _run(
        user,
        """
        # writable field: the library's shallow copy, then the setter on the copy
        v = Var("x", span="s")
        w = v.replace(span="t")
        print(v.span, w.span, w.name, w.same_as(v))
        # read-only field: rebuilt by the reflected auto-init from every field's value
        c = Const(1, span="s")
        d = c.replace(value=2)
        print(c.value, d.value, d.span, type(d).__name__)
        # no change: still a new object
        print(c.replace().same_as(c))
        """,
        pure,
    ).splitlines()
    assert out == ["s t x False", "1 2 s Const", "False"]


@both_paths
def test_replace_refusals_name_the_field(user: Path, pure: bool) -> None:
    out = _run(
        user,
        """
        for call in (
            lambda: Neg(Const(1)).replace(x=Const(2)),
            lambda: Neg(Const(1)).replace(span="z"),
            lambda: Tagged("a").replace(label="b"),
            lambda: Const(1).replace(nope=1),
            lambda: Const(1).replace(2),
        ):
            try:
                call()
            except TypeError as exc:
                print(exc)
        """,
        pure,
    ).splitlines()
    assert out == [
        "Neg.replace(): field 'x' is read-only, and foldir.Neg has no reflected auto-init to build"
        " the changed object with",
        "Neg.replace(): foldir.Neg cannot be copied (it registers no __ffi_shallow_copy__), and"
        " foldir.Neg has no reflected auto-init to build the changed object with",
        "Tagged.replace(): field 'label' is read-only, and foldir.Tagged's auto-init does not take"
        " field 'serial' (a rebuilt object would lose its value)",
        "Const.replace() got an unexpected keyword argument 'nope' (foldir.Const has no such field)",
        "Const.replace() takes 1 positional argument but 2 were given",
    ]


@both_paths
def test_a_library_member_named_replace_wins(user: Path, pure: bool) -> None:
    out = _run(
        user,
        """
        import inspect
        e = Edit(1)
        f = e.replace_(replace=5)
        print(e.replace, f.replace, Edit.__replace__ is Edit.replace_)
        print(inspect.signature(Edit.replace_))
        """,
        pure,
    ).splitlines()
    assert out == ["1 5 True", "(self, *, replace: 'int' = ...) -> 'Edit'"]


@both_paths
def test_fields_describes_a_class_immutably(user: Path, pure: bool) -> None:
    out = _run(
        user,
        """
        import dataclasses
        fs = rt.fields(Const)
        print(type(fs).__name__, fs == rt.fields(Const(3)))
        print([(f.name, f.registry_name, f.owner, f.schema, f.doc) for f in fs])
        try:
            fs[0].name = "other"
        except dataclasses.FrozenInstanceError as exc:
            print("frozen")
        # a field typed by a class of another namespace (imported there for type checkers only)
        import foldpkg.foldaux, sys
        print([(f.name, f.type) for f in rt.fields(foldpkg.foldaux.Note)])
        for bad in (int, 3):
            try:
                rt.fields(bad)
            except TypeError as exc:
                print(exc)
        """,
        pure,
    ).splitlines()
    assert out == [
        "tuple True",
        "[('span', 'span', 'foldir.Expr', '{\"type\":\"ffi.String\"}', ''),"
        " ('value', 'value', 'foldir.Const', '{\"type\":\"int\"}', '')]",
        "frozen",
        "[('target', <class 'foldpkg.foldir.Expr'>)]",
        "fields() takes a generated class or one of its objects, not int",
        "fields() takes a generated class or one of its objects, not int",
    ]


@both_paths
def test_a_documented_tuple_result_is_a_named_tuple(user: Path, pure: bool) -> None:
    out = _run(
        user,
        """
        import inspect, pickle
        import foldpkg
        r = foldpkg.fold_divmod(17, b=5)
        print(r, type(r).__mro__[1].__name__, r._fields, foldpkg.fold_divmod(b=5, a=17) == r)
        fold_divmod = foldpkg.fold_divmod
        print(inspect.signature(fold_divmod), pickle.loads(pickle.dumps(fold_divmod)) is fold_divmod)
        try:
            foldpkg.fold_divmod(1)
        except TypeError as exc:
            print(exc)
        """,
        pure,
    ).splitlines()
    assert out == [
        "FoldDivmodResult(quotient=3, remainder=2) tuple ('quotient', 'remainder') True",
        "(a: '_t.SupportsIndex', b: '_t.SupportsIndex') -> 'FoldDivmodResult' True",
        "fold_divmod() takes 2 positional arguments but 1 was given",
    ]


@both_paths
def test_keyword_calls_of_exported_and_documented_functions(user: Path, pure: bool) -> None:
    out = _run(
        user,
        """
        import foldpkg
        print(foldpkg.fold_scale(value=3, factor=4), foldpkg.fold_scale(3, factor=5), foldpkg.fold_scale(2, 3))
        try:
            foldpkg.fold_scale(3, scale=2)
        except TypeError as exc:
            print(exc)
        """,
        pure,
    ).splitlines()
    assert out[0] == "12 15 6"
    assert "fold_scale()" in out[1] and "scale" in out[1]


# --------------------------------------------------------------------------------------------
# the model's decisions, from snapshots alone
# --------------------------------------------------------------------------------------------
INT = {"type": "int"}


def _init(*names: str | None) -> dict[str, Any]:
    params = [dict(INT, name=n) if n else dict(INT) for n in names]
    return {"type": "ffi.Function", "named_args": {"return": [{"type": "ffi.Object"}], "params": params}}


def _snapshot(types: list[TypeSnap], functions: list[FunctionSnap] | None = None) -> Snapshot:
    return Snapshot(
        "libfake.so",
        "/nonexistent/libfake.so",
        [0, 1, 16],
        types,
        functions or [],
        external_types={"ffi.Object": [], "ffi.Enum": ["ffi.Object"]},
    )


def test_match_args_model() -> None:
    f = FieldSnap
    types = [
        TypeSnap(
            "m.Auto",
            ["ffi.Object"],
            init="auto",
            fields=[
                f("x", schema=INT),
                f("k", schema=INT, kw_only=True),
                f("y", schema=INT, has_default=True, default=1),
                f("hidden", schema=INT, init=False),
            ],
        ),
        TypeSnap(
            "m.Named",
            ["ffi.Object"],
            init="method",
            init_schema=_init("x", "y", "scale"),
            fields=[f("y", schema=INT), f("x", schema=INT)],
        ),
        TypeSnap(
            "m.Unnamed", ["ffi.Object"], init="method", init_schema=_init(None, None), fields=[f("x", schema=INT)]
        ),
        TypeSnap("m.Child", ["ffi.Object", "m.Auto"], init="method", init_schema=_init(None)),
        TypeSnap("m.Plain", ["ffi.Object"], fields=[f("x", schema=INT)]),
    ]
    classes = build_model(_snapshot(types), "pkg").classes
    assert classes["m.Auto"].match_args == ["x", "y"]  # positional parameters only, in auto-init order
    assert classes["m.Named"].match_args == ["x", "y"]  # the leading init parameters named like fields
    assert classes["m.Unnamed"].match_args is None  # no known order: no line
    assert classes["m.Child"].match_args == []  # hides the ancestor's order
    assert classes["m.Plain"].match_args is None


def test_replace_model_names_and_parameters() -> None:
    f = FieldSnap
    types = [
        TypeSnap("r.Base", ["ffi.Object"], init="auto", fields=[f("a", schema=INT, writable=True)]),
        TypeSnap("r.Child", ["ffi.Object", "r.Base"], init="auto", fields=[f("b", schema={"type": "r.Base"})]),
        TypeSnap("r.HasField", ["ffi.Object"], fields=[f("replace", schema=INT)]),
        TypeSnap("r.HasMethod", ["ffi.Object"], methods=[MethodSnap("replace")]),
        TypeSnap("r.Below", ["ffi.Object", "r.HasMethod"]),
        TypeSnap("r.Kind", ["ffi.Object", "ffi.Enum"], enum_entries=["x"]),
    ]
    classes = build_model(_snapshot(types), "pkg").classes
    child = classes["r.Child"].replace
    assert child is not None and child.name == "replace" and child.ret == "Child"
    assert [(p.name, p.annotation, p.kind, p.default) for p in child.params] == [
        ("a", "int", "kwonly", "_bind.KEEP"),
        ("b", "Base", "kwonly", "_bind.KEEP"),
    ]  # ancestors first
    assert [classes[k].replace.name for k in ("r.HasField", "r.HasMethod", "r.Below")] == ["replace_"] * 3  # type: ignore[union-attr]
    assert classes["r.Kind"].replace is None  # enum entries are interned, never copied


def test_documented_parameter_names_take_keywords_unnamed_stay_positional() -> None:
    doc = "Scale.\n\nArgs:\n    value: the value\n    factor: the factor\n"
    schema = {"type": "ffi.Function", "named_args": {"return": [INT], "params": [INT, INT]}}
    model = build_model(
        _snapshot([], [FunctionSnap("f.documented", doc, schema), FunctionSnap("f.plain", "", schema)]), "pkg"
    )
    fns = {fn.name: fn for fn in model.modules[("f",)].functions}
    assert [(p.name, p.kind) for p in fns["documented"].params] == [("value", "normal"), ("factor", "normal")]
    assert [(p.name, p.kind) for p in fns["plain"].params] == [("_0", "posonly"), ("_1", "posonly")]


def test_named_results_model() -> None:
    tup = {"type": "Tuple", "args": [INT, {"type": "ffi.String"}]}
    schema = {"type": "ffi.Function", "named_args": {"return": [tup], "params": []}}
    named = "Split.\n\nReturns\n-------\nhead : int\n    first\ntail : str\n    rest\n"
    bare = "Split.\n\nReturns\n-------\nint\n    first\nstr\n    rest\n"
    functions = [
        FunctionSnap("n.split", named, schema),
        FunctionSnap("n.SplitResult", "", {"type": "ffi.Function", "named_args": {"return": [INT], "params": []}}),
        FunctionSnap("n.bare", bare, schema),
        FunctionSnap("n.counted", named.replace("head", "count"), schema),
    ]
    fns = {fn.name: fn for fn in build_model(_snapshot([], functions), "pkg").modules[("n",)].functions}
    split = fns["split"]
    assert split.result is not None and split.ret == split.result.name == "SplitResult_"  # after functions
    assert split.result.fields == [("head", "int"), ("tail", "str")]
    assert fns["bare"].result is None and fns["bare"].ret == "_rt.Array[int | str]"  # unnamed items
    assert fns["counted"].result is None  # a name a tuple already defines
