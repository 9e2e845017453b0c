"""_pure/callbacks.py: Python callables as native Functions (the twin of
``_accel_parts/callbacks.h``): the table of live callbacks, the ctypes trampolines native code
calls, and the deleter that drops a callable when native code releases its Function.

Modes (``_values.CallbackMode``), with the meaning ``callbacks.h`` gives them: plain
``f(*args)``, packed ``f(args)``, walk (a non-None result written by the ``walk_result`` hook),
the structural engines' raw modes ``f(value, type_index, raw...)`` (plain and walk result) and
the Visitor/Mutator hook mode ``hook(value)`` (its context in a frame list). Packed calls, and
plain or walk calls with other than one value, go through :func:`_safe_call`; the rest through
:func:`_slot_call`, which reads the arguments as int64 slots.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
import weakref
from collections.abc import Callable, Container
from typing import Any, cast

from .. import _lib
from .._errors import RECURSION_IN_CALLBACK, _fetch_error, _raise_into_native, conversion_failed, not_callable_error
from .._values import CallbackMode, TypeIndex
from .objects import ObjectBase

__all__ = ["callback_function", "connect", "function_create", "live_callbacks"]

_c_void_p = ctypes.c_void_p
_byref = ctypes.byref
_DecRef = _lib.ObjectDecRef
_Any16 = ctypes.c_char * 16
_new: Callable[[type], Any] = object.__new__  # a bare instance (no __init__)
_PLAIN, _PACKED, _WALK = CallbackMode.PLAIN, CallbackMode.PACKED, CallbackMode.WALK
_RAW, _RAW_WALK, _HOOK = CallbackMode.RAW, CallbackMode.RAW_WALK, CallbackMode.HOOK
_P64 = ctypes.POINTER(ctypes.c_int64)
_MASK32, _MASK64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
_INT, _NONE = TypeIndex.INT, TypeIndex.NONE
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_IncRef = _lib.ObjectIncRef
_grc = sys.getrefcount
# One spare (empty) wrapper per class: a borrowed wrapper that did not escape its call is kept for
# the next one instead of being freed (saves the allocation and the Python-level __del__). Only
# for classes without instance __dict__, and never for a wrapper a weakref points to.
_SPARE: dict[type, Any] = {}
_FUNCTION = TypeIndex.FUNCTION


def _not_connected(*args: Any) -> Any:
    raise RuntimeError("tvmffi_runtime: the pure backend is used before init() (import tvmffi_runtime)")


# What init() hands over from the layers above (the names of _wiring.BACKEND_HELPERS)
_view: Callable[[Any, int], Any] = _not_connected
_to_owned: Callable[[Any, int], None] = _not_connected
_walk_result: Callable[[Any, int], None] = _not_connected
_ref_counts: Callable[[int], tuple[int, int]] = _not_connected
_classes: dict[int, type] = {}  # type index -> wrapper class (the runtime's class cache)
_object_return: Container[int] = frozenset[int]()  # object types that come back as Python values (str, bytes, ...)


def connect(hooks: Any) -> None:
    """Take the Python helpers this part calls from ``_wiring.BACKEND_HELPERS``."""
    global _view, _to_owned, _walk_result, _ref_counts, _classes, _object_return
    _view, _to_owned, _walk_result, _ref_counts, _classes, _object_return = (
        hooks.view_from_buffer,
        hooks.to_owned,
        hooks.walk_result,
        hooks.ref_counts,
        hooks.class_cache,
        hooks.object_return,
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


#: The one table of this backend's live callbacks: their entries, by the key native code passes back.
CALLBACKS: dict[int, _Entry] = {}
_callback_ids = iter(range(1, 1 << 62))
_callbacks_lock = threading.Lock()


def live_callbacks() -> int:
    """How many native Functions made from Python callables are alive (leak checks)."""
    return len(CALLBACKS)


def _check_mode(fn: Any, mode: int) -> None:
    if not _PLAIN <= mode <= _HOOK:
        raise ValueError(f"unknown callback mode {mode}")
    if mode != _HOOK and not callable(fn):  # a hook's payload is a tuple (see _hook_call)
        raise not_callable_error(fn)


def _new_entry(fn: Callable[..., Any] | None, mode: int) -> tuple[int, _Entry]:
    entry = _Entry(fn, mode)
    with _callbacks_lock:
        key = next(_callback_ids)
        CALLBACKS[key] = entry
    return key, entry


def _create(key: int, mode: int) -> int:
    out = _c_void_p()
    if mode == _PACKED:
        rc = _lib.FunctionCreate(key, _SAFE_CALL_TRAMPOLINE, _DELETER_TRAMPOLINE, _byref(out))
    else:
        rc = _lib.FunctionCreateFromAddress(key, _SLOT_CALL_ADDRESS, _DELETER_ADDRESS, _byref(out))
    if rc != 0:
        _delete(key)
        raise _fetch_error()
    return out.value  # type: ignore[return-value]


def function_create(fn: object, mode: int) -> int:
    """An owned handle of a new native Function calling ``fn`` in ``mode``; the Function owns
    ``fn`` (for a callable passed straight to native code, with no wrapper to hold it)."""
    _check_mode(fn, mode)
    key, _ = _new_entry(fn, mode)  # type: ignore[arg-type]
    return _create(key, mode)


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
    w._h = _create(key, mode)
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


def _address(pointer: Any) -> int:
    return ctypes.cast(pointer, _c_void_p).value or 0


def _slot_call(self_key: int, args: Any, nargs: int, result: Any) -> int:
    """The trampoline of every mode but packed, reading the arguments as int64 slots (plain and
    walk with other than one value go to :func:`_safe_call`).

    An object of a known class is passed in a wrapper from a spare per class, given its own
    reference for the call; when the callable did not keep, move or release it, the reference
    is dropped and the wrapper kept for the next call: per value, Python sees this trampoline
    and the callable alone (no allocation, no Python-level ``__del__``)."""
    try:
        entry = CALLBACKS[self_key]
        fn = entry.fn
        if fn is None:
            fn = entry.callable()
        mode = entry.mode
        if mode <= _WALK and nargs != 1:
            return _safe_call(self_key, _address(args), nargs, _address(result))
        if nargs < 1:
            raise TypeError("a structural callback needs the value argument")
        t = args[0] & _MASK32
        cls = _classes.get(t) if t >= 64 and t not in _object_return else None
        obj: Any = None
        if cls is not None:
            h = args[1] & _MASK64
            obj = _SPARE.pop(cls, None)
            if obj is None:
                obj = _new(cls)
            _IncRef(h)
            obj._h = h
            obj._t = t
            value = obj
        else:
            h = 0
            value = args[1] if t == _INT else _view(_Any16.from_address(_address(args)), 0)
        try:
            if mode <= _WALK:
                r = fn(value)
            elif mode == _HOOK:
                r = _hook_call(fn, value, t, args, nargs)
            else:
                r = fn(value, t, *[args[2 * i + 1] for i in range(1, nargs)])
        finally:
            if cls is not None:
                value = None
                if obj._h == h and _grc(obj) <= 2:  # not kept, moved or released: back to the spare
                    obj._h = 0
                    _DecRef(h)
                    if not cls.__dictoffset__ and obj.__weakref__ is None:
                        _SPARE[cls] = obj
                obj = None
        if mode in (_WALK, _RAW_WALK):
            if r is not None:
                _walk_result(r, _address(result))
        elif r is None:
            result[0] = _NONE
            result[1] = 0
        elif r.__class__ is int and _INT64_MIN <= r <= _INT64_MAX:
            result[0] = _INT
            result[1] = r
        elif isinstance(r, ObjectBase) and r._h:
            _IncRef(r._h)
            result[0] = r._t
            result[1] = r._h
        else:
            _to_owned(r, _address(result))
        return 0
    except BaseException as exc:  # noqa: BLE001 - every exception must cross as an error
        try:
            return fail_into_native(exc)
        except RecursionError:
            fail_for_want_of_stack()
            return -1


def _hook_call(payload: Any, value: Any, tindex: int, args: Any, nargs: int) -> Any:
    """The hook mode: ``payload`` is (hook, frame, check, objects_ok). While hook(value) runs,
    ``frame`` holds the value, its type index and the int64 payloads of the other arguments
    (engine handle, in-place mode), so the hook's helpers build its context only when called;
    the previous items are put back afterwards (hooks nest). A result other than None (or, with
    objects_ok, a live object) goes through check(result), which returns what to write or
    raises (``UNCHANGED`` comes back from it as it is)."""
    parts = cast("tuple[Any, ...]", payload)
    if not isinstance(payload, tuple) or len(parts) != 4:
        raise TypeError("a structural hook needs (hook, frame, check, objects_ok) and the value")
    hook, frame, check, objects_ok = parts
    if frame.__class__ is not list or len(frame) != nargs + 1:
        raise TypeError("a structural hook's frame must be a list of one item per argument, plus one")
    saved = frame[:]
    frame[:] = [value, tindex, *[args[2 * i + 1] for i in range(1, nargs)]]
    try:
        r = hook(value)
    finally:
        frame[:] = saved
    if r is None or (objects_ok is True and isinstance(r, ObjectBase) and r._h):
        return r
    return check(r)


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
_SLOT_CALL_TRAMPOLINE = ctypes.CFUNCTYPE(ctypes.c_int, _c_void_p, _P64, ctypes.c_int32, _P64)(_slot_call)
_SLOT_CALL_ADDRESS = ctypes.cast(_SLOT_CALL_TRAMPOLINE, _c_void_p)
