"""The wheel ships the runtime, the generator and its templates, and installs and imports cleanly.

The wheel is built with ``python -m build --wheel --no-isolation`` from a copy of the source tree
(so the build's ``build/`` and ``*.egg-info`` never land in the work tree). ``--no-isolation``
needs the build requirements of pyproject.toml (setuptools>=68, wheel) in the building
interpreter; when this interpreter lacks them they are installed into a throwaway venv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

COPIED = ["pyproject.toml", "README.md", "LICENSE", "runtime", "tvmffi_gen", "templates"]
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "_build")
HAS_BUILD_BACKEND = (
    "import setuptools, wheel; "
    "assert int(setuptools.__version__.split('.')[0]) >= 68, setuptools.__version__"
)


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, **kwargs)


def _venv(path: Path) -> Path:
    # --without-pip is much faster; _pip_install drives this pip with --python instead
    proc = _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(path)])
    assert proc.returncode == 0, proc.stderr
    return path / "bin" / "python"


def _pip_install(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", *args])


def _build_python(tmp: Path) -> str:
    """An interpreter that can run the setuptools backend without build isolation."""
    if _run([sys.executable, "-c", HAS_BUILD_BACKEND]).returncode == 0:
        return sys.executable
    python = _venv(tmp / "build-venv")
    proc = _pip_install(python, "--ignore-installed", "setuptools>=68", "wheel")
    if proc.returncode != 0:
        pytest.skip(f"cannot install the build requirements (setuptools>=68, wheel): {proc.stderr[-500:]}")
    return str(python)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "src"
    src.mkdir()
    for name in COPIED:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=IGNORED)
        elif path.is_file():
            shutil.copy2(path, src / name)
    out = tmp / "dist"
    proc = _run([_build_python(tmp), "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)], cwd=src)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheels = list(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def wheel_names(wheel) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def test_wheel_contains_the_runtime(wheel_names):
    sources = sorted(p.name for p in (ROOT / "runtime" / "tvmffi_runtime").glob("*.py"))
    assert "__init__.py" in sources and "_core.py" in sources
    missing = [name for name in sources if f"tvmffi_runtime/{name}" not in wheel_names]
    assert not missing, f"runtime modules missing from the wheel: {missing}"
    assert "tvmffi_runtime/py.typed" in wheel_names


def test_wheel_contains_the_generator(wheel_names):
    sources = sorted(p.name for p in (ROOT / "tvmffi_gen").glob("*.py"))
    assert "__init__.py" in sources
    missing = [name for name in sources if f"tvmffi_gen/{name}" not in wheel_names]
    assert not missing, f"generator modules missing from the wheel: {missing}"
    assert "tvmffi_gen/py.typed" in wheel_names


def test_wheel_contains_the_templates(wheel_names):
    templates = sorted(p.name for p in (ROOT / "templates").glob("*.jinja"))
    if not templates:
        pytest.skip("templates/ has no .jinja files yet (the templates are being written)")
    shipped = {n.rsplit("/", 1)[1] for n in wheel_names if n.startswith("tvmffi_gen/templates/") and n.endswith(".jinja")}
    assert shipped, "no tvmffi_gen/templates/*.jinja in the wheel"
    assert set(templates) <= shipped, f"templates missing from the wheel: {set(templates) - shipped}"


def test_wheel_installs_and_imports_outside_the_source_tree(wheel, tmp_path):
    python = _venv(tmp_path / "venv")
    proc = _pip_install(python, "--no-deps", "--no-build-isolation", "--ignore-installed", str(wheel))
    assert proc.returncode == 0, proc.stderr
    check = (
        "import sys, importlib.resources as res\n"
        "import tvmffi_runtime as rt, tvmffi_gen\n"
        "print('RUNTIME', rt.__file__)\n"
        "print('GEN', tvmffi_gen.__file__)\n"
        "print('ARRAY', list(rt.get_global_func('ffi.Array')(1, 'two')))\n"
        "print('TYPED', res.files('tvmffi_runtime').joinpath('py.typed').is_file())\n"
        "print('TEMPLATES', sorted(p.name for p in res.files('tvmffi_gen.templates').iterdir() if p.name.endswith('.jinja')))\n"
    )
    # run from an empty directory: nothing from the source tree is importable by accident
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    proc = _run([str(python), "-c", check], cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    venv = str(tmp_path / "venv")
    assert out["RUNTIME"].startswith(venv), out  # the installed copy, not the source tree
    assert out["GEN"].startswith(venv), out
    assert out["ARRAY"] == "[1, 'two']"
    assert out["TYPED"] == "True"
    source_templates = sorted(p.name for p in (ROOT / "templates").glob("*.jinja"))
    assert out["TEMPLATES"] == repr(source_templates)
