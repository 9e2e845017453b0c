"""The value core, assembled: imports every layer in dependency order and re-exports the names
the rest of the package, generated packages and tests use from here.

The layers, each importing only those before it (none imports a later one, not even inside a
function; a lower layer that needs a higher one gets a hook the higher one installs at import):

    _lib          ABI mirror: ctypes structs and prototypes of the C API
    _errors       native errors <-> Python exceptions
    _values       TypeIndex, DataType, Device, strings/bytes/big ints out of their objects
    _pure         the pure-ctypes backend (the twin of the compiled ``_accel``)
    _backend      which backend: ``backend`` is ``_accel`` or ``_pure``, chosen once
    _object       Object and the type-index -> class registry
    _convert      Python values <-> TVMFFIAny (packers, unpacking)
    _call         Function, calling, global functions, reflected methods
    _callback     Python callables as native Functions
    _backend_hooks  what both backends read by name at init (fallbacks, packers, unpacking)
    _env          signal-check and GIL hooks for native code

Conventions:
- An argument is packed as a borrowed *view* into a reusable buffer of ``TVMFFIAny`` slots;
  values that need a temporary owned object (a list converted to an Array, a long string) put
  that object's handle on a ``temps`` list released after the call.
- A result is an *owned* Any; the wrapper made for it takes over the reference.
- Every ``Object`` wrapper owns exactly one reference, released once when it dies (or handed
  over by ``_object._release_into`` / ``_adopt``).
"""

from __future__ import annotations

from . import _backend_hooks as _backend_hooks  # connects the backend (backend.init)
from . import _env as _env  # registers the env hooks
from . import _lib
from ._call import (
    Function,
    _kwargs_marker,
    _new_container,
    ffi_call,
    get_global_func,
    global_func,
    global_handle,
    set_release_gil,
    type_attr_value,
    type_method,
)
from ._callback import (
    to_owned_any,
    live_callbacks,
    set_walk_result,
)
from ._convert import (
    _pack_int,
    _pack_uint,
    owned_from_buffer,
    pack_value,
    register_packer,
    release_temps,
    view_from_buffer,
)
from ._errors import (
    _PY_ERRORS,
    _PY_ERRORS_LIMIT,
    Error,
    ReleasedObjectError,
    _check,
    _exception_from_error_handle,
    _released_object_error,
    register_error,
)
from ._backend import accelerated
from ._object import (
    _CLASS_CACHE,
    _LAZY_CLASS_LOADER,
    _OBJECT_RETURN,
    _TYPE_CLASSES,
    Object,
    _new,
    _read_type_index,
    _ref_counts,
    _wrap,
    class_for_index,
    register_object,
    set_class_loader,
    set_object_return,
    set_object_service,
    type_key_to_index,
)
from ._values import DataType, Device, TypeIndex, _dtype_from_packed


_DecRef = _lib.ObjectDecRef
_IncRef = _lib.ObjectIncRef

# The names the rest of the package and tests use from here, private ones included.
__all__ = [
    "DataType",
    "Device",
    "Error",
    "Function",
    "Object",
    "ReleasedObjectError",
    "TypeIndex",
    "accelerated",
    "class_for_index",
    "ffi_call",
    "get_global_func",
    "global_func",
    "global_handle",
    "live_callbacks",
    "owned_from_buffer",
    "pack_value",
    "register_error",
    "register_object",
    "register_packer",
    "release_temps",
    "set_class_loader",
    "set_object_return",
    "set_object_service",
    "set_release_gil",
    "set_walk_result",
    "type_attr_value",
    "type_key_to_index",
    "type_method",
    "view_from_buffer",
    "_CLASS_CACHE",
    "_DecRef",
    "_IncRef",
    "_LAZY_CLASS_LOADER",
    "_OBJECT_RETURN",
    "_PY_ERRORS",
    "_PY_ERRORS_LIMIT",
    "_TYPE_CLASSES",
    "_check",
    "_dtype_from_packed",
    "_exception_from_error_handle",
    "_kwargs_marker",
    "_new",
    "_new_container",
    "_pack_int",
    "_pack_uint",
    "to_owned_any",
    "_read_type_index",
    "_ref_counts",
    "_released_object_error",
    "_wrap",
]
