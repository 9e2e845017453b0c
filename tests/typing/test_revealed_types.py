"""What the checkers infer for the generated testing package's API: the exact revealed types.

"0 errors" alone would pass a package whose every member were ``Any``; here one program reveals
the types of fields, constructor results, method and function returns, containers, enum entries,
``match`` captures and visitor results, and mypy --strict and basedpyright (strict) must each
reveal exactly the type written beside it (one run of each over the committed package).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tvmffi_gen.verify.checkers import find_pyright

from conftest import ROOT
from mypy_reports import mypy_strict_in, user_env

PKG = ROOT / "generated" / "tvmffi_testing"

#: (expression, what mypy reveals, what pyright reveals); the program reveals each in order
CASES: list[tuple[str, str, str]] = [
    # constructor results and fields
    ("pair", "tvmffi_testing.testing.TestIntPair", "TestIntPair"),
    ("pair.a", "int", "int"),
    ("TestIntPair.b", "int", "int"),
    ("TestCxxAutoInitSimple(1, y=2)", "tvmffi_testing.testing.TestCxxAutoInitSimple", "TestCxxAutoInitSimple"),
    ("s.v_float", "float", "float"),
    ("s.v_string", "str", "str"),
    ("s.v_opt_int", "int | None", "int | None"),
    ("s.v_dtype", "tvmffi_runtime._values.DataType", "DataType"),
    # containers: fields read as the runtime's typed containers
    ("s.v_arr_int", "tvmffi_runtime.containers.Array[int]", "Array[int]"),
    ("s.v_map_str_int", "tvmffi_runtime.containers.Map[str, int]", "Map[str, int]"),
    (
        "s.v_map_str_arr_int",
        "tvmffi_runtime.containers.Map[str, tvmffi_runtime.containers.Array[int]]",
        "Map[str, Array[int]]",
    ),
    ("s.v_arr_int[0]", "int", "int"),
    # methods: instance, static, replace
    ("pair.sum()", "int", "int"),
    ("s.append_int([1], 2)", "tvmffi_runtime.containers.Array[int]", "Array[int]"),
    ("s.maybe_concat('a', None)", "str | None", "str | None"),
    ("SchemaAllTypes.make_with(1, 2.0, 'x')", "tvmffi_testing.testing.SchemaAllTypes", "SchemaAllTypes"),
    ("pair.replace(a=3)", "tvmffi_testing.testing.TestIntPair", "TestIntPair"),
    # global functions
    ("add_one(1)", "int", "int"),
    ("schema_id_arr_int([1, 2])", "tvmffi_runtime.containers.Array[int]", "Array[int]"),
    ("schema_id_map_str_int({'a': 1})", "tvmffi_runtime.containers.Map[str, int]", "Map[str, int]"),
    ("schema_id_opt_int(None)", "int | None", "int | None"),
    # enum entries
    ("TestEnumVariant.Alpha", "tvmffi_testing.testing.TestEnumVariant", "TestEnumVariant"),
    # visitor hooks and the engine's results
    ("Mapper().map_test_int_pair(pair)", "object", "object"),
    # the result keeps the root's type (copy.replace's rule), through move() too
    ("rt.structural_map(pair, Mapper())", "tvmffi_testing.testing.TestIntPair", "TestIntPair"),
    ("rt.structural_map(rt.move(pair), Mapper())", "tvmffi_testing.testing.TestIntPair", "TestIntPair"),
    ("rt.structural_mutate(pair, Mutator())", "tvmffi_testing.testing.TestIntPair", "TestIntPair"),
    ("rt.structural_mutate(rt.move(pair), Mutator())", "tvmffi_testing.testing.TestIntPair", "TestIntPair"),
    (
        "rt.structural_walk(pair, Walker())",
        "tvmffi_runtime.structural._markers.VisitInterrupt | None",
        "VisitInterrupt | None",
    ),
    (
        "Walker().walk_test_int_pair(pair)",
        "tvmffi_runtime.structural._markers.WalkResult | tvmffi_runtime.structural._markers.VisitInterrupt | None",
        "WalkResult | VisitInterrupt | None",
    ),
]

#: a class pattern's captures take the fields' types (the last two reveals of the program)
MATCH_CASES = [("x", "int", "int"), ("y", "int", "int")]


def _program() -> str:
    lines = [
        "import tvmffi_runtime as rt",
        "from tvmffi_testing.testing import (",
        "    SchemaAllTypes, TestCxxAutoInitSimple, TestEnumVariant, TestIntPair, add_one, schema_id_arr_int,",
        "    schema_id_map_str_int, schema_id_opt_int,",
        ")",
        "from tvmffi_testing.visitors import Mapper, Mutator, Walker",
        "",
        "",
        "def main(pair: TestIntPair, s: SchemaAllTypes, simple: TestCxxAutoInitSimple) -> None:",
    ]
    lines += [f"    reveal_type({expr})" for expr, _, _ in CASES]
    lines += [
        "    match simple:",
        "        case TestCxxAutoInitSimple(x, y):",
        "            reveal_type(x)",
        "            reveal_type(y)",
    ]
    lines.append("")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("revealed")
    shutil.copytree(PKG, root / PKG.name, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "prog.py").write_text(_program(), encoding="utf-8")
    return root


def _expected(column: int) -> list[str]:
    return [case[column] for case in CASES] + [case[column] for case in MATCH_CASES]


def test_mypy_reveals_the_declared_types(project: Path) -> None:
    proc = mypy_strict_in(project, "prog.py")
    revealed = re.findall(r'^prog\.py:\d+: note: Revealed type is "(.*)"$', proc.stdout, re.M)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert not errors, proc.stdout
    assert revealed == _expected(1), proc.stdout


def test_pyright_reveals_the_declared_types(project: Path, tmp_path: Path) -> None:
    pyright = find_pyright()
    assert pyright, "basedpyright is part of the test extras"
    config = tmp_path / "pyrightconfig.json"
    config.write_text(
        json.dumps(
            {
                "typeCheckingMode": "strict",
                "include": [str(project / "prog.py")],
                "executionEnvironments": [{"root": str(project)}],
            }
        )
    )
    proc = subprocess.run(
        [pyright, "--outputjson", "--pythonpath", sys.executable, "--project", str(config)],
        cwd=project,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    diagnostics = json.loads(proc.stdout)["generalDiagnostics"]
    errors = [d["message"] for d in diagnostics if d["severity"] == "error"]
    assert not errors, errors
    revealed = [
        re.sub(r'^Type of ".*" is "(.*)"$', r"\1", d["message"], flags=re.S)
        for d in sorted(diagnostics, key=lambda d: d["range"]["start"]["line"])
        if d["severity"] == "information"
    ]
    assert revealed == _expected(2), revealed
