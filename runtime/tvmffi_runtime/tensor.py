"""``Tensor``: a TVM FFI tensor, exchanged zero-copy with numpy (and anything else) via DLPack.

Decisions:

- **Zero-copy both ways.** ``Tensor(obj)`` (and passing ``obj`` where a function takes a tensor)
  views the memory of any object that has ``__dlpack__``; ``numpy()`` / ``numpy.from_dlpack(t)``
  view the Tensor's memory. Each side keeps the other alive: the Tensor holds the producer's
  DLPack deleter (for numpy: a reference to the array), and an exported array holds a reference
  to the Tensor's native object.
- **In C where a C path exists.** On the compiled backend the conversions both ways run in C
  (``_accel_parts/dlpack.h``): an argument whose class offers ``__dlpack_c_exchange_api__``
  (torch) is converted by the producer's own C function, with no capsule and no ``__dlpack__``
  call; other producers' capsules are consumed and our capsules made without Python code. The
  pure backend does the same through ctypes (``_pure/dlpack.py``).
- **Both DLPack capsule forms are consumed.** ``__dlpack__(max_version=(1, 3))`` is asked first;
  a producer whose ``__dlpack__`` takes no ``max_version`` (``TypeError``), or that answers with a
  legacy ``"dltensor"`` capsule, is consumed through the legacy form. The compiled backend asks
  a ``numpy.ndarray`` for the legacy capsule first: half numpy's cost, and numpy refuses a
  read-only array in that form, after which the versioned form is asked and its answer acted on.
  Converted arguments are released when the call returns; the producer's deleter runs once,
  when the last Tensor viewing its memory dies.
- **A ``TensorView`` parameter is lent the producer's DLTensor** (compiled backend): when an
  exported function's type schema types a parameter ``DLTensor*`` (what ``TensorView`` and
  ``DLTensor*`` parameters export), a producer's tensor there makes no Tensor: torch's exchange
  API fills a ``DLTensor`` without allocating, and numpy's capsule lends the one inside it until
  the call returns. What that way declines (a read-only array, a dtype numpy cannot export) is
  converted to a Tensor as for any parameter, so values and errors are the same on both backends.
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
- **A borrowed ``DLTensor*``** (a callback argument: native code passing its buffers without
  ownership) arrives as a Tensor view. Its shape, strides, dtype and device are copied, so they
  stay readable; its *data* is the caller's and valid only while the callback runs. Copy out
  what you need before returning (``numpy.array(numpy.from_dlpack(t))``).
- numpy is imported only when a numpy conversion is requested (``numpy()``, ``from_sequence``).
"""

from __future__ import annotations

import ctypes
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, cast

from . import _lib, _object
from ._backend import backend
from ._lib import OBJECT_HEADER_SIZE
from ._object import Object
from ._values import DataType, Device, TypeIndex, _dtype_from_packed

if TYPE_CHECKING:
    import numpy.typing as npt
    from typing_extensions import CapsuleType

__all__ = ["DLPackExporter", "Tensor", "bfloat16_fallback", "tensor_handle_from_dlpack"]


class DLPackExporter(Protocol):
    """Anything that exports DLPack (numpy arrays, torch tensors, ...): accepted as a Tensor."""

    def __dlpack__(self, *args: Any, **kwargs: Any) -> object: ...


DLPackExporter.__module__ = "tvmffi_runtime"  # its public home (reprs, docs)

_BF16 = (4, 16, 1)  # kDLBfloat, 16 bits, 1 lane
_U16 = (1, 16, 1)  # kDLUInt, 16 bits, 1 lane
_CapsuleGetPointer = ctypes.pythonapi["PyCapsule_GetPointer"]
_CapsuleGetPointer.restype = ctypes.c_void_p
_CapsuleGetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _is_np_bfloat16(obj: object) -> TypeGuard[DLPackExporter]:
    np = sys.modules.get("numpy")
    if np is None or not isinstance(obj, np.ndarray):
        return False
    dtype: Any = cast("Any", obj).dtype  # numpy is optional: its types are not imported
    return bool(dtype.name == "bfloat16" and dtype.itemsize == 2)


def tensor_handle_from_dlpack(obj: DLPackExporter) -> int:
    """An owned Tensor handle viewing ``obj``'s memory through DLPack (no copy)."""
    try:
        return backend.tensor_from_dlpack(obj)
    except BufferError:
        if not _is_np_bfloat16(obj):
            raise
    # numpy cannot export ml_dtypes.bfloat16: export the bit pattern, relabelled as bfloat16
    import numpy as np

    return backend.tensor_from_dlpack(cast("npt.NDArray[Any]", obj).view(np.uint16), _BF16)


def bfloat16_fallback(obj: object, exc: BaseException) -> Tensor | None:
    """``Tensor.from_dlpack`` after a BufferError: a numpy bfloat16 array viewed through its bit
    pattern (None: not one, the error stands)."""
    if not _is_np_bfloat16(obj):
        return None
    t: Tensor = _object._wrap(tensor_handle_from_dlpack(obj), TypeIndex.TENSOR)
    return t


class _Relabelled:
    """A DLPack producer exporting a Tensor under another dtype (same bits, same layout)."""

    __slots__ = ("tensor", "dtype")

    def __init__(self, tensor: Tensor, dtype: tuple[int, int, int]) -> None:
        self.tensor = tensor
        self.dtype = dtype

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.tensor.__dlpack_device__()

    def __dlpack__(self, **kwargs: Any) -> CapsuleType:
        capsule: CapsuleType = self.tensor.__dlpack__(max_version=kwargs.get("max_version"))
        versioned = _is_versioned(kwargs)
        managed = _CapsuleGetPointer(capsule, b"dltensor_versioned" if versioned else b"dltensor")
        kind = _lib.DLManagedTensorVersioned if versioned else _lib.DLManagedTensor
        dl = kind.from_address(managed).dl_tensor
        dl.dtype.code, dl.dtype.bits, dl.dtype.lanes = self.dtype
        return capsule


def _is_versioned(kwargs: dict[str, Any]) -> bool:
    max_version = kwargs.get("max_version")
    return max_version is not None and next(iter(max_version)) >= 1


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

    if TYPE_CHECKING:

        @staticmethod
        def from_dlpack(source: DLPackExporter) -> Tensor:
            """A Tensor viewing ``source`` (anything with ``__dlpack__``) without copying."""
            ...
    else:  # not wrapped in staticmethod: a class attribute lookup of a plain callable is cheaper
        from_dlpack = backend.tensor_of_dlpack

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

    # in C on the compiled backend (_accel_parts/dlpack.h), ctypes on the pure one
    __dlpack__ = backend.tensor_dlpack
    __dlpack_device__ = backend.tensor_dlpack_device

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
