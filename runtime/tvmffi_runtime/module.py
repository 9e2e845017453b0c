"""``Module``: a loaded TVM FFI module (a shared library of exported functions, or the system lib)."""

from __future__ import annotations

import os
from typing import Any

from . import _core
from ._core import Function, Object, ffi_call
from ._lib import LibraryLoadError, _elf_problem

__all__ = ["Module"]


def _g(name: str) -> Function:
    f = _core.get_global_func(name)
    assert f is not None
    return f


@_core.register_object("ffi.Module")
class Module(Object):
    """A TVM FFI module: look functions up by name, call them, inspect imports."""

    __slots__ = ()

    @staticmethod
    def load_from_file(path: str | os.PathLike[str]) -> Module:
        """Load a module from a shared library; errors name the path and the reason."""
        spath = os.fspath(path)
        if not os.path.exists(spath):
            raise LibraryLoadError(f"cannot load module {spath}: no such file")
        if os.path.isdir(spath):
            raise LibraryLoadError(f"cannot load module {spath}: it is a directory")
        problem = _elf_problem(spath)
        if problem is not None:
            raise LibraryLoadError(f"cannot load module {spath}: {problem}")
        try:
            mod = _g("ffi.ModuleLoadFromFile")(os.path.abspath(spath))
        except Exception as exc:
            raise LibraryLoadError(f"cannot load module {spath}: {exc}") from None
        assert isinstance(mod, Module)
        return mod

    @property
    def kind(self) -> str:
        """The module's kind (``"library"`` for a shared library)."""
        return str(_g("ffi.ModuleGetKind")(self))

    @property
    def imports(self) -> list[Module]:
        """Modules imported by this one."""
        info = _core._lib.GetTypeInfo(self._t)
        getter = _core.type_method(self._t, "imports_")
        if getter is not None:
            return list(getter(self))
        del info
        from .reflection import get_field

        value = get_field(self, "imports_")
        return list(value) if value is not None else []

    def implements(self, name: str, query_imports: bool = True) -> bool:
        """Whether the module (or an import) defines ``name``."""
        return bool(_g("ffi.ModuleImplementsFunction")(self, name, query_imports))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.implements(name)

    def get_function_or_none(self, name: str, query_imports: bool = True) -> Function | None:
        """The function ``name``, or None when the module has none."""
        f = _g("ffi.ModuleGetFunction")(self, name, query_imports)
        return f if isinstance(f, Function) else None

    def get_function(self, name: str, query_imports: bool = True) -> Function:
        """The function ``name``; AttributeError naming the module and function when missing."""
        f = self.get_function_or_none(name, query_imports)
        if f is None:
            raise AttributeError(f"module {self!r} has no function {name!r}")
        return f

    def function_doc(self, name: str) -> str | None:
        """Docstring exported for ``name`` (``__tvm_ffi__doc_<name>``), if any."""
        value = _g("ffi.ModuleGetFunctionDoc")(self, name, True)
        return None if value is None else str(value)

    def function_metadata(self, name: str) -> str | None:
        """JSON metadata exported for ``name`` (``__tvm_ffi__metadata_<name>``), if any."""
        value = _g("ffi.ModuleGetFunctionMetadata")(self, name, True)
        return None if value is None else str(value)

    def __getitem__(self, name: str) -> Function:
        return self.get_function(name)

    def __repr__(self) -> str:
        try:
            return f"Module(kind={self.kind!r})"
        except Exception:
            return "Module()"

    def __call__(self, name: str, *args: Any) -> Any:
        return ffi_call(self.get_function(name).c_handle, args, name)
