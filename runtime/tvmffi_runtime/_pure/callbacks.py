"""_pure/callbacks.py: Python callables as native Functions (the twin of
``_accel_parts/callbacks.h``): the table of live callbacks, the ctypes trampoline native code
calls, and the deleter that drops a callable when native code releases its Function.

Modes (``_values.CallbackMode``): plain ``f(*args)``, packed ``f(args)`` and walk (a non-None
result written by the ``walk_result`` hook). The structural engines' raw and hook modes are the
compiled backend's own; on this backend the engines use their ctypes trampolines
(:func:`trampoline_function`).
"""

from __future__ import annotations

import ctypes
import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any

from .. import _lib
from .._errors import RECURSION_IN_CALLBACK, _fetch_error, _raise_into_native, conversion_failed, not_callable_error
from .._values import CallbackMode, TypeIndex
from .objects import ObjectBase

__all__ = [
    "CALLBACKS", "callback_function", "connect", "fail_for_want_of_stack", "fail_into_native", "function_create",
    "live_callbacks", "trampoline_function",
]  # fmt: skip

_c_void_p = ctypes.c_void_p
_byref = ctypes.byref
_DecRef = _lib.ObjectDecRef
_Any16 = ctypes.c_char * 16
_new: Callable[[type], Any] = object.__new__  # a bare instance (no __init__)
_PLAIN, _PACKED, _WALK = CallbackMode.PLAIN, CallbackMode.PACKED, CallbackMode.WALK  # the modes it runs
_FUNCTION = TypeIndex.FUNCTION


def _not_connected(*args: Any) -> Any:
    raise RuntimeError("tvmffi_runtime: the pure backend is used before init() (import tvmffi_runtime)")


# What init() hands over from the layers above (the names of _wiring.BACKEND_HELPERS)
_view: Callable[[Any, int], Any] = _not_connected
_to_owned: Callable[[Any, int], None] = _not_connected
_walk_result: Callable[[Any, int], None] = _not_connected
_ref_counts: Callable[[int], tuple[int, int]] = _not_connected


def connect(hooks: Any) -> None:
    """Take the Python helpers this part calls from ``_wiring.BACKEND_HELPERS``."""
    global _view, _to_owned, _walk_result, _ref_counts
    _view, _to_owned, _walk_result, _ref_counts = (
        hooks.view_from_buffer,
        hooks.to_owned,
        hooks.walk_result,
        hooks.ref_counts,
    )


class _Entry:
    """A callable that native Functions call, by key in :data:`CALLBACKS`.

    ``fn`` is None while the Python wrapper that made the Function lives: the wrapper holds the
    callable (so the GC sees the edge) and ``wrapper`` reaches it. When the wrapper dies while
    native code still holds the Function, the entry takes the callable over (``fn``).
    """

    __slots__ = ("fn", "mode", "wrapper")

    def __init__(self, fn: Callable[..., Any] | None, mode: int) -> None:
        self.fn = fn
        self.mode = mode
        self.wrapper: Callable[[], Any] | None = None

    def callable(self) -> Callable[..., Any]:
        fn = self.fn
        if fn is None:
            w = self.wrapper() if self.wrapper is not None else None
            fn = getattr(w, "_cb", None)
            if fn is None:
                raise RuntimeError("the Python callable of this Function has been released")
        return fn


#: The one payload table of this backend: a callable's entry, or the payload of a raw
#: trampoline (:func:`trampoline_function`), by the key native code passes back.
CALLBACKS: dict[int, Any] = {}
_callback_ids = iter(range(1, 1 << 62))
_callbacks_lock = threading.Lock()


def live_callbacks() -> int:
    """How many native Functions made from Python callables are alive (leak checks)."""
    return len(CALLBACKS)


def _check_mode(fn: Any, mode: int) -> None:
    if mode not in (_PLAIN, _PACKED, _WALK):
        raise ValueError(
            f"function_create: callback mode {mode} is the compiled backend's (the pure backend runs"
            " modes 0-2; its structural engines use trampoline_function)"
        )
    if not callable(fn):
        raise not_callable_error(fn)


def _new_entry(fn: Callable[..., Any] | None, mode: int) -> tuple[int, _Entry]:
    entry = _Entry(fn, mode)
    with _callbacks_lock:
        key = next(_callback_ids)
        CALLBACKS[key] = entry
    return key, entry


def _create(key: int) -> int:
    out = _c_void_p()
    rc = _lib.FunctionCreate(key, _SAFE_CALL_TRAMPOLINE, _DELETER_TRAMPOLINE, _byref(out))
    if rc != 0:
        _delete(key)
        raise _fetch_error()
    return out.value  # type: ignore[return-value]


def function_create(fn: object, mode: int) -> int:
    """An owned handle of a new native Function calling ``fn`` in ``mode``; the Function owns
    ``fn`` (for a callable passed straight to native code, with no wrapper to hold it)."""
    _check_mode(fn, mode)
    key, _ = _new_entry(fn, mode)  # type: ignore[arg-type]
    return _create(key)


def _callback_del(self: Any) -> None:
    """A wrapper made by :func:`callback_function` dies: when native code still holds the
    Function (or its handle was moved to native code), the entry takes the callable over."""
    h = getattr(self, "_h", 0)
    entry = getattr(self, "_cbr", None)
    try:
        # h == 0: the handle was moved to native code, which now owns the Function
        if entry is not None and (not h or _ref_counts(h)[1] > 1):
            entry.fn = self._cb
    except Exception:  # noqa: BLE001 - interpreter shutdown
        return
    self._h = 0
    if h:
        _DecRef(h)


_CALLBACK_CLASSES: dict[type, type] = {}


def _callback_class(cls: type) -> type:
    """``cls`` with the callable in a slot (so the GC sees a cycle through it), as the compiled
    ``ObjectBase`` holds it in C."""
    sub = _CALLBACK_CLASSES.get(cls)
    if sub is None:
        if not issubclass(cls, ObjectBase):
            raise TypeError("callback_function: cls must be an Object class")
        sub = _CALLBACK_CLASSES[cls] = type(
            cls.__name__, (cls,), {"__slots__": ("_cb", "_cbr"), "__del__": _callback_del, "__module__": cls.__module__}
        )
    return sub


def callback_function(cls: type, fn: object, mode: int) -> Any:
    """A wrapper of class ``cls`` (a Function class) owning a new native Function calling ``fn``."""
    _check_mode(fn, mode)
    w: Any = _new(_callback_class(cls))
    key, w._cbr = _new_entry(None, mode)
    w._cb = fn
    w._h = _create(key)
    w._t = _FUNCTION
    w._cbr.wrapper = weakref.ref(w)
    return w


def _safe_call(self_key: int, args_addr: int, nargs: int, result_addr: int) -> int:
    try:
        entry = CALLBACKS[self_key]
        fn, mode = entry.callable(), entry.mode
        if nargs:
            raw = (ctypes.c_char * (16 * nargs)).from_address(args_addr)
            pyargs = [_view(raw, 16 * i) for i in range(nargs)]
        else:
            pyargs = []
        value = fn(pyargs) if mode == _PACKED else fn(*pyargs)
        if mode != _WALK:
            _to_owned(value, result_addr)
        elif value is not None:
            _walk_result(value, result_addr)
        return 0
    except BaseException as exc:  # noqa: BLE001 - every exception must cross as an error
        try:
            return fail_into_native(exc)
        except RecursionError:
            fail_for_want_of_stack()
            return -1


def fail_into_native(exc: BaseException) -> int:
    """How a ctypes trampoline reports ``exc``: raised into native code, return code -1.

    At Python's recursion limit even the fallback below can fail (it is one call deeper than
    this function); the trampoline then calls :data:`fail_for_want_of_stack` itself. An
    exception that left a ctypes trampoline would be printed and dropped, and native code would
    read an undefined return code."""
    try:
        _raise_into_native(exc)
    except BaseException as failure:  # noqa: BLE001
        _lib.LIB.TVMFFIErrorSetRaisedFromCStr(*conversion_failed(failure))
    return -1


#: Raise ``RECURSION_IN_CALLBACK`` natively in one direct call, no Python frame: what a ctypes
#: trampoline does when :func:`fail_into_native` ran out of stack.
fail_for_want_of_stack: Callable[[], object] = functools.partial(
    _lib.LIB.TVMFFIErrorSetRaisedFromCStr, *RECURSION_IN_CALLBACK
)


def _delete(self_key: int) -> None:
    try:
        with _callbacks_lock:
            entry = CALLBACKS.pop(self_key, None)
    except Exception:  # noqa: BLE001 - interpreter shutdown
        return
    # released outside the lock: the callable's release can run Python that makes callbacks
    del entry


_SAFE_CALL_TRAMPOLINE = _lib.SAFE_CALL(_safe_call)
_DELETER_TRAMPOLINE = _lib.DELETER(_delete)
_DELETER_ADDRESS = ctypes.cast(_DELETER_TRAMPOLINE, _c_void_p)


def trampoline_function(trampoline: Any, payload: Any) -> int:
    """An owned handle of a Function whose calls run the C-callable ``trampoline`` (an address)
    with ``payload``, which stays in the callback table until native code deletes the Function
    (the structural engines' way on this backend)."""
    with _callbacks_lock:
        key = next(_callback_ids)
        CALLBACKS[key] = payload
    out = _c_void_p()
    if _lib.FunctionCreateFromAddress(key, trampoline, _DELETER_ADDRESS, _byref(out)) != 0:
        _delete(key)
        raise _fetch_error()
    return out.value or 0
