"""The runtime's one wiring point: where each lower layer is handed, once, at import, what it
calls in the layers above it.

No module imports a higher layer. The backends (compiled ``_accel`` or ``_pure``) sit below
the value layers (``_object`` derives from ``backend.ObjectBase``), and ``Object``, the
converters and the callbacks need functions of the layers above them (copying, interop, the
guarded repr, tensors, typed functions, the structural engines). This module imports them all
and hands each over here and nowhere else: first to the backend, ``backend.init(addresses,
BACKEND_HELPERS)``; then ``Object``'s services, the converters' container builder and DLPack
importer, the packer of ``move()``, the typed-function adapter and the walk-result writer.
The package ``__init__`` imports it first, so the runtime is connected before anything runs.
Two registries stay open to the code that uses them: ``bind.register`` installs a generated
package's class loader, and each enum class registers how its objects come back.
"""

from __future__ import annotations

import ctypes
from typing import Any

from . import _call, _callback, _convert, _graph_guard, _lib, _object, _typed, containers, copying, interop, tensor
from ._backend import backend
from ._container_functions import MAP_FUNCTIONS
from ._errors import BACKEND_ERRORS, CONVERSION_FAILED, RECURSION_IN_CALLBACK, _fetch_error, _raise_into_native
from ._values import UNCHANGED
from .structural._markers import Moved, pack_moved
from .structural._native import write_walk_at

__all__ = ["BACKEND_HELPERS"]

_c_void_p = ctypes.c_void_p
_Any16 = ctypes.c_char * 16


def pack_slow(addr: int, value: Any, temps: list[Any]) -> None:
    """Pack ``value`` into the Any view at ``addr`` by the packer table (a TypeError: none)."""
    t = _convert._type_of(value)
    p = _convert._PACKERS.get(t) or _convert._resolve_packer(t)
    if p is None:
        raise TypeError()  # pack_error words it
    p(_Any16.from_address(addr), 0, value, temps)


def view_slow(addr: int) -> Any:
    """The Python value of the borrowed Any at ``addr``."""
    return _convert.view_from_buffer(_Any16.from_address(addr), 0)


def owned_slow(addr: int) -> Any:
    """The Python value of the owned Any at ``addr`` (takes over its reference)."""
    return _convert.owned_from_buffer(bytes(_Any16.from_address(addr)), 0)


def array_ctor() -> Any:
    """The library's Array constructor."""
    return _call.global_func("ffi.Array")


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


#: What both backends take at init, by these names (each reads those it calls).
BACKEND_HELPERS: dict[str, Any] = {
    # read by the compiled backend (_accel.c)
    "array_ctor": array_ctor,
    "class_cache": _object._CLASS_CACHE,
    "class_for_index": _object.class_for_index,
    # (kind, message) of any other failure, then of a RecursionError, as bytes
    "conversion_failed": CONVERSION_FAILED + RECURSION_IN_CALLBACK,
    # the messages it raises, worded once (_errors): name -> builder
    "errors": BACKEND_ERRORS,
    "fetch_error": _fetch_error,
    # the containers' read side (both backends): a global function's handle by name, the marker
    # *GetItemOrMissing returns for an absent key, and the map functions by type index
    "global_handle": _call.global_handle,
    "map_functions": MAP_FUNCTIONS,
    "map_missing": containers.missing_object,
    "object_return": _object._OBJECT_RETURN,
    # bindings whose Python callables native code may hold without our knowing
    "other_bindings": ("tvm_ffi", "tvm"),
    "owned_slow": owned_slow,
    "pack_error": _call.argument_error,
    "pack_slow": pack_slow,
    "raise_into_native": _raise_into_native,
    "release_temps": _convert.release_temps,
    "to_owned": _callback.to_owned_any,
    "view_slow": view_slow,
    "walk_result": _callback._walk_result_at,
    # read by the pure backend (_pure), besides class_cache, global_handle, map_functions,
    # map_missing, object_return, pack_error, release_temps, to_owned, walk_result
    # the packer of each Python type met so far (filled on first sight by resolve_packer)
    "packers": _convert._PACKERS,
    "resolve_packer": _convert._resolve_packer,
    # ``pod_from(buf, off, type_index, small_len, payload)``: a plain value out of an Any
    "pod_from": _convert._pod_from,
    "ref_counts": _object._ref_counts,
    "view_from_buffer": _convert.view_from_buffer,
    "wrap": _object._wrap,
}

backend.init(_addresses(), BACKEND_HELPERS)
backend.set_unchanged(UNCHANGED)  # the compiled backend returns it for kTVMFFIUnchanged itself

_object.set_object_service("construct", _call.construct_object)
_object.set_object_service("repr", _graph_guard.guarded_repr)
_object.set_object_service("copy", copying.shallow_copy)
_object.set_object_service("deepcopy", copying.deep_copy)
_object.set_object_service("reduce", copying.reduce_object)
_object.set_object_service("to_tvm_ffi", interop.to_tvm_ffi)
_convert.set_container_builder(_call.new_container)
_convert.set_dlpack_importer(tensor.tensor_handle_from_dlpack)
backend.set_dlpack_fallback(tensor.bfloat16_fallback)
_convert.register_packer(Moved, pack_moved)
_call.set_typed_adapter(_typed.typed_adapter)
_callback.set_walk_result(write_walk_at)
