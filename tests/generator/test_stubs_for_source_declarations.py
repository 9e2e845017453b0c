"""``--stubs-for``: what mypy's stubgen drops that the running module has (issue 36, 3).

The fixture package ``declpkg`` (over the tinyir fixture library) has each case in small:
explicit re-exports (``from m import a as a``, tvm_tirx's ``tirx.op``), ``__version__`` beside
an ``__all__`` (tvm_ffi_orcjit), an ``__init__`` declared under ``if TYPE_CHECKING:`` of a
registered class whose constructor is the registry's (an older tvm-ffi-stubgen's, xgrammar's
``TokenizerInfo``), stubgen's artifacts (an assignment of a loop variable, typing's
``TYPE_CHECKING`` made a public name, ``Callable[[dict], int]`` in a type alias); and a stub
edited by hand after it was written, which the next run refuses to replace, naming it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import build_shared
from mypy_reports import revealed_types
from stubs_for_run import mypy_strict_over_stubs, run_tvmffi_gen, stubs_for_env, stubs_for_package

pytestmark = pytest.mark.slow  # --stubs-for, basedpyright and mypy over a package: see tests/README.md

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

PACKAGE = {
    "__init__.py": """
        import ctypes

        import tvm_ffi  # noqa: F401

        _LIB = ctypes.CDLL(@LIB@, ctypes.RTLD_GLOBAL)

        from . import nodes, ops, prim

        __all__ = ["nodes", "ops"]

        try:
            from importlib.metadata import version

            __version__ = version("declpkg")
        except Exception:
            __version__ = "0.0.0.dev0"
    """,
    "prim.py": """
        def floordiv(a: int, b: int) -> int:
            return a // b


        def floormod(a: int, b: int) -> int:
            return a % b
    """,
    "ops.py": """
        from typing import TYPE_CHECKING, Callable

        from declpkg.prim import floordiv as floordiv
        from .prim import floormod as floormod

        _CANDIDATES = ["a", "b"]
        _chosen = None
        for path in _CANDIDATES:
            _chosen = path
            break

        LanesFn = Callable[[dict], int]

        if TYPE_CHECKING:
            pass

        __all__ = ["LanesFn"]  # (without ``path``, as tvm_ffi_orcjit's; the re-exports are explicit)
    """,
    "nodes.py": """
        from typing import TYPE_CHECKING

        import tvm_ffi


        @tvm_ffi.register_object("tinyir.Var")
        class Var(tvm_ffi.Object):
            # tvm-ffi-stubgen(begin): object/tinyir.Var
            if TYPE_CHECKING:
                def __init__(self) -> None: ...
            # tvm-ffi-stubgen(end)
    """,
}

USER = """
from declpkg import __version__, nodes
from declpkg.ops import floordiv, floormod

reveal_type(floordiv(7, 2))
reveal_type(floormod(7, 2))
reveal_type(__version__)
v = nodes.Var("x")
reveal_type(v.name)
"""


@pytest.fixture(scope="module")
def declared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(the package's folder, OUT, the folder it ran in) after ``--stubs-for declpkg``."""
    lib = build_shared("tinyir", (FIXTURES / "tinyir.cc").read_text())
    base = tmp_path_factory.mktemp("declared")
    src, out = stubs_for_package(base, "declpkg", PACKAGE, lib)
    return src, out, base


def _env(src: Path) -> dict[str, str]:
    return {**stubs_for_env([src]), "TVMFFI_GEN_NO_CACHE": "1"}


def test_what_stubgen_drops_is_in_the_stubs(declared: tuple[Path, Path, Path]) -> None:
    _, out, _ = declared
    root = out / "declpkg-stubs"
    ops = (root / "ops.pyi").read_text()
    assert "from declpkg.prim import floordiv as floordiv\n" in ops, ops
    assert "from declpkg.prim import floormod as floormod\n" in ops, ops
    assert ops.count("_chosen: Incomplete\n") == 1 and "= path" not in ops, ops  # the loop variable
    assert "TYPE_CHECKING" not in ops, ops
    assert "LanesFn = Callable[[dict[Incomplete, Incomplete]], int]\n" in ops, ops
    assert "type: ignore" not in ops, ops
    init = (root / "__init__.pyi").read_text()
    assert "__version__: str\n" in init, init
    nodes = (root / "nodes.pyi").read_text()
    assert "def __init__(self) -> None" not in nodes, nodes
    assert "def __init__(self, name: str, version: int = ..., frozen: bool = ...) -> None: ..." in nodes, nodes


def test_the_stubs_pass_mypy_strict(declared: tuple[Path, Path, Path], tmp_path: Path) -> None:
    _, out, _ = declared
    proc = mypy_strict_over_stubs(out / "declpkg-stubs", "declpkg", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_user_sees_what_the_running_package_has(declared: tuple[Path, Path, Path], tmp_path: Path) -> None:
    src, out, _ = declared
    stubs = tmp_path / "stubs"
    (stubs / "declpkg").parent.mkdir(parents=True)
    subprocess.run(["cp", "-r", str(out / "declpkg-stubs"), str(stubs / "declpkg")], check=True)
    (tmp_path / "user.py").write_text(textwrap.dedent(USER).lstrip())
    env = stubs_for_env([stubs, src])
    env["MYPYPATH"] = str(stubs)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "user.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert revealed_types(proc.stdout) == ["int", "int", "str", "str"], proc.stdout
    assert "error" not in proc.stdout.replace("Revealed type", ""), proc.stdout
    ran = subprocess.run(
        [sys.executable, "-c", "import declpkg.nodes as n; print(n.Var('x').name)"],
        capture_output=True,
        text=True,
        env=stubs_for_env([src]),
    )
    assert ran.stdout.strip() == "x", ran.stderr  # the constructor the stub declares runs
    pyright = subprocess.run(
        [sys.executable, "-m", "basedpyright", "--pythonpath", sys.executable, str(stubs / "declpkg")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert "is not defined" not in pyright.stdout, pyright.stdout


def test_a_hand_edit_is_refused_and_named(declared: tuple[Path, Path, Path]) -> None:
    src, out, base = declared
    ops = out / "declpkg-stubs" / "ops.pyi"
    original = ops.read_text()
    ops.write_text(original.replace("LanesFn =", "Lanes2 = int\nLanesFn ="))
    proc = run_tvmffi_gen(["--stubs-for", "declpkg", "-o", str(out)], _env(src), base)
    assert proc.returncode == 2, proc.stderr
    assert f"{ops}" in proc.stderr and "edited since tvmffi-gen --stubs-for wrote them" in proc.stderr
    assert "Lanes2" in ops.read_text()  # left as the user has it
    forced = run_tvmffi_gen(["--stubs-for", "declpkg", "-o", str(out), "--force"], _env(src), base)
    assert forced.returncode == 0, forced.stderr
    assert ops.read_text() == original
    again = run_tvmffi_gen(["--stubs-for", "declpkg", "-o", str(out)], _env(src), base)
    assert again.returncode == 0, again.stderr  # what it wrote is not an edit


def _installed(module: str) -> bool:
    return subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0


def _stubs_of(package: str, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    proc = run_tvmffi_gen(["--stubs-for", package, "-o", str(out)], stubs_for_env([]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    return out / f"{package}-stubs"


@pytest.mark.skipif(not _installed("tvm_tirx"), reason="apache-tvm-tirx is not installed (optional)")
def test_tvm_tirx_keeps_its_explicit_reexports(tmp_path: Path) -> None:
    root = _stubs_of("tvm_tirx", tmp_path)
    op = (root / "tirx" / "op" / "__init__.pyi").read_text()
    assert "from tvm_tirx.ir.prim.op import floordiv as floordiv\n" in op, op
    table = (root / "backend" / "cuda" / "ptx" / "table.pyi").read_text()
    assert "LanesFn = Callable[[dict[Incomplete, Incomplete]], int]\n" in table, table


@pytest.mark.skipif(not _installed("tvm_ffi_orcjit"), reason="apache-tvm-ffi-orcjit is not installed (optional)")
def test_tvm_ffi_orcjit_has_its_version_and_no_artifacts(tmp_path: Path) -> None:
    root = _stubs_of("tvm_ffi_orcjit", tmp_path)
    init = (root / "__init__.pyi").read_text()
    assert "__version__: str\n" in init and "= path" not in init, init
    assert "TYPE_CHECKING" not in (root / "session.pyi").read_text()


@pytest.mark.skipif(not _installed("xgrammar"), reason="xgrammar is not installed (optional)")
def test_xgrammar_constructors_are_the_registrys(tmp_path: Path) -> None:
    root = _stubs_of("xgrammar", tmp_path)
    api = (root / "tvm_ffi_binding" / "_ffi_api.pyi").read_text()
    for name in ("TokenizerInfo", "GrammarCompiler", "GrammarMatcher", "BatchGrammarMatcher"):
        body = api[api.index(f"class {name}(") :]
        body = body[: body.find("\nclass ")] if "\nclass " in body else body
        assert "def __init__(self) -> None" not in body, body
        assert "def __init__(self, " in body, body
