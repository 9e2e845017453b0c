"""Whether importing a package can give ``--stubs-for`` anything, told from its files alone.

Importing a large package takes minutes (flashinfer: two), and one that registers nothing is
refused only after all of it imported. What ``--stubs-for`` stubs comes from ``tvm_ffi``: a class
registered with it, an ``_ffi_api`` module it fills, types a library linking ``libtvm_ffi``
registers. A module that does any of it names ``tvm_ffi`` (or ``tvm``, built on it) in its source,
or loads a library that links ``libtvm_ffi``; a package none of whose Python files says "tvm" and
none of whose native libraries links ``libtvm_ffi`` can register nothing, and is refused before
it is imported. The test errs towards importing: "tvm" in a comment is enough to go on.
"""

from __future__ import annotations

import importlib.util
import mmap
import os
from pathlib import Path

__all__ = ["nothing_can_register", "package_folders"]

#: suffixes of the native libraries a package may load (``libfoo.so.1`` too)
_NATIVE = (".so", ".pyd", ".dylib", ".dll")


def package_folders(package: str) -> list[str]:
    """The folders of ``package`` found without importing it (a dotted name imports its parent);
    none for a single-file module or a package that is not found."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return []
    return [str(folder) for folder in spec.submodule_search_locations]


def _native(name: str) -> bool:
    return name.endswith(_NATIVE) or ".so." in name


def _holds(path: Path, needle: bytes) -> bool:
    """Whether the file's bytes hold ``needle`` (mapped, not read: libraries can be large)."""
    try:
        with path.open("rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return False
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return data.find(needle) >= 0
    except (OSError, ValueError):
        return True  # unreadable: not evidence of nothing


def nothing_can_register(roots: list[str]) -> str | None:
    """Why the package in ``roots`` can register nothing, or None when it may: a Python file
    that says ``tvm``, or a native library naming ``libtvm_ffi`` (its DT_NEEDED entry)."""
    python_files = native_files = 0
    for root in roots:
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in names:
                path = Path(folder, name)
                if name.endswith(".py"):
                    python_files += 1
                    if _holds(path, b"tvm"):
                        return None
                elif _native(name):
                    native_files += 1
                    if _holds(path, b"libtvm_ffi"):
                        return None
    if python_files == 0:
        return None  # nothing on disk to judge by (a package made at run time): import it
    libraries = (
        f"none of its {native_files} native libraries links libtvm_ffi"
        if native_files
        else "it ships no native library"
    )
    return f"none of its {python_files} Python files names tvm_ffi (nor tvm) and {libraries}"
