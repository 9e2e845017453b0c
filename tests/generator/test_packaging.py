"""Two distributions, installed the way users install them, checked the way users check.

- ``tvmffi-runtime`` (``runtime/``) and ``tvmffi-gen`` (the repository root) build as wheels;
  the generator's wheel ships its templates and depends on the runtime.
- Installed into a fresh venv (no system site packages, nothing of this one), the generator
  writes an installable project (``--project``); its wheel installed into another fresh venv
  beside the runtime alone imports, runs, and type-checks clean under mypy --strict and pyright
  strict from a folder outside the repository.
- The editable install this test session runs in (the README's command) is visible to both
  checkers from any folder: a plain path entry, not an import hook.

Wheels are built with ``python -m build --no-isolation`` (the test extras install setuptools and
wheel); fresh venvs fetch apache-tvm-ffi from the package index.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tvmffi_gen.verify.checkers import find_pyright, run_mypy, run_pyright

from conftest import ROOT
from repository_wheels import repository_wheels

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, **kwargs)


def _fresh_venv(path: Path) -> Path:
    """A venv that sees nothing of this one: no system site packages, no pip of its own."""
    proc = _run([sys.executable, "-m", "venv", "--without-pip", str(path)])
    assert proc.returncode == 0, proc.stderr
    return path / "bin" / "python"


def _pip_install(python: Path, *args: str) -> None:
    proc = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *args])
    if proc.returncode != 0 and "No matching distribution" in proc.stderr:
        pytest.skip(f"the package index is not reachable: {proc.stderr[-300:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def wheels() -> dict[str, Path]:
    """Wheels of both distributions, built from copies of the source (the tree stays clean; one
    build per content of the sources, shared with test_build_integration.py)."""
    return repository_wheels()


def _names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def _metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return zf.read(meta).decode()


def test_runtime_wheel_holds_the_runtime_only(wheels):
    names = _names(wheels["runtime"])
    sources = sorted(p.name for p in (ROOT / "runtime" / "tvmffi_runtime").glob("*.py"))
    assert "__init__.py" in sources and "_wiring.py" in sources
    missing = [n for n in sources if f"tvmffi_runtime/{n}" not in names]
    assert not missing, f"runtime modules missing from the runtime wheel: {missing}"
    assert {"tvmffi_runtime/py.typed", "tvmffi_runtime/_accel.pyi"} <= names
    if shutil.which("gcc") or shutil.which("cc"):
        assert any(n.startswith("tvmffi_runtime/_accel.") and n.endswith(".so") for n in names), names
    assert not any(n.startswith("tvmffi_gen/") for n in names)
    meta = _metadata(wheels["runtime"])
    assert "Requires-Dist: apache-tvm-ffi" in meta
    assert "Requires-Dist: numpy" in meta and 'extra == "numpy"' in meta  # optional only


def test_generator_wheel_holds_generator_and_templates_and_needs_the_runtime(wheels):
    names = _names(wheels["gen"])
    package = ROOT / "tvmffi_gen"
    sources = sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py") if "__pycache__" not in p.parts)
    assert "cli/main.py" in sources and "integration/step.py" in sources
    missing = [n for n in sources if f"tvmffi_gen/{n}" not in names]
    assert not missing, f"generator modules missing from the wheel: {missing}"
    assert "tvmffi_gen/share/cmake/tvmffi_gen/tvmffi_gen-config.cmake" in names
    templates = sorted(p.name for p in (package / "render" / "templates").glob("*.jinja"))
    assert templates, "no templates in tvmffi_gen/render/templates"
    shipped = {n.rsplit("/", 1)[1] for n in names if n.startswith("tvmffi_gen/render/templates/")}
    assert set(templates) <= shipped, f"templates missing from the wheel: {set(templates) - shipped}"
    assert "tvmffi_gen/py.typed" in names
    assert not any(n.startswith("tvmffi_runtime/") for n in names)  # its own distribution
    assert "Requires-Dist: tvmffi-runtime" in _metadata(wheels["gen"])


USER_SCRIPT = """\
from tvmffitest_pkg.testing import TestIntPair, add_one

pair = TestIntPair(1, 2)
total: int = pair.sum()
first: int = pair.a
assert add_one(41) == 42 and total == 3 and first == 1
print("OK", total)
"""


def test_installed_generator_writes_a_project_that_installs_runs_and_type_checks(wheels, tmp_path):
    # 1. the generator from its wheel, in a venv of its own, run from an empty folder
    gen_python = _fresh_venv(tmp_path / "gen-venv")
    _pip_install(gen_python, str(wheels["runtime"]), str(wheels["gen"]))
    work = tmp_path / "work"
    work.mkdir()
    proc = _run([str(gen_python), "-m", "tvmffi_gen", "-o", "tvmffitest-pkg", "--project", "--bundle", "-q"], cwd=work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    project = work / "tvmffitest-pkg"
    assert (project / "pyproject.toml").is_file() and (project / "tvmffitest_pkg" / "py.typed").is_file()
    modes = {p.stat().st_mode & 0o777 for p in (project / "tvmffitest_pkg").rglob("*.py")}
    assert modes == {0o666 & ~_umask()}, modes  # not mkstemp's 0600

    # 2. the project's wheel, installed beside the runtime alone (no generator) in another venv
    proc = _run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path / "dist")], cwd=project
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (pkg_wheel,) = (tmp_path / "dist").glob("tvmffitest_pkg-*.whl")
    assert not pkg_wheel.name.endswith("-none-any.whl"), pkg_wheel.name  # it bundles a native library
    # each module's .pyi face, which checkers read in its place, ships beside it
    assert {"tvmffitest_pkg/__init__.pyi", "tvmffitest_pkg/testing/__init__.pyi"} <= set(_names(pkg_wheel))
    user_python = _fresh_venv(tmp_path / "user-venv")
    # the runtime is not on PyPI: pip finds it beside the runtime wheel (runtime/README.md's way)
    _pip_install(user_python, "--find-links", str(wheels["runtime"].parent), str(pkg_wheel))
    shutil.rmtree(work)  # nothing of the generation run is left to find

    # 3. a user's folder elsewhere: run a script, then both checkers with the user's own config
    user = tmp_path / "user"
    user.mkdir()
    (user / "use.py").write_text(USER_SCRIPT)
    proc = _run([str(user_python), "use.py"], cwd=user)
    assert proc.returncode == 0 and proc.stdout.strip() == "OK 3", proc.stdout + proc.stderr
    proc = _run([str(user_python), "-c", "import tvmffi_gen"], cwd=user)
    assert proc.returncode != 0  # the package needs the runtime only
    proc = _run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--python-executable",
            str(user_python),
            "--no-incremental",
            "--cache-dir",
            os.devnull,
            "use.py",
        ],
        cwd=user,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pyright = find_pyright()
    assert pyright, "basedpyright is part of the test extras"
    (user / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "strict"}))
    proc = _run([pyright, "--pythonpath", str(user_python), "use.py"], cwd=user)
    assert proc.returncode == 0 and "0 errors" in proc.stdout, proc.stdout + proc.stderr


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_editable_install_is_a_plain_path_entry():
    """The README's ``pip install -e``: both distributions are found through ``.pth`` path
    lines (which mypy and pyright follow), never through an import-hook finder."""
    import tvmffi_gen
    import tvmffi_runtime

    site = Path(tvmffi_gen.__file__).resolve().parents[1]
    if not str(site).startswith(str(ROOT)):
        pytest.skip("the generator is not installed in editable mode from this checkout")
    import site as site_mod

    finders = [p for d in site_mod.getsitepackages() for p in Path(d).glob("__editable__*tvmffi*finder*.py")]
    assert not finders, f"editable installs through import hooks, invisible to type checkers: {finders}"
    assert Path(tvmffi_runtime.__file__).resolve().is_relative_to(ROOT / "runtime")


EDITABLE_SCRIPT = """\
from editgeom.testing import TestIntPair, add_one

pair = TestIntPair(1, 2)
total: int = pair.sum()
assert add_one(41) == 42 and total == 3
print("OK", total)
"""

EDITABLE_ERROR = 'from editgeom.testing import add_one\n\nadd_one("x")\n'


def _checker(name: str) -> str:
    """A type checker installed beside this interpreter (the test extras), else on PATH."""
    found = Path(sys.executable).parent / name
    path = str(found) if found.is_file() else shutil.which(name)
    assert path, f"{name} is part of the test extras"
    return path


def test_editable_install_of_a_project_is_seen_by_every_checker_from_a_folder_outside(wheels, tmp_path):
    """``pip install -e`` of a ``--project`` output (how a user iterates on the C++) puts a plain
    path line in a .pth file, not setuptools' import-hook finder, which no checker follows: mypy
    --strict, pyright and basedpyright, run by a user from a folder elsewhere against that venv,
    see the package's types (an error is found; correct code has none)."""
    from tvmffi_gen.cli.main import main

    project = tmp_path / "editgeom"
    assert main(["-o", str(project), "--project", "-q"]) == 0
    python = _fresh_venv(tmp_path / "venv")
    # the runtime is not on PyPI: pip finds it beside the runtime wheel (runtime/README.md's way)
    _pip_install(python, "--find-links", str(wheels["runtime"].parent), "-e", str(project))
    site = next((tmp_path / "venv" / "lib").glob("python3*/site-packages"))
    assert not list(site.glob("__editable__*finder*.py")), sorted(p.name for p in site.iterdir())
    (pth,) = site.glob("__editable__*editgeom*.pth")
    assert pth.read_text().split() == [str(project)]

    user = tmp_path / "user"
    user.mkdir()
    (user / "use.py").write_text(EDITABLE_SCRIPT)
    (user / "wrong.py").write_text(EDITABLE_ERROR)
    (user / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "strict"}))
    proc = _run([str(python), "use.py"], cwd=user)
    assert proc.returncode == 0 and proc.stdout.strip() == "OK 3", proc.stdout + proc.stderr
    mypy = [sys.executable, "-m", "mypy", "--strict", "--python-executable", str(python), "--no-incremental"]
    mypy += ["--cache-dir", os.devnull]
    proc = _run([*mypy, "use.py"], cwd=user)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = _run([*mypy, "wrong.py"], cwd=user)
    assert proc.returncode == 1 and 'Argument 1 to "add_one" has incompatible type "str"' in proc.stdout, proc.stdout
    for checker in ("pyright", "basedpyright"):
        exe = _checker(checker)
        proc = _run([exe, "--pythonpath", str(python), "use.py"], cwd=user)
        assert proc.returncode == 0 and "0 errors" in proc.stdout, (checker, proc.stdout + proc.stderr)
        proc = _run([exe, "--pythonpath", str(python), "wrong.py"], cwd=user)
        assert proc.returncode == 1 and "Argument of type \"Literal['x']\"" in proc.stdout, (
            checker,
            proc.stdout + proc.stderr,
        )


CHECKED_SCRIPT = """\
import tvmffi_runtime as rt
from outpkg.testing import TestIntPair, add_one

f = rt.Function.get_global("testing.add_one")
g: rt.Function | None = rt.Function.get_global("no.such.function", allow_missing=True)
pair = TestIntPair(1, 2)
assert pair.sum() + add_one(1) == 5 and f(1) == 2 and g is None
"""


def test_user_folder_type_checks_clean_with_the_editable_install(tmp_path):
    """A freshly generated package and a script using it, in a folder outside the repository
    with no MYPYPATH and no config of ours: mypy --strict and pyright strict report 0 errors.

    The checkers run as the user runs them, over the package and the script, where a clean exit
    means no error anywhere. (tvmffi_gen.verify.checkers's runs over the same files would be no stricter:
    they leave out installed libraries' errors. The other type-checking tests make those runs, on
    packages in temporary folders like this one.)"""
    from tvmffi_gen.cli.main import main

    user = tmp_path / "user"
    user.mkdir()
    assert main(["-o", str(user / "outpkg"), "-q"]) == 0
    (user / "use.py").write_text(CHECKED_SCRIPT)
    # the user's own invocation, with their own config in their folder
    (user / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "strict"}))
    pyright = find_pyright()
    assert pyright
    proc = _run([pyright, "--pythonpath", sys.executable], cwd=user)
    assert proc.returncode == 0 and "0 errors" in proc.stdout, proc.stdout[-5000:]
    proc = _run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, "outpkg", "use.py"],
        cwd=user,
    )
    assert proc.returncode == 0, proc.stdout[-5000:]


def test_verify_fails_when_the_runtime_cannot_be_found(tmp_path):
    """--verify checks what the user will see: a runtime missing from the checking environment
    is an error, not a silent pass (adding the runtime's source folder itself would hide it)."""
    from tvmffi_gen.cli.main import main

    assert main(["-o", str(tmp_path / "outpkg"), "-q"]) == 0
    bare = _fresh_venv(tmp_path / "bare")
    errors, report = run_mypy(tmp_path / "outpkg", python=str(bare))
    assert errors > 0 and "tvmffi_runtime" in report, report
    errors, report = run_pyright(tmp_path / "outpkg", python=str(bare))
    assert errors > 0 and "tvmffi_runtime" in report, report


def test_moved_package_still_finds_a_library_recorded_relative_to_it(tmp_path):
    """A library beside the package is recorded relative to it; a copy of the package moved
    elsewhere falls back on the library's absolute path, and a missing one lists every place."""
    from tvmffi_gen.cli.main import main

    from conftest import TESTING_LIB

    project = tmp_path / "project"
    (project / "build").mkdir(parents=True)
    lib = project / "build" / "libtesting_copy.so"
    shutil.copy2(TESTING_LIB, lib)
    assert main([str(lib), "-o", str(project / "relpkg"), "-q"]) == 0
    lib_py = (project / "relpkg" / "_lib.py").read_text()
    assert "__file__" in lib_py and str(lib.resolve()) in lib_py
    moved = tmp_path / "elsewhere"
    shutil.copytree(project / "relpkg", moved / "relpkg")
    check = "import relpkg, os; print(os.path.realpath(relpkg._lib.path))"
    proc = _run([sys.executable, "-c", check], cwd=moved)
    assert proc.returncode == 0 and proc.stdout.strip() == str(lib.resolve()), proc.stderr
    lib.unlink()
    proc = _run([sys.executable, "-c", "import relpkg"], cwd=moved)
    assert proc.returncode != 0
    message = proc.stderr.strip().splitlines()[-1]
    assert "ImportError" in message and "recorded path" in message and "absolute path" in message
    assert "RELPKG_LIBRARY" in message
    # --portable records nothing machine-specific
    assert main([str(TESTING_LIB), "-o", str(tmp_path / "portable"), "--portable", "-q"]) == 0
    shutil.copy2(TESTING_LIB, lib)
    assert main([str(lib), "-o", str(project / "portpkg"), "--portable", "-q"]) == 0
    assert str(tmp_path) not in (project / "portpkg" / "_lib.py").read_text()


def test_project_refuses_a_pyproject_of_the_users(tmp_path, capsys):
    from tvmffi_gen.cli.main import main

    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text("[project]\nname = 'mine'\n")
    assert main(["-o", str(tmp_path / "proj"), "--project", "-q"]) == 2
    err = capsys.readouterr().err
    assert "proj: the folder is not empty (pyproject.toml) and was not generated by tvmffi-gen" in err
    assert not (tmp_path / "proj" / "proj").exists()  # nothing written
    assert (tmp_path / "proj" / "pyproject.toml").read_text() == "[project]\nname = 'mine'\n"
    assert main(["-o", str(tmp_path / "proj2"), "--project", "--project-version", "1.2.3", "-q"]) == 0
    text = (tmp_path / "proj2" / "pyproject.toml").read_text()
    assert 'version = "1.2.3"' in text and 'name = "proj2"' in text
    assert main(["-o", str(tmp_path / "proj2"), "--project", "--project-version", "1.2.3", "--check"]) == 0
    assert not (tmp_path / "proj2" / "setup.py").exists()
    # --bundle adds a setup.py that tags the wheel for the platform; dropping --bundle removes it
    assert main(["-o", str(tmp_path / "proj2"), "--project", "--bundle", "-q"]) == 0
    assert (tmp_path / "proj2" / "setup.py").read_text().startswith("# Generated by tvmffi-gen")
    assert main(["-o", str(tmp_path / "proj2"), "--project", "-q"]) == 0
    assert not (tmp_path / "proj2" / "setup.py").exists()


def test_runtime_requirement_is_checked_before_anything_is_written(tmp_path, capsys):
    from tvmffi_gen.cli.main import main

    for argv, expected in (
        (["--runtime-requirement", "tvmffi-runtime>=0.1"], "give --project too"),
        (["--project", "--runtime-requirement", "tvmffi-runtime @ "], "is not a requirement"),
        (["--project", "--runtime-requirement", "numpy>=1"], "names 'numpy', not tvmffi-runtime"),
    ):
        assert main(["-o", str(tmp_path / "proj"), *argv, "-q"]) == 2, argv
        err = capsys.readouterr().err
        assert expected in err and "--runtime-requirement" in err, (argv, err)
        assert not (tmp_path / "proj").exists()


def test_project_wheel_with_a_direct_runtime_requirement_installs_alone(wheels, tmp_path):
    """``--runtime-requirement 'tvmffi-runtime @ file:///...whl'``: the project's wheel installs
    in a fresh venv by itself (pip fetches the runtime from that reference), imports, and calls."""
    from tvmffi_gen.cli.main import main

    spec = f"tvmffi-runtime @ {wheels['runtime'].resolve().as_uri()}"
    project = tmp_path / "directpkg"
    assert main(["-o", str(project), "--project", "--bundle", "--runtime-requirement", spec, "-q"]) == 0
    assert f"dependencies = [{json.dumps(spec)}]" in (project / "pyproject.toml").read_text()
    assert main(["-o", str(project), "--project", "--bundle", "--runtime-requirement", spec, "--check"]) == 0
    proc = _run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path / "dist")], cwd=project
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (pkg_wheel,) = (tmp_path / "dist").glob("directpkg-*.whl")
    assert f"Requires-Dist: {spec}" in _metadata(pkg_wheel)
    user_python = _fresh_venv(tmp_path / "user-venv")
    _pip_install(user_python, str(pkg_wheel))
    shutil.rmtree(project)
    code = "from directpkg.testing import add_one; import tvmffi_runtime; print(add_one(41))"
    proc = _run([str(user_python), "-c", code], cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == "42", proc.stdout + proc.stderr
