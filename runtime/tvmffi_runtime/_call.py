"""Calling native Functions: the ``Function`` wrapper, argument packing per call, global
function lookup, and reflected methods and type attributes.

Python callables become Functions through the backend (``backend.callback_function``);
``Function.from_typed``'s argument checking comes from ``_typed`` (:func:`set_typed_adapter`).
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from struct import error as _struct_error
from typing import Any, ClassVar, Literal, overload

from . import _lib
from ._backend import backend
from ._convert import view_from_buffer
from ._errors import (
    ReleasedObjectError,
    _check,
    function_not_constructible_error,
    not_constructible_error,
)
from ._features import Feature, feature_of, needed_by
from ._object import (
    Object,
    _release_into,
    _type_key_of_index,
    _wrap,
    register_class,
    type_key_to_index,
)
from ._values import CallbackMode, TypeIndex

__all__ = [
    "construct_object",
    "new_container",
    "printer_repr",
    "Function",
    "argument_error",
    "ffi_init",
    "ffi_call",
    "get_global_func",
    "global_func",
    "lacks",
    "global_handle",
    "keep_gil",
    "set_release_gil",
    "type_attr_value",
    "type_method",
]

_c_void_p = ctypes.c_void_p
_byref = ctypes.byref
_string_at = ctypes.string_at
_IncRef = _lib.ObjectIncRef
_REGISTRY_LOCK = threading.RLock()  # Function.register_global's updates of the global table


def _no_typing(f: Callable[..., Any]) -> Callable[..., Any]:
    raise RuntimeError("tvmffi_runtime: Function.from_typed needs tvmffi_runtime fully imported")


_typed_adapter: Callable[[Callable[..., Any]], Callable[..., Any]] = _no_typing


def set_typed_adapter(adapt: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """``adapt(f)``: ``f`` wrapped to check and convert its arguments from its annotations."""
    global _typed_adapter
    _typed_adapter = adapt


def _callee_name(name: Any) -> str:
    """How argument errors name the callee: a string, or the Function being called."""
    if isinstance(name, Function):
        return getattr(name, "_name", None) or f"<function at 0x{name._h:x}>"
    return str(name) if name else "function"


def argument_error(name: Any, value: Any, i: int, exc: BaseException) -> BaseException:
    """The exception for argument ``i`` (``value``) that its packer refused with ``exc``."""
    if not isinstance(exc, (TypeError, ValueError, OverflowError, _struct_error)):
        return exc  # not a conversion problem: it propagates as it is
    if isinstance(exc, ReleasedObjectError):
        released = ReleasedObjectError(f"{_callee_name(name)}: argument {i}: {exc}")
        released.ffi_argument = i  # type: ignore[attr-defined]
        return released
    err = TypeError(
        f"{_callee_name(name)}: argument {i} has type {type(value).__name__},"
        " which cannot be converted to a TVM FFI value" + (f" ({exc})" if str(exc) else "")
    )
    if str(exc):
        err.__cause__ = exc
    err.__suppress_context__ = True
    err.ffi_argument = i  # type: ignore[attr-defined]  # which one, for callers that name it better
    return err


class Function(Object):
    """A TVM FFI function object: call it like a Python function."""

    # _name (global name or callable's qualname, when known) only words argument errors.
    __slots__ = ("_c", "_name")
    _type_key: ClassVar[str] = "ffi.Function"
    _type_index: ClassVar[int] = TypeIndex.FUNCTION
    _c: ctypes.c_void_p
    _name: str

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise function_not_constructible_error()

    def __call__(self, *args: object) -> Any:
        return _backend_call(self._h, args, self)

    @property
    def c_handle(self) -> ctypes.c_void_p:
        """The handle as a ``c_void_p``, for direct ``TVMFFIFunctionCall`` use."""
        try:
            return self._c
        except AttributeError:
            self._c = _c_void_p(self._h)
            return self._c

    @overload
    @staticmethod
    def get_global(name: str, allow_missing: Literal[False] = False) -> Function: ...
    @overload
    @staticmethod
    def get_global(name: str, allow_missing: bool) -> Function | None: ...
    @staticmethod
    def get_global(name: str, allow_missing: bool = False) -> Function | None:
        """The global function ``name``; KeyError if missing (None with ``allow_missing``)."""
        return get_global_func(name, allow_missing)

    @staticmethod
    def register_global(name: str, f: Callable[..., Any] | Function, override: bool = False) -> Function:
        """Register a Python callable (or a Function) as global function ``name``."""
        func = f if isinstance(f, Function) else Function.from_typed(f)
        data = name.encode()
        # The replaced Function is released after the table update, not inside it: its deleter
        # can run Python code (which may replace the same name again, or let another thread do
        # so) while the table's entry is unlinked mid-update, corrupting the table. One update at
        # a time, so the Function kept here is the one the update replaces.
        with _REGISTRY_LOCK:
            replaced = get_global_func(name, allow_missing=True) if override else None
            rc = _lib.FunctionSetGlobal(_byref(_lib.byte_array(data)), func._h, 1 if override else 0)
        del replaced
        _check(rc)
        return func

    @staticmethod
    def from_packed(f: Callable[[list[Any]], Any]) -> Function:
        """A Function that passes its converted arguments to ``f`` as one list."""
        return _named(_callback_function(f, CallbackMode.PACKED), f)

    @staticmethod
    def from_typed(f: Callable[..., Any]) -> Function:
        """A Function that checks and converts its arguments from ``f``'s annotations."""
        return _named(_callback_function(_typed_adapter(f), CallbackMode.PLAIN), f)

    @staticmethod
    def from_callable(f: Callable[..., Any]) -> Function:
        """A Function that calls ``f`` with converted arguments, without checking them."""
        return _named(_callback_function(f, CallbackMode.PLAIN), f)

    @staticmethod
    def from_type_key_method(type_key: str, name: str) -> Function:
        """The reflected method ``name`` of the type ``type_key`` (``__ffi_init__`` included)."""
        index = type_key_to_index(type_key)
        if index is None:
            raise KeyError(f"type key {type_key!r} is not registered")
        return Function.from_type_method(index, name)

    @staticmethod
    def from_type_method(type_index: int, name: str) -> Function:
        """The reflected method ``name`` of the type with ``type_index``."""
        f = type_method(type_index, name)
        if f is None:
            raise AttributeError(f"type {_type_key_of_index(type_index)!r} (index {type_index}) has no method {name!r}")
        return f


def _callback_function(f: Callable[..., Any], mode: int) -> Function:
    """A Function wrapper around a new native Function that calls ``f`` in ``mode`` (``f`` itself
    if it is a Function); the wrapper holds ``f``, so the GC sees a cycle through it."""
    if isinstance(f, Function):
        return f
    return backend.callback_function(Function, f, mode)  # type: ignore[no-any-return]


def _named(func: Function, f: Any) -> Function:
    """``func`` labelled with the Python callable's name (for argument errors)."""
    if not isinstance(f, Function):
        func._name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    return func


@overload
def get_global_func(name: str, allow_missing: Literal[False] = False) -> Function: ...
@overload
def get_global_func(name: str, allow_missing: bool) -> Function | None: ...
def get_global_func(name: str, allow_missing: bool = False) -> Function | None:
    """The global function ``name``; KeyError if missing (None with ``allow_missing``)."""
    data = name.encode()
    out = _c_void_p()
    _check(_lib.FunctionGetGlobal(_byref(_lib.byte_array(data)), _byref(out)))
    if not out.value:
        if allow_missing:
            return None
        raise KeyError(f"global function {name!r} is not registered")
    f = _wrap(out.value, TypeIndex.FUNCTION)
    f._name = name
    return f  # type: ignore[no-any-return]


_GLOBALS: dict[str, Function] = {}


def global_func(name: str) -> Function:
    """The global function ``name``, looked up once and kept.

    The one cache for the runtime's own lookups of library functions (``ffi.Array``,
    ``ffi.ReprPrint``, reflection and structural helpers); functions a user may re-register
    are looked up with :func:`get_global_func` each time. A missing function raises
    ``FeatureUnavailableError`` when a later apache-tvm-ffi release added it (``_features``),
    else KeyError.
    """
    f = _GLOBALS.get(name)
    if f is None:
        found = get_global_func(name, allow_missing=True)
        if found is None:
            if feature_of(name) is not None:
                raise _lib.unavailable(name)
            raise KeyError(f"global function {name!r} is not registered")
        f = _GLOBALS[name] = found
    return f


def lacks(feature: Feature) -> str | None:
    """The first C function or global function ``feature`` needs that the loaded libtvm_ffi
    does not have, or None when it has them all (the feature works)."""
    symbols, functions = needed_by(feature)
    for name in symbols:
        if not hasattr(_lib.LIB, name):
            return name
    for name in functions:
        if get_global_func(name, allow_missing=True) is None:
            return name
    return None


_GLOBAL_HANDLES: dict[str, ctypes.c_void_p] = {}


def global_handle(name: str) -> ctypes.c_void_p:
    """``global_func(name).c_handle``, in one lookup (for :func:`ffi_call` on hot paths)."""
    c = _GLOBAL_HANDLES.get(name)
    if c is None:
        c = _GLOBAL_HANDLES[name] = global_func(name).c_handle
    return c


def type_method(type_index: int, name: str) -> Function | None:
    """The reflected method ``name`` on the type or its ancestors, or None.

    ``__ffi_init__`` is a constructor, so it is never inherited: it is looked up on the type
    itself, first among its methods, then in the ``__ffi_init__`` type attribute column (where
    the auto-generated initialiser of a type without an explicit ``refl::init`` lives).
    """
    is_init = name == "__ffi_init__"
    info = _lib.GetTypeInfo(type_index)
    while info:
        ti = info.contents
        for i in range(ti.num_methods):
            m = ti.methods[i]
            if _lib.read_byte_array(m.name).decode() == name:
                h = m.method.v_ptr
                _IncRef(h)
                method = _wrap(h, m.method.type_index)
                if isinstance(method, Function):
                    method._name = f"{_lib.read_byte_array(ti.type_key).decode()}.{name}"
                return method  # type: ignore[no-any-return]
        if is_init or ti.type_depth == 0:
            break
        info = ti.type_ancestors[ti.type_depth - 1]
    if is_init:
        found = type_attr_value(type_index, name)
        if not isinstance(found, Function):
            return None
        found._name = f"{_type_key_of_index(type_index)}.{name}"
        return found
    return None


def type_attr_value(type_index: int, name: str) -> Any:
    """Value of the type attribute ``name`` for exactly ``type_index`` (not inherited), or None."""
    data = name.encode()
    column = _lib.GetTypeAttrColumn(_byref(_lib.byte_array(data)))
    if not column:
        return None
    col = column.contents
    slot = type_index - col.begin_index
    if slot < 0 or slot >= col.size or not col.data:
        return None
    raw = _string_at(ctypes.addressof(col.data[slot]), 16)
    return view_from_buffer(raw, 0)


#: type key -> (address of its __ffi_init__ Function, the name its argument errors give): the one
#: cache of constructors, for ``Object.__init__`` and generated ``__init__``s alike
_INITS: dict[str, tuple[int, str]] = {}
_INIT_KEEP: list[Function] = []  # the Functions whose addresses _INITS holds


def ffi_init(type_key: str) -> tuple[int, str] | None:
    """(address, name for errors) of the ``__ffi_init__`` of ``type_key``, or None when the type
    (as the loaded libraries register it) has none."""
    entry = _INITS.get(type_key)
    if entry is not None:
        return entry
    index = type_key_to_index(type_key)
    # type_method finds an explicit refl::init method or the auto-init type attribute
    f = None if index is None else type_method(index, "__ffi_init__")
    if f is None:
        return None
    _INIT_KEEP.append(f)
    entry = _INITS[type_key] = (f._h, f"{type_key}.__init__")
    return entry


_KWARGS: list[Any] = []


def _kwargs_marker() -> Any:
    """The library's marker object that separates positional from keyword arguments."""
    if not _KWARGS:
        _KWARGS.append(global_func("ffi.GetKwargsObject")())
    return _KWARGS[0]


def new_container(ctor: str, items: Any) -> int:
    """Owned handle of a new Array/Map/List/Dict built by the library's constructor function."""
    return _release_into(ffi_call(global_func(ctor).c_handle, list(items), ctor))


def construct_object(obj: Object, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """``Object.__init__``: make the object with its type's ``__ffi_init__`` and take it over."""
    cls = type(obj)
    type_key = cls._type_key
    entry = ffi_init(type_key)
    if entry is None:
        raise not_constructible_error(cls.__name__, type_key)
    if kwargs:
        args = (*args, _kwargs_marker(), *[x for kv in kwargs.items() for x in kv])
    backend.construct(obj, entry[0], args, entry[1], type_key)


def printer_repr(obj: Object) -> str:
    return str(global_func("ffi.ReprPrint")(obj))


#: ``ffi_call(handle, args, name="")``: call the Function at ``handle`` (an address or a
#: ``c_void_p``) with Python arguments; ``name`` (a string, or the Function) words argument
#: errors. The backend's call (``_wiring`` hands it the Python fallbacks before any call).
ffi_call: Callable[..., Any] = backend.call
_backend_call = backend.call

ReleaseGil = Literal["auto", "always"]
_release_gil: ReleaseGil = "always"  # the policy (the compiled path is told; ctypes always releases)


def set_release_gil(policy: ReleaseGil) -> ReleaseGil:
    """When native calls release the GIL; returns the previous policy.

    ``"always"`` (the default) releases it around every native call, so other threads run while
    native code does, and native threads that need Python (a callback, a DLPack deleter of numpy
    or torch, a signal check) get it. ``"auto"`` (opt-in; ``TVMFFI_RUNTIME_RELEASE_GIL=auto``
    sets it at import) keeps it over a call when no thread could want it meanwhile as far as the
    runtime can see: this is the only Python thread, no Python callable made by this runtime is
    alive, and no other binding such as ``tvm_ffi`` is imported. That saves two GIL hand-offs
    per call, but hangs a program whose native code, while the call waits for it, lets a worker
    thread take the GIL by a way the runtime cannot see: releasing a numpy array it was given
    through DLPack, or checking signals from that thread. Use it for libraries that do not.
    Ctrl-C reaches the calling thread either way. On the pure-ctypes path every call releases
    the GIL, whatever the policy.
    """
    global _release_gil
    if policy not in ("auto", "always"):
        raise ValueError(f"set_release_gil: expected 'auto' or 'always', got {policy!r}")
    previous = _release_gil
    backend.set_gil_auto(policy == "auto")
    _release_gil = policy
    return previous


def keep_gil(function: Callable[..., object], keep: bool = True) -> bool:
    """Make every call of one function of a generated package keep the GIL, whatever the policy
    (``keep=False``: follow the policy again); returns whether its calls kept it before.

    For a function you know returns at once and runs no native thread that needs Python (an
    accessor, a small arithmetic kernel): it then skips the two GIL hand-offs ``"always"`` pays
    per call (~35 ns). Do not use it for a function that may run long (no other Python thread
    runs meanwhile) or that waits for a native thread calling back into Python or releasing a
    numpy / torch tensor it was given (that thread would wait for the GIL forever).
    ``function`` is a generated function or method (a bound method: its function); the mark is
    on it, shared by every caller. On the pure-ctypes path calls release the GIL regardless.
    """
    target: object = getattr(function, "__func__", function)
    if not isinstance(target, backend.LazyFunction):
        raise TypeError(
            f"keep_gil: {function!r} is not a function or method of a generated package"
            " (a Function from get_global_func follows the policy, set_release_gil)"
        )
    kept = not target.release_gil
    target.release_gil = not keep
    return kept


if os.environ.get("TVMFFI_RUNTIME_RELEASE_GIL") == "auto":
    set_release_gil("auto")

register_class(TypeIndex.FUNCTION, Function)
