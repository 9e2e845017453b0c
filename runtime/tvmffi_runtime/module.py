"""``Module``: a loaded TVM FFI module (a shared library of exported functions, or the system lib).

A library module exports functions as ``__tvm_ffi_<name>`` symbols (``TVM_FFI_DLL_EXPORT_TYPED_FUNC``);
when built with ``TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1`` it also exports ``__tvm_ffi__metadata_<name>``
(JSON with the ``type_schema``) and, for ``TVM_FFI_DLL_EXPORT_TYPED_FUNC_DOC``, ``__tvm_ffi__doc_<name>``.
Functions of a library built without metadata are still found and callable; ``function_doc`` and
``function_metadata`` then return None.

Decisions:

- ``load_from_file`` keeps the library loaded for the life of the process by default
  (``keep_alive=True``, the ``ffi.ModuleGlobalsAdd`` registry, as ``tvm_ffi.load_module`` does):
  objects the library created (tensors it allocated, functions or types it registered) carry
  code pointers into it and would crash if the library were unloaded under them.
- Every failure to load raises ``LibraryLoadError`` naming the path and the reason.
- A library is loaded through the shared-library loader whatever its file name ends with
  (``libfoo.so.1``, no extension), once it is known to be a loadable ELF file.
"""

from __future__ import annotations

import json
import os
from typing import Any, cast

from . import _call, _object
from ._call import Function, ffi_call
from ._lib import LibraryLoadError
from ._library_check import library_problem
from ._object import Object

__all__ = ["Module"]


def _g(name: str) -> Function:
    return _call.global_func(name)


@_object.register_object("ffi.Module")
class Module(Object):
    """A TVM FFI module: look functions up by name, call them, inspect imports."""

    __slots__ = ("_path",)
    _path: str

    @staticmethod
    def load_from_file(path: str | os.PathLike[str], keep_alive: bool = True) -> Module:
        """Load a module from a shared library; errors name the path and the reason.

        With ``keep_alive`` (the default) the library stays loaded until the process exits,
        even after every Module and Function referring to it is gone. With ``keep_alive=False``
        it is unloaded with its last Module or Function, and every object it created (a tensor
        it allocated, say) must be gone by then: using or freeing one afterwards crashes.
        """
        spath = os.fspath(path)
        if not os.path.exists(spath):
            raise LibraryLoadError(f"cannot load module {spath}: no such file")
        if os.path.isdir(spath):
            raise LibraryLoadError(f"cannot load module {spath}: it is a directory, not a shared library")
        problem = library_problem(spath)
        if problem is not None:
            raise LibraryLoadError(f"cannot load module {spath}: {problem}")
        full = os.path.abspath(spath)
        so_loader = _call.get_global_func("ffi.Module.load_from_file.so", allow_missing=True)
        try:
            if so_loader is not None:
                mod = so_loader(full, "so")
            else:
                mod = _g("ffi.ModuleLoadFromFile")(full)
        except Exception as exc:  # noqa: BLE001 - re-raised as LibraryLoadError naming the file
            raise LibraryLoadError(f"cannot load module {spath}: {exc}") from None
        if not isinstance(mod, Module):
            raise LibraryLoadError(f"cannot load module {spath}: the loader returned {type(mod).__name__}")
        if keep_alive:
            _g("ffi.ModuleGlobalsAdd")(mod)
        mod._path = full
        return mod

    @property
    def path(self) -> str | None:
        """The file this module was loaded from by ``load_from_file`` (None otherwise)."""
        return getattr(self, "_path", None)

    @property
    def kind(self) -> str:
        """The module's kind (``"library"`` for a shared library)."""
        return str(_g("ffi.ModuleGetKind")(self))

    @property
    def imports(self) -> list[Module]:
        """Modules imported by this one (searched by lookups with ``query_imports``)."""
        from .reflection import get_field

        value = get_field(self, "imports_")
        return list(value) if value is not None else []

    def import_module(self, other: Module) -> None:
        """Make ``other`` an import of this module (a cycle raises)."""
        if not isinstance(other, Module):  # pyright: ignore[reportUnnecessaryIsInstance] -- callers may pass anything
            raise TypeError(f"import_module expects a Module, not {type(other).__name__}")
        _g("ffi.ModuleImportModule")(self, other)

    def implements(self, name: str, query_imports: bool = True) -> bool:
        """Whether the module (or, with ``query_imports``, an import) defines ``name``."""
        return bool(_g("ffi.ModuleImplementsFunction")(self, name, query_imports))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.implements(name)

    def get_function_or_none(self, name: str, query_imports: bool = True) -> Function | None:
        """The function ``name``, or None when the module (and its imports) has none."""
        f = _g("ffi.ModuleGetFunction")(self, name, query_imports)
        return f if isinstance(f, Function) else None

    def get_function(self, name: str, query_imports: bool = True) -> Function:
        """The function ``name``; AttributeError naming the module and function when missing."""
        f = self.get_function_or_none(name, query_imports)
        if f is None:
            raise AttributeError(f"{self._describe()} has no function {name!r}")
        return f

    def function_doc(self, name: str, query_imports: bool = True) -> str | None:
        """Docstring exported for ``name`` (``__tvm_ffi__doc_<name>``), or None."""
        value = _g("ffi.ModuleGetFunctionDoc")(self, name, query_imports)
        return None if value is None else str(value)

    def function_metadata_json(self, name: str, query_imports: bool = True) -> str | None:
        """The JSON text exported for ``name`` (``__tvm_ffi__metadata_<name>``), or None."""
        value = _g("ffi.ModuleGetFunctionMetadata")(self, name, query_imports)
        return None if value is None else str(value)

    def function_metadata(self, name: str, query_imports: bool = True) -> dict[str, Any] | None:
        """Metadata exported for ``name`` parsed from JSON (``{"type_schema": "..."}``), or None.

        ``ValueError`` when the library exports text that is not a JSON object.
        """
        text = self.function_metadata_json(name, query_imports)
        if text is None:
            return None
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{self._describe()}: metadata of {name!r} is not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise ValueError(f"{self._describe()}: metadata of {name!r} is not a JSON object: {text!r}")
        return cast("dict[str, Any]", value)

    def __getitem__(self, name: str) -> Function:
        f = self.get_function_or_none(name)
        if f is None:
            raise KeyError(f"{self._describe()} has no function {name!r}")
        return f

    def _describe(self) -> str:
        path = self.path
        if path is not None:
            return f"module {path}"
        try:
            return f"module of kind {self.kind!r}"
        except Exception:  # noqa: BLE001 - a description must not fail
            return "module"

    def __repr__(self) -> str:
        try:
            kind = self.kind
        except Exception:  # noqa: BLE001 - repr must not fail
            return "Module()"
        path = self.path
        return f"Module(kind={kind!r}, path={path!r})" if path is not None else f"Module(kind={kind!r})"

    def __call__(self, name: str, *args: object) -> Any:
        """Call the function ``name`` with ``args``."""
        return ffi_call(self.get_function(name).c_handle, args, name)
