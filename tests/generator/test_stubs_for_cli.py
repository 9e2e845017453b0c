"""``tvmffi-gen --stubs-for PKG`` on packages other than the fixture package: tvm_ffi itself
(apache-tvm: test_stubs_for_tvm.py), and input it refuses with a clear error (a package that does not
import or registers nothing, ``--no-cache`` without ``--stubs-for``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tvmffi_gen.stubs.stubtext import STUB_HEADER

from conftest import build_shared
from stubs_for_run import run_tvmffi_gen as _gen
from stubs_for_run import stubs_for_env as _env

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_a_package_that_does_not_import_is_a_clear_error(tmp_path: Path) -> None:
    proc = _gen(["--stubs-for", "no_such_package_xyz", "-o", str(tmp_path / "out")], _env([]), tmp_path)
    assert proc.returncode == 2
    assert "no_such_package_xyz does not import: ModuleNotFoundError" in proc.stderr


def test_a_package_that_registers_nothing_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "plain_pkg").mkdir()
    # it names tvm_ffi, so it is imported (one that never does is refused unimported: reach.py)
    (tmp_path / "plain_pkg" / "__init__.py").write_text("import tvm_ffi\n\n\ndef f() -> int:\n    return 1\n")
    proc = _gen(["--stubs-for", "plain_pkg", "-o", str(tmp_path / "out")], _env([tmp_path]), tmp_path)
    assert proc.returncode == 2
    assert "plain_pkg: importing it registers no TVM FFI types" in proc.stderr
    assert "(mypy's stubgen writes stubs of its Python: stubgen -p plain_pkg -o OUT)" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_package_whose_library_registers_types_it_gives_no_class_is_named_so(tmp_path: Path) -> None:
    """Its library registers types (tinyir's), the package registers no Python class for any:
    the refusal says so, rather than that nothing is registered."""
    lib = build_shared("tinyir", (FIXTURES / "tinyir.cc").read_text())
    (tmp_path / "bare_pkg").mkdir()
    (tmp_path / "bare_pkg" / "__init__.py").write_text(
        f"import ctypes\n\nimport tvm_ffi\n\n_LIB = ctypes.CDLL({str(lib)!r}, ctypes.RTLD_GLOBAL)\n"
    )
    proc = _gen(["--stubs-for", "bare_pkg", "-o", str(tmp_path / "out")], _env([tmp_path]), tmp_path)
    assert proc.returncode == 2
    assert "registers no TVM FFI types" not in proc.stderr, proc.stderr
    assert "importing it registers 7 TVM FFI types (tinyir.Expr, tinyir.Func, tinyir.Node, ...)" in proc.stderr
    assert "registers no Python class for any of them" in proc.stderr, proc.stderr
    assert "stubgen -p bare_pkg -o OUT" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_stubs_for_tvm_ffi_itself(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = _gen(["--stubs-for", "tvm_ffi", "-o", str(out), "-q"], _env([]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    root = out / "tvm_ffi-stubs"
    # its own core.pyi is kept; its testing classes get their reflected methods
    assert (root / "core.pyi").read_text().startswith(STUB_HEADER)
    testing = (root / "testing" / "testing.pyi").read_text()
    pair = testing[testing.index("class TestIntPair(") :]
    assert "    def sum(self, /) -> int: ..." in pair[: pair.index("\nclass ")]


def test_no_cache_without_stubs_for_is_refused(tmp_path: Path) -> None:
    proc = _gen(["-o", str(tmp_path / "out"), "--no-cache"], _env([]), tmp_path)
    assert proc.returncode == 2
    assert "--no-cache is for the cache of --stubs-for PKG: give --stubs-for too" in proc.stderr
