"""Python callables as native Functions: the callback modes, how a callback's result crosses
back as an owned Any, and the Functions both backends make from callables
(``backend.callback_function`` / ``backend.function_create``: ``_accel_parts/callbacks.h``, or
``_pure/callbacks.py`` with its table of live callbacks and its ctypes trampoline).

A callback runs in one of the modes below: plain (``f(*args)``), packed (``f(args)``) and walk
(the structural engines' handlers, whose result is written by the hook ``set_walk_result``
installs; both backends read it from ``_backend_hooks``), and the compiled backend's raw and
hook modes.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable

from . import _lib
from ._backend import backend
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
)
from ._errors import _check, _released_object_error
from ._object import Object, _wrap
from ._values import TypeIndex

__all__ = ["live_callbacks", "compiled_function", "set_walk_result", "to_owned_any", "_MODE_RAW", "_MODE_RAW_WALK", "_MODE_HOOK",
           "_walk_result_at"]  # fmt: skip

_IncRef = _lib.ObjectIncRef

# The callback modes, as ``_accel.c`` numbers them (tests/runtime/test_runtime_layers.py checks):
# plain ``f(*args)``, packed ``f(args)``, walk (result written by the walk-result hook), and the
# structural engines' raw modes ``f(value, type_index, raw...)`` (plain and walk result), and
# (compiled path only) a Visitor/Mutator hook ``hook(value)`` with its context in a frame list.
_MODE_PLAIN, _MODE_PACKED, _MODE_WALK, _MODE_RAW, _MODE_RAW_WALK, _MODE_HOOK = 0, 1, 2, 3, 4, 5

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
        _check(_lib.AnyViewToOwnedAny(ctypes.cast(buf, ctypes.POINTER(_lib.TVMFFIAny)), _lib.TVMFFIAny.from_address(out_addr)))
    finally:
        release_temps(temps)


_Any16 = ctypes.c_char * 16


def _out_view(addr: int) -> Any:
    return _Any16.from_address(addr)


def compiled_function(mode: int, fn: Any) -> Function:
    """A Function calling ``fn`` in callback ``mode`` (the raw and hook modes: the compiled
    backend only; the pure one's structural engines use their ctypes trampolines)."""
    return _wrap(backend.function_create(fn, mode), TypeIndex.FUNCTION)  # type: ignore[no-any-return]


def _callback_function(f: Callable[..., Any], mode: int) -> Function:
    """A Function wrapper around a new native Function that calls ``f`` (``f`` itself if it is a
    Function); the wrapper holds ``f``, so the GC sees a cycle through it."""
    if isinstance(f, Function):
        return f
    return backend.callback_function(Function, f, mode)  # type: ignore[no-any-return]


def _function_handle_from_callable(f: Callable[..., Any], packed: bool) -> int:
    """An owned handle of a new native Function calling ``f`` that owns ``f`` itself (for a
    callable passed straight to native code, with no wrapper to hold it; a Function gives its
    own handle)."""
    if isinstance(f, Function):
        _IncRef(f._h)
        return f._h
    return backend.function_create(f, _MODE_PACKED if packed else _MODE_PLAIN)


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
