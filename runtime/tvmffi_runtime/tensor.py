"""``Tensor``: a TVM FFI tensor, exchanged zero-copy with numpy (and anything else) via DLPack.

Decisions: non-contiguous inputs are accepted as they are (the Tensor records the strides, and
``numpy()`` views the same memory with the same strides); native functions that need contiguous
data check that themselves. numpy is imported only when a numpy conversion is requested.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from . import _core, _lib
from ._core import DataType, Device, Object, TypeIndex, _check, _dtype_from_packed
from ._lib import OBJECT_HEADER_SIZE

__all__ = ["Tensor", "tensor_handle_from_dlpack"]

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
# In the destructor the capsule arrives as a raw pointer: separate prototypes taking void*.
_RawIsValid = _api["PyCapsule_IsValid"]
_RawIsValid.restype = ctypes.c_int
_RawIsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_RawGetPointer = _api["PyCapsule_GetPointer"]
_RawGetPointer.restype = ctypes.c_void_p
_RawGetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

# Capsule names must outlive every capsule: module-level constants.
_NAME = b"dltensor"
_USED_NAME = b"used_dltensor"
_NAME_V = b"dltensor_versioned"
_USED_NAME_V = b"used_dltensor_versioned"
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_VERSIONED_DELETER_OFFSET = 16  # DLManagedTensorVersioned: version(8), manager_ctx(8), deleter
_LEGACY_DELETER_OFFSET = ctypes.sizeof(_lib.DLTensor) + 8


def _capsule_destructor(capsule: int) -> None:
    """Free a capsule's managed tensor if no consumer took it (its name is unchanged)."""
    for name, offset in ((_NAME_V, _VERSIONED_DELETER_OFFSET), (_NAME, _LEGACY_DELETER_OFFSET)):
        if _RawIsValid(capsule, name):
            ptr = _RawGetPointer(capsule, name)
            deleter = ctypes.c_void_p.from_address(ptr + offset).value
            if deleter:
                _DELETER(deleter)(ptr)
            return


_CAPSULE_DESTRUCTOR = _DELETER(_capsule_destructor)
_CAPSULE_DESTRUCTOR_ADDR = ctypes.cast(_CAPSULE_DESTRUCTOR, ctypes.c_void_p).value


def tensor_handle_from_dlpack(obj: Any) -> int:
    """An owned Tensor handle viewing ``obj``'s memory through its ``__dlpack__`` (no copy)."""
    if isinstance(obj, Tensor):
        _lib.ObjectIncRef(obj._h)
        return obj._h
    try:
        capsule = obj.__dlpack__(max_version=(1, 0))
    except TypeError:
        capsule = obj.__dlpack__()
    out = ctypes.c_void_p()
    if _CapsuleIsValid(capsule, _NAME_V):
        ptr = _CapsuleGetPointer(capsule, _NAME_V)
        _check(_lib.TensorFromDLPackVersioned(ptr, 0, 0, ctypes.byref(out)))
        _CapsuleSetName(capsule, _USED_NAME_V)
    elif _CapsuleIsValid(capsule, _NAME):
        ptr = _CapsuleGetPointer(capsule, _NAME)
        _check(_lib.TensorFromDLPack(ptr, 0, 0, ctypes.byref(out)))
        _CapsuleSetName(capsule, _USED_NAME)
    else:
        raise TypeError(f"{type(obj).__name__}.__dlpack__() returned no DLPack capsule")
    assert out.value
    return out.value


@_core.register_object("ffi.Tensor")
class Tensor(Object):
    """An n-dimensional array in TVM FFI; shares memory with numpy through DLPack."""

    __slots__ = ()

    def __init__(self, source: Any) -> None:
        """View any object that has ``__dlpack__`` (a numpy array, another Tensor) without copying."""
        self._h = tensor_handle_from_dlpack(source)
        self._t = TypeIndex.TENSOR

    @staticmethod
    def from_dlpack(source: Any) -> Tensor:
        """A Tensor viewing ``source`` (anything with ``__dlpack__``) without copying."""
        return Tensor(source)

    @staticmethod
    def from_sequence(data: Sequence[Any], shape: Sequence[int], dtype: str) -> Tensor:
        """A new CPU Tensor holding ``data`` (flat, row-major) with ``shape`` and ``dtype``."""
        import numpy as np

        n = 1
        for d in shape:
            n *= int(d)
        if len(data) != n:
            raise ValueError(f"from_sequence: {len(data)} values do not fill shape {tuple(shape)}")
        arr = np.asarray(data, dtype=_numpy_dtype(str(DataType(dtype)))).reshape(tuple(shape))
        return Tensor(arr)

    def _dl(self) -> _lib.DLTensor:
        return _lib.DLTensor.from_address(self._h + OBJECT_HEADER_SIZE)

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return int(self._dl().ndim)

    @property
    def shape(self) -> tuple[int, ...]:
        """Extent of each dimension."""
        dl = self._dl()
        return tuple(dl.shape[i] for i in range(dl.ndim))

    @property
    def strides(self) -> tuple[int, ...]:
        """Stride of each dimension in elements (computed for compact tensors)."""
        dl = self._dl()
        if dl.strides:
            return tuple(dl.strides[i] for i in range(dl.ndim))
        out = []
        acc = 1
        for i in range(dl.ndim - 1, -1, -1):
            out.append(acc)
            acc *= dl.shape[i]
        return tuple(reversed(out))

    @property
    def dtype(self) -> DataType:
        """Element data type."""
        dt = self._dl().dtype
        return _dtype_from_packed(dt.code | (dt.bits << 8) | (dt.lanes << 16))

    @property
    def device(self) -> Device:
        """Device holding the data."""
        dev = self._dl().device
        return Device(dev.device_type, dev.device_id)

    @property
    def data_ptr(self) -> int:
        """Address of the first element (data plus byte offset)."""
        dl = self._dl()
        return (dl.data or 0) + dl.byte_offset

    def is_contiguous(self) -> bool:
        """Whether the strides are the compact row-major ones."""
        expected = 1
        for extent, stride in zip(reversed(self.shape), reversed(self.strides)):
            if extent != 1 and stride != expected:
                return False
            expected *= extent
        return True

    def __dlpack_device__(self) -> tuple[int, int]:
        dev = self._dl().device
        return (int(dev.device_type), int(dev.device_id))

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: Any = None,
        copy: bool | None = None,
    ) -> Any:
        if copy:
            raise BufferError("Tensor.__dlpack__: copy=True is not supported; the export is zero-copy")
        out = ctypes.c_void_p()
        if max_version is not None and max_version[0] >= 1:
            _check(_lib.TensorToDLPackVersioned(self._h, ctypes.byref(out)))
            return _CapsuleNew(out.value, _NAME_V, _CAPSULE_DESTRUCTOR_ADDR)
        _check(_lib.TensorToDLPack(self._h, ctypes.byref(out)))
        return _CapsuleNew(out.value, _NAME, _CAPSULE_DESTRUCTOR_ADDR)

    def numpy(self) -> Any:
        """A numpy array viewing the same memory (CPU tensors only)."""
        import numpy as np

        if self._dl().device.device_type not in (1, 3):
            raise BufferError(f"numpy() needs a CPU tensor; this one is on {self.device!r}")
        return np.from_dlpack(self)

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d Tensor")
        return shape[0]

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={str(self.dtype)!r}, device={self.device!r})"


def _numpy_dtype(name: str) -> Any:
    import numpy as np

    if name == "bfloat16":
        try:
            import ml_dtypes

            return ml_dtypes.bfloat16
        except ImportError:
            raise TypeError("bfloat16 needs the ml_dtypes package for numpy") from None
    return np.dtype(name)
