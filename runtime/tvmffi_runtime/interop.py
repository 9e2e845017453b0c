"""Hand objects of this runtime to the ``tvm_ffi`` package as ``tvm_ffi``'s own objects.

``tvm_ffi`` converts any argument whose class has ``__tvm_ffi_object__`` by calling it; the
method must return a ``tvm_ffi.core.CObject`` (a Cython class: nothing else is accepted). Such a
wrapper can only be made by ``tvm_ffi`` itself, from the result of a call it makes. So the
first hand-over registers one global function (:data:`HANDOFF_FUNCTION`) that returns the
object this thread is handing over, and asks ``tvm_ffi`` for it; every hand-over then calls it,
and ``tvm_ffi`` wraps the result in its class for the type (the canonical wrapper when one
exists).

Ownership: the returned wrapper owns its own reference, taken by the call's return value; ours
keeps its own. ``tvm_ffi`` is imported on the first hand-over only, never by importing this
runtime. Both packages must run on the same ``libtvm_ffi`` (this runtime loads the copy
``tvm_ffi`` uses when it was imported first, and the one in ``tvm_ffi``'s package otherwise).
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

from . import _lib
from ._call import Function
from ._errors import _released_object_error
from ._object import Object

__all__ = ["HANDOFF_FUNCTION", "to_tvm_ffi"]

#: Global function that returns the object being handed over on this thread (None otherwise).
HANDOFF_FUNCTION = "tvmffi_runtime.interop.handoff"

_pending = threading.local()
_handoff_function: list[Any] = []  # the tvm_ffi Function of HANDOFF_FUNCTION, once made
_setup_lock = threading.Lock()


def _pending_object() -> Object | None:
    """Body of :data:`HANDOFF_FUNCTION`: the object this thread is handing over."""
    return getattr(_pending, "obj", None)


def _symbol_address(lib: ctypes.CDLL) -> int | None:
    return ctypes.cast(lib.TVMFFIObjectIncRef, ctypes.c_void_p).value


def _check_same_library(tvm_ffi: Any) -> None:
    """Refuse when ``tvm_ffi`` runs on another copy of ``libtvm_ffi`` (two type registries)."""
    theirs = getattr(tvm_ffi, "LIB", None)
    if theirs is None or _symbol_address(theirs) == _symbol_address(_lib.LIB):
        return
    raise TypeError(
        f"tvm_ffi uses another libtvm_ffi ({getattr(theirs, '_name', '?')}) than tvmffi_runtime"
        f" ({_lib.LIB_PATH}): objects cannot cross between them"
    )


def _handoff() -> Any:
    """The ``tvm_ffi`` Function of :data:`HANDOFF_FUNCTION` (registered on first use)."""
    if _handoff_function:
        return _handoff_function[0]
    with _setup_lock:
        if not _handoff_function:
            import tvm_ffi

            _check_same_library(tvm_ffi)
            Function.register_global(HANDOFF_FUNCTION, Function.from_callable(_pending_object), override=True)
            _handoff_function.append(tvm_ffi.get_global_func(HANDOFF_FUNCTION))
    return _handoff_function[0]


def to_tvm_ffi(obj: Object) -> Any:
    """``obj`` as a ``tvm_ffi`` object of the same handle (``tvm_ffi.Object`` or a subclass)."""
    if not obj._h:
        raise _released_object_error(obj)
    fetch = _handoff()
    previous = getattr(_pending, "obj", None)
    _pending.obj = obj
    try:
        return fetch()
    finally:
        _pending.obj = previous
