"""A user's folder and environment for the editor checks, outside the repository and without any
configuration of ours: the package ``tvmffi-gen`` writes for ``libtvm_ffi_testing.so``, the stubs
``tvmffi-gen --stubs-for tvm`` writes, and the small programs a user types against them.

Each generated thing sits in a folder of its own that the servers get as ``PYTHONPATH``, as a
``pip install`` would put it in site-packages: the checkers ask the environment's ``python`` for its
search paths, and jedi's environment is that interpreter's too. The peers need nothing of ours:
``tvm_ffi.testing`` and ``tvm`` are installed in this environment.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: What a user writes with the testing library's classes; ``{module}`` is where they come from:
#: the generated package's namespace or ``tvm_ffi.testing``'s hand-written classes.
TESTING_PROGRAM = '''\
"""A user's program on the testing library's classes."""

from {module} import TestIntPair, TestObjectDerived

pair = TestIntPair(1, 2)
derived = TestObjectDerived({{}}, [], 3)
total = pair.sum()
shifted = derived.add_i64(4)
first = pair.a
count = derived.v_i64
'''

#: What a user writes with Apache TVM (the same text with and without the stubs).
TVM_PROGRAM = '''\
"""A user's program on Apache TVM."""

import tvm
from tvm.ir import Var

x = Var("x", "int32")
y = x.astype("int64")
dev = tvm.cpu()
label = x.name
cast = y.ty
ready = dev.exist
'''


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a program in the user's folder and the folders on its path."""

    #: "ours" or "peer"
    name: str
    program: Path
    python_path: tuple[Path, ...]
    #: the folder whose files a definition may land in (the package the program imports)
    package_dir: Path


def run_generator(args: list[str], cwd: Path) -> None:
    """``tvmffi-gen ARGS`` in a child process, with this checkout's generator and runtime first on
    the path; a failure raises with its output."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runtime"), str(ROOT)])
    done = subprocess.run(
        [sys.executable, "-m", "tvmffi_gen", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(f"tvmffi-gen {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


def installed_package_dir(name: str) -> Path:
    """The folder of an installed package, found as the servers find it: by import spec."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def generated_sides(base: Path) -> tuple[Side, Side]:
    """The generated package for ``libtvm_ffi_testing.so`` and the peer's hand-written classes,
    each imported by the same program in the user's folder ``base/user``."""
    site = base / "site"
    base.mkdir(parents=True, exist_ok=True)
    run_generator(["-o", str(site / "tvmffi_testing")], cwd=base)
    user = base / "user"
    user.mkdir(exist_ok=True)
    ours = user / "ours_testing.py"
    ours.write_text(TESTING_PROGRAM.format(module="tvmffi_testing.testing"))
    peer = user / "peer_testing.py"
    peer.write_text(TESTING_PROGRAM.format(module="tvm_ffi.testing"))
    return (
        Side("ours", ours, (site,), (site / "tvmffi_testing").resolve()),
        Side("peer", peer, (), installed_package_dir("tvm_ffi")),
    )


def tvm_installed() -> bool:
    """Whether apache-tvm is installed (the tvm checks are optional)."""
    return importlib.util.find_spec("tvm") is not None


def tvm_sides(base: Path) -> tuple[Side, Side]:
    """``tvm`` with the stubs ``--stubs-for tvm --project`` writes (``OUT/tvm-stubs`` on the path,
    as ``pip install OUT`` would put it in site-packages) and ``tvm`` alone: one program, two
    environments. A definition lands in tvm's own source on both sides."""
    stubs = base / "tvm-stubs-project"
    base.mkdir(parents=True, exist_ok=True)
    run_generator(["--stubs-for", "tvm", "-o", str(stubs), "--project"], cwd=base)
    user = base / "user-tvm"
    user.mkdir(exist_ok=True)
    program = user / "tvm_program.py"
    program.write_text(TVM_PROGRAM)
    tvm_dir = installed_package_dir("tvm")
    return Side("ours", program, (stubs,), tvm_dir), Side("peer", program, (), tvm_dir)
