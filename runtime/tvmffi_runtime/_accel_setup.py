"""Hands the compiled fast path (``_accel.c``) the Python side it falls back to.

The compiled backend converts the common cases itself and calls back into these layers for the
rest (packing unusual types, unpacking rare type indices, errors, callback results), and raises
the errors the Python layers word (``_errors.BACKEND_ERRORS``) through their builders. Imported
last among the core layers, after all of them exist; a no-op on pure ctypes.
"""

from __future__ import annotations

import ctypes
from typing import Any

from . import _lib
from ._call import _pack_error, global_func
from ._callback import _py_to_owned_any, _walk_result_at
from ._convert import owned_from_buffer, _PACKERS, release_temps, _resolve_packer, _type_of, view_from_buffer
from ._errors import BACKEND_ERRORS, CONVERSION_FAILED, RECURSION_IN_CALLBACK, _fetch_error, _raise_into_native
from ._fastpath import Backend
from ._fastpath import accel as _accel
from ._object import _CLASS_CACHE, _OBJECT_RETURN, class_for_index

_c_void_p = ctypes.c_void_p
_Any16 = ctypes.c_char * 16


def _slow_pack_at(addr: int, value: Any, temps: list[Any]) -> None:
    t = _type_of(value)
    p = _PACKERS.get(t) or _resolve_packer(t)
    if p is None:
        raise TypeError()  # _pack_error words it
    p(_Any16.from_address(addr), 0, value, temps)


def _view_at(addr: int) -> Any:
    return view_from_buffer(_Any16.from_address(addr), 0)


def _owned_at(addr: int) -> Any:
    return owned_from_buffer(bytes(_Any16.from_address(addr)), 0)


def _init_accel(accel: Backend) -> None:
    addresses = {
        name: ctypes.cast(getattr(_lib.LIB, name), _c_void_p).value or 0  # 0: C refuses it
        for name in (
            "TVMFFIFunctionCall",
            "TVMFFIObjectIncRef",
            "TVMFFIObjectDecRef",
            "TVMFFIFunctionCreate",
            "TVMFFIErrorMoveFromRaised",
            "TVMFFIErrorSetRaisedFromCStr",
        )
    }
    accel.init(
        addresses,
        {
            "class_cache": _CLASS_CACHE,
            "object_return": _OBJECT_RETURN,
            "class_for_index": class_for_index,
            "pack_slow": _slow_pack_at,
            "pack_error": _pack_error,
            "fetch_error": _fetch_error,
            "view_slow": _view_at,
            "owned_slow": _owned_at,
            "to_owned": _py_to_owned_any,
            "raise_into_native": _raise_into_native,
            "release_temps": release_temps,
            "walk_result": _walk_result_at,
            "array_ctor": lambda: global_func("ffi.Array"),
            "errors": BACKEND_ERRORS,  # the messages it raises, worded once (_errors)
            "conversion_failed": CONVERSION_FAILED + RECURSION_IN_CALLBACK,  # other, then RecursionError
            # bindings whose Python callables native code may hold without our knowing
            "other_bindings": ("tvm_ffi", "tvm"),
        },
    )


if _accel is not None:
    _init_accel(_accel)
