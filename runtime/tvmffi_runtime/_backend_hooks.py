"""What the backends take from the layers above them: plain names that both import by name.

The backends sit below the value layers (``_object`` derives from ``backend.ObjectBase``), so
they cannot import what those layers define; ``backend.init`` imports this module
(``tvmffi_runtime._backend_hooks``) and reads each name it needs below, so go-to-definition
finds what they call. The compiled backend converts the common cases itself and calls back here
for the rest (packing unusual types, unpacking rare type indices, errors, callback results),
raising the errors the Python layers word (``_errors.BACKEND_ERRORS``) through their builders;
the pure backend (``_pure``) takes the packer table, the unpacking and the wrapping it runs on.
Imported last among the core layers, after all of them exist; its last line calls ``init``.
"""

from __future__ import annotations

import ctypes
from typing import Any

from . import _lib
from ._backend import backend
from ._call import argument_error as pack_error
from ._call import global_func
from ._callback import _walk_result_at as walk_result
from ._callback import to_owned_any as to_owned
from ._convert import _PACKERS, _pod_from, _resolve_packer, _type_of, owned_from_buffer, release_temps, view_from_buffer
from ._errors import BACKEND_ERRORS, CONVERSION_FAILED, RECURSION_IN_CALLBACK
from ._errors import _fetch_error as fetch_error
from ._errors import _raise_into_native as raise_into_native
from ._object import _CLASS_CACHE as class_cache
from ._object import _OBJECT_RETURN as object_return
from ._object import _ref_counts as ref_counts
from ._object import _wrap as wrap
from ._object import class_for_index

__all__ = [
    # read by the compiled backend (_accel.c)
    "array_ctor",
    "class_cache",
    "class_for_index",
    "conversion_failed",
    "errors",
    "fetch_error",
    "object_return",
    "other_bindings",
    "owned_slow",
    "pack_error",
    "pack_slow",
    "raise_into_native",
    "release_temps",
    "to_owned",
    "view_slow",
    "walk_result",
    # read by the pure backend (_pure), besides pack_error, release_temps, to_owned, walk_result
    "packers",
    "pod_from",
    "ref_counts",
    "resolve_packer",
    "view_from_buffer",
    "wrap",
]

_c_void_p = ctypes.c_void_p
_Any16 = ctypes.c_char * 16

#: the messages it raises, worded once (_errors): name -> builder
errors = BACKEND_ERRORS
#: (kind, message) of any other failure, then of a RecursionError, as bytes
conversion_failed = CONVERSION_FAILED + RECURSION_IN_CALLBACK
#: bindings whose Python callables native code may hold without our knowing
other_bindings = ("tvm_ffi", "tvm")
#: the packer of each Python type met so far (filled on first sight by resolve_packer)
packers = _PACKERS
resolve_packer = _resolve_packer
#: ``pod_from(buf, off, type_index, small_len, payload)``: a plain value out of an Any
pod_from = _pod_from


def pack_slow(addr: int, value: Any, temps: list[Any]) -> None:
    """Pack ``value`` into the Any view at ``addr`` by the packer table (a TypeError: none)."""
    t = _type_of(value)
    p = _PACKERS.get(t) or _resolve_packer(t)
    if p is None:
        raise TypeError()  # pack_error words it
    p(_Any16.from_address(addr), 0, value, temps)


def view_slow(addr: int) -> Any:
    """The Python value of the borrowed Any at ``addr``."""
    return view_from_buffer(_Any16.from_address(addr), 0)


def owned_slow(addr: int) -> Any:
    """The Python value of the owned Any at ``addr`` (takes over its reference)."""
    return owned_from_buffer(bytes(_Any16.from_address(addr)), 0)


def array_ctor() -> Any:
    """The library's Array constructor."""
    return global_func("ffi.Array")


def _addresses() -> dict[str, int]:
    return {
        name: ctypes.cast(getattr(_lib.LIB, name), _c_void_p).value or 0  # 0: C refuses it
        for name in (
            "TVMFFIFunctionCall",
            "TVMFFIObjectIncRef",
            "TVMFFIObjectDecRef",
            "TVMFFIFunctionCreate",
            "TVMFFIErrorMoveFromRaised",
            "TVMFFIErrorSetRaisedFromCStr",
            "TVMFFITensorFromDLPack",
            "TVMFFITensorFromDLPackVersioned",
            "TVMFFITensorToDLPack",
            "TVMFFITensorToDLPackVersioned",
        )
    }


backend.init(_addresses())  # reads the names above from this module
