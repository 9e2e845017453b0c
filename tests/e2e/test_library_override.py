"""``$<PKG>_LIBRARY`` and the library a generated package loads (issue 18 item 3).

Each case imports the committed reference package in a child interpreter, as a user would:
a variable naming a missing file is an ImportError naming the variable and the path (not a
silent fall back on the recorded library); a loaded library that is not the package's is
reported as such, naming the library and where its path came from.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import tvmffi_runtime as rt

from conftest import ROOT, TESTING_LIB

GENERATED = ROOT / "generated"
VAR = "TVMFFI_TESTING_LIBRARY"


def _import(code: str, pythonpath: Path = GENERATED, **env: str) -> subprocess.CompletedProcess[str]:
    full = {"PYTHONPATH": f"{pythonpath}:{ROOT / 'runtime'}", "PATH": "/usr/bin:/bin", **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def _last_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode != 0, proc.stdout
    return proc.stderr.strip().splitlines()[-1]


def test_override_naming_a_missing_file_is_an_import_error_naming_it(tmp_path: Path) -> None:
    typo = tmp_path / "typo" / "lib.so"
    message = _last_line(_import("import tvmffi_testing", **{VAR: str(typo)}))
    assert message.startswith("ImportError: tvmffi_testing:"), message
    assert f"${VAR}" in message and str(typo) in message, message
    assert "does not exist" in message, message


def test_override_naming_a_folder_is_refused(tmp_path: Path) -> None:
    message = _last_line(_import("import tvmffi_testing", **{VAR: str(tmp_path)}))
    assert f"${VAR}" in message and str(tmp_path) in message and "is a folder" in message, message


def test_an_empty_override_counts_as_unset() -> None:
    proc = _import("import tvmffi_testing._lib as l; print(l.path)", **{VAR: ""})
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()).resolve() == TESTING_LIB.resolve()


def test_override_naming_another_library_says_it_is_not_the_packages() -> None:
    other = rt.LIB_PATH  # a real TVM FFI library that registers none of the package's types
    message = _last_line(_import("import tvmffi_testing", **{VAR: other}))
    assert message.startswith("ImportError: tvmffi_testing:"), message
    assert other in message and f"${VAR}" in message, message
    assert "none of the package's" in message and "not the library" in message, message
    assert "regenerate" not in message, message


def test_override_naming_the_right_library_elsewhere_loads_it(tmp_path: Path) -> None:
    copy = tmp_path / "libtvm_ffi_testing.so"
    shutil.copy2(TESTING_LIB, copy)
    code = (
        "import tvmffi_testing._lib as l; from tvmffi_testing.testing import TestIntPair; "
        "print(l.path, TestIntPair(1, 2).a)"
    )
    proc = _import(code, **{VAR: str(copy)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(copy), "1"]


def test_recorded_library_that_is_not_the_packages_names_the_recorded_path(tmp_path: Path) -> None:
    copy = tmp_path / "pkgs" / "tvmffi_testing"
    shutil.copytree(GENERATED / "tvmffi_testing", copy)
    lib_py = copy / "_lib.py"
    text = lib_py.read_text()
    start = text.index("RECORDED_PATH = ")
    end = text.index("\n", start)
    lib_py.write_text(text[:start] + f"RECORDED_PATH = {rt.LIB_PATH!r}" + text[end:])
    message = _last_line(_import("import tvmffi_testing", pythonpath=copy.parent))
    assert rt.LIB_PATH in message and "recorded path" in message and "not the library" in message, message
    assert f"${VAR}" in message, message  # what to do: point the variable at the right library


def test_a_type_missing_from_the_package_library_names_that_library(tmp_path: Path) -> None:
    """Some of the package's types registered, one not: the package is out of date for the
    library it loaded, and the message says which library (and where its path came from)."""
    copy = tmp_path / "pkgs" / "tvmffi_testing"
    shutil.copytree(GENERATED / "tvmffi_testing", copy)
    lib_py = copy / "_lib.py"
    text = lib_py.read_text()
    anchor = "_bind.register_lazy_types(\n    {\n"
    assert anchor in text
    lib_py.write_text(text.replace(anchor, anchor + '        "testing.Gone": "tvmffi_testing.testing",\n'))
    code = "import tvmffi_testing; from tvmffi_runtime import bind; bind.register('testing.Gone')"
    message = _last_line(_import(code, pythonpath=copy.parent, **{VAR: str(TESTING_LIB)}))
    assert "'testing.Gone'" in message and str(TESTING_LIB) in message, message
    assert f"from ${VAR}" in message and "regenerate" in message, message
