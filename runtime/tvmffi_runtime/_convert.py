"""Converting Python values to ``TVMFFIAny`` and back.

- packing: a *view* of a Python value written into a buffer of 16-byte Any slots, by packer
  functions found per type (:func:`register_packer` adds one); values that need a temporary owned
  object (a list converted to an Array, a long string) put it on a ``temps`` list released after
  the call;
- unpacking: an owned Any (a result) or a borrowed view (callback arguments, container items)
  into a Python value.

Conversions that need a higher layer (building a container calls a global function, a DLPack
tensor is imported by ``tensor``) are installed by that layer at import with the ``set_*``
functions below; a callable becomes a native Function through the backend
(``backend.function_create``).
"""

from __future__ import annotations

import ctypes
import operator
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import _lib
from ._backend import backend
from ._errors import _check, _new_error_handle, _released_object_error
from ._lib import ANY_FLOAT, ANY_INT, ANY_UINT
from ._object import Object, _read_type_index, _wrap
from ._values import UNCHANGED, CallbackMode, DataType, Device, TypeIndex, Unchanged, _dtype_from_packed

__all__ = [
    "Packer",
    "pack_value",
    "register_packer",
    "release_temps",
    "owned_from_buffer",
    "view_from_buffer",
    "_owned_any_to_py",
]

_c_void_p = ctypes.c_void_p
_byref = ctypes.byref
_pack_int = ANY_INT.pack_into
_pack_float = ANY_FLOAT.pack_into
_pack_uint = ANY_UINT.pack_into
_unpack_int = ANY_INT.unpack_from
_unpack_float = ANY_FLOAT.unpack_from
_IncRef = _lib.ObjectIncRef
_DecRef = _lib.ObjectDecRef
_new: Callable[[type], Any] = object.__new__  # a bare instance (no __init__)
#: ``type`` typed for values of unknown type (``type(x)`` of an Any is only partially known)
_type_of: Callable[[object], type[Any]] = type
#: Offset of the character data inside a CPython ``bytes`` object (``PyBytesObject.ob_sval``).
_BYTES_DATA = bytes.__basicsize__ - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
# the type indices packed and unpacked on every call, as module constants (no attribute lookup)
_NONE, _INT, _BOOL, _FLOAT, _OBJECT = TypeIndex.NONE, TypeIndex.INT, TypeIndex.BOOL, TypeIndex.FLOAT, TypeIndex.OBJECT
_SMALL_STR_PACK = struct.Struct("=iI8s").pack_into


# =============================================================================================
# What the layers above install
# =============================================================================================
def _not_installed(what: str) -> Callable[..., int]:
    def missing(*args: Any) -> int:
        raise RuntimeError(f"tvmffi_runtime: converting {what} needs tvmffi_runtime fully imported")

    return missing


_new_container: Callable[[str, Any], int] = _not_installed("a list or dict")
_tensor_from_dlpack: Callable[[Any], int] = _not_installed("a DLPack tensor")


def set_container_builder(build: Callable[[str, Any], int]) -> None:
    """``build(ctor, items)``: owned handle of a new container made by global function ``ctor``."""
    global _new_container
    _new_container = build


def set_dlpack_importer(import_: Callable[[Any], int]) -> None:
    """``import_(x)``: owned Tensor handle of an object with ``__dlpack__``."""
    global _tensor_from_dlpack
    _tensor_from_dlpack = import_


# =============================================================================================
# Packing Python values into TVMFFIAny views
# =============================================================================================
Packer = Callable[[Any, int, Any, list[Any]], None]


def _pack_none(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_int(buf, off, _NONE, 0, 0)


def _pack_bool(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_int(buf, off, _BOOL, 0, 1 if v else 0)


def _pack_pyint(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    if _INT64_MIN <= v <= _INT64_MAX:
        _pack_int(buf, off, _INT, 0, v)
    else:
        h = _bigint_handle(int(v))
        temps.append(h)
        _pack_uint(buf, off, TypeIndex.BIG_INT, 0, h)


def _pack_float_(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_float(buf, off, _FLOAT, 0, v)


def _pack_str(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    data = v.encode("utf-8", "surrogateescape")
    n = len(data)
    if n <= 7:
        _SMALL_STR_PACK(buf, off, TypeIndex.SMALL_STR, n, data)
    elif b"\0" in data:
        any_ = _lib.TVMFFIAny()
        _check(_lib.StringFromByteArray(_byref(_lib.byte_array(data)), _byref(any_)))
        temps.append(any_.v_ptr)
        _pack_uint(buf, off, any_.type_index, 0, any_.v_ptr)
    else:
        temps.append(data)  # keeps the bytes (and so the char* we pass) alive
        _pack_uint(buf, off, TypeIndex.RAW_STR, 0, id(data) + _BYTES_DATA)


def _pack_bytes(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    data = bytes(v)
    n = len(data)
    if n <= 7:
        _SMALL_STR_PACK(buf, off, TypeIndex.SMALL_BYTES, n, data)
    else:
        ba = _lib.TVMFFIByteArray(id(data) + _BYTES_DATA, n)
        temps.append(data)
        temps.append(ba)
        _pack_uint(buf, off, TypeIndex.BYTE_ARRAY_PTR, 0, ctypes.addressof(ba))


def _pack_object(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    if not v._h:  # moved or released: native code would get a null object
        raise _released_object_error(v)
    _pack_uint(buf, off, v._t, 0, v._h)


def _pack_dtype(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_uint(buf, off, TypeIndex.DATA_TYPE, 0, v._packed)


def _pack_device(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    # device_id is an int32: mask it so a negative index packs (and unpacks) as itself
    _pack_uint(buf, off, TypeIndex.DEVICE, 0, (v.device_type & 0xFFFFFFFF) | ((v.index & 0xFFFFFFFF) << 32))


def _pack_opaque(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_uint(buf, off, TypeIndex.OPAQUE_PTR, 0, v.value or 0)


def _pack_unchanged(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    # the structural mappers' UNCHANGED, as the reserved kTVMFFIUnchanged marker
    _pack_int(buf, off, TypeIndex.UNCHANGED, 0, 0)


def _pack_owned_handle(buf: Any, off: int, h: int, temps: list[Any]) -> None:
    temps.append(h)
    _pack_uint(buf, off, _read_type_index(h), 0, h)


def _pack_sequence(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_owned_handle(buf, off, _new_container("ffi.Array", v), temps)


def _pack_mapping(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    flat = [x for kv in v.items() for x in kv]
    _pack_owned_handle(buf, off, _new_container("ffi.Map", flat), temps)


def _pack_callable(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    # a callable that is no Function (those pack as objects): a new Function owning it
    _pack_owned_handle(buf, off, backend.function_create(v, CallbackMode.PLAIN), temps)


def _pack_exception(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_owned_handle(buf, off, _new_error_handle(v), temps)


def _pack_dlpack(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_owned_handle(buf, off, _tensor_from_dlpack(v), temps)


#: The packers of values an Any holds in place (no object, no temporary), for callback results.
_PLAIN_PACKERS: dict[type, Packer] = {type(None): _pack_none, bool: _pack_bool, int: _pack_pyint, float: _pack_float_}

_PACKERS: dict[type, Packer] = {
    type(None): _pack_none,
    bool: _pack_bool,
    int: _pack_pyint,
    float: _pack_float_,
    str: _pack_str,
    bytes: _pack_bytes,
    bytearray: _pack_bytes,
    DataType: _pack_dtype,
    Device: _pack_device,
    list: _pack_sequence,
    tuple: _pack_sequence,
    dict: _pack_mapping,
    _c_void_p: _pack_opaque,
    Unchanged: _pack_unchanged,
}


def _resolve_packer(t: type[Any]) -> Packer | None:
    """Find (and cache) the packer for a type not in the exact-type table."""
    if issubclass(t, Object):
        p: Packer | None = _pack_object
    elif issubclass(t, bool):
        p = _pack_bool
    elif issubclass(t, DataType):
        p = _pack_dtype
    elif issubclass(t, str):
        p = _pack_str
    elif issubclass(t, int):
        p = _pack_pyint
    elif issubclass(t, float):
        p = _pack_float_
    elif issubclass(t, (bytes, bytearray, memoryview)):
        p = _pack_bytes
    elif issubclass(t, BaseException):
        p = _pack_exception
    elif hasattr(t, "__chandle__"):  # an object of the tvm_ffi package: pass the same object
        p = _pack_chandle
    elif hasattr(t, "__dlpack__"):
        p = _pack_dlpack
    elif hasattr(t, "__tvm_ffi_object__"):
        p = _pack_ffi_object_protocol
    elif issubclass(t, (list, tuple)) or _is_sequence(t):
        p = _pack_sequence
    elif _is_mapping(t):
        p = _pack_mapping
    elif (number := _number_packer(t)) is not None:
        p = number
    elif issubclass(t, type):  # classes are callable, but are not passed as functions
        p = None
    elif any("__call__" in vars(k) for k in t.__mro__):
        # not hasattr(t, "__call__"): that finds type.__call__ on every class, object included
        p = _pack_callable
    else:
        p = None
    if p is not None:
        _PACKERS[t] = p
    return p


def _number_packer(t: type[Any]) -> Packer | None:
    """Packer for a number type that is not an int/float subclass (numpy scalars, say): a
    numpy bool as a bool, then anything with ``__index__`` as an int, with ``__float__`` as a
    float. Only asked after the exact-type table missed, and cached per type by the caller."""
    numpy = sys.modules.get("numpy")  # a numpy scalar exists only once numpy is imported
    if numpy is not None and issubclass(t, numpy.bool_):
        return _pack_bool
    if hasattr(t, "__index__"):
        return _pack_index
    if hasattr(t, "__float__"):
        return _pack_real
    return None


def _pack_index(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_pyint(buf, off, operator.index(v), temps)


def _pack_real(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_float(buf, off, _FLOAT, 0, float(v))


def _pack_chandle(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    h = v.__chandle__()  # borrowed: ``v`` is an argument, alive for the whole call
    if h:
        _pack_uint(buf, off, _read_type_index(h), 0, h)
    else:
        _pack_int(buf, off, _NONE, 0, 0)


def _pack_ffi_object_protocol(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    obj = v.__tvm_ffi_object__()  # a tvm_ffi object (or one of ours): kept alive for the call
    temps.append(_KeepAlive(obj))
    cls = _type_of(obj)
    if isinstance(obj, Object):
        _pack_object(buf, off, obj, temps)
    elif hasattr(cls, "__chandle__"):
        _pack_chandle(buf, off, obj, temps)
    else:
        raise TypeError(f"__tvm_ffi_object__ of {type(v).__name__} returned {type(obj).__name__}, not an object")


class _KeepAlive:
    """Wrapper that marks a temps entry as a Python object to keep alive, not a handle."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj


def _is_sequence(t: type[Any]) -> bool:
    return issubclass(t, Sequence) and not issubclass(t, (str, bytes, bytearray))


def _is_mapping(t: type[Any]) -> bool:
    return issubclass(t, Mapping)


def pack_value(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    """Pack any supported Python value as a TVMFFIAny view at ``off`` in ``buf``."""
    t = _type_of(v)
    p = _PACKERS.get(t) or _resolve_packer(t)
    if p is None:
        raise TypeError(f"cannot convert a value of type {type(v).__name__} to a TVM FFI value")
    p(buf, off, v, temps)


def release_temps(temps: list[Any]) -> None:
    """Release what packers put on ``temps``: owned handles (ints); other entries just drop."""
    for t in temps:
        if type(t) is int:
            _DecRef(t)
    temps.clear()


def register_packer(t: type, packer: Packer) -> None:
    """Pack values of exactly type ``t`` with ``packer`` (subclasses resolve on their own)."""
    _PACKERS[t] = packer


def _bigint_handle(value: int) -> int:
    nbytes = max(8, ((value.bit_length() + 1 + 63) // 64) * 8)
    raw = value.to_bytes(nbytes, "little", signed=True)
    out = _lib.TVMFFIAny()
    _check(_lib.BigIntFromByteArray(_byref(_lib.byte_array(raw)), _byref(out)))
    if out.type_index < 64:  # normalised down to a plain int: box nothing, pass as int
        raise OverflowError("unexpected small BigInt")
    return out.v_ptr  # type: ignore[no-any-return]


# =============================================================================================
# Unpacking TVMFFIAny into Python values
# =============================================================================================
def _owned_any_to_py(any_: _lib.TVMFFIAny) -> Any:
    """Convert an owned Any struct (takes over its reference)."""
    return owned_from_buffer(any_, 0)


def owned_from_buffer(buf: Any, off: int) -> Any:
    """Convert the owned Any at ``off`` of ``buf`` into a Python value (takes over its reference)."""
    tindex, small_len, v = _unpack_int(buf, off)
    if tindex == _INT:
        return v
    if tindex >= _OBJECT:
        return _wrap(v & 0xFFFFFFFFFFFFFFFF, tindex)
    return _pod_from(buf, off, tindex, small_len, v)


def view_from_buffer(buf: Any, off: int) -> Any:
    """Convert a borrowed Any view (callback arguments, container items) into a Python value."""
    tindex, small_len, v = _unpack_int(buf, off)
    if tindex == _INT:
        return v
    if tindex >= _OBJECT:
        h = v & 0xFFFFFFFFFFFFFFFF
        _IncRef(h)
        return _wrap(h, tindex)
    return _pod_from(buf, off, tindex, small_len, v)


def _device_from(buf: Any, off: int, n: int, v: int) -> Device:
    u = v & 0xFFFFFFFFFFFFFFFF
    dev: Device = _new(Device)
    dev.device_type = u & 0xFFFFFFFF
    dev.index = ctypes.c_int32(u >> 32).value
    return dev


def _object_rvalue_from(buf: Any, off: int, n: int, v: int) -> Any:
    h = ctypes.c_void_p.from_address(v).value or 0
    _IncRef(h)
    return _wrap(h, _read_type_index(h))


_Reader = Callable[[Any, int, int, int], Any]

#: The one unpack table: how a value that is not an object (type index below ``OBJECT``) is read
#: out of the Any at ``buf[off:off+16]``, given its small length ``n`` and 64-bit payload ``v``.
#: Owned Anys, borrowed views and call results all read through it (the last three kinds appear
#: only in borrowed views).
_UNPACK: dict[int, _Reader] = {
    TypeIndex.NONE: lambda buf, off, n, v: None,
    TypeIndex.INT: lambda buf, off, n, v: v,
    TypeIndex.BOOL: lambda buf, off, n, v: v != 0,
    TypeIndex.FLOAT: lambda buf, off, n, v: _unpack_float(buf, off)[2],
    TypeIndex.SMALL_STR: lambda buf, off, n, v: bytes(buf[off + 8 : off + 8 + n]).decode("utf-8", "surrogateescape"),
    TypeIndex.SMALL_BYTES: lambda buf, off, n, v: bytes(buf[off + 8 : off + 8 + n]),
    TypeIndex.DATA_TYPE: lambda buf, off, n, v: _dtype_from_packed(v & 0xFFFFFFFF),
    TypeIndex.DEVICE: _device_from,
    TypeIndex.OPAQUE_PTR: lambda buf, off, n, v: _c_void_p(v & 0xFFFFFFFFFFFFFFFF) if v else None,
    TypeIndex.UNCHANGED: lambda buf, off, n, v: UNCHANGED,
    # a borrowed DLTensor* (callback arguments): a Tensor view, valid while the callback runs
    TypeIndex.DL_TENSOR_PTR: lambda buf, off, n, v: backend.view_dltensor(v & 0xFFFFFFFFFFFFFFFF),
    TypeIndex.RAW_STR: lambda buf, off, n, v: ctypes.string_at(v).decode("utf-8", "surrogateescape"),
    TypeIndex.BYTE_ARRAY_PTR: lambda buf, off, n, v: _lib.read_byte_array(_lib.TVMFFIByteArray.from_address(v)),
    TypeIndex.OBJECT_RVALUE_REF: _object_rvalue_from,
}


def _pod_from(buf: Any, off: int, tindex: int, small_len: int, v: int) -> Any:
    read = _UNPACK.get(tindex)
    if read is None:
        raise TypeError(f"cannot convert a TVM FFI value of type index {tindex} to Python")
    return read(buf, off, small_len, v)
