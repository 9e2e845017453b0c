"""How a package is imported for its stubs, in a build and outside one (docs/build-integration.md).

- apache-tvm-ffi's packaging layout (tests/fixtures/python_packaging): the package loads its
  library with ``tvm_ffi.libinfo.load_lib_module(distribution, target)``, which finds it only in
  the installed distribution's RECORD (or on LD_LIBRARY_PATH/PATH). The build step imports it as
  installed (``write_dist_info``); where it cannot be, the failure is one line naming the
  exception, its first line and the package's own file and line.
- A package that can register nothing (no file says tvm, no library links libtvm_ffi) is refused
  before any of its modules is imported; while modules import, the progress names each.
- Package mode's check that the distribution requires tvmffi-runtime (setuptools and CMake).

test_build_integration.py builds the layout with ``pip wheel`` under scikit-build-core.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tvmffi_gen.integration.step import declared_requirements, lacks_runtime, main, write_dist_info
from tvmffi_gen.stubs.importing import import_all, import_failure
from tvmffi_gen.stubs.progress import PROGRESS_MARK
from tvmffi_gen.stubs.reach import nothing_can_register

from conftest import ROOT, TESTING_LIB, build_shared

LAYOUT = ROOT / "tests" / "fixtures" / "python_packaging"
INIT = LAYOUT / "python" / "my_ffi_extension" / "__init__.py"


def stubs_for_env(pythonpath: list[Path]) -> dict[str, str]:
    """The environment of a user who put ``pythonpath`` and this checkout on PYTHONPATH."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, pythonpath), str(ROOT / "runtime"), str(ROOT)])}


def run_tvmffi_gen(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tvmffi_gen", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def _line_of(path: Path, text: str) -> int:
    """The 1-based line of ``path`` that holds ``text``."""
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _layout_library(tmp_path: Path) -> Path:
    """The layout's library, built, under the name its package asks ``load_lib_module`` for."""
    built = build_shared("my_ffi_extension", (LAYOUT / "src" / "extension.cc").read_text())
    library = tmp_path / "lib" / "libmy_ffi_extension.so"
    library.parent.mkdir()
    shutil.copy2(built, library)
    return library


def _stubs_step(tmp_path: Path, library: Path, distribution: str) -> list[str]:
    work = tmp_path / "work"
    return [
        "stubs", "--library", str(library), "--package", "my_ffi_extension",
        "--destination", str(tmp_path / "wheel" / "my_ffi_extension"), "--work", str(work),
        "--sources", str(LAYOUT / "python"), "--distribution", distribution, "--version", "0.1.0",
    ]  # fmt: skip


@pytest.mark.slow  # --stubs-for over the package: stubgen and mypy's parser
def test_the_stubs_step_imports_a_load_lib_module_package_as_installed(tmp_path: Path, have_gxx: bool) -> None:
    assert main(_stubs_step(tmp_path, _layout_library(tmp_path), "my-ffi-extension")) == 0
    stubs = tmp_path / "wheel" / "my_ffi_extension"
    api = (stubs / "_ffi_api.pyi").read_text()
    assert "    a: Final[int]\n" in api and "def sum(self) -> int:" in api, api  # a read-only field, a method
    assert "def add_one(_0: int, /) -> int:" in api, api
    assert (stubs / "py.typed").is_file()
    # the dist-info the import needed is in the step's own folder, not in what the wheel gets
    assert not list(stubs.parent.rglob("*.dist-info"))
    (dist_info,) = (tmp_path / "work" / "stage").glob("*.dist-info")
    assert dist_info.name == "my_ffi_extension-0.1.0.dist-info"
    assert "my_ffi_extension/libmy_ffi_extension.so,," in (dist_info / "RECORD").read_text().splitlines()


def test_a_package_that_does_not_find_its_library_says_why_in_one_line(
    tmp_path: Path, have_gxx: bool, capfd: pytest.CaptureFixture[str]
) -> None:
    """Another distribution's metadata: ``load_lib_module`` searches, fails with a message of
    many lines; the error is its type, its first line and the package's line that called it."""
    assert main(_stubs_step(tmp_path, _layout_library(tmp_path), "someone-else")) == 2
    err = capfd.readouterr().err
    last = [line for line in err.splitlines() if line.strip()][-1]
    # the author's file, not the build tree's copy of it that was imported
    assert last == (
        "tvmffi-gen: error: my_ffi_extension: my_ffi_extension does not import: RuntimeError: Cannot find"
        " library libmy_ffi_extension.so; searched directories: ..."
        f" (at {INIT}:{_line_of(INIT, 'load_lib_module(')})"
    ), err


def test_stubs_for_outside_a_build_names_the_failing_line_of_the_package(tmp_path: Path) -> None:
    """The layout's sources on PYTHONPATH, not installed: ``--stubs-for`` says the same."""
    out = tmp_path / "out"
    proc = run_tvmffi_gen(
        ["--stubs-for", "my_ffi_extension", "-o", str(out)], stubs_for_env([LAYOUT / "python"]), tmp_path
    )
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("tvmffi-gen: error: my_ffi_extension: my_ffi_extension does not import: RuntimeError:")
    assert "Cannot find library libmy_ffi_extension.so" in last, last
    assert last.endswith(f" (at {INIT}:{_line_of(INIT, 'load_lib_module(')})"), last
    assert not out.exists()


def test_write_dist_info_lets_load_lib_module_find_the_library(tmp_path: Path) -> None:
    from tvm_ffi.libinfo import _find_library_by_basename

    package = tmp_path / "stage" / "pkg_x"
    package.mkdir(parents=True)
    shutil.copy2(TESTING_LIB, package / "libpkg_x.so")
    dist_info = write_dist_info(tmp_path / "stage", "Pkg-X", "2.0")
    assert dist_info.name == "Pkg_X-2.0.dist-info"
    sys.path.insert(0, str(tmp_path / "stage"))
    try:
        found = _find_library_by_basename("pkg-x", "pkg_x", use_fallback_build_path=False, use_env_path=False)
        from importlib.metadata import version

        assert version("pkg_x") == "2.0"
    finally:
        sys.path.remove(str(tmp_path / "stage"))
    assert found == (package / "libpkg_x.so").resolve()


def test_import_failure_points_at_the_packages_own_line(tmp_path: Path) -> None:
    """Raised deep in a helper outside the package, with a message of several lines: the line
    is the package's call, the message its first line."""
    helper = tmp_path / "helper_outside.py"
    helper.write_text('def find():\n    raise RuntimeError("no library\\n  /a\\n  /b")\n')
    own = tmp_path / "pkg" / "__init__.py"
    own.parent.mkdir()
    own.write_text("import helper_outside\n\nhelper_outside.find()\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(RuntimeError) as raised:
            exec(compile(own.read_text(), str(own), "exec"), {})
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("helper_outside", None)
    said = import_failure(raised.value, [str(own.parent)])
    assert said == f"RuntimeError: no library ... (at {own}:3)"
    # no frame of the package: the innermost one
    assert (
        import_failure(raised.value, [str(tmp_path / "elsewhere")]) == f"RuntimeError: no library ... (at {helper}:2)"
    )


SLEEPY = "import pathlib\nimport time\n\npathlib.Path(__file__).with_suffix('.imported').touch()\ntime.sleep(2)\n"


def _sleepy_package(root: Path, name: str, first_line: str = "") -> Path:
    """A package of three modules that each take 2 s to import and leave a mark that they did."""
    package = root / name
    package.mkdir(parents=True)
    for module in ("__init__", "one", "two"):
        (package / f"{module}.py").write_text(first_line + SLEEPY)
    return package


def test_a_package_that_can_register_nothing_is_refused_before_it_is_imported(tmp_path: Path) -> None:
    package = _sleepy_package(tmp_path, "sleepy_pkg")
    out = tmp_path / "out"
    proc = run_tvmffi_gen(["--stubs-for", "sleepy_pkg", "-o", str(out)], stubs_for_env([tmp_path]), tmp_path)
    assert proc.returncode == 2
    assert not list(package.glob("*.imported")), "a module was imported"
    assert (
        "sleepy_pkg: none of its 3 Python files imports tvm_ffi or tvm or names register_object or"
        " init_ffi_api, and it ships no native library: it can register no TVM FFI type and fill no _ffi_api module"
        in proc.stderr
    ), proc.stderr
    assert "stubgen -p sleepy_pkg -o OUT" in proc.stderr
    assert not out.exists()


@pytest.mark.slow  # imports for 6 s
def test_a_package_that_names_tvm_ffi_is_imported_before_it_is_judged(tmp_path: Path) -> None:
    package = _sleepy_package(tmp_path, "sleepy_tvm_pkg", first_line="import tvm_ffi\n")
    proc = run_tvmffi_gen(
        ["--stubs-for", "sleepy_tvm_pkg", "-o", str(tmp_path / "out")], stubs_for_env([tmp_path]), tmp_path
    )
    assert proc.returncode == 2
    assert len(list(package.glob("*.imported"))) == 3
    assert "sleepy_tvm_pkg: importing it registers no TVM FFI types" in proc.stderr, proc.stderr


def test_nothing_can_register_looks_at_sources_and_libraries(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("import json\n\ntvm = 'a name, not the package'\n")
    (package / "helper.so").write_bytes(b"\x7fELF not linking anything of interest")
    assert nothing_can_register([str(package)]) == (
        "none of its 1 Python files imports tvm_ffi or tvm or names register_object or init_ffi_api, and none"
        " of its 1 native libraries links libtvm_ffi"
    )
    shutil.copy2(TESTING_LIB, package / "helper.so")  # links libtvm_ffi (its DT_NEEDED)
    assert nothing_can_register([str(package)]) is None
    (package / "helper.so").unlink()
    for line in ("from tvm import relax", "    import tvm_ffi.core", "@xgrammar.register_object('x.Y')"):
        (package / "sub.py").write_text(f"import os\n{line}\n")
        assert nothing_can_register([str(package)]) is None, line
    assert nothing_can_register([str(tmp_path / "empty")]) is None  # nothing to judge by


def test_the_progress_names_the_module_being_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    package = tmp_path / "progress_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "slow_part.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TVMFFI_GEN_PROGRESS", "1")
    files = {"progress_pkg": str(package / "__init__.py"), "progress_pkg.slow_part": str(package / "slow_part.py")}
    ok, failed = import_all("progress_pkg", files, {}, [str(package)])
    assert (ok, failed) == (["progress_pkg", "progress_pkg.slow_part"], {})
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith(PROGRESS_MARK)]
    assert lines == [f"{PROGRESS_MARK}1/2 progress_pkg", f"{PROGRESS_MARK}2/2 progress_pkg.slow_part"]


@pytest.mark.parametrize(
    ("requirements", "warns"),
    [
        (["tvmffi-runtime>=0.1.0,<0.2"], False),
        (["numpy", "TVMFFI_Runtime[accel] ; python_version >= '3.10'"], False),
        (["tvmffi.runtime"], False),
        ([], True),
        (["tvmffi-runtime-extra", "apache-tvm-ffi"], True),
    ],
)
def test_the_runtime_requirement_is_recognised_however_it_is_spelled(requirements: list[str], warns: bool) -> None:
    warning = lacks_runtime(requirements)
    assert (warning is not None) == warns
    if warning:
        assert 'add "tvmffi-runtime" to [project] dependencies' in warning


def test_the_cmake_step_reads_the_dependencies_of_the_nearest_pyproject(tmp_path: Path) -> None:
    (tmp_path / "cpp").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["numpy"]\n')
    assert declared_requirements(tmp_path / "cpp") == ["numpy"]  # cmake.source-dir = "cpp"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndynamic = ["dependencies"]\n')
    assert declared_requirements(tmp_path / "cpp") is None  # filled in by another tool: not known


def test_the_cmake_package_step_warns_without_the_runtime_requirement(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent('[project]\nname = "x"\ndependencies = []\n'))
    args = ["package", "--library", str(TESTING_LIB), "--package", "testingpkg", "--prefix", "testing"]
    args += ["--destination", str(tmp_path / "wheel" / "testingpkg"), "--work", str(tmp_path / "work")]
    assert main([*args, "--project-dir", str(tmp_path)]) == 0
    assert 'does not require: add "tvmffi-runtime"' in capfd.readouterr().err
