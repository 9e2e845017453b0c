"""_pure/calls.py: calling a native Function with Python arguments, and construction (the twin
of ``_accel_parts/calls.h``).

The packers, the unpack table and the wrapping of objects live in the layers above; ``init``
hands them over (``connect``) by the names ``_wiring.BACKEND_HELPERS`` gives them, as the compiled
backend reads them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from struct import error as _struct_error
from typing import Any

from .. import _lib
from .._errors import _fetch_error, _python_error_set_in_native, init_result_error
from .._values import TypeIndex
from .objects import ObjectBase

__all__ = ["call", "connect", "construct", "set_gil_auto"]

_c_void_p = ctypes.c_void_p
_string_at = ctypes.string_at
_FunctionCall = _lib.FunctionCall
_DecRef = _lib.ObjectDecRef
_pack_int = _lib.ANY_INT.pack_into
_pack_float = _lib.ANY_FLOAT.pack_into
_type_of: Callable[[object], type[Any]] = type
_snapshot: Callable[[Any], tuple[Any, ...]] = tuple
_NONE, _INT, _FLOAT, _OBJECT = TypeIndex.NONE, TypeIndex.INT, TypeIndex.FLOAT, TypeIndex.OBJECT
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _not_connected(*args: Any) -> Any:
    raise RuntimeError("tvmffi_runtime: the pure backend is used before init() (import tvmffi_runtime)")


# What init() hands over from the layers above (the names of _wiring.BACKEND_HELPERS)
_packers: dict[type, Callable[[Any, int, Any, list[Any]], None]] = {}
_resolve_packer: Callable[[type[Any]], Any] = _not_connected
_pod_from: Callable[[Any, int, int, int, int], Any] = _not_connected
_wrap: Callable[[int, int], Any] = _not_connected
_view: Callable[[Any, int], Any] = _not_connected
_release_temps: Callable[[list[Any]], None] = _not_connected
_pack_error: Callable[[Any, Any, int, BaseException], BaseException] = _not_connected


def connect(hooks: Any) -> None:
    """Take the Python helpers this part calls from ``_wiring.BACKEND_HELPERS``."""
    global _packers, _resolve_packer, _pod_from, _wrap, _view, _release_temps, _pack_error
    _packers, _resolve_packer, _pod_from = hooks.packers, hooks.resolve_packer, hooks.pod_from
    _wrap, _view = hooks.wrap, hooks.view_from_buffer
    _release_temps, _pack_error = hooks.release_temps, hooks.pack_error


class _CallBuffers:
    """Reusable argument and result storage (and a temps list) for one in-flight call."""

    __slots__ = ("args", "result", "result_ptr", "cap", "temps")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.args = (ctypes.c_char * (16 * cap))()
        self.result = _lib.TVMFFIAny()
        # A structure passed without argtypes would go by value: pass this pointer instead.
        self.result_ptr = ctypes.pointer(self.result)
        self.temps: list[Any] = []


# A free list of buffers: pop/append are atomic under the GIL, and a re-entrant call (a callback
# calling back into native code) simply takes another buffer.
_free_buffers: list[_CallBuffers] = [_CallBuffers(8) for _ in range(4)]
# c_void_p of the handles passed as ints (Function.__call__), made once per address
_HANDLES: dict[int, ctypes.c_void_p] = {}


def _c_handle(handle: int) -> ctypes.c_void_p:
    if len(_HANDLES) > 4096:
        _HANDLES.clear()
    c = _HANDLES[handle] = _c_void_p(handle)
    return c


def call(handle: Any, args: Any, name: Any = "") -> Any:
    """Call the Function at ``handle`` (an address, or a ``c_void_p``) with Python arguments.

    ``name`` (a string, or the Function itself) is only used to word argument errors.
    """
    if handle.__class__ is int:
        handle = _HANDLES.get(handle) or _c_handle(handle)
    # a list is copied first: packing may run Python code that changes it
    values: tuple[Any, ...] = args
    if type(values) is not tuple:
        values = _snapshot(values)
    n = len(values)
    bufs = _free_buffers.pop() if _free_buffers else _CallBuffers(max(8, n))
    if bufs.cap < n:
        bufs = _CallBuffers(n)
    buf = bufs.args
    temps = bufs.temps
    try:
        off = 0
        try:
            for a in values:
                t = _type_of(a)
                # the commonest kinds inline (no table lookup, no call); the rest by table
                if t is int and _INT64_MIN <= a <= _INT64_MAX:
                    _pack_int(buf, off, _INT, 0, a)
                elif t is float:
                    _pack_float(buf, off, _FLOAT, 0, a)
                else:
                    p = _packers.get(t) or _resolve_packer(t)
                    if p is None:
                        raise TypeError()  # the message below says it all
                    p(buf, off, a, temps)
                off += 16
        except (TypeError, ValueError, OverflowError, _struct_error) as exc:
            raise _pack_error(name, values[off // 16], off // 16, exc)  # noqa: B904 (cause set there)
        res = bufs.result
        res.type_index = _NONE
        try:
            rc = _FunctionCall(handle, buf, n, bufs.result_ptr)
        except SystemError as exc:
            raise _python_error_set_in_native(exc) from None
        if rc:
            raise _fetch_error()
        tindex = res.type_index
        if tindex == _INT:  # pyright: ignore[reportUnnecessaryComparison]  (set by the call)
            return res.v_int64
        if tindex >= _OBJECT:
            return _wrap(res.v_uint64, tindex)
        if tindex == _NONE:
            return None
        return _pod_from(bytes(res), 0, tindex, res.small_len, res.v_int64)
    finally:
        if temps:
            _release_temps(temps)
        _free_buffers.append(bufs)


def construct(obj: object, handle: int, args: tuple[object, ...], name: str, type_key: str) -> None:
    """``obj`` (an Object) takes over what the ``__ffi_init__`` Function at ``handle`` returns
    for ``args``; a result that is no object is refused (``init_result_error``)."""
    made = call(handle, args, name)
    if not isinstance(made, ObjectBase):
        raise init_result_error(type_key, made)
    target: Any = obj
    old = getattr(target, "_h", 0)  # unset on a new wrapper
    target._h, target._t = made._h, made._t
    made._h = 0
    if old:
        _DecRef(old)


def set_gil_auto(flag: bool) -> None:
    """The GIL policy: ctypes releases the GIL around every foreign call, whatever it is."""
