"""Library authors' own builds generate the typed Python (docs/build-integration.md).

The example projects are built as an author's users build them: ``pip wheel`` with build
isolation on, in a fresh venv, tvmffi-gen and tvmffi-runtime served as wheels built from this
repository (``--find-links``; they are not on PyPI), everything else (scikit-build-core, setuptools,
apache-tvm-ffi, and cmake and ninja where the machine has none) from the package index.

- ``examples/cmake_shapes``: CMake under scikit-build-core, ``tvmffi_gen_add_package``: the
  wheel holds the generated package ``shapes`` with the library in it.
- ``examples/setuptools_plane``: setuptools with ``tvmffi_gen.integration.setuptools.build_ext`` in stubs
  mode: the wheel holds the package ``plane`` (built on tvm_ffi) with ``.pyi`` files and py.typed.
- ``tests/fixtures/python_packaging``: apache-tvm-ffi's own packaging layout (its
  ``examples/python_packaging``, without stubgen markers): a package that finds its library with
  ``load_lib_module`` (the installed distribution's RECORD), ``wheel.install-dir`` set to the
  package's folder, ``tvmffi_gen_add_stubs``; and, beside it, ``tvmffi_gen_add_package`` into
  the same wheel, with no ``tvmffi-runtime`` in the dependencies (the build warns).

The wheels go into another fresh venv; a user's folder outside the repository runs a script on
each and checks files with ``mypy --strict`` and basedpyright's default mode: fields and results
reveal ``int``/``str``, deliberate mistakes are reported. The CMake project is then built a second
time with nothing changed: its library is recompiled (the new build environment's include paths),
and the build step reads it again and does not regenerate. (setuptools keeps the extension it
built, so its second build differs from a non-isolated one in nothing the step sees:
test_build_integration_steps.py builds it twice without pip, for a fraction of the time.)

One module fixture makes the venvs and both builds, shared by every test here; the repository's
two wheels are built once per content of their sources (tests/repository_wheels.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tvmffi_gen.verify.checkers import find_pyright

from conftest import ROOT
from repository_wheels import repository_wheels

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.egg-info", "build", "_build", "dist")
EXAMPLES = {
    "shapes": ROOT / "examples" / "cmake_shapes",
    "plane": ROOT / "examples" / "setuptools_plane",
    # apache-tvm-ffi's packaging layout: load_lib_module, wheel.install-dir (tests/fixtures/python_packaging)
    "my_ffi_extension": ROOT / "tests" / "fixtures" / "python_packaging",
}
T = TypeVar("T")
REGENERATED = "tvmffi-gen: wrote"
NOT_REGENERATED = "not regenerated"


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    # pip byte-compiles what it installs, into each build environment too (mypy's thousands of
    # modules, four times): the largest cost here, and of no use to these short-lived venvs
    env["PIP_NO_COMPILE"] = "1"
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)


def _checked(proc: subprocess.CompletedProcess[str], what: str) -> str:
    if proc.returncode != 0 and "No matching distribution" in proc.stdout + proc.stderr:
        pytest.skip(f"the package index is not reachable ({what})")
    assert proc.returncode == 0, f"{what} failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    return proc.stdout + proc.stderr


def _both(work: Callable[..., T], calls: list[tuple[object, ...]]) -> list[T]:
    """``work(*args)`` for each argument tuple at once (two cores: the runs are mostly subprocesses)."""
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(lambda args: work(*args), calls))


def _fresh_venv(path: Path) -> Path:
    """A venv that sees nothing of this one; pip runs in it from outside (``pip --python``)."""
    _checked(_run([sys.executable, "-m", "venv", "--without-pip", str(path)]), "creating a venv")
    return path / "bin" / "python"


def _pip(python: Path, *args: str, cwd: Path | None = None) -> str:
    proc = _run([sys.executable, "-m", "pip", "--python", str(python), *args], cwd=cwd)
    return _checked(proc, f"pip {args[0]}")


def _build(builder: Path, project: Path, dist: Path, out: Path) -> str:
    """``pip wheel`` of ``project`` with build isolation (pip's default); the build's output."""
    return _pip(builder, "wheel", "-v", "--no-deps", "--find-links", str(dist), "-w", str(out), str(project))


@dataclass
class Built:
    """What the module fixture made: the wheels, each build's output, the user's venv."""

    wheels: dict[str, Path]
    #: the copies of the examples that were built
    projects: dict[str, Path]
    first_build: dict[str, str]
    #: the CMake project's second build
    second_build: str
    user_python: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, have_gxx: bool) -> Built:
    tmp = tmp_path_factory.mktemp("build_integration")
    dist = repository_wheels()["runtime"].parent
    builder = _fresh_venv(tmp / "builder-venv")
    projects = {name: tmp / "projects" / src.name for name, src in EXAMPLES.items()}
    for name, project in projects.items():
        shutil.copytree(EXAMPLES[name], project, ignore=IGNORED)
    names = sorted(projects)
    # both projects at once, then the CMake one again (it must find the first build's tree)
    first = dict(zip(names, _both(_build, [(builder, projects[n], dist, tmp / "wheels") for n in names]), strict=True))
    second = _build(builder, projects["shapes"], dist, tmp / "wheels-again")
    wheels = {name: next((tmp / "wheels").glob(f"{name}-*.whl")) for name in projects}
    user_python = _fresh_venv(tmp / "user-venv")
    _pip(user_python, "install", "-q", "--find-links", str(dist), *map(str, wheels.values()))
    return Built(wheels, projects, first, second, user_python)


def _names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def test_the_cmake_wheel_holds_the_generated_package_with_the_library(built: Built) -> None:
    names = _names(built.wheels["shapes"])
    expected = {"shapes/__init__.py", "shapes/_lib.py", "shapes/geom/__init__.py", "shapes/py.typed"}
    assert expected <= names, sorted(names)
    assert "shapes/libshapes.so" in names  # bundled: the package loads it from beside itself
    with zipfile.ZipFile(built.wheels["shapes"]) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        assert "Requires-Dist: tvmffi-runtime" in zf.read(meta).decode()
    assert "Found tvmffi_gen" in built.first_build["shapes"]  # find_package with no hints
    assert REGENERATED in built.first_build["shapes"]


def test_the_packaging_layouts_wheel_holds_stubs_beside_its_modules_and_library(built: Built) -> None:
    """The package loads its library with ``load_lib_module``, which finds it only through an
    installed distribution's RECORD: the build step imported it as installed and wrote its stubs."""
    names = _names(built.wheels["my_ffi_extension"])
    modules = {"my_ffi_extension/__init__", "my_ffi_extension/_ffi_api"}
    expected = {f"{m}.py" for m in modules} | {f"{m}.pyi" for m in modules} | {"my_ffi_extension/py.typed"}
    assert expected | {"my_ffi_extension/libmy_ffi_extension.so"} <= names, sorted(names)
    assert "tvmffi-gen: wrote stubs for my_ffi_extension" in built.first_build["my_ffi_extension"]


def test_package_mode_under_an_install_dir_lands_at_the_top_of_the_wheel(built: Built) -> None:
    """``wheel.install-dir = "my_ffi_extension"`` makes that folder the install prefix; the
    generated package is still the top-level ``my_ffi_typed``, as its imports expect."""
    names = _names(built.wheels["my_ffi_extension"])
    assert {"my_ffi_typed/__init__.py", "my_ffi_typed/py.typed"} <= names, sorted(names)
    assert not [n for n in names if n.startswith("my_ffi_extension/my_ffi_typed/")], sorted(names)


def test_package_mode_warns_when_the_wheel_does_not_require_the_runtime(built: Built) -> None:
    warning = "imports tvmffi_runtime, which this distribution does not require"
    assert warning in " ".join(built.first_build["my_ffi_extension"].split())  # its dependencies lack it
    assert warning not in " ".join(built.first_build["shapes"].split())  # cmake_shapes declares it


def test_the_setuptools_wheel_holds_stubs_beside_the_modules(built: Built) -> None:
    names = _names(built.wheels["plane"])
    modules = {"plane/__init__", "plane/_ffi_api", "plane/shapes"}
    assert {f"{m}.py" for m in modules} | {f"{m}.pyi" for m in modules} | {"plane/py.typed"} <= names, sorted(names)
    assert REGENERATED in built.first_build["plane"]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_nothing_is_written_into_the_authors_sources(built: Built, name: str) -> None:
    """The output goes into the build's own tree (``build/``), which the wheel is made from."""
    project = built.projects[name]
    written = {
        p.relative_to(project).as_posix()
        for p in project.rglob("*")
        if p.is_file() and "build" not in p.relative_to(project).parts[:1] and "egg-info" not in str(p)
    }
    copied = {p.relative_to(EXAMPLES[name]).as_posix() for p in EXAMPLES[name].rglob("*") if p.is_file()}
    assert written == copied, written ^ copied


def test_a_second_cmake_build_with_nothing_changed_does_not_regenerate(built: Built) -> None:
    output = built.second_build
    assert REGENERATED not in output, output[-4000:]
    if "Linking CXX shared library" in output:  # relinked (pip's new environment): the step ran
        assert NOT_REGENERATED in output, output[-4000:]


USE = {
    "use_shapes.py": """\
        from shapes import perimeter
        from shapes.geom import Rect, describe, square

        box = Rect(3, 4, "box")
        assert (box.width, box.height, box.label, box.area()) == (3, 4, "box", 12)
        assert describe(square(2, "tile")) == "tile 2x2"
        assert perimeter(3, 4) == 14
        print("shapes OK")
    """,
    "use_my_ffi_extension.py": """\
        from my_ffi_extension import IntPair, add_one

        pair = IntPair(1, 2)
        assert (add_one(3), pair.a, pair.b, pair.sum()) == (4, 1, 2, 3)
        print("my_ffi_extension OK")
    """,
    # a process of its own: my_ffi_typed bundles a second copy of the same library, whose
    # registrations would clash with the first's
    "use_my_ffi_typed.py": """\
        from my_ffi_typed.my_ffi_extension import IntPair, add_one

        assert (add_one(3), IntPair(1, 2).sum()) == (4, 3)
        print("my_ffi_typed OK")
    """,
    "use_plane.py": """\
        import plane

        flat = plane.Rect(3, 4, "flat")
        assert (flat.width, flat.height, flat.label, flat.area()) == (3, 4, "flat", 12)
        assert plane.describe(plane.square(2, "tile")) == "tile 2x2"
        print("plane OK")
    """,
}
# checked, not run: each reveal_type line's comment is the type both checkers must reveal
REVEAL = """\
import plane
from my_ffi_extension import IntPair, add_one
from shapes import perimeter
from shapes.geom import Rect, describe, square

reveal_type(add_one(3))  # int
reveal_type(IntPair(1, 2).a)  # int
reveal_type(IntPair(1, 2).sum())  # int
box = Rect(3, 4, "box")
reveal_type(box.width)  # int
reveal_type(box.label)  # str
reveal_type(box.area())  # int
reveal_type(describe(box))  # str
reveal_type(square(2, "tile").height)  # int
reveal_type(perimeter(3, 4))  # int
flat = plane.Rect(3, 4, "flat")
reveal_type(flat.width)  # int
reveal_type(flat.label)  # str
reveal_type(flat.area())  # int
reveal_type(plane.describe(flat))  # str
reveal_type(plane.square(2, "tile").label)  # str
"""
# each line ending in "# mistake" must be reported by both checkers, and no other line
MISTAKES = """\
import plane
from my_ffi_extension import add_one
from shapes.geom import Rect, square

add_one("x")  # mistake
square("two", "tile")  # mistake
Rect(3, 4, "box").width = 5  # mistake
plane.square("two", "tile")  # mistake
plane.Rect(3, 4, "flat").label.upper(1)  # mistake
"""


def _expected(text: str, comment: str) -> dict[int, str]:
    """Line number -> what the comment after ``#`` says, for the lines whose comment matches."""
    found = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = re.search(r"#\s*(\S+)$", line)
        if match and re.fullmatch(comment, match.group(1)):
            found[number] = match.group(1)
    return found


@pytest.fixture(scope="module")
def user_folder(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's folder outside the repository: the scripts, and checker configs of their own."""
    import textwrap

    user = tmp_path_factory.mktemp("user")
    for name, text in USE.items():
        (user / name).write_text(textwrap.dedent(text))
    (user / "reveal.py").write_text(REVEAL)
    (user / "mistakes.py").write_text(MISTAKES)
    (user / "mypy.ini").write_text("[mypy]\n")
    (user / "pyrightconfig.json").write_text("{}\n")  # basedpyright's defaults
    return user


@pytest.mark.parametrize("script", sorted(USE))
def test_the_installed_wheels_run(built: Built, user_folder: Path, script: str) -> None:
    proc = _run([str(built.user_python), script], cwd=user_folder)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stdout + proc.stderr


def test_mypy_strict_sees_the_types_and_the_mistakes(built: Built, user_folder: Path) -> None:
    cmd = [sys.executable, "-m", "mypy", "--strict", "--python-executable", str(built.user_python)]
    cmd += ["--no-incremental", "--cache-dir", os.devnull, "--no-error-summary", *USE, "reveal.py", "mistakes.py"]
    proc = _run(cmd, cwd=user_folder)
    revealed = {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r'^reveal\.py:(\d+): note: Revealed type is "(?:builtins\.)?(\w+)"$', proc.stdout, re.M)
    }
    assert revealed == _expected(REVEAL, "int|str"), proc.stdout
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert {int(e.split(":")[1]) for e in errors if e.startswith("mistakes.py:")} == set(
        _expected(MISTAKES, "mistake")
    ), proc.stdout
    assert all(e.startswith("mistakes.py:") for e in errors), proc.stdout


def _line(diagnostic: dict[str, Any]) -> int:
    """The 1-based line of a basedpyright diagnostic (``--outputjson`` counts from 0)."""
    return int(diagnostic["range"]["start"]["line"]) + 1


def test_basedpyright_defaults_see_the_types_and_the_mistakes(built: Built, user_folder: Path) -> None:
    pyright = find_pyright()
    assert pyright, "basedpyright is part of the test extras"
    proc = _run([pyright, "--outputjson", "--pythonpath", str(built.user_python)], cwd=user_folder)
    by_file: dict[str, list[dict[str, Any]]] = {}
    for diag in json.loads(proc.stdout)["generalDiagnostics"]:
        by_file.setdefault(Path(diag["file"]).name, []).append(diag)
    revealed = {}
    for diag in by_file.pop("reveal.py", []):
        match = re.fullmatch(r'Type of ".*" is "(\w+)"', diag["message"])
        assert diag["severity"] == "information" and match, diag
        revealed[_line(diag)] = match.group(1)
    assert revealed == _expected(REVEAL, "int|str")
    mistakes = by_file.pop("mistakes.py", [])
    assert {_line(d) for d in mistakes if d["severity"] == "error"} == set(_expected(MISTAKES, "mistake")), mistakes
    assert not by_file, by_file  # the scripts that use the packages: not one error or warning
