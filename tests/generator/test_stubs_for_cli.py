"""``tvmffi-gen --stubs-for PKG`` on packages other than the fixture package: tvm_ffi itself
(apache-tvm: test_stubs_for_tvm.py), and input it refuses with a clear error (a package that does not
import or registers nothing, ``--no-cache`` without ``--stubs-for``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tvmffi_gen.stubs.stubtext import STUB_HEADER

from stubs_for_run import run_tvmffi_gen as _gen
from stubs_for_run import stubs_for_env as _env

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md


def test_a_package_that_does_not_import_is_a_clear_error(tmp_path: Path) -> None:
    proc = _gen(["--stubs-for", "no_such_package_xyz", "-o", str(tmp_path / "out")], _env([]), tmp_path)
    assert proc.returncode == 2
    assert "no_such_package_xyz does not import: ModuleNotFoundError" in proc.stderr


def test_a_package_that_registers_nothing_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "plain_pkg").mkdir()
    (tmp_path / "plain_pkg" / "__init__.py").write_text("def f() -> int:\n    return 1\n")
    proc = _gen(["--stubs-for", "plain_pkg", "-o", str(tmp_path / "out")], _env([tmp_path]), tmp_path)
    assert proc.returncode == 2
    assert "plain_pkg: it registers no TVM FFI types" in proc.stderr


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
