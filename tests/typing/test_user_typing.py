"""What a user's strict type checker and IDE see of the runtime and a generated package.

Each program is checked by mypy --strict and pyright strict (basedpyright) the way a user's
project runs them (tvmffi_gen.verify.checkers: no search paths of ours); completions come from jedi.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from tvmffi_gen.verify.checkers import run_mypy, run_pyright

from conftest import ROOT

pytestmark = pytest.mark.slow  # whole packages through a checker: see tests/README.md

PKG = ROOT / "generated" / "tvmffi_testing"
if str(PKG.parent) not in sys.path:
    sys.path.insert(0, str(PKG.parent))


def _errors_on(report: str, line: int) -> list[str]:
    return [entry for entry in report.splitlines() if f"prog.py:{line}:" in entry and "error" in entry]


CLEAN = """\
    import tvmffi_runtime as rt
    from tvmffi_testing.testing import TestIntPair
    from tvmffi_testing.visitors import Mapper, Walker

    f: rt.Function = rt.Function.get_global("testing.add_one")
    g: rt.Function | None = rt.Function.get_global("no.such", allow_missing=True)
    m: rt.Map[str, int] = rt.Map({"a": 1})
    one: int | None = m.get("a")
    two: int = m.get("b", 2)
    three: int | str = m.get("c", "none")
    keys: list[str] = list(m.keys())
    values: list[int] = list(m.values())
    pairs: list[tuple[str, int]] = list(m.items())
    pair = TestIntPair(1, 2)
    a: int = pair.a
    total: int = a + pair.sum()
    rt.structural_map(pair, Mapper())
    rt.structural_walk(pair, Walker())

    def on_int(x: int) -> None: ...
    def on_pair(x: TestIntPair) -> rt.WalkResult: return rt.WalkResult.SKIP
    rt.structural_walk(pair, (on_int, on_pair))
    """


def test_precise_types_check_clean(checked: tuple[list[Path], dict[str, str]]) -> None:
    reports = _check(checked, "clean")
    assert reports == {"mypy": "", "pyright": ""}, reports


WRONG_BASE = """\
    import tvmffi_runtime as rt
    from tvmffi_testing.testing import TestIntPair
    from tvmffi_testing.visitors import Walker

    rt.structural_map(TestIntPair(1, 2), Walker())
    """

READ_ONLY = """\
    from tvmffi_testing.testing import TestCompare

    def f(x: TestCompare) -> None:
        x.key = 3
    """

GET_GLOBAL = """\
    import tvmffi_runtime as rt

    rt.Function.get_global("testing.nop")()
    h = rt.Function.get_global("testing.nop", allow_missing=True)
    h()
    """

NUMPY_SCALARS = """\
    import numpy as np
    from tvmffi_testing.testing import SchemaAllTypes, TestIntPair, add_one, schema_id_float

    r: int = add_one(np.int64(41))
    f: float = schema_id_float(np.float32(0.5)) + schema_id_float(np.int8(2))
    p = TestIntPair(np.int32(1), np.uint8(2))
    s = SchemaAllTypes.make_with(np.int16(1), np.float64(2.0), "x")
    add_one(np.float64(1.0))
    """

PROGRAMS = {
    "clean": CLEAN,
    "wrong_base": WRONG_BASE,
    "read_only": READ_ONLY,
    "get_global": GET_GLOBAL,
    "numpy_scalars": NUMPY_SCALARS,
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], dict[str, str]]:
    """Every program of ``PROGRAMS``, each in its own file, checked by one run of each checker
    (a checker run costs seconds; the programs do not import each other, so one file's errors
    do not change another's)."""
    folder = tmp_path_factory.mktemp("user_programs")
    files = []
    for name, source in PROGRAMS.items():
        files.append(folder / f"{name}_prog.py")
        files[-1].write_text(textwrap.dedent(source))
    reports = {}
    for checker, run in (("mypy", run_mypy), ("pyright", run_pyright)):
        _, reports[checker] = run(PKG, files)
    return files, reports


def _check(checked: tuple[list[Path], dict[str, str]], name: str) -> dict[str, str]:
    """Each checker's report on program ``name``: the entries on its file (``<name>_prog.py``)
    and the entries on no program's file (the package's, the runtime's, the checker's own)."""
    files, reports = checked
    return {checker: _report_of(report, files, name) for checker, report in reports.items()}


def _report_of(report: str, files: list[Path], name: str) -> str:
    others = [f"/{f.name}:" for f in files if f.name != f"{name}_prog.py"]
    return "\n".join(entry for entry in report.splitlines() if not any(other in entry for other in others))


def test_wrong_traversal_base_is_a_type_error_in_both_checkers(checked: tuple[list[Path], dict[str, str]]) -> None:
    reports = _check(checked, "wrong_base")
    for name, report in reports.items():
        assert _errors_on(report, 5), (name, report)


def test_wrong_traversal_base_is_refused_at_run_time() -> None:
    import tvmffi_runtime as rt
    from tvmffi_testing.testing import TestIntPair
    from tvmffi_testing.visitors import Mapper, Walker

    with pytest.raises(
        TypeError, match=r"structural_map: expected a Mapper .*got Walker, a WalkerBase for structural_walk"
    ):
        rt.structural_map(TestIntPair(1, 2), Walker())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"structural_walk: expected a Walker .*got Mapper"):
        rt.structural_walk(TestIntPair(1, 2), Mapper())  # type: ignore[arg-type]


def test_assigning_a_read_only_field_reads_as_read_only(checked: tuple[list[Path], dict[str, str]]) -> None:
    reports = _check(checked, "read_only")
    on_line = _errors_on(reports["mypy"], 4)
    assert len(on_line) == 1 and 'Cannot assign to final attribute "key"' in on_line[0], reports
    assert any("declared as Final" in entry or "Final" in entry for entry in _errors_on(reports["pyright"], 4)), reports


def test_get_global_without_allow_missing_is_not_optional(checked: tuple[list[Path], dict[str, str]]) -> None:
    reports = _check(checked, "get_global")
    assert reports["mypy"].count("error") == 1 and _errors_on(reports["mypy"], 5), reports
    assert _errors_on(reports["pyright"], 5) and not _errors_on(reports["pyright"], 3), reports


def test_ide_completes_a_field_value_with_the_values_members() -> None:
    jedi = pytest.importorskip("jedi")
    src = (
        f"import sys; sys.path.insert(0, {str(PKG.parent)!r})\n"
        "from tvmffi_testing.testing import TestIntPair\n"
        "p = TestIntPair(1, 2)\n"
        "p.a."
    )
    names = {c.name for c in jedi.Script(src, path=str(ROOT / "use.py")).complete(4, 4)}
    assert "bit_length" in names
    leaked = names & {"kind", "offset", "qualname", "_read", "_setter"}
    assert not leaked, f"descriptor internals offered as the value's members: {leaked}"


def test_numpy_scalars_are_accepted_where_the_runtime_takes_them(
    checked: tuple[list[Path], dict[str, str]], tmp_path: Path
) -> None:
    """An int argument takes what has ``__index__``, a float argument what has ``__float__`` (as
    the runtime does); results stay ``int``/``float``; a numpy float is not an int (issue 18)."""
    reports = _check(checked, "numpy_scalars")
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(NUMPY_SCALARS))
    _, reports["pyright default"] = run_pyright(PKG, [prog], mode="default")
    for name, report in reports.items():
        assert [entry for entry in report.splitlines() if "error" in entry and "prog.py:8:" not in entry] == [], (
            name,
            report,
        )
        assert _errors_on(report, 8), (name, report)
    # in basedpyright's default mode the package itself reports nothing (the program may: it
    # drops call results)
    assert [entry for entry in reports["pyright default"].splitlines() if "prog.py" not in entry] == []
