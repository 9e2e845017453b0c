"""The value core: ``Object``, ``Function``, ``Error`` and conversion through ``TVMFFIAny``.

These live in one module because each needs the others on every call: a call packs arguments
(objects, functions made from callables, errors), and unpacks a result into the class registered
for its type index.

Conventions:
- An argument is packed as a borrowed *view* into a reusable buffer of ``TVMFFIAny`` slots;
  values that need a temporary owned object (a list converted to an Array, a long string) put
  that object's handle on a ``temps`` list released after the call.
- A result is an *owned* Any; the wrapper made for it takes over the reference.
- Every ``Object`` wrapper owns exactly one reference, released once by ``__del__`` (or handed
  over by ``_take_handle``).
"""

from __future__ import annotations

import builtins
import ctypes
import operator
import os
import sys
import threading
import traceback
import weakref
from struct import error as _struct_error
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Literal, TypeVar, overload

from . import _lib
from ._lib import ANY_FLOAT, ANY_INT, ANY_UINT, OBJECT_HEADER_SIZE

__all__ = [
    "Object",
    "Function",
    "Error",
    "DataType",
    "Device",
    "TypeIndex",
    "register_object",
    "ffi_call",
    "get_global_func",
]

_c_void_p = ctypes.c_void_p
_byref = ctypes.byref
_string_at = ctypes.string_at
_pack_int = ANY_INT.pack_into
_pack_float = ANY_FLOAT.pack_into
_unpack_int = ANY_INT.unpack_from
_unpack_float = ANY_FLOAT.unpack_from
_unpack_uint = ANY_UINT.unpack_from
_DecRef = _lib.ObjectDecRef
_IncRef = _lib.ObjectIncRef
_FunctionCall = _lib.FunctionCall
#: Offset of the character data inside a CPython ``bytes`` object (``PyBytesObject.ob_sval``).
_BYTES_DATA = bytes.__basicsize__ - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

# The compiled fast path (``_accel.c``), when it was built; TVMFFI_RUNTIME_PURE=1 turns it off.
_accel: Any = None
if os.environ.get("TVMFFI_RUNTIME_PURE", "") in ("", "0"):
    try:
        from . import _accel
    except ModuleNotFoundError:  # built without a C compiler: everything runs on ctypes
        _accel = None
    except ImportError as exc:  # built, but unusable here (another Python, say)
        import warnings

        warnings.warn(f"tvmffi_runtime: compiled fast path unusable ({exc}); running on ctypes", stacklevel=2)
        _accel = None


def accelerated() -> bool:
    """Whether the compiled fast path is in use (False: pure ctypes)."""
    return _accel is not None


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


_SMALL_STR_PACK = __import__("struct").Struct("=iI8s").pack_into


# =============================================================================================
# Objects and the type-index → class table
# =============================================================================================
class _PyObjectBase:
    """Holds the handle (``_h``) and type index (``_t``) and releases the reference on death.

    The compiled ``_accel.ObjectBase`` does the same in C (no Python-level ``__del__``).
    """

    __slots__ = ("_h", "_t")
    _h: int
    _t: int

    def __del__(self) -> None:
        h = getattr(self, "_h", 0)
        if h:
            self._h = 0
            try:
                _DecRef(h)
            except Exception:  # interpreter shutdown: the library may already be gone
                pass


if TYPE_CHECKING:
    _ObjectBase = _PyObjectBase
else:
    _ObjectBase = _PyObjectBase if _accel is None else _accel.ObjectBase


class Object(_ObjectBase):
    """A reference-counted TVM FFI object. The wrapper owns exactly one reference.

    Equality and hashing are by identity of the underlying object (``same_as``); containers
    override equality with element-wise comparison.
    """

    __slots__ = ("__weakref__",)
    #: Registered type key of this class (``ffi.Object`` for the root).
    _type_key: ClassVar[str] = "ffi.Object"
    _type_index: ClassVar[int] = TypeIndex.OBJECT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        init = _ffi_init_of(type(self))
        if init is None:
            raise TypeError(
                f"{type(self).__name__} ({type(self)._type_key}) cannot be constructed from Python:"
                " the type registers no __ffi_init__"
            )
        if kwargs:
            args = (*args, _kwargs_marker(), *[x for kv in kwargs.items() for x in kv])
        made = init(*args)
        if not isinstance(made, Object):
            raise TypeError(f"{type(self)._type_key}.__ffi_init__ returned {type(made).__name__}")
        self._h, self._t = made._h, made._t
        made._h = 0

    @property
    def type_index(self) -> int:
        """Runtime type index of the object."""
        return self._t

    @property
    def type_key(self) -> str:
        """Registered type key of the object (for example ``testing.TestIntPair``)."""
        return _type_key_of_index(self._t)

    @property
    def handle(self) -> int:
        """Address of the underlying ``TVMFFIObject`` (borrowed; valid while ``self`` lives)."""
        return self._h

    def same_as(self, other: object) -> bool:
        """Whether both wrappers refer to the same native object."""
        return isinstance(other, Object) and other._h == self._h

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Object) and other._h == self._h

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._h)

    def __repr__(self) -> str:
        try:
            return str(_repr_print()(self))
        except Exception:
            return f"<{self.type_key} at 0x{self._h:x}>"

    def __tvm_ffi_object__(self) -> Any:
        """This object as the ``tvm_ffi`` package's wrapper of the same handle (the protocol
        ``tvm_ffi`` converts arguments by); imports ``tvm_ffi`` on first use."""
        from .interop import to_tvm_ffi

        return to_tvm_ffi(self)

    def __copy__(self) -> Any:
        from .copying import shallow_copy

        return shallow_copy(self)

    def __deepcopy__(self, memo: Any = None) -> Any:
        from .copying import deep_copy

        return deep_copy(self)

    def __reduce__(self) -> Any:
        from .copying import reduce_object

        return reduce_object(self)


_new = object.__new__
_TYPE_CLASSES: dict[int, type] = {}
_CLASS_CACHE: dict[int, type] = {}
# Set by tvmffi_runtime.gen: imports the module of a generated class on first sight of its type.
_LAZY_CLASS_LOADER: list[Callable[[str], bool] | None] = [None]
_TypeT = TypeVar("_TypeT", bound=type)


def register_object(type_key: str) -> Callable[[_TypeT], _TypeT]:
    """Class decorator: wrap objects of ``type_key`` (and its unregistered subtypes) in the class."""

    def decorate(cls: _TypeT) -> _TypeT:
        index = type_key_to_index(type_key)
        if index is None:
            raise TypeError(f"register_object: type key {type_key!r} is not registered in TVM FFI")
        cls._type_key = type_key  # type: ignore[attr-defined]
        cls._type_index = index  # type: ignore[attr-defined]
        _TYPE_CLASSES[index] = cls
        _CLASS_CACHE.clear()
        return cls

    return decorate


def type_key_to_index(type_key: str) -> int | None:
    """Type index of a registered type key, or None."""
    data = type_key.encode()
    out = ctypes.c_int32()
    if _lib.TypeKeyToIndex(_byref(_lib.byte_array(data)), _byref(out)) != 0:
        _fetch_error()  # clear the raised error
        return None
    return out.value


def _type_key_of_index(index: int) -> str:
    info = _lib.GetTypeInfo(index)
    if not info:
        return f"<type index {index}>"
    return _lib.read_byte_array(info.contents.type_key).decode()


def class_for_index(index: int) -> type:
    """The most-derived registered Python class for a type index (itself or nearest ancestor).

    A generated package registers its classes lazily: on a miss, the loader it installed imports
    the module that defines the class of the type (or of its nearest ancestor that has one).
    """
    cls = _CLASS_CACHE.get(index)
    if cls is not None:
        return cls
    chain = [index]
    info = _lib.GetTypeInfo(index)
    if info:
        ancestors = info.contents.type_ancestors
        chain += [ancestors[level].contents.type_index for level in range(info.contents.type_depth - 1, -1, -1)]
    loader = _LAZY_CLASS_LOADER[0]
    found: type = Object
    for candidate in chain:
        hit = _TYPE_CLASSES.get(candidate)
        if hit is None and loader is not None and loader(_type_key_of_index(candidate)):
            hit = _TYPE_CLASSES.get(candidate)
        if hit is not None:
            found = hit
            break
    _CLASS_CACHE[index] = found
    return found


def _wrap(handle: int, index: int) -> Any:
    """Wrap an owned object handle in its class (takes over the reference)."""
    cls = _CLASS_CACHE.get(index) or class_for_index(index)
    conv = _OBJECT_RETURN.get(index)
    if conv is not None:
        return conv(handle)
    obj: Any = _new(cls)
    obj._h = handle
    obj._t = index
    return obj


# Objects that come back as plain Python values (str, bytes, int): index -> handle -> value.
_OBJECT_RETURN: dict[int, Callable[[int], Any]] = {}


def _str_from_handle(handle: int) -> str:
    data, size = _lib.TVMFFIByteArray.from_address(handle + OBJECT_HEADER_SIZE).data, 0
    ba = _lib.TVMFFIByteArray.from_address(handle + OBJECT_HEADER_SIZE)
    value = _string_at(ba.data, ba.size).decode("utf-8", "surrogateescape") if ba.size else ""
    del data, size
    _DecRef(handle)
    return value


def _bytes_from_handle(handle: int) -> bytes:
    ba = _lib.TVMFFIByteArray.from_address(handle + OBJECT_HEADER_SIZE)
    value = _string_at(ba.data, ba.size) if ba.size else b""
    _DecRef(handle)
    return value


def _bigint_from_handle(handle: int) -> int:
    view = _lib.TVMFFIAny(TypeIndex.BIG_INT, 0)
    view.v_ptr = handle
    ba = _lib.BigIntGetContentByteArray(_byref(view))
    raw = _string_at(ba.data, ba.size) if ba.size else b""
    _DecRef(handle)
    return int.from_bytes(raw, "little", signed=True) if raw else 0


def _error_from_handle(handle: int) -> BaseException:
    return _exception_from_error_handle(handle, raised=False)


_OBJECT_RETURN[TypeIndex.STR] = _str_from_handle
_OBJECT_RETURN[TypeIndex.BYTES] = _bytes_from_handle
_OBJECT_RETURN[TypeIndex.BIG_INT] = _bigint_from_handle
_OBJECT_RETURN[TypeIndex.ERROR] = _error_from_handle


# =============================================================================================
# Small value types
# =============================================================================================
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

    def __reduce__(self) -> Any:
        return (DataType, (str(self),))


_DTYPE_CACHE: dict[int, DataType] = {}


def _dtype_from_packed(packed: int) -> DataType:
    cached = _DTYPE_CACHE.get(packed)
    if cached is not None:
        return cached
    dl = _lib.DLDataType(packed & 0xFF, (packed >> 8) & 0xFF, (packed >> 16) & 0xFFFF)
    out = _lib.TVMFFIAny()
    _check(_lib.DataTypeToString(_byref(dl), _byref(out)))
    text = _owned_any_to_py(out)
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
        return (
            isinstance(other, Device)
            and other.device_type == self.device_type
            and other.index == self.index
        )

    def __hash__(self) -> int:
        return hash((self.device_type, self.index))

    def __repr__(self) -> str:
        return f"Device({self.type_name!r}, {self.index})"

    def __dlpack_device__(self) -> tuple[int, int]:
        return (self.device_type, self.index)


# =============================================================================================
# Errors
# =============================================================================================
class Error(Exception):
    """An error of a kind Python has no class for, or one created to raise into native code.

    ``Error(kind, message, backtrace)``; native errors of a kind that names a Python exception
    class (``ValueError``, ``KeyError``, ...) are raised as that class instead, with ``kind`` and
    ``backtrace`` attributes and the native backtrace as a note.
    """

    kind: str
    message: str
    backtrace: str

    def __init__(self, kind: str, message: str = "", backtrace: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.backtrace = backtrace

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"Error({self.kind!r}, {self.message!r})"


_ERROR_KINDS: dict[str, type[BaseException]] = {}
_ERROR_SUBCLASSES: dict[str, type[Error]] = {}


def register_error(kind: str, cls: type[BaseException]) -> None:
    """Raise native errors of ``kind`` as ``cls`` (and send ``cls`` back as ``kind``)."""
    _ERROR_KINDS[kind] = cls


for _name in (
    "ValueError", "TypeError", "IndexError", "KeyError", "AttributeError", "RuntimeError",
    "NotImplementedError", "AssertionError", "MemoryError", "KeyboardInterrupt", "OSError",
    "ZeroDivisionError", "OverflowError", "StopIteration", "ImportError", "LookupError",
    "ArithmeticError", "RecursionError", "FileNotFoundError", "PermissionError", "TimeoutError",
    "UnicodeError", "SystemExit", "BufferError", "EOFError", "NameError",
):  # fmt: skip
    register_error(_name, getattr(builtins, _name))
register_error("InternalError", RuntimeError)


def _error_kind_of_class(cls: type[BaseException]) -> str:
    """The native kind a Python exception class crosses as: the bare name of a builtin class
    (``ValueError``), else the qualified name (``package.module.QualName``), so that classes of
    the same name in different modules stay apart."""
    if cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


def _error_class(kind: str) -> type[BaseException]:
    cls = _ERROR_KINDS.get(kind)
    if cls is not None:
        return cls
    sub = _ERROR_SUBCLASSES.get(kind)
    if sub is None:
        name = kind if kind.isidentifier() else "NativeError"
        sub = type(name, (Error,), {"__module__": "tvmffi_runtime"})
        _ERROR_SUBCLASSES[kind] = sub
    return sub


def _make_exception(kind: str, message: str, backtrace: str) -> BaseException:
    cls = _error_class(kind)
    exc: BaseException
    if issubclass(cls, Error):
        exc = cls(kind, message, backtrace)
    else:
        try:
            exc = cls(message)
        except Exception:
            exc = Error(kind, message, backtrace)
        try:
            exc.kind = kind  # type: ignore[attr-defined]
            exc.backtrace = backtrace  # type: ignore[attr-defined]
        except AttributeError:
            pass
    if backtrace and hasattr(exc, "add_note"):
        exc.add_note("native backtrace:\n" + backtrace.rstrip())
    return exc


# Python exceptions raised into native code, kept by error handle so the same exception object
# comes back out if the error returns to Python unchanged. We keep one reference to each handle.
_PY_ERRORS: dict[int, BaseException] = {}
_PY_ERRORS_LIMIT = 256
_py_errors_lock = threading.Lock()


def _error_cell(handle: int) -> tuple[str, str, str]:
    cell = _lib.TVMFFIErrorCell.from_address(handle + OBJECT_HEADER_SIZE)
    return _decode_byte_array(cell.kind), _decode_byte_array(cell.message), _decode_byte_array(cell.backtrace)


def _decode_byte_array(ba: _lib.TVMFFIByteArray) -> str:
    return _lib.read_byte_array(ba).decode("utf-8", "replace")


def _exception_from_error_handle(handle: int, raised: bool) -> BaseException:
    """Turn an owned Error handle into a Python exception (releases the handle)."""
    with _py_errors_lock:
        original = _PY_ERRORS.pop(handle, None)
    if original is not None:
        _DecRef(handle)  # the reference _PY_ERRORS kept
        _DecRef(handle)
        return original
    kind, message, backtrace = _error_cell(handle)
    _DecRef(handle)
    if raised and kind == "EnvErrorAlreadySet":
        # Normally unwrapped by _python_error_set_in_native; this is the fallback.
        return KeyboardInterrupt()
    return _make_exception(kind, message, backtrace)


def _python_error_set_in_native(exc: SystemError) -> BaseException:
    """The Python exception native code left set on this thread (the signal hook's).

    ``PyErr_CheckSignals`` runs the SIGINT handler inside the native call and leaves
    ``KeyboardInterrupt`` set; ctypes then returns a result with an exception set, which
    CPython reports as a SystemError whose ``__cause__`` is that exception. The native side has
    raised ``EnvErrorAlreadySet``: clear it and hand back the original exception.
    """
    cause = exc.__cause__
    if cause is None:
        return exc
    out = _c_void_p()
    _lib.ErrorMoveFromRaised(_byref(out))
    if out.value:
        _DecRef(out.value)
    return cause


def _fetch_error() -> BaseException:
    out = _c_void_p()
    _lib.ErrorMoveFromRaised(_byref(out))
    if not out.value:
        return RuntimeError("TVM FFI call failed without raising an error")
    return _exception_from_error_handle(out.value, raised=True)


def _check(rc: int) -> None:
    if rc != 0:
        raise _fetch_error()


def _new_error_handle(exc: BaseException) -> int:
    """Create a native Error object (owned handle) describing a Python exception."""
    if isinstance(exc, Error):
        kind, message, bt = exc.kind, exc.message, exc.backtrace
    else:
        cls = type(exc)
        own_kind = _error_kind_of_class(cls)
        registered = _ERROR_KINDS.get(own_kind)
        # Register the class under its own kind; replace only a class of the same qualified name
        # (a module reloaded, a class defined anew), never one registered under it explicitly.
        if registered is not cls and (registered is None or _error_kind_of_class(registered) == own_kind):
            register_error(own_kind, cls)
        given = getattr(exc, "kind", None)  # set on exceptions that came from native code
        kind = given if isinstance(given, str) and given else own_kind
        if isinstance(exc, KeyError) and len(exc.args) == 1:
            message = str(exc.args[0])
        else:
            message = str(exc)
        bt = ""
    if exc.__traceback__ is not None:
        bt = "".join(traceback.format_tb(exc.__traceback__)) + bt
    parts = [s.encode("utf-8", "replace") for s in (kind, message, bt)]
    out = _c_void_p()
    arrays = [_lib.byte_array(p) for p in parts]
    _check(_lib.ErrorCreate(_byref(arrays[0]), _byref(arrays[1]), _byref(arrays[2]), _byref(out)))
    assert out.value
    return out.value


def _raise_into_native(exc: BaseException) -> None:
    """Set ``exc`` as the raised error of this thread (inside a callback about to return -1)."""
    handle = _new_error_handle(exc)
    _lib.ErrorSetRaised(handle)  # takes its own reference
    with _py_errors_lock:
        _PY_ERRORS[handle] = exc  # keeps our reference
        if len(_PY_ERRORS) > _PY_ERRORS_LIMIT:
            oldest = next(iter(_PY_ERRORS))
            _PY_ERRORS.pop(oldest)
            _DecRef(oldest)


# =============================================================================================
# Packing Python values into TVMFFIAny views
# =============================================================================================
# A packer writes one Any at ``off`` in ``buf``; it may append owned handles to ``temps``
# (released after the call) and Python objects to ``keep`` (kept alive during the call).
Packer = Callable[[Any, int, Any, list[Any]], None]


def _pack_none(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_int(buf, off, 0, 0, 0)


def _pack_bool(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_int(buf, off, 2, 0, 1 if v else 0)


def _pack_pyint(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    if _INT64_MIN <= v <= _INT64_MAX:
        _pack_int(buf, off, 1, 0, v)
    else:
        h = _bigint_handle(int(v))
        temps.append(h)
        _pack_uint(buf, off, TypeIndex.BIG_INT, 0, h)


def _pack_float_(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_float(buf, off, 3, 0, v)


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


def _pack_owned_handle(buf: Any, off: int, h: int, temps: list[Any]) -> None:
    temps.append(h)
    _pack_uint(buf, off, _read_type_index(h), 0, h)


def _pack_sequence(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_owned_handle(buf, off, _new_container("ffi.Array", v), temps)


def _pack_mapping(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    flat = [x for kv in v.items() for x in kv]
    _pack_owned_handle(buf, off, _new_container("ffi.Map", flat), temps)


def _pack_callable(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_owned_handle(buf, off, _function_handle_from_callable(v, packed=False), temps)


def _pack_exception(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _pack_owned_handle(buf, off, _new_error_handle(v), temps)


def _pack_dlpack(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    from .tensor import tensor_handle_from_dlpack

    _pack_owned_handle(buf, off, tensor_handle_from_dlpack(v), temps)


_pack_uint = ANY_UINT.pack_into


class ReleasedObjectError(ValueError):
    """An ``Object`` wrapper that no longer holds a reference (it was moved with ``move``, or
    released) was given where a value is sent to native code."""


def _released_object_error(v: Any) -> ReleasedObjectError:
    return ReleasedObjectError(
        f"the {type(v).__name__} object was moved or released (its wrapper holds no reference)"
    )


def _read_type_index(handle: int) -> int:
    return ctypes.c_int32.from_address(handle + 8).value


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
}


def _resolve_packer(t: type) -> Packer | None:
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


def _number_packer(t: type) -> Packer | None:
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
    _pack_float(buf, off, 3, 0, float(v))


def _pack_chandle(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    h = v.__chandle__()  # borrowed: ``v`` is an argument, alive for the whole call
    if h:
        _pack_uint(buf, off, _read_type_index(h), 0, h)
    else:
        _pack_int(buf, off, 0, 0, 0)


def _pack_ffi_object_protocol(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    obj = v.__tvm_ffi_object__()  # a tvm_ffi object (or one of ours): kept alive for the call
    temps.append(_KeepAlive(obj))
    if isinstance(obj, Object):
        _pack_object(buf, off, obj, temps)
    elif hasattr(type(obj), "__chandle__"):
        _pack_chandle(buf, off, obj, temps)
    else:
        raise TypeError(f"__tvm_ffi_object__ of {type(v).__name__} returned {type(obj).__name__}, not an object")


class _KeepAlive:
    """Wrapper that marks a temps entry as a Python object to keep alive, not a handle."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj


def _is_sequence(t: type) -> bool:
    from collections.abc import Sequence

    return issubclass(t, Sequence) and not issubclass(t, (str, bytes, bytearray))


def _is_mapping(t: type) -> bool:
    from collections.abc import Mapping

    return issubclass(t, Mapping)


def pack_value(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    """Pack any supported Python value as a TVMFFIAny view at ``off`` in ``buf``."""
    p = _PACKERS.get(type(v)) or _resolve_packer(type(v))
    if p is None:
        raise TypeError(f"cannot convert a value of type {type(v).__name__} to a TVM FFI value")
    p(buf, off, v, temps)


def release_temps(temps: list[Any]) -> None:
    """Release what packers put on ``temps``: owned handles (ints); other entries just drop."""
    for t in temps:
        if type(t) is int:
            _DecRef(t)
    temps.clear()


# =============================================================================================
# Unpacking TVMFFIAny into Python values
# =============================================================================================
def _owned_any_to_py(any_: _lib.TVMFFIAny) -> Any:
    """Convert an owned Any struct (takes over its reference)."""
    return owned_from_buffer(any_, 0)


def owned_from_buffer(buf: Any, off: int) -> Any:
    """Convert the owned Any at ``off`` of ``buf`` into a Python value (takes over its reference)."""
    tindex, small_len, v = _unpack_int(buf, off)
    if tindex == 1:
        return v
    if tindex >= 64:
        return _wrap(v & 0xFFFFFFFFFFFFFFFF, tindex)
    return _pod_from(buf, off, tindex, small_len, v)


def view_from_buffer(buf: Any, off: int) -> Any:
    """Convert a borrowed Any view (callback arguments, container items) into a Python value."""
    tindex, small_len, v = _unpack_int(buf, off)
    if tindex == 1:
        return v
    if tindex >= 64:
        h = v & 0xFFFFFFFFFFFFFFFF
        _IncRef(h)
        return _wrap(h, tindex)
    if tindex == TypeIndex.RAW_STR:
        return ctypes.string_at(v).decode("utf-8", "surrogateescape")
    if tindex == TypeIndex.BYTE_ARRAY_PTR:
        return _lib.read_byte_array(_lib.TVMFFIByteArray.from_address(v))
    if tindex == TypeIndex.OBJECT_RVALUE_REF:
        h = ctypes.c_void_p.from_address(v).value or 0
        _IncRef(h)
        return _wrap(h, _read_type_index(h))
    return _pod_from(buf, off, tindex, small_len, v)


def _pod_from(buf: Any, off: int, tindex: int, small_len: int, v: int) -> Any:
    if tindex == 0:
        return None
    if tindex == 2:
        return v != 0
    if tindex == 3:
        return _unpack_float(buf, off)[2]
    if tindex == TypeIndex.SMALL_STR:
        return bytes(buf[off + 8 : off + 8 + small_len]).decode("utf-8", "surrogateescape")
    if tindex == TypeIndex.SMALL_BYTES:
        return bytes(buf[off + 8 : off + 8 + small_len])
    if tindex == TypeIndex.DATA_TYPE:
        return _dtype_from_packed(v & 0xFFFFFFFF)
    if tindex == TypeIndex.DEVICE:
        u = v & 0xFFFFFFFFFFFFFFFF
        dev = _new(Device)
        dev.device_type = u & 0xFFFFFFFF
        dev.index = ctypes.c_int32(u >> 32).value
        return dev
    if tindex == TypeIndex.OPAQUE_PTR:
        return _c_void_p(v & 0xFFFFFFFFFFFFFFFF) if v else None
    if tindex == TypeIndex.UNCHANGED:
        from .structural import UNCHANGED

        return UNCHANGED
    if tindex == TypeIndex.DL_TENSOR_PTR:
        return _c_void_p(v & 0xFFFFFFFFFFFFFFFF)
    raise TypeError(f"cannot convert a TVM FFI value of type index {tindex} to Python")


# =============================================================================================
# Calling
# =============================================================================================
class _CallBuffers:
    """Reusable argument and result storage (and a temps list) for one in-flight call."""

    __slots__ = ("args", "result", "result_ptr", "cap", "temps")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.args = (ctypes.c_char * (16 * cap))()
        self.result = _lib.TVMFFIAny()
        # A structure passed without argtypes would go by value: pass this pointer instead.
        self.result_ptr = ctypes.pointer(self.result)
        self.temps: list[Any] = []


# A free list of buffers: pop/append are atomic under the GIL, and a re-entrant call (a callback
# calling back into native code) simply takes another buffer.
_free_buffers: list[_CallBuffers] = [_CallBuffers(8) for _ in range(4)]


def _callee_name(name: Any) -> str:
    """How argument errors name the callee: a string, or the Function being called."""
    if isinstance(name, Function):
        return getattr(name, "_name", None) or f"<function at 0x{name._h:x}>"
    return str(name) if name else "function"


def _pack_error(name: Any, value: Any, i: int, exc: BaseException) -> BaseException:
    """The exception for argument ``i`` (``value``) that its packer refused with ``exc``."""
    if not isinstance(exc, (TypeError, ValueError, OverflowError, _struct_error)):
        return exc  # not a conversion problem: it propagates as it is
    if isinstance(exc, ReleasedObjectError):
        released = ReleasedObjectError(f"{_callee_name(name)}: argument {i}: {exc}")
        released.ffi_argument = i  # type: ignore[attr-defined]
        return released
    err = TypeError(
        f"{_callee_name(name)}: argument {i} has type {type(value).__name__},"
        " which cannot be converted to a TVM FFI value" + (f" ({exc})" if str(exc) else "")
    )
    if str(exc):
        err.__cause__ = exc
    err.__suppress_context__ = True
    err.ffi_argument = i  # type: ignore[attr-defined]  # which one, for callers that name it better
    return err


def _ffi_call_py(handle: Any, args: tuple[Any, ...] | list[Any], name: Any = "") -> Any:
    """Call the Function at ``handle`` (a ``c_void_p``) with Python arguments.

    ``name`` (a string, or the Function itself) is only used to word argument errors.
    """
    if type(args) is not tuple:
        args = tuple(args)  # a snapshot: packing may run Python code that changes the list
    n = len(args)
    bufs = _free_buffers.pop() if _free_buffers else _CallBuffers(max(8, n))
    if bufs.cap < n:
        bufs = _CallBuffers(n)
    buf = bufs.args
    temps = bufs.temps
    try:
        off = 0
        try:
            for a in args:
                t = type(a)
                # the commonest kinds inline (no table lookup, no call); the rest by table
                if t is int and _INT64_MIN <= a <= _INT64_MAX:
                    _pack_int(buf, off, 1, 0, a)
                elif t is float:
                    _pack_float(buf, off, 3, 0, a)
                else:
                    p = _PACKERS.get(t) or _resolve_packer(t)
                    if p is None:
                        raise TypeError()  # the message below says it all
                    p(buf, off, a, temps)
                off += 16
        except (TypeError, ValueError, OverflowError, _struct_error) as exc:
            raise _pack_error(name, args[off // 16], off // 16, exc)  # noqa: B904 (cause set there)
        res = bufs.result
        res.type_index = 0
        try:
            rc = _FunctionCall(handle, buf, n, bufs.result_ptr)
        except SystemError as exc:
            raise _python_error_set_in_native(exc) from None
        if rc:
            raise _fetch_error()
        tindex = res.type_index
        if tindex == 1:
            return res.v_int64
        if tindex >= 64:
            return _wrap(res.v_uint64, tindex)
        if tindex == 0:
            return None
        return _pod_from(bytes(res), 0, tindex, res.small_len, res.v_int64)
    finally:
        if temps:
            release_temps(temps)
        _free_buffers.append(bufs)


class Function(Object):
    """A TVM FFI function object: call it like a Python function."""

    # _name (global name or callable's qualname, when known) only words argument errors.
    __slots__ = ("_c", "_name")
    _type_key: ClassVar[str] = "ffi.Function"
    _type_index: ClassVar[int] = TypeIndex.FUNCTION
    _c: ctypes.c_void_p
    _name: str

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            "Function cannot be constructed directly; use Function.get_global, "
            "Function.from_typed or Function.from_packed"
        )

    def __call__(self, *args: Any) -> Any:
        if _accel is not None:
            return _accel.call(self._h, args, self)
        try:
            c = self._c
        except AttributeError:
            c = self._c = _c_void_p(self._h)
        return ffi_call(c, args, self)

    @property
    def c_handle(self) -> ctypes.c_void_p:
        """The handle as a ``c_void_p``, for direct ``TVMFFIFunctionCall`` use."""
        try:
            return self._c
        except AttributeError:
            self._c = _c_void_p(self._h)
            return self._c

    @overload
    @staticmethod
    def get_global(name: str, allow_missing: Literal[False] = False) -> Function: ...
    @overload
    @staticmethod
    def get_global(name: str, allow_missing: bool) -> Function | None: ...
    @staticmethod
    def get_global(name: str, allow_missing: bool = False) -> Function | None:
        """The global function ``name``; KeyError if missing (None with ``allow_missing``)."""
        return get_global_func(name, allow_missing)

    @staticmethod
    def register_global(name: str, f: Callable[..., Any] | Function, override: bool = False) -> Function:
        """Register a Python callable (or a Function) as global function ``name``."""
        func = f if isinstance(f, Function) else Function.from_typed(f)
        data = name.encode()
        rc = _lib.FunctionSetGlobal(_byref(_lib.byte_array(data)), func._h, 1 if override else 0)
        _check(rc)
        return func

    @staticmethod
    def from_packed(f: Callable[[list[Any]], Any]) -> Function:
        """A Function that passes its converted arguments to ``f`` as one list."""
        return _named(_callback_function(f, _MODE_PACKED), f)

    @staticmethod
    def from_typed(f: Callable[..., Any]) -> Function:
        """A Function that checks and converts its arguments from ``f``'s annotations."""
        from ._typed import typed_adapter

        return _named(_callback_function(typed_adapter(f), _MODE_PLAIN), f)

    @staticmethod
    def from_callable(f: Callable[..., Any]) -> Function:
        """A Function that calls ``f`` with converted arguments, without checking them."""
        return _named(_callback_function(f, _MODE_PLAIN), f)

    @staticmethod
    def from_type_key_method(type_key: str, name: str) -> Function:
        """The reflected method ``name`` of the type ``type_key`` (``__ffi_init__`` included)."""
        index = type_key_to_index(type_key)
        if index is None:
            raise KeyError(f"type key {type_key!r} is not registered")
        return Function.from_type_method(index, name)

    @staticmethod
    def from_type_method(type_index: int, name: str) -> Function:
        """The reflected method ``name`` of the type with ``type_index``."""
        f = type_method(type_index, name)
        if f is None:
            raise AttributeError(
                f"type {_type_key_of_index(type_index)!r} (index {type_index}) has no method {name!r}"
            )
        return f


_wrap_function_return = Function


def _named(func: Function, f: Any) -> Function:
    """``func`` labelled with the Python callable's name (for argument errors)."""
    if not isinstance(f, Function):
        func._name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)
    return func


@overload
def get_global_func(name: str, allow_missing: Literal[False] = False) -> Function: ...
@overload
def get_global_func(name: str, allow_missing: bool) -> Function | None: ...
def get_global_func(name: str, allow_missing: bool = False) -> Function | None:
    """The global function ``name``; KeyError if missing (None with ``allow_missing``)."""
    data = name.encode()
    out = _c_void_p()
    _check(_lib.FunctionGetGlobal(_byref(_lib.byte_array(data)), _byref(out)))
    if not out.value:
        if allow_missing:
            return None
        raise KeyError(f"global function {name!r} is not registered")
    f = _wrap(out.value, TypeIndex.FUNCTION)
    f._name = name
    return f  # type: ignore[no-any-return]


def type_method(type_index: int, name: str) -> Function | None:
    """The reflected method ``name`` on the type or its ancestors, or None.

    ``__ffi_init__`` is a constructor, so it is never inherited: it is looked up on the type
    itself, first among its methods, then in the ``__ffi_init__`` type attribute column (where
    the auto-generated initialiser of a type without an explicit ``refl::init`` lives).
    """
    is_init = name == "__ffi_init__"
    info = _lib.GetTypeInfo(type_index)
    while info:
        ti = info.contents
        for i in range(ti.num_methods):
            m = ti.methods[i]
            if _lib.read_byte_array(m.name).decode() == name:
                h = m.method.v_ptr
                _IncRef(h)
                method = _wrap(h, m.method.type_index)
                if isinstance(method, Function):
                    method._name = f"{_lib.read_byte_array(ti.type_key).decode()}.{name}"
                return method  # type: ignore[no-any-return]
        if is_init or ti.type_depth == 0:
            break
        info = ti.type_ancestors[ti.type_depth - 1]
    if is_init:
        found = type_attr_value(type_index, name)
        if not isinstance(found, Function):
            return None
        found._name = f"{_type_key_of_index(type_index)}.{name}"
        return found
    return None


def type_attr_value(type_index: int, name: str) -> Any:
    """Value of the type attribute ``name`` for exactly ``type_index`` (not inherited), or None."""
    data = name.encode()
    column = _lib.GetTypeAttrColumn(_byref(_lib.byte_array(data)))
    if not column:
        return None
    col = column.contents
    slot = type_index - col.begin_index
    if slot < 0 or slot >= col.size or not col.data:
        return None
    raw = _string_at(ctypes.addressof(col.data[slot]), 16)
    return view_from_buffer(raw, 0)


_INIT_CACHE: dict[type, Function | None] = {}


def _ffi_init_of(cls: type) -> Function | None:
    try:
        return _INIT_CACHE[cls]
    except KeyError:
        pass
    init = type_method(getattr(cls, "_type_index", TypeIndex.OBJECT), "__ffi_init__")
    _INIT_CACHE[cls] = init
    return init


_KWARGS: list[Any] = []


def _kwargs_marker() -> Any:
    if not _KWARGS:
        f = get_global_func("ffi.GetKwargsObject")
        assert f is not None
        _KWARGS.append(f())
    return _KWARGS[0]


_REPR: list[Function] = []


def _repr_print() -> Function:
    if not _REPR:
        f = get_global_func("ffi.ReprPrint")
        assert f is not None
        _REPR.append(f)
    return _REPR[0]


_CONTAINER_CTORS: dict[str, Function] = {}


def _container_ctor(ctor: str) -> Function:
    """The library's constructor function ``ctor`` (``ffi.Array``, ``ffi.Map``, ...), cached."""
    f = _CONTAINER_CTORS.get(ctor)
    if f is None:
        g = get_global_func(ctor)
        assert g is not None
        f = _CONTAINER_CTORS[ctor] = g
    return f


def _new_container(ctor: str, items: Any) -> int:
    """Owned handle of a new Array/Map/List/Dict built by the library's constructor function."""
    made = ffi_call(_container_ctor(ctor).c_handle, list(items), ctor)
    h = made._h
    made._h = 0
    return h  # type: ignore[no-any-return]


def _bigint_handle(value: int) -> int:
    nbytes = max(8, ((value.bit_length() + 1 + 63) // 64) * 8)
    raw = value.to_bytes(nbytes, "little", signed=True)
    out = _lib.TVMFFIAny()
    _check(_lib.BigIntFromByteArray(_byref(_lib.byte_array(raw)), _byref(out)))
    if out.type_index < 64:  # normalised down to a plain int: box nothing, pass as int
        raise OverflowError("unexpected small BigInt")
    return out.v_ptr  # type: ignore[no-any-return]


# =============================================================================================
# Python callables as Functions
# =============================================================================================
_MODE_PLAIN, _MODE_PACKED, _MODE_WALK = 0, 1, 2


class _CallbackEntry:
    """A callable that native Functions call (pure-ctypes path), by key in ``_CALLBACKS``.

    ``fn`` is None while the Python wrapper that made the Function lives: the wrapper holds the
    callable (so the GC sees the edge) and ``wrapper`` reaches it. When the wrapper dies while
    native code still holds the Function, the entry takes the callable over (``fn``).
    """

    __slots__ = ("fn", "packed", "wrapper")

    def __init__(self, fn: Callable[..., Any] | None, packed: bool) -> None:
        self.fn = fn
        self.packed = packed
        self.wrapper: Callable[[], Any] | None = None

    def callable(self) -> Callable[..., Any]:
        fn = self.fn
        if fn is None:
            w = self.wrapper() if self.wrapper is not None else None
            fn = getattr(w, "_cb", None)
            if fn is None:
                raise RuntimeError("the Python callable of this Function has been released")
        return fn


_CALLBACKS: dict[int, _CallbackEntry] = {}
_callback_ids = iter(range(1, 1 << 62))
_callbacks_lock = threading.Lock()


def live_callbacks() -> int:
    """How many native Functions made from Python callables are alive (leak checks)."""
    return len(_CALLBACKS) if _accel is None else int(_accel.live_callbacks())


class _CallbackFunction(Function):
    """Pure-ctypes path: a Function made from a Python callable by this process, holding the
    callable itself (so the GC sees a cycle through it). When the wrapper dies while native code
    still holds the Function (or after its handle was moved to native code), the callback entry
    takes the callable over. The compiled path does the same in C (``ObjectBase`` reports the
    callable to the GC while the wrapper is the Function's only owner)."""

    __slots__ = ("_cb", "_cbr")
    _cb: Callable[..., Any]
    _cbr: _CallbackEntry

    def __del__(self) -> None:
        h = getattr(self, "_h", 0)
        entry = getattr(self, "_cbr", None)
        try:
            # h == 0: the handle was moved to native code, which now owns the Function
            if entry is not None and (not h or _ref_counts(h)[1] > 1):
                entry.fn = self._cb
        except Exception:  # interpreter shutdown
            return
        self._h = 0
        if h:
            _DecRef(h)


def _ref_counts(handle: int) -> tuple[int, int]:
    """(weak, strong) reference counts of a native object (``combined_ref_count``)."""
    combined = ctypes.c_uint64.from_address(handle).value
    return combined >> 32, combined & 0xFFFFFFFF


def _callback_function(f: Callable[..., Any], mode: int) -> Function:
    """A Function wrapper around a new native Function that calls ``f``."""
    if isinstance(f, Function):
        return f
    if not callable(f):
        raise TypeError(f"{f!r} is not callable")
    if _accel is not None:
        return _accel.callback_function(Function, f, mode)  # type: ignore[no-any-return]
    w: _CallbackFunction = _new(_CallbackFunction)
    key, w._cbr = _new_callback_entry(None, mode == _MODE_PACKED)
    w._cb = f
    w._h = _create_function(key)
    w._t = TypeIndex.FUNCTION
    w._cbr.wrapper = weakref.ref(w)
    return w


def _new_callback_entry(fn: Callable[..., Any] | None, packed: bool) -> tuple[int, _CallbackEntry]:
    entry = _CallbackEntry(fn, packed)
    with _callbacks_lock:
        key = next(_callback_ids)
        _CALLBACKS[key] = entry
    return key, entry


def _create_function(key: int) -> int:
    out = _c_void_p()
    rc = _lib.FunctionCreate(key, _SAFE_CALL_TRAMPOLINE, _DELETER_TRAMPOLINE, _byref(out))
    if rc != 0:
        _delete_callback(key)
        raise _fetch_error()
    return out.value  # type: ignore[return-value]


_OWNED_SCRATCH = threading.local()


def _py_to_owned_any(value: Any, out_addr: int) -> None:
    """Write ``value`` as an owned Any at ``out_addr`` (callback results).

    Plain values are written in place; objects get one reference for the receiver; everything
    else goes through a view and ``TVMFFIAnyViewToOwnedAny``.
    """
    t = type(value)
    if t is int and _INT64_MIN <= value <= _INT64_MAX:
        _pack_int(_out_view(out_addr), 0, 1, 0, value)
        return
    if value is None:
        _pack_int(_out_view(out_addr), 0, 0, 0, 0)
        return
    if t is float:
        _pack_float(_out_view(out_addr), 0, 3, 0, value)
        return
    if t is bool:
        _pack_int(_out_view(out_addr), 0, 2, 0, 1 if value else 0)
        return
    if isinstance(value, Object) and not isinstance(value, _KeepAlive):
        h = value._h
        if not h:
            raise _released_object_error(value)
        _IncRef(h)
        _pack_uint(_out_view(out_addr), 0, value._t, 0, h)
        return
    buf = (ctypes.c_char * 16)()
    temps: list[Any] = []
    try:
        pack_value(buf, 0, value, temps)
        _check(_lib.AnyViewToOwnedAny(ctypes.cast(buf, ctypes.POINTER(_lib.TVMFFIAny)), _lib.TVMFFIAny.from_address(out_addr)))
    finally:
        release_temps(temps)


_Any16 = ctypes.c_char * 16


def _out_view(addr: int) -> Any:
    return _Any16.from_address(addr)


def _safe_call(self_key: int, args_addr: int, nargs: int, result_addr: int) -> int:
    try:
        entry = _CALLBACKS[self_key]
        fn, packed = entry.callable(), entry.packed
        if nargs:
            raw = (ctypes.c_char * (16 * nargs)).from_address(args_addr)
            pyargs = [view_from_buffer(raw, 16 * i) for i in range(nargs)]
        else:
            pyargs = []
        value = fn(pyargs) if packed else fn(*pyargs)
        _py_to_owned_any(value, result_addr)
        return 0
    except BaseException as exc:  # noqa: BLE001 - every exception must cross as an error
        try:
            _raise_into_native(exc)
        except BaseException:
            _lib.LIB.TVMFFIErrorSetRaisedFromCStr(b"RuntimeError", b"error while converting a Python exception")
        return -1


def _delete_callback(self_key: int) -> None:
    try:
        with _callbacks_lock:
            _CALLBACKS.pop(self_key, None)
    except Exception:  # interpreter shutdown
        pass


_SAFE_CALL_TRAMPOLINE = _lib.SAFE_CALL(_safe_call)
_DELETER_TRAMPOLINE = _lib.DELETER(_delete_callback)


def _function_handle_from_callable(f: Callable[..., Any], packed: bool) -> int:
    """An owned handle of a new native Function calling ``f`` that owns ``f`` itself (for a
    callable passed straight to native code, with no wrapper to hold it)."""
    if isinstance(f, Function):
        _IncRef(f._h)
        return f._h
    if not callable(f):
        raise TypeError(f"{f!r} is not callable")
    if _accel is not None:
        return _accel.function_create(f, _MODE_PACKED if packed else _MODE_PLAIN)  # type: ignore[no-any-return]
    key, _ = _new_callback_entry(f, packed)
    return _create_function(key)


_TYPE_CLASSES[TypeIndex.OBJECT] = Object
_TYPE_CLASSES[TypeIndex.FUNCTION] = Function


# =============================================================================================
# The compiled fast path: the same conversions, with the general cases handed back to Python
# =============================================================================================
def _slow_pack_at(addr: int, value: Any, temps: list[Any]) -> None:
    p = _PACKERS.get(type(value)) or _resolve_packer(type(value))
    if p is None:
        raise TypeError()  # _pack_error words it
    p(_Any16.from_address(addr), 0, value, temps)


def _view_at(addr: int) -> Any:
    return view_from_buffer(_Any16.from_address(addr), 0)


def _owned_at(addr: int) -> Any:
    return owned_from_buffer(bytes(_Any16.from_address(addr)), 0)


#: structural.py installs how a walk handler's non-None result is written (value, address).
_WALK_RESULT: list[Callable[[Any, int], None]] = []


def _walk_result_at(value: Any, addr: int) -> None:
    _WALK_RESULT[0](value, addr)


def _init_accel() -> None:
    addresses = {
        name: ctypes.cast(getattr(_lib.LIB, name), _c_void_p).value
        for name in (
            "TVMFFIFunctionCall",
            "TVMFFIObjectIncRef",
            "TVMFFIObjectDecRef",
            "TVMFFIFunctionCreate",
            "TVMFFIErrorMoveFromRaised",
            "TVMFFIErrorSetRaisedFromCStr",
        )
    }
    _accel.init(
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
            "released_error": ReleasedObjectError,
            "array_ctor": lambda: _container_ctor("ffi.Array"),
        },
    )


if _accel is not None:
    _init_accel()
    ffi_call: Callable[..., Any] = _accel.call
else:
    ffi_call = _ffi_call_py


# =============================================================================================
# Environment hooks: signal checks and the GIL (TVMFFIEnvRegisterCAPI)
# =============================================================================================
def _register_env_capi() -> None:
    api = ctypes.pythonapi
    api.PyErr_CheckSignals.restype = ctypes.c_int
    hooks = {
        # The C function itself, not a Python callback: a pending SIGINT handler would run on
        # entry to a Python callback, before any try block, and ctypes would print the
        # KeyboardInterrupt as "ignored" and return an undefined value. ffi_call unwraps the
        # exception this leaves set (see _python_error_set_in_native).
        b"PyErr_CheckSignals": ctypes.cast(api.PyErr_CheckSignals, _c_void_p).value,
        b"PyGILState_Ensure": ctypes.cast(api.PyGILState_Ensure, _c_void_p).value,
        b"PyGILState_Release": ctypes.cast(api.PyGILState_Release, _c_void_p).value,
    }
    for name, addr in hooks.items():
        _check(_lib.EnvRegisterCAPI(name, addr))


_register_env_capi()
