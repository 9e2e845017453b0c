"""What a first user of a package for their own IR meets (issue 13): constructor signatures and
argument errors, field write errors and the bool rule, enums. Uses tests/fixtures/tinyir.cc,
generated once per session; each check runs in a child interpreter on both runtime paths."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main

from conftest import ROOT, build_shared

FIXTURE = ROOT / "tests" / "fixtures" / "tinyir.cc"


@pytest.fixture(scope="module")
def tinypkg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding the generated package ``tinypkg``."""
    lib = build_shared("tinyir", FIXTURE.read_text())
    root = tmp_path_factory.mktemp("first_user")
    assert main([str(lib), "-o", str(root / "tinypkg"), "-q"]) == 0
    return root


def run(root: Path, code: str, pure: bool) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(ROOT / "runtime")])
    env.pop("TVMFFI_RUNTIME_PURE", None)
    if pure:
        env["TVMFFI_RUNTIME_PURE"] = "1"
    script = "from tinypkg.tinyir import *\nimport tvmffi_runtime as rt\n" + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def errors(root: Path, calls: list[str], pure: bool) -> list[str]:
    """``type: message`` of what each expression raises ("ok" if nothing)."""
    code = f"for src in {calls!r}:\n" + textwrap.indent(
        textwrap.dedent(
            """\
            try:
                exec(src)
                print("ok")
            except Exception as e:
                print(f"{type(e).__name__}: {e}".replace(chr(10), " "))
            """
        ),
        "    ",
    )
    return run(root, code, pure).splitlines()


both_paths = pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])


@both_paths
def test_auto_init_errors_name_the_parameter(tinypkg: Path, pure: bool) -> None:
    got = errors(
        tinypkg,
        [
            "Var(object())",
            "Func('f', [], object())",
            "Func('f', [], Var('x'), frozen=object())",
            "Func(body=Var('x'), params=[], name=object())",
        ],
        pure,
    )
    assert got[0].startswith("TypeError: tinyir.Var.__init__: argument 'name' (position 0) has type object")
    assert got[1].startswith("TypeError: tinyir.Func.__init__: argument 'body' (position 2) has type object")
    assert got[2].startswith("TypeError: tinyir.Func.__init__: argument 'frozen' (position 4) has type object")
    assert got[3].startswith("TypeError: tinyir.Func.__init__: argument 'name' (position 0) has type object")


@both_paths
def test_auto_init_errors_of_a_convertible_value_of_the_wrong_type_name_the_parameter(
    tinypkg: Path, pure: bool
) -> None:
    """A value that converts to an FFI value but not to the field's type is refused by the native
    init, whose message names the field only: it gets the parameter and position too."""
    got = errors(tinypkg, ["Var(None)", "Func('f', [], Var('x'), 3, 'yes')", "Func('f', [1], Var('x'))"], pure)
    assert (
        got[0]
        == "TypeError: tinyir.Var.__init__: argument 'name' (position 0): Cannot convert from type `None` to `str`"
    )
    assert got[1].startswith("TypeError: tinyir.Func.__init__: argument 'frozen' (position 4): "), got[1]
    assert got[2].startswith("TypeError: tinyir.Func.__init__: argument 'params' (position 1): "), got[2]


@both_paths
def test_constructor_signature_of_a_class_below_a_non_constructible_base(tinypkg: Path, pure: bool) -> None:
    out = run(
        tinypkg,
        """\
        import inspect
        print(inspect.signature(Var))
        print(inspect.signature(Func))
        print(Var("x").name, Func("f", [Var("a")], Var("b"), version=3).version)
        class MyVar(Var):
            def __init__(self, label: str) -> None:
                super().__init__(label.upper())
        print(inspect.signature(MyVar), MyVar("q").name)
        """,
        pure,
    )
    assert out.splitlines() == [
        "(name: 'str', version: '_t.SupportsIndex' = 0, frozen: 'bool' = False) -> 'None'",
        "(name: 'str', params: '_abc.Sequence[Var]', body: 'Expr', version: '_t.SupportsIndex' = 0,"
        " frozen: 'bool' = False) -> 'None'",
        "x 3",
        "(label: str) -> None Q",
    ]


@both_paths
def test_field_writes_name_the_field_and_bool_fields_take_what_bool_arguments_take(tinypkg: Path, pure: bool) -> None:
    got = errors(
        tinypkg,
        [
            "Var('x').version = 'a'",
            "Var('x').version = 1.5",
            "Var('x').version = 1 << 70",
            "Var('x').frozen = 'a'",
            "Var('x').frozen = 2.0",
        ],
        pure,
    )
    assert got == [
        "TypeError: field tinyir.Node.version: expected int, got str",
        "TypeError: field tinyir.Node.version: expected int, got float",
        "OverflowError: field tinyir.Node.version: 1180591620717411303424 does not fit the int64 field",
        "TypeError: field tinyir.Node.frozen: expected bool or int, got str",
        "TypeError: field tinyir.Node.frozen: expected bool or int, got float",
    ]
    # a bool argument accepts an int (the native conversion does): so does a bool field
    out = run(
        tinypkg,
        """\
        v = Var("x")
        seen = []
        for value in (True, 0, 2, False, 1):
            v.frozen = value
            seen.append((v.frozen, negate(value)))
        print(seen)
        """,
        pure,
    )
    assert out == "[(True, False), (False, True), (True, False), (False, True), (True, False)]"


@both_paths
def test_enum_class_iterates_and_entries_are_the_class_members(tinypkg: Path, pure: bool) -> None:
    out = run(
        tinypkg,
        """\
        print([e.name for e in OpKind], len(OpKind), bool(OpKind))
        print(OpKind.add is opkind("add"), opkind("mul") is OpKind.mul, list(OpKind)[0] is OpKind.add)
        print(opkind("add") is opkind("add"), {OpKind.add: 1}[opkind("add")])
        """,
        pure,
    )
    assert out.splitlines() == ["['add', 'mul'] 2 True", "True True True", "True 1"]
