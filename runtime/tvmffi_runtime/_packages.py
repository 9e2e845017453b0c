"""The generated packages loaded in this process: where each found its library, and which
module defines the class of each of its types (imported on first use of the type).

What :mod:`tvmffi_runtime.bind` offers a package's ``_lib.py`` for loading; the tables here also
word the errors of a package whose library is not the one it was generated from.
"""

from __future__ import annotations

import ctypes
import importlib
import os
from typing import TYPE_CHECKING

from . import _lib, _object, _platform
from ._object import type_key_to_index

if TYPE_CHECKING:
    from .module import Module

__all__ = [
    "find_package_library",
    "load_package_library",
    "load_package_module",
    "loaded_library_of",
    "register_lazy_types",
]

_LAZY_TYPES: dict[str, str] = {}
#: package -> (library path, where that path came from), as found by find_package_library
_PACKAGE_LIBRARIES: dict[str, tuple[str, str]] = {}
#: package -> the name of its override variable
_PACKAGE_ENV_VARS: dict[str, str] = {}
#: type key -> package that declares it (kept after its class is loaded, for error messages)
_TYPE_PACKAGES: dict[str, str] = {}


def _package_of(module: str) -> str | None:
    """The generated package (whose library was found) that ``module`` belongs to."""
    owners = [p for p in _PACKAGE_LIBRARIES if module == p or module.startswith(p + ".")]
    return max(owners, key=len) if owners else None


def _from(origin: str) -> str:
    """Where a library path came from, for messages: "from $VAR", "the recorded path", ..."""
    return f"from {origin}" if origin.startswith("$") else f"the {origin}"


def loaded_library_of(type_key: str) -> str:
    """Names the library (its path and where that came from) of the package declaring
    ``type_key``, for messages."""
    package = _TYPE_PACKAGES.get(type_key)
    if package is None:
        return "the loaded libraries"
    path, origin = _PACKAGE_LIBRARIES[package]
    return f"{package}'s library {path} ({_from(origin)})"


def register_lazy_types(modules_by_type_key: dict[str, str]) -> None:
    """Tell the runtime which module defines the class of each type key, so a value of a type
    whose module has not been imported yet still comes back as its generated class.

    A package's library that registers none of the package's types is not the library the
    package was generated from: ImportError naming the library and where its path came from."""
    by_package: dict[str, list[str]] = {}
    for type_key, module in modules_by_type_key.items():
        package = _package_of(module)
        if package is not None:
            _TYPE_PACKAGES[type_key] = package
            by_package.setdefault(package, []).append(type_key)
    for package, keys in by_package.items():
        if not any(type_key_to_index(k) is not None for k in keys):
            path, origin = _PACKAGE_LIBRARIES[package]
            env_var = _PACKAGE_ENV_VARS[package]
            fix = (
                f"point ${env_var} at the library {package} was generated from, or unset it"
                if origin == f"${env_var}"
                else f"set ${env_var} to the library {package} was generated from, or regenerate"
                " the package from this one"
            )
            raise ImportError(
                f"{package}: the library {path} ({_from(origin)}) registers none of the package's"
                f" {len(keys)} types (such as {sorted(keys)[0]!r}): it is not the library the"
                f" package was generated from; {fix}"
            )
    _LAZY_TYPES.update(modules_by_type_key)
    _object.set_class_loader(_load_lazy_class)


def _load_lazy_class(type_key: str) -> bool:
    module = _LAZY_TYPES.pop(type_key, None)
    if module is None:
        return False
    importlib.import_module(module)
    return True


def find_package_library(
    package: str, env_var: str, bundled: str | None, recorded: str, original: str | None = None
) -> str:
    """Path of the library a generated package wraps: ``$env_var``, else the bundled copy, else
    the recorded path, else (for a path recorded relative to a package since moved) the library's
    absolute path at generation time. ImportError lists every place it looked; a ``$env_var``
    that names no file is an ImportError naming it (never passed over for another library)."""
    tried: list[str] = []
    candidates: list[tuple[str, str]] = []
    _PACKAGE_ENV_VARS[package] = env_var
    override = os.environ.get(env_var)
    if override:  # an override is never passed over: a typo must not load another library
        if not os.path.isfile(override):
            what = "is a folder, not a library file" if os.path.isdir(override) else "does not exist"
            raise ImportError(
                f"{package}: ${env_var} is set to {override}, which {what}; set it to the"
                f" path of {package}'s library, or unset it to use the "
                + ("bundled copy" if bundled else "recorded path")
            )
        candidates.append((override, f"${env_var}"))
    if bundled:
        candidates.append((bundled, "bundled copy"))
    candidates.append((recorded, "recorded path"))
    if original and original != recorded:
        candidates.append((original, "absolute path at generation time"))
    here = _platform.CURRENT
    for path, origin in candidates:
        if os.path.isfile(path):
            foreign = here.wrong_platform(path)
            if foreign is not None:
                raise ImportError(
                    f"{package}: its library {path} ({origin}) cannot load here: {foreign}. Generate the"
                    f" package on {here.title}, or set ${env_var} to a {here.title} build of the library."
                )
            _PACKAGE_LIBRARIES[package] = (path, origin)
            return path
        tried.append(f"{path} ({origin})")
    generated_for = _platform.platform_of_name(recorded)
    advice = f"Set ${env_var} to the library's path."
    if generated_for is not None and generated_for.name != here.name:
        advice = (
            f"The package was generated on {generated_for.title}: generate it on {here.title}, or set"
            f" ${env_var} to a {here.title} build of the library."
        )
    raise ImportError(f"{package}: cannot find its library; looked in " + ", ".join(tried) + f". {advice}")


def load_package_library(package: str, path: str) -> ctypes.CDLL:
    """Load the library of a generated package (found by ``find_package_library``)."""
    try:
        return _lib.load_library(path)
    except _lib.LibraryLoadError as exc:
        found = _PACKAGE_LIBRARIES.get(package)
        origin = f" (its path is {_from(found[1])})" if found and found[0] == path else ""
        raise ImportError(f"{package}: {exc}{origin}") from None


def load_package_module(package: str, path: str) -> Module:
    """The library of a generated package as a Module (for its exported functions)."""
    from .module import Module

    try:
        return Module.load_from_file(path)
    except Exception as exc:  # noqa: BLE001 - re-raised as ImportError naming the package and file
        raise ImportError(f"{package}: cannot load {path} as a module: {exc}") from None
