"""Plain values of the ABI: static type indices, ``DataType``, ``Device``, ``UNCHANGED``, the
callback modes, and strings/bytes/big integers read out of their native objects.

Depends only on the ABI mirror and errors; no object registry (a string object comes back as a
``str``, never wrapped).
"""

from __future__ import annotations

import ctypes
from typing import ClassVar

from . import _lib
from ._errors import _check, _fetch_error
from ._lib import OBJECT_HEADER_SIZE

__all__ = [
    "CallbackMode",
    "DataType",
    "Device",
    "TypeIndex",
    "UNCHANGED",
    "Unchanged",
    "_bytes_from_handle",
    "_bigint_from_handle",
]

_byref = ctypes.byref
_string_at = ctypes.string_at
_DecRef = _lib.ObjectDecRef


class CallbackMode:
    """How a native Function made from a Python callable calls it (the ``mode`` of
    ``backend.function_create`` / ``callback_function``), as ``_accel.c`` numbers them
    (tests/runtime/test_runtime_layers.py checks): plain ``f(*args)``, packed ``f(args)``, walk
    (a non-None result written by the walk-result hook), the structural engines' raw modes
    ``f(value, type_index, raw...)`` (plain and walk result), and a Visitor/Mutator hook
    ``hook(value)`` with its context in a frame list. Both backends run all six.
    """

    PLAIN = 0
    PACKED = 1
    WALK = 2
    RAW = 3
    RAW_WALK = 4
    HOOK = 5


class Unchanged:
    """Marker returned by structural mappers: the value was not changed (the Python value of
    ``TypeIndex.UNCHANGED``)."""

    _instance: Unchanged | None = None

    def __new__(cls) -> Unchanged:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHANGED"

    def __reduce__(self) -> tuple[type[Unchanged], tuple[()]]:
        return (Unchanged, ())


UNCHANGED = Unchanged()


class TypeIndex:
    """Static type indices of ``TVMFFITypeIndex`` (``c_api.h``)."""

    NONE = 0
    INT = 1
    BOOL = 2
    FLOAT = 3
    OPAQUE_PTR = 4
    DATA_TYPE = 5
    DEVICE = 6
    DL_TENSOR_PTR = 7
    RAW_STR = 8
    BYTE_ARRAY_PTR = 9
    OBJECT_RVALUE_REF = 10
    SMALL_STR = 11
    SMALL_BYTES = 12
    UNCHANGED = 13
    OBJECT = 64
    STR = 65
    BYTES = 66
    ERROR = 67
    FUNCTION = 68
    SHAPE = 69
    TENSOR = 70
    ARRAY = 71
    MAP = 72
    MODULE = 73
    OPAQUE_PY_OBJECT = 74
    LIST = 75
    DICT = 76
    VISIT_INTERRUPT = 77
    BIG_INT = 78
    DYN_OBJECT_BEGIN = 128


def _str_from_handle(handle: int) -> str:
    """The text of an owned String object (releases the handle)."""
    ba = _lib.TVMFFIByteArray.from_address(handle + OBJECT_HEADER_SIZE)
    value = _string_at(ba.data, ba.size).decode("utf-8", "surrogateescape") if ba.size else ""
    _DecRef(handle)
    return value


def _bytes_from_handle(handle: int) -> bytes:
    """The content of an owned Bytes object (releases the handle)."""
    ba = _lib.TVMFFIByteArray.from_address(handle + OBJECT_HEADER_SIZE)
    value = _string_at(ba.data, ba.size) if ba.size else b""
    _DecRef(handle)
    return value


def _bigint_from_handle(handle: int) -> int:
    """The value of an owned BigInt object (releases the handle)."""
    view = _lib.TVMFFIAny(TypeIndex.BIG_INT, 0)
    view.v_ptr = handle
    ba = _lib.BigIntGetContentByteArray(_byref(view))
    raw = _string_at(ba.data, ba.size) if ba.size else b""
    _DecRef(handle)
    return int.from_bytes(raw, "little", signed=True) if raw else 0


def _owned_text(any_: _lib.TVMFFIAny) -> str:
    """The text of an owned Any holding a string (small or a String object)."""
    if any_.type_index == TypeIndex.SMALL_STR:
        return bytes(any_)[8 : 8 + any_.small_len].decode("utf-8", "surrogateescape")
    return _str_from_handle(any_.v_ptr)


class DataType(str):
    """A DLPack data type, spelled as TVM FFI prints it (``"float32"``, ``"int8x4"``, ``"bool"``).

    A ``str`` subclass: it compares equal to its spelling and is accepted wherever a string is.
    """

    __slots__ = ("_packed",)
    _packed: int

    def __new__(cls, spec: str | DataType) -> DataType:
        if isinstance(spec, DataType):
            return spec
        data = str(spec).encode()
        out = _lib.DLDataType()
        if _lib.DataTypeFromString(_byref(_lib.byte_array(data)), _byref(out)) != 0:
            exc = _fetch_error()
            raise ValueError(f"invalid data type {spec!r}: {exc}") from None
        packed = out.code | (out.bits << 8) | (out.lanes << 16)
        return _dtype_from_packed(packed)

    @property
    def type_code(self) -> int:
        """DLPack type code (0 int, 1 uint, 2 float, 4 bfloat, ...)."""
        return self._packed & 0xFF

    @property
    def bits(self) -> int:
        """Bits per lane."""
        return (self._packed >> 8) & 0xFF

    @property
    def lanes(self) -> int:
        """Number of lanes (1 for scalars)."""
        return (self._packed >> 16) & 0xFFFF

    @property
    def itemsize(self) -> int:
        """Bytes per element (rounded up)."""
        return (self.bits * self.lanes + 7) // 8

    def __repr__(self) -> str:
        return f"DataType({str.__repr__(self)})"

    def __reduce__(self) -> tuple[type[DataType], tuple[str]]:
        return (DataType, (str(self),))


_DTYPE_CACHE: dict[int, DataType] = {}


def _dtype_from_packed(packed: int) -> DataType:
    cached = _DTYPE_CACHE.get(packed)
    if cached is not None:
        return cached
    dl = _lib.DLDataType(packed & 0xFF, (packed >> 8) & 0xFF, (packed >> 16) & 0xFFFF)
    out = _lib.TVMFFIAny()
    _check(_lib.DataTypeToString(_byref(dl), _byref(out)))
    text = _owned_text(out)
    value = str.__new__(DataType, text)
    value._packed = packed
    _DTYPE_CACHE[packed] = value
    return value


class Device:
    """A DLPack device: a device type and an index (``Device("cpu", 0)``, ``Device.cpu()``)."""

    __slots__ = ("device_type", "index")
    device_type: int
    index: int

    #: DLPack device type codes by name.
    TYPES: ClassVar[dict[str, int]] = {
        "cpu": 1, "cuda": 2, "cuda_host": 3, "opencl": 4, "vulkan": 7, "metal": 8, "vpi": 9,
        "rocm": 10, "rocm_host": 11, "ext_dev": 12, "cuda_managed": 13, "oneapi": 14,
        "webgpu": 15, "hexagon": 16, "maia": 17, "trn": 18,
    }  # fmt: skip
    NAMES: ClassVar[dict[int, str]] = {v: k for k, v in TYPES.items()}

    def __init__(self, device_type: int | str, index: int = 0) -> None:
        if isinstance(device_type, str):
            name, _, idx = device_type.partition(":")
            if name not in self.TYPES:
                raise ValueError(f"unknown device type {device_type!r}")
            device_type = self.TYPES[name]
            if idx:
                index = int(idx)
        self.device_type = int(device_type)
        self.index = int(index)

    @classmethod
    def cpu(cls, index: int = 0) -> Device:
        """The host CPU."""
        return cls(1, index)

    @property
    def type_name(self) -> str:
        """Lower-case device type name (``"cpu"``, ``"cuda"``)."""
        return self.NAMES.get(self.device_type, str(self.device_type))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.device_type == self.device_type and other.index == self.index

    def __hash__(self) -> int:
        return hash((self.device_type, self.index))

    def __repr__(self) -> str:
        return f"Device({self.type_name!r}, {self.index})"

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self.device_type, self.index)
