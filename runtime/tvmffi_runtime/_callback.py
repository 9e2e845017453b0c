"""Python callables as native Functions (the pure-ctypes backend; the compiled one is in
``_accel.c``): the table of live callbacks, the trampoline native code calls, and how a
callback's result or exception crosses back.

A callback runs in one of three modes: plain (``f(*args)``), packed (``f(args)``) and walk (the
structural engines' handlers, whose result is written by the hook ``set_walk_result`` installs
in ``_backend_hooks``).
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from typing import Any, Callable

from . import _lib
from ._call import Function, set_callback_maker
from ._convert import (
    _INT64_MAX,
    _INT64_MIN,
    _PLAIN_PACKERS,
    _KeepAlive,
    _pack_uint,
    _type_of,
    pack_value,
    release_temps,
    set_callable_converter,
    view_from_buffer,
)
from ._errors import conversion_failed, _check, _fetch_error, _raise_into_native, _released_object_error, not_callable_error
from ._fastpath import Backend
from ._fastpath import accel as _accel
from ._object import Object, _ref_counts, _wrap
from ._values import TypeIndex

__all__ = ["live_callbacks", "trampoline_function", "compiled_function", "fail_into_native", "_CALLBACKS", "_MODE_RAW", "_MODE_RAW_WALK", "_MODE_HOOK", "_walk_result_at"]

_c_void_p = ctypes.c_void_p
_byref = ctypes.byref
_IncRef = _lib.ObjectIncRef
_DecRef = _lib.ObjectDecRef
_new: Callable[[type], Any] = object.__new__  # a bare instance (no __init__)

# The callback modes, as ``_accel.c`` numbers them (tests/runtime/test_runtime_layers.py checks):
# plain ``f(*args)``, packed ``f(args)``, walk (result written by the walk-result hook), and the
# structural engines' raw modes ``f(value, type_index, raw...)`` (plain and walk result), and
# (compiled path only) a Visitor/Mutator hook ``hook(value)`` with its context in a frame list.
_MODE_PLAIN, _MODE_PACKED, _MODE_WALK, _MODE_RAW, _MODE_RAW_WALK, _MODE_HOOK = 0, 1, 2, 3, 4, 5


class _CallbackEntry:
    """A callable that native Functions call (pure-ctypes path), by key in ``_CALLBACKS``.

    ``fn`` is None while the Python wrapper that made the Function lives: the wrapper holds the
    callable (so the GC sees the edge) and ``wrapper`` reaches it. When the wrapper dies while
    native code still holds the Function, the entry takes the callable over (``fn``).
    """

    __slots__ = ("fn", "packed", "wrapper")

    def __init__(self, fn: Callable[..., Any] | None, packed: bool) -> None:
        self.fn = fn
        self.packed = packed
        self.wrapper: Callable[[], Any] | None = None

    def callable(self) -> Callable[..., Any]:
        fn = self.fn
        if fn is None:
            w = self.wrapper() if self.wrapper is not None else None
            fn = getattr(w, "_cb", None)
            if fn is None:
                raise RuntimeError("the Python callable of this Function has been released")
        return fn


# The one payload table of the ctypes backend: a callable's _CallbackEntry, or the payload of a
# raw trampoline (see trampoline_function), by the key native code passes back.
_CALLBACKS: dict[int, Any] = {}
_callback_ids = iter(range(1, 1 << 62))
_callbacks_lock = threading.Lock()


def live_callbacks() -> int:
    """How many native Functions made from Python callables are alive (leak checks)."""
    return _live_callbacks()


def _ctypes_live_callbacks() -> int:
    return len(_CALLBACKS)


class _CallbackFunction(Function):
    """Pure-ctypes path: a Function made from a Python callable by this process, holding the
    callable itself (so the GC sees a cycle through it). When the wrapper dies while native code
    still holds the Function (or after its handle was moved to native code), the callback entry
    takes the callable over. The compiled path does the same in C (``ObjectBase`` reports the
    callable to the GC while the wrapper is the Function's only owner)."""

    __slots__ = ("_cb", "_cbr")
    _cb: Callable[..., Any]
    _cbr: _CallbackEntry

    def __del__(self) -> None:
        h = getattr(self, "_h", 0)
        entry = getattr(self, "_cbr", None)
        try:
            # h == 0: the handle was moved to native code, which now owns the Function
            if entry is not None and (not h or _ref_counts(h)[1] > 1):
                entry.fn = self._cb
        except Exception:  # interpreter shutdown
            return
        self._h = 0
        if h:
            _DecRef(h)


def _ctypes_callback_function(f: Callable[..., Any], mode: int) -> Function:
    """A Function wrapper around a new native Function that calls ``f`` (``f`` itself if it is a
    Function); ``_callback_function`` on the ctypes path."""
    if isinstance(f, Function):
        return f
    if not callable(f):
        raise not_callable_error(f)
    w: _CallbackFunction = _new(_CallbackFunction)
    key, w._cbr = _new_callback_entry(None, mode == _MODE_PACKED)
    w._cb = f
    w._h = _create_function(key)
    w._t = TypeIndex.FUNCTION
    w._cbr.wrapper = weakref.ref(w)
    return w


def _new_callback_entry(fn: Callable[..., Any] | None, packed: bool) -> tuple[int, _CallbackEntry]:
    entry = _CallbackEntry(fn, packed)
    with _callbacks_lock:
        key = next(_callback_ids)
        _CALLBACKS[key] = entry
    return key, entry


def _create_function(key: int) -> int:
    out = _c_void_p()
    rc = _lib.FunctionCreate(key, _SAFE_CALL_TRAMPOLINE, _DELETER_TRAMPOLINE, _byref(out))
    if rc != 0:
        _delete_callback(key)
        raise _fetch_error()
    return out.value  # type: ignore[return-value]


_OWNED_SCRATCH = threading.local()
_NO_TEMPS: list[Any] = []  # plain values need no temporaries


def _py_to_owned_any(value: Any, out_addr: int) -> None:
    """Write ``value`` as an owned Any at ``out_addr`` (callback results).

    Plain values are written in place; objects get one reference for the receiver; everything
    else goes through a view and ``TVMFFIAnyViewToOwnedAny``.
    """
    t = _type_of(value)
    plain = _PLAIN_PACKERS.get(t)
    if plain is not None and (t is not int or _INT64_MIN <= value <= _INT64_MAX):  # a big int: below
        plain(_out_view(out_addr), 0, value, _NO_TEMPS)
        return
    if isinstance(value, Object) and not isinstance(value, _KeepAlive):
        h = value._h
        if not h:
            raise _released_object_error(value)
        _IncRef(h)
        _pack_uint(_out_view(out_addr), 0, value._t, 0, h)
        return
    buf = (ctypes.c_char * 16)()
    temps: list[Any] = []
    try:
        pack_value(buf, 0, value, temps)
        _check(_lib.AnyViewToOwnedAny(ctypes.cast(buf, ctypes.POINTER(_lib.TVMFFIAny)), _lib.TVMFFIAny.from_address(out_addr)))
    finally:
        release_temps(temps)


_Any16 = ctypes.c_char * 16


def _out_view(addr: int) -> Any:
    return _Any16.from_address(addr)


def _safe_call(self_key: int, args_addr: int, nargs: int, result_addr: int) -> int:
    try:
        entry = _CALLBACKS[self_key]
        fn, packed = entry.callable(), entry.packed
        if nargs:
            raw = (ctypes.c_char * (16 * nargs)).from_address(args_addr)
            pyargs = [view_from_buffer(raw, 16 * i) for i in range(nargs)]
        else:
            pyargs = []
        value = fn(pyargs) if packed else fn(*pyargs)
        _py_to_owned_any(value, result_addr)
        return 0
    except BaseException as exc:  # noqa: BLE001 - every exception must cross as an error
        return fail_into_native(exc)


def fail_into_native(exc: BaseException) -> int:
    """How a ctypes trampoline reports ``exc``: raised into native code, return code -1."""
    try:
        _raise_into_native(exc)
    except BaseException as failure:  # noqa: BLE001
        _lib.LIB.TVMFFIErrorSetRaisedFromCStr(*conversion_failed(failure))
    return -1


def _delete_callback(self_key: int) -> None:
    try:
        with _callbacks_lock:
            entry = _CALLBACKS.pop(self_key, None)
    except Exception:  # interpreter shutdown
        return
    # released outside the lock: the callable's release can run Python that makes callbacks
    del entry


_SAFE_CALL_TRAMPOLINE = _lib.SAFE_CALL(_safe_call)
_DELETER_TRAMPOLINE = _lib.DELETER(_delete_callback)
_DELETER_ADDRESS = ctypes.cast(_DELETER_TRAMPOLINE, _c_void_p)


def trampoline_function(trampoline: Any, payload: Any) -> Function:
    """(ctypes backend) A Function whose calls run the C-callable ``trampoline`` (an address)
    with ``payload``, which stays in the callback table until native code deletes the Function."""
    with _callbacks_lock:
        key = next(_callback_ids)
        _CALLBACKS[key] = payload
    out = _c_void_p()
    if _lib.FunctionCreateFromAddress(key, trampoline, _DELETER_ADDRESS, _byref(out)) != 0:
        _delete_callback(key)
        raise _fetch_error()
    return _wrap(out.value or 0, TypeIndex.FUNCTION)  # type: ignore[no-any-return]


def compiled_function(mode: int, fn: Any) -> Function:
    """(compiled backend) A Function calling ``fn`` in callback ``mode``."""
    return _wrap(_function_create(fn, mode), TypeIndex.FUNCTION)  # type: ignore[no-any-return]


def _ctypes_function_handle(f: Callable[..., Any], packed: bool) -> int:
    """An owned handle of a new native Function calling ``f`` that owns ``f`` itself (for a
    callable passed straight to native code, with no wrapper to hold it; a Function gives its
    own handle); ``_function_handle_from_callable`` on the ctypes path."""
    if isinstance(f, Function):
        _IncRef(f._h)
        return f._h
    if not callable(f):
        raise not_callable_error(f)
    key, _ = _new_callback_entry(f, packed)
    return _create_function(key)


def _no_compiled_path(fn: Any, mode: int) -> int:
    raise RuntimeError("compiled_function: the compiled fast path is not in use")


_Backend = tuple[
    Callable[[], int],  # live_callbacks
    Callable[[Callable[..., Any], int], Function],  # _callback_function
    Callable[[Callable[..., Any], bool], int],  # _function_handle_from_callable
    Callable[[Any, int], int],  # the handle compiled_function wraps (the compiled path only)
]


def _compiled_backend(accel: Backend) -> _Backend:
    """The compiled path's versions of the ctypes functions above (same behaviour: the C side
    refuses a non-callable with the same ``not_callable_error``)."""
    make_wrapper = accel.callback_function
    create = accel.function_create

    def callback_function(f: Callable[..., Any], mode: int) -> Function:
        if isinstance(f, Function):
            return f
        return make_wrapper(Function, f, mode)  # type: ignore[no-any-return]

    def function_handle(f: Callable[..., Any], packed: bool) -> int:
        if isinstance(f, Function):
            _IncRef(f._h)
            return f._h
        return create(f, _MODE_PACKED if packed else _MODE_PLAIN)

    return accel.live_callbacks, callback_function, function_handle, create


# The backend, chosen once at import: the compiled path's own Functions and counts, or the
# ctypes table of callbacks.
_live_callbacks, _callback_function, _function_handle_from_callable, _function_create = (
    (_ctypes_live_callbacks, _ctypes_callback_function, _ctypes_function_handle, _no_compiled_path)
    if _accel is None
    else _compiled_backend(_accel)
)


#: How a walk handler's non-None result is written (value, address).
_WALK_RESULT: list[Callable[[Any, int], None]] = []


def _walk_result_at(value: Any, addr: int) -> None:
    _WALK_RESULT[0](value, addr)


def set_walk_result(write: Callable[[Any, int], None]) -> None:
    """Install how a walk-mode handler's non-None result is written: ``write(value, address)``
    (the structural engines own the meaning of a walk result)."""
    _WALK_RESULT[:] = [write]


def _make_callback(f: Callable[..., Any], packed: bool) -> Function:
    return _callback_function(f, _MODE_PACKED if packed else _MODE_PLAIN)


set_callback_maker(_make_callback)
set_callable_converter(_function_handle_from_callable)
