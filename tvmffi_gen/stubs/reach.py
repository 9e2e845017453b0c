"""Whether importing a package can give ``--stubs-for`` anything, told from its files alone.

Importing a large package takes minutes (flashinfer: two), and one that registers nothing is
refused only after all of it imported. What ``--stubs-for`` stubs comes from ``tvm_ffi``: a class
registered with it, an ``_ffi_api`` module it fills, types a library linking ``libtvm_ffi``
registers. A package that does any of it has a module importing ``tvm_ffi`` (or ``tvm``, built
on it), or one naming ``register_object`` or ``init_ffi_api`` (taken from a package built on
tvm_ffi), or a native library linking ``libtvm_ffi``; one with none of these can register
nothing, and is refused before it is imported. The test is textual and errs towards importing:
such a line in a docstring is enough to go on.
"""

from __future__ import annotations

import importlib.util
import mmap
import os
import re
from pathlib import Path

__all__ = ["nothing_can_register", "package_folders"]

#: a line of Python that may lead to a registration: an import of tvm_ffi or tvm, or the name of
#: tvm_ffi's registering functions
_REGISTERS = re.compile(rb"^[ \t]*(?:from|import)[ \t]+tvm(?:_ffi)?\b|\b(?:register_object|init_ffi_api)\b", re.M)

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


def _holds(path: Path, needle: bytes | re.Pattern[bytes]) -> bool:
    """Whether the file's bytes hold ``needle`` (mapped, not read: libraries can be large)."""
    try:
        with path.open("rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return False
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if isinstance(needle, bytes):
                    return data.find(needle) >= 0
                return needle.search(data) is not None
    except (OSError, ValueError):
        return True  # unreadable: not evidence of nothing


def nothing_can_register(roots: list[str]) -> str | None:
    """Why the package in ``roots`` can register nothing, or None when it may: a Python file
    with a line ``_REGISTERS`` matches, or a native library naming ``libtvm_ffi`` (its
    DT_NEEDED entry)."""
    python_files = native_files = 0
    for root in roots:
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in names:
                path = Path(folder, name)
                if name.endswith(".py"):
                    python_files += 1
                    if _holds(path, _REGISTERS):
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
    return (
        f"none of its {python_files} Python files imports tvm_ffi or tvm or names register_object or"
        f" init_ffi_api, and {libraries}"
    )
