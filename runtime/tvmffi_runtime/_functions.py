"""The native functions generated code calls: registry functions, reflected methods and the
functions a package's library exports, each looked up on first call.

A generated wrapper is a ``def`` that carries the signature, the names and the docs; one of the
decorators here (:func:`registry_function`, :func:`registry_method`,
:func:`exported_function`) replaces it by the native function itself, so a call costs no
Python frame. The replacement keeps what a def offers: ``inspect.signature`` and ``help``
(through ``__wrapped__``), keyword arguments where the def takes them, arity errors worded as
Python words them, binding as a method, pickling by name. The replacement is the backend's
``LazyFunction`` (``_accel`` or ``_pure``); the classes below say how each kind of function is
found.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Callable
from typing import Any, TypeVar, cast

from . import _call
from ._backend import backend
from ._call import Function, type_method
from ._object import type_key_to_index

__all__ = [
    "GlobalFunction",
    "TypeMethod",
    "ModuleFunction",
    "registry_function",
    "registry_method",
    "exported_function",
]

_F = TypeVar("_F", bound=Callable[..., Any])
_CO_VARARGS = 0x04  # inspect.CO_VARARGS, without importing inspect at package import


class _KeywordBinder:
    """Puts a call's keyword arguments in order by the generated def's signature (the native
    function takes positional arguments only, and the def has no defaults). A call that gives
    each remaining parameter once by name is put in order directly; any other call (an error)
    is bound by ``inspect`` (imported then) for its wording."""

    __slots__ = ("_f", "_names", "_posonly", "_sig")

    def __init__(self, f: Callable[..., Any]) -> None:
        code = f.__code__
        self._f = f
        self._names: tuple[str, ...] = code.co_varnames[: code.co_argcount]
        self._posonly = code.co_posonlyargcount
        self._sig: Any = None

    def __call__(self, *args: object, **kwargs: object) -> tuple[object, ...]:
        n = len(args)
        rest = self._names[n:]
        if n >= self._posonly and len(kwargs) == len(rest):
            try:
                return args + tuple([kwargs[name] for name in rest])
            except KeyError:
                pass  # a name the def does not take: inspect words the error
        if self._sig is None:
            import inspect

            self._sig = inspect.signature(self._f)
        try:
            return tuple(self._sig.bind(*args, **kwargs).args)
        except TypeError as exc:  # inspect's words name no function: say which
            raise TypeError(f"{self._f.__qualname__}(): {exc}") from None


class GlobalFunction:
    """How a global function is found: by name in the registry, on first call. Generated
    functions are the backend's ``LazyFunction`` over this lookup; called itself, it makes one."""

    __slots__ = ("name", "_lazy")

    def __init__(self, name: str) -> None:
        self.name = name
        self._lazy: Callable[..., Any] | None = None

    def _call_target(self) -> Function | tuple[Function, int]:
        """What the backend's ``LazyFunction`` resolves: the Function, or (Function, views)
        with bit i of ``views`` set when parameter i takes a borrowed ``DLTensor*``."""
        return self._lookup()

    def _lookup(self) -> Function:
        f = _call.get_global_func(self.name, allow_missing=True)
        if f is None:
            raise NotImplementedError(
                f"global function {self.name!r} is not registered: the loaded library no longer"
                " provides it (regenerate the package)"
            )
        return f

    def __call__(self, *args: object) -> Any:
        lazy = self._lazy
        if lazy is None:
            lazy = self._lazy = backend.LazyFunction(self.name, self._call_target)
        return lazy(*args)


class TypeMethod(GlobalFunction):
    """A reflected method ``type_key.name`` resolved on first call."""

    __slots__ = ("type_key", "method")

    def __init__(self, type_key: str, name: str) -> None:
        super().__init__(f"{type_key}.{name}")
        self.type_key = type_key
        self.method = name

    def _lookup(self) -> Function:
        index = type_key_to_index(self.type_key)
        f = None if index is None else type_method(index, self.method)
        if f is None:
            raise NotImplementedError(
                f"method {self.method!r} of {self.type_key!r} is not registered in the loaded"
                " library (regenerate the package)"
            )
        return f


class ModuleFunction(GlobalFunction):
    """A function the package's library exports (``__tvm_ffi_<name>``), resolved on first call
    from the Module that ``<package>._lib`` loaded."""

    __slots__ = ("lib_module",)

    def __init__(self, lib_module: str, name: str) -> None:
        super().__init__(name)
        self.lib_module = lib_module

    def _lookup(self) -> Function:
        module = importlib.import_module(self.lib_module).module
        f = module.get_function_or_none(self.name)
        if f is None:
            raise NotImplementedError(f"the library no longer exports {self.name!r} (regenerate the package)")
        return f  # type: ignore[no-any-return]

    def _call_target(self) -> Function | tuple[Function, int]:
        """The Function, with the parameters its exported type schema types ``DLTensor*`` (a
        ``TensorView``), which the call may lend a producer's DLTensor instead of a new Tensor."""
        f = self._lookup()
        try:
            metadata = importlib.import_module(self.lib_module).module.function_metadata(self.name)
        except ValueError:  # metadata that is no JSON: no parameter is known to take a view
            return f
        views = dltensor_params(metadata)
        return (f, views) if views else f


def dltensor_params(metadata: object) -> int:
    """Bit i set when a function's metadata (``{"type_schema": "<JSON>"}``) types parameter i
    ``DLTensor*`` (the schema of ``TensorView`` and ``DLTensor*``: a borrowed tensor); 0 when the
    metadata says nothing readable. Both schema forms count: ``named_args`` with ``params``, and
    ``args`` with the return type first."""
    text = _entry(metadata, "type_schema")
    try:
        schema: object = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return 0
    params = _entry(_entry(schema, "named_args"), "params")
    if not isinstance(params, list):
        args = _entry(schema, "args")
        params = cast("list[object]", args)[1:] if isinstance(args, list) else []
    kinds = [_entry(p, "type") for p in cast("list[object]", params)]
    return sum(1 << i for i, kind in enumerate(kinds) if kind == "DLTensor*")


def _entry(value: object, key: str) -> object:
    """``value[key]`` when ``value`` is a JSON object, else None."""
    return cast("dict[str, object]", value).get(key) if isinstance(value, dict) else None


def _fast(slow: GlobalFunction, kwbind: _KeywordBinder | None = None, arity: int = -1) -> Callable[..., Any]:
    """The function generated code calls for ``slow``: the backend's lazy function, resolved by
    ``slow``'s lookup; ``kwbind`` and ``arity`` as ``_native`` gives them."""
    return backend.LazyFunction(slow.name, slow._call_target, kwbind, arity)


# -- decorators: the def is the signature, the native function is the body -----------------
def _native(slow: GlobalFunction, f: _F, result: type[tuple[Any, ...]] | None = None) -> _F:
    code = f.__code__
    if f.__defaults__ or f.__kwdefaults__ or code.co_kwonlyargcount:
        raise TypeError(
            f"{f.__module__}.{f.__qualname__}: a native function takes no defaults or keyword-only parameters"
        )
    kwbind = _KeywordBinder(f) if code.co_argcount > code.co_posonlyargcount else None
    fn = _fast(slow, kwbind, -1 if code.co_flags & _CO_VARARGS else code.co_argcount)
    functools.update_wrapper(fn, f)
    if result is not None:
        fn = functools.update_wrapper(_named_result(fn, result), f)
    return fn  # type: ignore[return-value]


def _named_result(fn: Callable[..., Any], result: type[tuple[Any, ...]]) -> Callable[..., Any]:
    """``fn`` returning its tuple result (an Array) as the named tuple class ``result``: one
    Python frame more, on these functions only."""
    make: Callable[[Any], Any] = getattr(result, "_make")  # a NamedTuple's

    def call(*args: Any, **kwargs: Any) -> Any:
        return make(fn(*args, **kwargs))

    return call


def registry_function(name: str, result: type[tuple[Any, ...]] | None = None) -> Callable[[_F], _F]:
    """Decorator: the def becomes the global function ``name`` (looked up on first call);
    ``result``: a named tuple class its tuple result is returned as."""
    return lambda f: _native(GlobalFunction(name), f, result)


def registry_method(type_key: str, name: str) -> Callable[[_F], _F]:
    """Decorator: the def becomes the reflected method ``name`` of ``type_key``."""
    return lambda f: _native(TypeMethod(type_key, name), f)


def exported_function(lib_module: str, name: str, result: type[tuple[Any, ...]] | None = None) -> Callable[[_F], _F]:
    """Decorator: the def becomes the function ``name`` the library of ``lib_module`` exports;
    ``result`` as for :func:`registry_function`."""
    return lambda f: _native(ModuleFunction(lib_module, name), f, result)
