"""Step 1 of ``--stubs-for``, the parent's side of ``child.py``: ``take_collection`` runs
``child.py`` for the package in a child process (importing a package may crash, hang or exit)
and gets back what only the running process knows: which submodules import, the registry's types
with the Python class registered for each, and the ``_ffi_api`` modules ``tvm_ffi.init_ffi_api``
filled; a failure becomes a ``StubsError`` naming the package and the reason.
``modules_on_disk`` lists the package's modules without importing it, so that stubgen can start
while the child imports.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess

from ..registry.facts import run_child
from ..registry.snapshot_process import summarise_failure
from .collected import Collection
from .errors import StubsError
from .progress import Progress

__all__ = ["take_collection", "modules_on_disk"]


def take_collection(
    package: str, exclude: list[str], preload: list[str], timeout: float, progress: Progress | None = None
) -> Collection:
    """Run ``child.py`` for ``package`` in a child process; StubsError names what went wrong."""
    if not all(part.isidentifier() for part in package.split(".")):
        raise StubsError(f"--stubs-for {package!r}: not a Python package name")
    for lib in preload:
        if not os.path.isfile(lib):
            raise StubsError(f"--preload {lib}: no such file")
    args = [package]
    for pat in exclude:
        args += ["--exclude", pat]
    for lib in preload:
        args += ["--preload", lib]
    try:
        proc = run_child("tvmffi_gen.stubs.child", args, timeout, progress.child_line if progress else None)
    except subprocess.TimeoutExpired:
        raise StubsError(f"{package}: importing it did not finish within {timeout:g} s") from None
    if proc.returncode != 0:
        error, frames = summarise_failure(proc.stderr)
        where = "".join(f"\n  at {f}" for f in frames)
        if proc.returncode < 0:
            raise StubsError(
                f"{package}: the process importing it died with signal {-proc.returncode}"
                + (f": {error}" if error else "")
                + where,
                proc.stderr,
            )
        last = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        raise StubsError(f"{package}: {last[-1] if last else error}", proc.stderr)
    data = Collection.from_json(proc.stdout)
    own = [k for k, c in data.classes.items() if c.module in data.modules]
    if not own and not data.ffi_api:
        raise StubsError(_nothing_to_stub(data))
    return data


def _nothing_to_stub(data: Collection) -> str:
    """Why a package that registers no Python class for a TVM FFI type and fills no ``_ffi_api``
    module gets no stubs: what its import registered, and the tools that do serve it."""
    package, added = data.package, data.types_added
    if added:
        shown = ", ".join(added[:3]) + (", ..." if len(added) > 3 else "")
        registered = (
            f"importing it registers {len(added)} TVM FFI types ({shown}) but it registers no Python"
            " class for any of them"
        )
        generator = "; `tvmffi-gen LIB -o OUT` writes a typed package for the types of the library LIB"
    else:
        registered, generator = "importing it registers no TVM FFI types", ""
    return (
        f"{package}: {registered} and fills no _ffi_api module: nothing to stub beyond its Python"
        f" (mypy's stubgen writes stubs of its Python: stubgen -p {package} -o OUT){generator}"
    )


def modules_on_disk(package: str, exclude: list[str]) -> dict[str, str] | None:
    """The package's modules found without importing it (None when it is not found)."""
    # not at the top: ``python -m tvmffi_gen.stubs.child`` imports this package first, and runpy
    # warns when the module it runs is already imported
    from .importing import module_files

    try:
        spec = importlib.util.find_spec(package.split(".")[0])
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations or "." in package:
        return None
    return module_files(package, list(spec.submodule_search_locations), exclude)
