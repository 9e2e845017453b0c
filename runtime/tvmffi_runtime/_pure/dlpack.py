"""_pure/dlpack.py: DLPack on ctypes (the twin of ``_accel_parts/dlpack.h``): producers' tensors
in, our Tensors out, borrowed ``DLTensor*`` as Tensor views. The decisions (both capsule forms,
read-only refused, strides kept, the lifetime of a view) are ``tensor.py``'s docstring.

In: a class that offers ``__dlpack_c_exchange_api__`` (torch) is converted by the producer's
own C function, called through ctypes (no capsule, no ``__dlpack__`` in Python); any other
producer is asked for a versioned capsule, and for the legacy one when its ``__dlpack__`` takes
no ``max_version`` (remembered per class, so the refusal is paid once).

Out: exported capsules carry no Python destructor. A ctypes destructor runs inside ``PyCapsule``
deallocation, which can happen while the consumer is raising (numpy refusing an unsupported
dtype, say): Python code cannot run there without replacing that exception with
``SystemError``. Instead every exported capsule is kept on a list; a sweep (every few exports)
drops the capsules nobody else references and calls the DLPack deleter of those no consumer took
(their name is unchanged). The compiled backend gives its capsules a C destructor instead.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from typing import Any, cast

from .. import _lib
from .._errors import _check, _fetch_error
from .._values import TypeIndex
from .objects import ObjectBase

__all__ = [
    "connect", "live_tensor_views", "set_dlpack_fallback", "tensor_dlpack", "tensor_dlpack_device",
    "tensor_from_dlpack", "tensor_of_dlpack", "view_dltensor",
]  # fmt: skip

_api = ctypes.pythonapi
_CapsuleGetPointer = _api["PyCapsule_GetPointer"]
_CapsuleGetPointer.restype = ctypes.c_void_p
_CapsuleGetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_CapsuleSetName = _api["PyCapsule_SetName"]
_CapsuleSetName.restype = ctypes.c_int
_CapsuleSetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_CapsuleIsValid = _api["PyCapsule_IsValid"]
_CapsuleIsValid.restype = ctypes.c_int
_CapsuleIsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_CapsuleNew = _api["PyCapsule_New"]
_CapsuleNew.restype = ctypes.py_object
_CapsuleNew.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# Capsule names must outlive every capsule: module-level constants.
_NAME_V, _USED_V, _NAME, _USED = b"dltensor_versioned", b"used_dltensor_versioned", b"dltensor", b"used_dltensor"
_MAX_VERSION = (1, 3)  # the DLPack version of the headers shipped with libtvm_ffi
_FLAG_READ_ONLY = 1
_TENSOR = TypeIndex.TENSOR
_Managed = _lib.DLManagedTensor
_ManagedV = _lib.DLManagedTensorVersioned
_u32_at = ctypes.c_uint32.from_address
_u64_at = ctypes.c_uint64.from_address
_FLAGS_AT = _ManagedV.flags.offset
_byref = ctypes.byref
_c_void_p = ctypes.c_void_p
#: Tensor from a versioned managed tensor, keeping the GIL (PyDLL): it only allocates.
_FromDLPackVersioned = _lib._proto_gil(
    "TVMFFITensorFromDLPackVersioned",
    ctypes.c_int,
    [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)],
)
#: Called with the GIL held (PYFUNCTYPE): deleters only drop references.
_DELETER = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)
#: dlpack.h's DLPackManagedTensorFromPyObjectNoSync, called with the GIL held.
_FROM_PY = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.POINTER(ctypes.c_void_p))
_FROM_PY_AT = 24  # its offset in DLPackExchangeAPI: version (8), prev_api, allocator


def _not_connected(*args: Any) -> Any:
    raise RuntimeError("tvmffi_runtime: the pure backend is used before init() (import tvmffi_runtime)")


_wrap: Callable[[int, int], Any] = _not_connected


def connect(hooks: Any) -> None:
    """Take the wrapping of a new Tensor handle from the helpers ``_wiring`` hands over."""
    global _wrap
    _wrap = hooks.wrap


# =============================================================================================
# In: a producer's tensor as an owned Tensor handle
# =============================================================================================
#: Per class: its exchange API's converter, or True (``__dlpack__`` with max_version), or False
#: (``__dlpack__`` without it: a pre-1.0 producer).
_kinds: dict[type, Any] = {}


def _kind_of(cls: type) -> Any:
    kind = _kinds.get(cls)
    if kind is None:
        kind = True
        attr = getattr(cls, "__dlpack_c_exchange_api__", None)
        address = attr if type(attr) is int else None
        if attr is not None and _CapsuleIsValid(attr, b"dlpack_exchange_api"):
            address = _CapsuleGetPointer(attr, b"dlpack_exchange_api")
        if address and _u32_at(address).value == 1:
            fn = _c_void_p.from_address(address + _FROM_PY_AT).value
            if fn:
                kind = _FROM_PY(fn)
        _kinds[cls] = kind
    return kind


def _read_only(obj: Any) -> BufferError:
    return BufferError(
        f"cannot view a read-only {type(obj).__name__} as a Tensor (TVM FFI tensors have no read-only flag,"
        " so native code could write to it); pass a writable copy"
    )


def _from_exchange_api(obj: Any, convert: Any) -> int:
    out = _c_void_p()
    if convert(obj, _byref(out)) != 0 or not out.value:
        raise BufferError(f"{type(obj).__name__}: its DLPack exchange API could not export it")
    ptr = out.value
    try:
        if _u32_at(ptr).value != 1:
            raise BufferError(f"{type(obj).__name__} exported DLPack {_u32_at(ptr).value}.x; only 1.x is supported")
        if _u64_at(ptr + _FLAGS_AT).value & _FLAG_READ_ONLY:
            raise _read_only(obj)
        handle = _c_void_p()
        _check(_lib.TensorFromDLPackVersioned(ptr, 0, 0, _byref(handle)))
    except BaseException:
        deleter = _ManagedV.from_address(ptr).deleter
        if deleter:
            _DELETER(deleter)(ptr)  # not taken over: ours to release
        raise
    return handle.value or 0


def _capsule_of(obj: Any, kind: Any) -> Any:
    try:
        dlpack = obj.__dlpack__
    except AttributeError:
        raise TypeError(
            f"cannot view a {type(obj).__name__} as a Tensor: it has no __dlpack__"
            " (pass a numpy array or a Tensor, or use Tensor.from_sequence)"
        ) from None
    if kind is False:
        return dlpack()
    try:
        return dlpack(max_version=_MAX_VERSION)
    except TypeError:
        capsule = dlpack()  # a pre-1.0 producer: no max_version keyword
        _kinds[type(obj)] = False
        return capsule


def _relabel(dl: Any, dtype: tuple[int, int, int]) -> None:
    dl.dtype.code, dl.dtype.bits, dl.dtype.lanes = dtype


def _from_capsule(obj: Any, capsule: Any, dtype: tuple[int, int, int] | None) -> int:
    # the fewest foreign calls: the pointer asked for by the versioned name, a ValueError (a
    # legacy capsule, or none) costing only the rarer forms
    out = _c_void_p()
    try:
        ptr = _CapsuleGetPointer(capsule, _NAME_V)
    except ValueError:
        return _from_legacy_capsule(obj, capsule, dtype)
    if _u32_at(ptr).value != 1:
        raise BufferError(
            f"{type(obj).__name__}.__dlpack__ returned DLPack {_u32_at(ptr).value}.{_u32_at(ptr + 4).value};"
            " only 1.x is supported"
        )
    if _u64_at(ptr + _FLAGS_AT).value & _FLAG_READ_ONLY:
        raise _read_only(obj)  # not consumed: the producer's capsule destructor frees it
    if dtype is not None:
        _relabel(_ManagedV.from_address(ptr).dl_tensor, dtype)
    if _FromDLPackVersioned(ptr, 0, 0, _byref(out)):
        raise _fetch_error()
    _CapsuleSetName(capsule, _USED_V)
    return out.value or 0


def _from_legacy_capsule(obj: Any, capsule: Any, dtype: tuple[int, int, int] | None) -> int:
    if not _CapsuleIsValid(capsule, _NAME):
        raise TypeError(f"{type(obj).__name__}.__dlpack__() returned no DLPack capsule")
    ptr = _CapsuleGetPointer(capsule, _NAME)
    if dtype is not None:
        _relabel(_Managed.from_address(ptr).dl_tensor, dtype)
    out = _c_void_p()
    _check(_lib.TensorFromDLPack(ptr, 0, 0, _byref(out)))
    _CapsuleSetName(capsule, _USED)
    return out.value or 0


def tensor_from_dlpack(obj: Any, dtype: tuple[int, int, int] | None = None) -> int:
    """An owned handle of a Tensor viewing ``obj``'s memory (no copy); ``dtype`` relabels it."""
    if isinstance(obj, ObjectBase) and obj._t == _TENSOR and obj._h and dtype is None:
        _lib.ObjectIncRef(obj._h)
        return obj._h
    kind = _kind_of(cast("type[object]", type(obj)))
    if kind is not True and kind is not False and dtype is None:
        return _from_exchange_api(obj, kind)
    return _from_capsule(obj, _capsule_of(obj, kind), dtype)


_fallback: Callable[[Any, BaseException], Any] | None = None


def set_dlpack_fallback(fallback: Callable[[Any, BaseException], Any]) -> None:
    """What :func:`tensor_of_dlpack` asks after a BufferError: ``fallback(obj, exc)`` returns a
    Tensor, or None to raise ``exc`` (tensor.py: numpy's bfloat16 arrays)."""
    global _fallback
    _fallback = fallback


def _tensor_of_dlpack(obj: Any) -> Any:
    """A Tensor viewing ``obj`` (``Tensor.from_dlpack`` itself)."""
    try:
        return _wrap(tensor_from_dlpack(obj), _TENSOR)
    except BufferError as exc:
        made = _fallback(obj, exc) if _fallback is not None else None
        if made is None:
            raise
        return made


#: A staticmethod object (callable as a function): the Tensor class stores it as
#: ``from_dlpack`` unbound, as it stores the compiled backend's builtin.
tensor_of_dlpack = staticmethod(_tensor_of_dlpack)


# =============================================================================================
# Out: Tensor.__dlpack__ and __dlpack_device__ (capsules swept when nobody else holds them)
# =============================================================================================
_exported: list[Any] = []
_exported_lock = threading.Lock()
_SWEEP_MIN = 16
_sweep_at = _SWEEP_MIN


def _refcounts(items: list[Any]) -> list[int]:
    return [sys.getrefcount(x) for x in items]


#: What ``_refcounts`` reports for an object referenced only by the list passed to it.
_ONLY_LISTED = _refcounts([object()])[0]


def _release_unconsumed(capsule: Any) -> None:
    """Call the DLPack deleter of a capsule no consumer took, and mark it used."""
    for name, used, kind in ((_NAME_V, _USED_V, _ManagedV), (_NAME, _USED, _Managed)):
        if _CapsuleIsValid(capsule, name):
            ptr = _CapsuleGetPointer(capsule, name)
            _CapsuleSetName(capsule, used)
            deleter = kind.from_address(ptr).deleter
            if deleter:
                _DELETER(deleter)(ptr)
            return


def _sweep_exported() -> None:
    """Forget exported capsules that only our list references; release the unconsumed ones."""
    global _exported, _sweep_at
    with _exported_lock:
        counts = _refcounts(_exported)
        dead = [c for c, n in zip(_exported, counts, strict=True) if n <= _ONLY_LISTED]
        _exported = [c for c, n in zip(_exported, counts, strict=True) if n > _ONLY_LISTED]
        _sweep_at = max(_SWEEP_MIN, 2 * len(_exported))
    for capsule in dead:  # outside the lock: a deleter may run arbitrary finalisers
        _release_unconsumed(capsule)


def _new_capsule(ptr: int, name: bytes) -> Any:
    capsule = _CapsuleNew(ptr, name, None)
    with _exported_lock:
        _exported.append(capsule)
        sweep = len(_exported) >= _sweep_at
    if sweep:
        _sweep_exported()
    return capsule


def pending_exported_capsules() -> int:
    """Exported capsules not yet swept (a consumer may still hold them); for tests."""
    _sweep_exported()
    return len(_exported)


def _dl(tensor: Any) -> Any:
    if not tensor._h:
        raise ValueError("this Tensor was moved or released")
    return _lib.DLTensor.from_address(tensor._h + _lib.OBJECT_HEADER_SIZE)


def tensor_dlpack_device(self: Any) -> tuple[int, int]:
    """(device type, device id) of this tensor."""
    dev = _dl(self).device
    return (int(dev.device_type), int(dev.device_id))


def tensor_dlpack(
    self: Any, *, stream: object = None, max_version: Any = None, dl_device: Any = None, copy: Any = None
) -> Any:
    """A DLPack capsule viewing this tensor (versioned when ``max_version`` >= 1.0)."""
    _dl(self)
    if copy:
        raise BufferError("Tensor.__dlpack__: copy=True is not supported; the export is zero-copy")
    if dl_device is not None and tuple(dl_device) != tensor_dlpack_device(self):
        raise BufferError(
            f"Tensor.__dlpack__: the tensor is on device {tensor_dlpack_device(self)}; cannot export to device"
            f" {dl_device}"
        )
    out = _c_void_p()
    if max_version is not None and next(iter(max_version)) >= 1:
        _check(_lib.TensorToDLPackVersioned(self._h, _byref(out)))
        return _new_capsule(out.value or 0, _NAME_V)
    _check(_lib.TensorToDLPack(self._h, _byref(out)))
    return _new_capsule(out.value or 0, _NAME)


# =============================================================================================
# A borrowed DLTensor* (a callback argument) as a Tensor view
# =============================================================================================
_MANAGED_SIZE = ctypes.sizeof(_ManagedV)
_DLTENSOR_SIZE = ctypes.sizeof(_lib.DLTensor)
_SHAPE_AT = _lib.DLTensor.shape.offset
_STRIDES_AT = _lib.DLTensor.strides.offset
_DL_AT = _ManagedV.dl_tensor.offset
_I64 = 8

#: The structs alive in a Tensor view, by address: the deleter forgets them.
_views: dict[int, Any] = {}
_views_lock = threading.Lock()


def _forget_view(ptr: int | None) -> None:
    with _views_lock:
        _views.pop(ptr or 0, None)


#: Called by libtvm_ffi when a view dies (CFUNCTYPE: it takes the GIL itself, on any thread).
_VIEW_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_forget_view)
_VIEW_DELETER_ADDRESS = ctypes.cast(_VIEW_DELETER, _c_void_p).value


def view_dltensor(address: int) -> Any:
    """A Tensor over the borrowed DLTensor at ``address``: its fields, shape and strides copied into
    a managed struct of ours (the data stays the caller's, valid while the callback runs)."""
    ndim = ctypes.c_int32.from_address(address + _lib.DLTensor.ndim.offset).value if address else -1
    if ndim < 0:
        raise ValueError("a null DLTensor* (or one with ndim < 0) cannot be viewed as a Tensor")
    block = ctypes.create_string_buffer(_MANAGED_SIZE + 2 * ndim * _I64)
    base = ctypes.addressof(block)
    managed = _ManagedV.from_address(base)
    managed.version.major, managed.version.minor = 1, 1
    managed.deleter = _VIEW_DELETER_ADDRESS
    dl_at = base + _DL_AT
    ctypes.memmove(dl_at, address, _DLTENSOR_SIZE)
    shape_at = base + _MANAGED_SIZE
    src_shape = _c_void_p.from_address(address + _SHAPE_AT).value or 0
    src_strides = _c_void_p.from_address(address + _STRIDES_AT).value or 0
    if ndim:
        ctypes.memmove(shape_at, src_shape, ndim * _I64)
    _c_void_p.from_address(dl_at + _SHAPE_AT).value = shape_at
    if src_strides:
        ctypes.memmove(shape_at + ndim * _I64, src_strides, ndim * _I64)
        _c_void_p.from_address(dl_at + _STRIDES_AT).value = shape_at + ndim * _I64
    with _views_lock:
        _views[base] = block
    out = _c_void_p()
    if _lib.TensorFromDLPackVersioned(base, 0, 0, _byref(out)) != 0:
        _forget_view(base)
        raise _fetch_error()
    return _wrap(out.value or 0, _TENSOR)


def live_tensor_views() -> int:
    """How many Tensor views of borrowed DLTensors are alive (leak checks)."""
    return len(_views)
