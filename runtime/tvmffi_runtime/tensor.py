"""``Tensor``: a TVM FFI tensor, exchanged zero-copy with numpy (and anything else) via DLPack.

Decisions:

- **Zero-copy both ways.** ``Tensor(obj)`` (and passing ``obj`` where a function takes a tensor)
  views the memory of any object that has ``__dlpack__``; ``numpy()`` / ``numpy.from_dlpack(t)``
  view the Tensor's memory. Each side keeps the other alive: the Tensor holds the producer's
  DLPack deleter (for numpy: a reference to the array), and an exported array holds a reference
  to the Tensor's native object.
- **Both DLPack capsule forms are consumed.** ``__dlpack__(max_version=(1, 3))`` is asked first;
  a producer whose ``__dlpack__`` takes no ``max_version`` (``TypeError``), or that answers with a
  legacy ``"dltensor"`` capsule, is consumed through the legacy form.
- **Non-contiguous inputs are accepted with their strides** (checked: a native function that
  walks the strides sees the right values for sliced, transposed, Fortran-ordered and
  negative-stride numpy views). ``strides`` reports them in elements and ``numpy()`` views the
  same memory with the same strides. Native functions that need compact data must check
  ``IsContiguous()`` themselves.
- **Read-only inputs are refused** (``BufferError``): a TVM FFI tensor has no read-only flag, so
  native code could write into memory its owner declared immutable (numpy refuses legacy DLPack
  export of read-only arrays for the same reason). Pass ``arr.copy()`` instead.
- **bfloat16** numpy arrays (``ml_dtypes.bfloat16``, which numpy's own DLPack export refuses) are
  viewed through their 16-bit pattern with the DLPack dtype set to bfloat16; ``numpy()`` of a
  bfloat16 Tensor returns an ``ml_dtypes.bfloat16`` view. Both need ``ml_dtypes``.
- **Exported capsules carry no Python destructor.** A ctypes destructor runs inside
  ``PyCapsule`` deallocation, which can happen while the consumer is raising (for example numpy
  refusing an unsupported dtype): Python code cannot run there without replacing that exception
  with ``SystemError``. Instead every exported capsule is kept on a list; a sweep (every few
  exports) drops the capsules nobody else references and calls the DLPack deleter of those no
  consumer took (their name is unchanged).
- numpy is imported only when a numpy conversion is requested (``numpy()``, ``from_sequence``).
"""

from __future__ import annotations

import ctypes
import importlib
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from . import _lib, _object
from ._errors import _check
from ._lib import OBJECT_HEADER_SIZE
from ._object import Object
from ._values import DataType, Device, TypeIndex, _dtype_from_packed

if TYPE_CHECKING:
    import numpy.typing as npt
    from typing_extensions import CapsuleType

__all__ = ["DLPackExporter", "Tensor", "tensor_handle_from_dlpack"]


class DLPackExporter(Protocol):
    """Anything that exports DLPack (numpy arrays, torch tensors, ...): accepted as a Tensor."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> object: ...


DLPackExporter.__module__ = "tvmffi_runtime"  # its public home (reprs, docs)

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
_NAME = b"dltensor"
_USED_NAME = b"used_dltensor"
_NAME_V = b"dltensor_versioned"
_USED_NAME_V = b"used_dltensor_versioned"
#: The DLPack version this consumer understands (the headers shipped with libtvm_ffi).
DLPACK_MAX_VERSION = (1, 3)
_FLAG_READ_ONLY = 1
#: Called with the GIL held (PYFUNCTYPE): the deleters only drop references.
_DELETER = ctypes.PYFUNCTYPE(None, ctypes.c_void_p)
_BF16 = (4, 16, 1)  # kDLBfloat, 16 bits, 1 lane
_U16 = (1, 16, 1)  # kDLUInt, 16 bits, 1 lane


def _set_dtype(dl: _lib.DLTensor, code_bits_lanes: tuple[int, int, int]) -> None:
    dl.dtype.code, dl.dtype.bits, dl.dtype.lanes = code_bits_lanes


def _is_np_bfloat16(obj: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, np.ndarray) and obj.dtype.name == "bfloat16" and obj.dtype.itemsize == 2


# =============================================================================================
# Consuming DLPack
# =============================================================================================
def _call_dlpack(obj: Any) -> Any:
    try:
        dlpack = obj.__dlpack__
    except AttributeError:
        raise TypeError(
            f"cannot view a {type(obj).__name__} as a Tensor: it has no __dlpack__"
            " (pass a numpy array or a Tensor, or use Tensor.from_sequence)"
        ) from None
    try:
        return dlpack(max_version=DLPACK_MAX_VERSION)
    except TypeError:
        return dlpack()  # a pre-1.0 producer: no max_version keyword


def tensor_handle_from_dlpack(obj: DLPackExporter) -> int:
    """An owned Tensor handle viewing ``obj``'s memory through its ``__dlpack__`` (no copy)."""
    if isinstance(obj, Tensor):
        _lib.ObjectIncRef(obj._h)
        return obj._h
    override: tuple[int, int, int] | None = None
    try:
        capsule = _call_dlpack(obj)
    except BufferError:
        if not _is_np_bfloat16(obj):
            raise
        # numpy cannot export ml_dtypes.bfloat16: export the bit pattern, relabel it below.
        import numpy as np

        capsule = _call_dlpack(cast("npt.NDArray[Any]", obj).view(np.uint16))  # an array: _is_np_bfloat16
        override = _BF16
    out = ctypes.c_void_p()
    if _CapsuleIsValid(capsule, _NAME_V):
        ptr = _CapsuleGetPointer(capsule, _NAME_V)
        managed = _lib.DLManagedTensorVersioned.from_address(ptr)
        if managed.version.major != 1:
            raise BufferError(
                f"{type(obj).__name__}.__dlpack__ returned DLPack {managed.version.major}."
                f"{managed.version.minor}; only 1.x is supported"
            )
        if managed.flags & _FLAG_READ_ONLY:
            # Not consumed: the producer's capsule destructor frees it.
            raise BufferError(
                f"cannot view a read-only {type(obj).__name__} as a Tensor (TVM FFI tensors have"
                " no read-only flag, so native code could write to it); pass a writable copy"
            )
        if override is not None:
            _set_dtype(managed.dl_tensor, override)
        _check(_lib.TensorFromDLPackVersioned(ptr, 0, 0, ctypes.byref(out)))
        _CapsuleSetName(capsule, _USED_NAME_V)
    elif _CapsuleIsValid(capsule, _NAME):
        ptr = _CapsuleGetPointer(capsule, _NAME)
        if override is not None:
            _set_dtype(_lib.DLManagedTensor.from_address(ptr).dl_tensor, override)
        _check(_lib.TensorFromDLPack(ptr, 0, 0, ctypes.byref(out)))
        _CapsuleSetName(capsule, _USED_NAME)
    else:
        raise TypeError(f"{type(obj).__name__}.__dlpack__() returned no DLPack capsule")
    assert out.value
    return out.value


# =============================================================================================
# Producing DLPack: capsules without a destructor, swept when nobody else holds them
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
    for name, used, kind in ((_NAME_V, _USED_NAME_V, _lib.DLManagedTensorVersioned),
                             (_NAME, _USED_NAME, _lib.DLManagedTensor)):  # fmt: skip
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


def _new_capsule(ptr: int, name: bytes) -> CapsuleType:
    capsule: CapsuleType = _CapsuleNew(ptr, name, None)
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


class _Relabelled:
    """A DLPack producer exporting a Tensor under another dtype (same bits, same layout)."""

    __slots__ = ("tensor", "dtype")

    def __init__(self, tensor: Tensor, dtype: tuple[int, int, int]) -> None:
        self.tensor = tensor
        self.dtype = dtype

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.tensor.__dlpack_device__()

    def __dlpack__(self, **kwargs: Any) -> CapsuleType:
        return self.tensor._export(kwargs.get("max_version"), self.dtype)


# =============================================================================================
# Tensor
# =============================================================================================
@_object.register_object("ffi.Tensor")
class Tensor(Object):
    """An n-dimensional array in TVM FFI; shares memory with numpy through DLPack."""

    __slots__ = ()

    def __init__(self, source: DLPackExporter) -> None:
        """View any object that has ``__dlpack__`` (a numpy array, another Tensor) without copying."""
        self._h = tensor_handle_from_dlpack(source)
        self._t = TypeIndex.TENSOR

    @staticmethod
    def from_dlpack(source: DLPackExporter) -> Tensor:
        """A Tensor viewing ``source`` (anything with ``__dlpack__``) without copying."""
        return Tensor(source)

    @staticmethod
    def from_sequence(data: Sequence[Any], shape: Sequence[int], dtype: str) -> Tensor:
        """A new CPU Tensor holding ``data`` (flat, row-major) with ``shape`` and ``dtype``."""
        import numpy as np

        dims = tuple(int(d) for d in shape)
        if any(d < 0 for d in dims):
            raise ValueError(f"from_sequence: negative extent in shape {dims}")
        n = 1
        for d in dims:
            n *= d
        if len(data) != n:
            raise ValueError(f"from_sequence: {len(data)} values do not fill shape {dims} ({n} values)")
        arr = np.array(data, dtype=_numpy_dtype(str(DataType(dtype)))).reshape(dims)
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
        out: list[int] = []
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
    def size(self) -> int:
        """Number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def data_ptr(self) -> int:
        """Address of the first element (data plus byte offset)."""
        dl = self._dl()
        return int(dl.data or 0) + int(dl.byte_offset)

    def is_contiguous(self) -> bool:
        """Whether the strides are the compact row-major ones."""
        expected = 1
        for extent, stride in zip(reversed(self.shape), reversed(self.strides), strict=True):
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
        stream: object = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType:
        """A DLPack capsule viewing this tensor (versioned when ``max_version`` >= 1.0).

        ``stream`` is ignored (no device synchronisation); ``copy=True`` and a ``dl_device``
        other than the tensor's own raise ``BufferError``.
        """
        if copy:
            raise BufferError("Tensor.__dlpack__: copy=True is not supported; the export is zero-copy")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(
                f"Tensor.__dlpack__: the tensor is on {self.device!r}; cannot export to device {dl_device}"
            )
        return self._export(max_version, None)

    def _export(self, max_version: Any, dtype: tuple[int, int, int] | None) -> CapsuleType:
        out = ctypes.c_void_p()
        if max_version is not None and next(iter(max_version)) >= 1:
            _check(_lib.TensorToDLPackVersioned(self._h, ctypes.byref(out)))
            assert out.value
            if dtype is not None:
                _set_dtype(_lib.DLManagedTensorVersioned.from_address(out.value).dl_tensor, dtype)
            return _new_capsule(out.value, _NAME_V)
        _check(_lib.TensorToDLPack(self._h, ctypes.byref(out)))
        assert out.value
        if dtype is not None:
            _set_dtype(_lib.DLManagedTensor.from_address(out.value).dl_tensor, dtype)
        return _new_capsule(out.value, _NAME)

    def numpy(self) -> npt.NDArray[Any]:
        """A numpy array viewing the same memory (CPU tensors only)."""
        import numpy as np

        if self._dl().device.device_type not in (1, 3):
            raise BufferError(f"numpy() needs a CPU tensor; this one is on {self.device!r}")
        if self.dtype == "bfloat16":
            bf16 = _numpy_dtype("bfloat16")
            return np.from_dlpack(_Relabelled(self, _U16)).view(bf16)
        return np.from_dlpack(self)

    def __array__(self, dtype: npt.DTypeLike | None = None, copy: bool | None = None) -> npt.NDArray[Any]:
        """``numpy.asarray(t)`` views the tensor (copies only for a dtype change or ``copy=True``)."""
        arr = self.numpy()
        if dtype is not None and arr.dtype != dtype:
            if copy is False:
                raise ValueError(f"cannot view a {self.dtype} Tensor as {dtype} without copying")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

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
            ml_dtypes = importlib.import_module("ml_dtypes")
        except ImportError:
            raise TypeError("bfloat16 tensors need the ml_dtypes package for numpy") from None
        return ml_dtypes.bfloat16
    try:
        return np.dtype(name)
    except TypeError:
        raise TypeError(f"numpy has no dtype for TVM FFI dtype {name!r}") from None
