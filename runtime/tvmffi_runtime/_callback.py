"""What crosses back from a Python callback called by native code: its result as an owned Any
(:func:`to_owned_any`), a walk handler's result (written by the hook :func:`set_walk_result`
installs), both handed to the backends by ``_wiring``; and Functions made in a callback
mode given by number (:func:`function_in_mode`). The Functions themselves are the backend's
(``backend.callback_function`` / ``function_create``: ``_accel_parts/callbacks.h``, or
``_pure/callbacks.py`` with its table of live callbacks and its ctypes trampolines); the modes
are ``_values.CallbackMode``.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from . import _lib
from ._backend import backend
from ._call import Function
from ._convert import (
    _INT64_MAX,
    _INT64_MIN,
    _PLAIN_PACKERS,
    _KeepAlive,
    _pack_uint,
    _type_of,
    pack_value,
    release_temps,
)
from ._errors import _check, _released_object_error
from ._object import Object, _wrap
from ._values import TypeIndex

__all__ = ["live_callbacks", "function_in_mode", "set_walk_result", "to_owned_any", "_walk_result_at"]

_IncRef = _lib.ObjectIncRef

#: How many native Functions made from Python callables are alive (leak checks).
live_callbacks: Callable[[], int] = backend.live_callbacks


_NO_TEMPS: list[Any] = []  # plain values need no temporaries


def to_owned_any(value: Any, out_addr: int) -> None:
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
        _check(
            _lib.AnyViewToOwnedAny(
                ctypes.cast(buf, ctypes.POINTER(_lib.TVMFFIAny)), _lib.TVMFFIAny.from_address(out_addr)
            )
        )
    finally:
        release_temps(temps)


_Any16 = ctypes.c_char * 16


def _out_view(addr: int) -> Any:
    return _Any16.from_address(addr)


def function_in_mode(mode: int, fn: Any) -> Function:
    """A Function calling ``fn`` in callback ``mode`` (``CallbackMode``; both backends run every
    mode)."""
    return _wrap(backend.function_create(fn, mode), TypeIndex.FUNCTION)  # type: ignore[no-any-return]


#: How a walk handler's non-None result is written (value, address).
_WALK_RESULT: list[Callable[[Any, int], None]] = []


def _walk_result_at(value: Any, addr: int) -> None:
    _WALK_RESULT[0](value, addr)


def set_walk_result(write: Callable[[Any, int], None]) -> None:
    """Install how a walk-mode handler's non-None result is written: ``write(value, address)``
    (the structural engines own the meaning of a walk result)."""
    _WALK_RESULT[:] = [write]
