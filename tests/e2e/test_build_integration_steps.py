"""The pieces of the build integration, without pip (docs/build-integration.md).

- ``tvmffi_gen.integration.step``: regenerates when what it reads changed, and only then; a generator
  error is the step's failure, with the generator's message.
- ``[tool.tvmffi-gen]``: a wrong entry is refused, naming what is wrong.
- The CMake package found through ``tvmffi-gen --cmakedir`` by a plain CMake build (no
  scikit-build-core), in stubs mode over the setuptools example's sources: stubs in the build
  tree, no step when nothing changed, a new one when a Python source did.

test_build_integration.py builds the two examples with ``pip wheel`` as their users would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tvmffi_gen
from tvmffi_gen.cli.main import cmake_dir
from tvmffi_gen.integration.options import generator_arguments
from tvmffi_gen.integration.setuptools import ConfigError, GenerationConfig, read_config
from tvmffi_gen.integration.step import Step, authors_marker, python_sources, run_step

from conftest import ROOT, TESTING_LIB

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md

PLANE = ROOT / "examples" / "setuptools_plane"


def _package_step(tmp_path: Path, prefixes: tuple[str, ...]) -> Step:
    return Step(
        mode="package",
        library=TESTING_LIB,
        package="testingpkg",
        destination=tmp_path / "wheel" / "testingpkg",
        work=tmp_path / "work",
        options=generator_arguments({"prefix": list(prefixes)}, "test"),
    )


def test_the_package_step_regenerates_only_when_what_it_reads_changed(tmp_path: Path) -> None:
    said: list[str] = []
    first = _package_step(tmp_path, ("testing",))
    assert run_step(first, said.append) == 0
    init = first.destination / "testing" / "__init__.py"
    assert "class TestIntPair(" in init.read_text() and (first.destination / "libtvm_ffi_testing.so").is_file()
    written = init.stat().st_mtime_ns
    assert run_step(first, said.append) == 0
    assert "not regenerated" in said[-1] and init.stat().st_mtime_ns == written
    # a file the last run copied that this one does not write is removed from the destination
    stamp = json.loads(first.stamp.read_text())
    (first.destination / "gone.py").write_text("")
    first.stamp.write_text(json.dumps({**stamp, "files": [*stamp["files"], "gone.py"]}))
    other = _package_step(tmp_path, ("testing", "testing.nested"))  # other options: another output
    assert run_step(other, said.append) == 0
    assert said[-1].startswith("tvmffi-gen: wrote package") and not (first.destination / "gone.py").exists()


def test_a_generator_error_fails_the_step_with_the_generators_message(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    sources = tmp_path / "src"
    (sources / "broken").mkdir(parents=True)
    (sources / "broken" / "__init__.py").write_text('import tvm_ffi\n\nraise RuntimeError("the library is missing")\n')
    step = Step(
        mode="stubs",
        library=TESTING_LIB,
        package="broken",
        destination=tmp_path / "wheel" / "broken",
        work=tmp_path / "work",
        sources=sources,
        source_files=python_sources(sources, "broken"),
    )
    status = run_step(step, print)
    err = capfd.readouterr().err
    assert status == 2, err
    assert "tvmffi-gen: error: broken" in err and "the library is missing" in err, err
    assert not step.stamp.exists() and not step.destination.exists()


def test_a_library_that_does_not_load_fails_the_step_naming_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    step = Step("package", tmp_path / "libmissing.so", "pkg", tmp_path / "out", tmp_path / "work")
    assert run_step(step, print) == 2
    assert f"tvmffi-gen: error: {tmp_path / 'libmissing.so'}: no such file" in capfd.readouterr().err


def test_stubs_add_py_typed_unless_the_author_has_one(tmp_path: Path) -> None:
    sources, destination = tmp_path / "src", tmp_path / "wheel" / "pkg"
    (sources / "pkg").mkdir(parents=True)
    destination.mkdir(parents=True)
    assert not authors_marker(destination, sources, "pkg", [])
    (destination / "py.typed").write_text("")
    assert not authors_marker(destination, sources, "pkg", ["py.typed"])  # the last run's own
    assert authors_marker(destination, sources, "pkg", [])  # there before any run: the author's
    (destination / "py.typed").unlink()
    (sources / "pkg" / "py.typed").write_text("")
    assert authors_marker(destination, sources, "pkg", ["x.pyi"])  # in the sources the wheel gets


def _config(tmp_path: Path, text: str) -> list[GenerationConfig]:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(text))
    return read_config(tmp_path / "pyproject.toml")


def test_the_setuptools_configuration_is_read_from_pyproject(tmp_path: Path) -> None:
    assert _config(tmp_path, "[project]\nname = 'x'\n") == []
    one = _config(tmp_path, '[tool.tvmffi-gen]\npackage = "a"\nextension = "a._lib"\nprefix = "ns"\n')
    assert one == [GenerationConfig("package", "a", "a._lib", ("--prefix", "ns"))]
    two = _config(
        tmp_path,
        """
        [[tool.tvmffi-gen]]
        mode = "stubs"
        package = "a"
        extension = "a._lib"
        [[tool.tvmffi-gen]]
        package = "b"
        extension = "a._lib"
        """,
    )
    assert [c.mode for c in two] == ["stubs", "package"]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('mode = "wheel"\npackage = "a"\nextension = "a._lib"', 'mode = \'wheel\': give "package" or "stubs"'),
        ('package = "a"', "give extension (a string each)"),
        ('package = "a"\nextension = "a._lib"\npackages = ["b"]', "unknown key(s) packages"),
        ('mode = "stubs"\npackage = "a"\nextension = "a._lib"\nprefix = ["a"]', "not with mode = 'stubs'"),
    ],
)
def test_a_wrong_setuptools_configuration_is_refused_naming_what_is_wrong(
    tmp_path: Path, entry: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=r"\[tool\.tvmffi-gen\]") as info:
        _config(tmp_path, f"[tool.tvmffi-gen]\n{entry}\n")
    assert message in str(info.value)


def test_cmakedir_names_the_folder_of_the_cmake_package() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tvmffi_gen", "--cmakedir"], capture_output=True, text=True, check=True
    )
    assert Path(proc.stdout.strip()) == cmake_dir()
    assert (cmake_dir() / "tvmffi_gen-config.cmake").is_file()


CMAKELISTS = """\
cmake_minimum_required(VERSION 3.18)
project(plane_stubs LANGUAGES CXX)
find_package(tvm_ffi CONFIG REQUIRED)
find_package(tvmffi_gen CONFIG REQUIRED)
execute_process(
  COMMAND "${Python_EXECUTABLE}" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'), end='')"
  OUTPUT_VARIABLE EXT_SUFFIX)
add_library(_plane SHARED src/plane.cc)
set_target_properties(_plane PROPERTIES PREFIX "" SUFFIX "${EXT_SUFFIX}")
target_link_libraries(_plane PRIVATE tvm_ffi::shared)
tvmffi_gen_add_stubs(_plane PACKAGE plane SOURCE_DIR .)
"""


def _cmake(*args: str, cwd: Path) -> str:
    proc = subprocess.run(["cmake", *args], capture_output=True, text=True, cwd=cwd, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc.stdout


@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("ninja") is None, reason="needs cmake and ninja")
def test_a_plain_cmake_build_writes_stubs_and_reruns_only_on_a_change(tmp_path: Path, have_gxx: bool) -> None:
    project = tmp_path / "project"
    shutil.copytree(PLANE, project, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    (project / "CMakeLists.txt").write_text(CMAKELISTS)
    tvm_ffi_dir = subprocess.run(
        [sys.executable, "-m", "tvm_ffi.config", "--cmakedir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    build = project / "build"
    _cmake(
        "-S", ".", "-B", "build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_CXX_FLAGS_DEBUG=-O0",
        f"-DPython_EXECUTABLE={sys.executable}", f"-Dtvm_ffi_DIR={tvm_ffi_dir}", f"-Dtvmffi_gen_DIR={cmake_dir()}",
        cwd=project,
    )  # fmt: skip
    first = _cmake("--build", "build", cwd=project)
    stubs = build / "tvmffi_gen" / "_plane-stubs" / "wheel" / "plane"
    assert "tvmffi-gen: wrote stubs for plane" in first, first
    assert {p.name for p in stubs.iterdir()} == {"__init__.pyi", "_ffi_api.pyi", "shapes.pyi", "py.typed"}
    assert "    width: Final[int]\n" in (stubs / "shapes.pyi").read_text()  # a read-only field
    assert not list((project / "plane").glob("*.pyi"))  # the author's sources are left alone
    assert "tvmffi-gen" not in _cmake("--build", "build", cwd=project)  # nothing changed: no step
    shapes = project / "plane" / "shapes.py"
    os.utime(shapes)  # touched, not changed: the step runs and finds nothing to regenerate
    assert "not regenerated" in _cmake("--build", "build", cwd=project)
    shapes.write_text(shapes.read_text() + "\n\ndef extra(n: int) -> int:\n    return n\n")
    assert "tvmffi-gen: wrote stubs" in _cmake("--build", "build", cwd=project)
    assert "def extra(n: int) -> int" in (stubs / "shapes.pyi").read_text()
    assert (stubs / "py.typed").is_file()  # written again by the run that regenerated


SETUP_PY = """\
from pathlib import Path

import tvm_ffi.libinfo
from setuptools import Extension, setup

from tvmffi_gen.integration.options import generator_arguments
from tvmffi_gen.integration.setuptools import build_ext

include = [tvm_ffi.libinfo.find_include_path(), tvm_ffi.libinfo.find_dlpack_include_path()]
setup(
    ext_modules=[
        Extension(
            "shapes._shapes",
            ["src/shapes.cc"],
            include_dirs=include,
            library_dirs=[str(Path(tvm_ffi.libinfo.find_libtvm_ffi()).parent)],
            libraries=["tvm_ffi"],
            extra_compile_args=["-std=c++17", "-O0", "-g0"],
            language="c++",
        )
    ],
    cmdclass={"build_ext": build_ext},
)
"""
PACKAGE_PYPROJECT = """\
[project]
name = "shapes"
version = "0.1.0"
dependencies = ["tvmffi-runtime>=0.1.0,<0.2"]

[tool.setuptools]
packages = []  # the package is the generated one

[tool.tvmffi-gen]
mode = "package"
package = "shapes"
extension = "shapes._shapes"
"""


def test_setuptools_package_mode_generates_into_the_build_tree_once(tmp_path: Path, have_gxx: bool) -> None:
    """The CMake example's library as a setuptools extension, in package mode: the generated
    package goes into ``build/lib.*/shapes`` beside the extension (``setup.py build``, what
    ``pip wheel`` runs, without pip's environments: test_build_integration.py has those)."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "examples" / "cmake_shapes" / "src", project / "src")
    (project / "setup.py").write_text(SETUP_PY)
    (project / "pyproject.toml").write_text(PACKAGE_PYPROJECT)

    def build() -> str:
        proc = subprocess.run([sys.executable, "setup.py", "build"], capture_output=True, text=True, cwd=project)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
        return proc.stdout + proc.stderr

    first = build()
    assert "tvmffi-gen: wrote package for shapes" in first and "does not require" not in first, first
    (package,) = (project / "build").glob("lib.*/shapes")
    assert "class Rect(" in (package / "geom" / "__init__.py").read_text()
    assert "def perimeter(" in (package / "__init__.py").read_text()
    assert {p.name for p in package.glob("_shapes*.so")}, sorted(p.name for p in package.iterdir())
    second = build()
    assert "not regenerated" in second and "tvmffi-gen: wrote" not in second, second


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
@pytest.mark.parametrize(
    "prefix",
    [
        pytest.param(cmake_dir().parents[3], id="site-packages"),  # the folder holding tvmffi_gen/
        pytest.param(cmake_dir().parents[2], id="cmake.prefix-entry-point"),  # tvmffi_gen/ itself
    ],
)
def test_find_package_finds_the_config_under_the_prefixes_scikit_build_core_adds(tmp_path: Path, prefix: Path) -> None:
    """scikit-build-core puts site-packages on CMAKE_PREFIX_PATH, and the folder each
    ``cmake.prefix`` entry point names (here: the tvmffi_gen package): either finds the config
    with no other hint (an editable install's package folder stands for site-packages)."""
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(probe NONE)\nfind_package(tvmffi_gen CONFIG REQUIRED)\n"
    )
    out = _cmake(
        "-S", ".", "-B", "build", f"-DCMAKE_PREFIX_PATH={prefix}", f"-DPython_EXECUTABLE={sys.executable}", cwd=tmp_path
    )  # fmt: skip
    assert f"Found tvmffi_gen {tvmffi_gen.__version__}" in out, out
    cache = (tmp_path / "build" / "CMakeCache.txt").read_text()
    assert f"tvmffi_gen_DIR:PATH={cmake_dir()}" in cache


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("tvmffi_gen_add_package(nosuch NAME pkg)", "tvmffi_gen_add_package(nosuch): no target named nosuch"),
        ("tvmffi_gen_add_package(lib)", "tvmffi_gen_add_package(lib): give the package's name, NAME <package>"),
        ("tvmffi_gen_add_stubs(lib PACKAGE pkg EXTRA)", "tvmffi_gen_add_stubs(lib): unknown arguments EXTRA"),
    ],
)
def test_a_wrong_cmake_call_stops_the_configure_step_naming_it(tmp_path: Path, call: str, message: str) -> None:
    (tmp_path / "lib.cc").write_text("")
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(probe LANGUAGES CXX)\n"
        f"find_package(tvmffi_gen CONFIG REQUIRED)\nadd_library(lib SHARED lib.cc)\n{call}\n"
    )
    proc = subprocess.run(
        ["cmake", "-S", ".", "-B", "build", f"-Dtvmffi_gen_DIR={cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert message in " ".join(proc.stderr.split()), proc.stderr
