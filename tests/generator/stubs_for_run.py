"""Running ``python -m tvmffi_gen`` in a child process for the ``--stubs-for`` tests
(test_stubs_for.py, test_stubs_for_cli.py), with this checkout's generator and runtime on the path,
and ``mypy --strict`` over the stub package it wrote."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def stubs_for_env(pythonpath: list[Path]) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in pythonpath), str(ROOT / "runtime"), str(ROOT)])
    return env


def run_tvmffi_gen(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tvmffi_gen", *args], capture_output=True, text=True, env=env, cwd=cwd)


def mypy_strict_over_stubs(stubs: Path, package: str, where: Path) -> subprocess.CompletedProcess[str]:
    """``mypy --strict -p package`` over the stub folder ``stubs`` (``OUT/PKG-stubs``) copied to
    ``where/package``, as the package itself, with an empty configuration of its own."""
    shutil.copytree(stubs, where / package)
    (where / "mypy.ini").write_text("[mypy]\n")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "-p", package],
        capture_output=True,
        text=True,
        cwd=where,
        env=stubs_for_env([]),
    )


def stubs_for_package(base: Path, name: str, files: dict[str, str], lib: Path) -> tuple[Path, Path]:
    """``--stubs-for NAME`` with the cache off, over a package written under BASE/src from
    ``files`` (path within the package -> source, ``@LIB@`` standing for ``lib``'s path as a
    literal): (the folder holding the package, OUT)."""
    src = base / "src"
    for rel, text in files.items():
        path = src / name / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip().replace("@LIB@", repr(str(lib))))
    out = base / "out"
    env = {**stubs_for_env([src]), "TVMFFI_GEN_NO_CACHE": "1"}
    proc = run_tvmffi_gen(["--stubs-for", name, "-o", str(out)], env, base)
    assert proc.returncode == 0, proc.stderr
    return src, out
