"""Locate and load ``libtvm_ffi.so``; mirror the C structs of ``c_api.h``; load user libraries.

Everything that touches the dynamic loader lives here, so the rest of the runtime only sees a
loaded ``ctypes.CDLL`` and the struct mirrors.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._features import FeatureUnavailableError, feature_of, installed_release
from ._library_check import library_problem
from ._platform import CURRENT as _PLATFORM

if TYPE_CHECKING:
    from _ctypes import CFuncPtr

__all__ = [
    "LIB",
    "LIB_PATH",
    "ENV_LIBTVM_FFI",
    "LibraryLoadError",
    "TVMFFIAny",
    "TVMFFIByteArray",
    "load_library",
    "find_libtvm_ffi",
]

#: Environment variable that overrides where ``libtvm_ffi.so`` is loaded from.
ENV_LIBTVM_FFI = "TVMFFI_RUNTIME_LIBTVM_FFI"

_LIB_NAME = " or ".join(_PLATFORM.library_names("tvm_ffi"))  # libtvm_ffi.so on Linux


class LibraryLoadError(ImportError):
    """A shared library could not be loaded; the message names the path and the loader's reason."""


def _already_loaded() -> str | None:
    """Path of a ``libtvm_ffi`` already loaded into this process (for example by ``tvm_ffi``):
    from /proc/self/maps, dyld's image list or GetModuleFileNameW (``_platform``)."""
    try:
        loaded = _PLATFORM.loaded_paths("tvm_ffi")
    except OSError:
        return None
    return loaded[0] if loaded else None


def find_libtvm_ffi() -> str:
    """Return the path of ``libtvm_ffi.so`` to load, in priority order.

    1. a copy already loaded in this process (two copies would split the type registry);
    2. the path in ``$TVMFFI_RUNTIME_LIBTVM_FFI``;
    3. ``lib/`` of the installed ``apache-tvm-ffi`` package, found without importing it
       (the same place ``tvm-ffi-config --libdir`` reports).
    """
    loaded = _already_loaded()
    if loaded:
        return loaded
    override = os.environ.get(ENV_LIBTVM_FFI)
    if override:
        if not os.path.isfile(override):
            raise LibraryLoadError(f"${ENV_LIBTVM_FFI} points to {override!r}, which is not a file")
        return override
    spec = importlib.util.find_spec("tvm_ffi")
    searched: list[str] = []
    if spec is not None and spec.submodule_search_locations:
        found, searched = _PLATFORM.find_library(
            "tvm_ffi", [str(Path(location) / "lib") for location in spec.submodule_search_locations]
        )
        if found is not None:
            return found
    raise LibraryLoadError(
        f"cannot find {_LIB_NAME}: install the apache-tvm-ffi package or set ${ENV_LIBTVM_FFI}"
        + (f" (looked in {', '.join(searched)})" if searched else "")
    )


#: Handles of os.add_dll_directory (Windows): a folder stays searched while its handle lives.
_dll_directories: dict[str, object] = {}


def _allow_dll_directories(path: str, tvm_ffi_libdir: str) -> None:
    """On Windows, let the loader find the DLLs ``path`` depends on: the tvm_ffi library folder
    and ``path``'s own folder (no-op elsewhere)."""
    for folder in _PLATFORM.dll_directories(path, tvm_ffi_libdir):
        if folder not in _dll_directories:
            _dll_directories[folder] = os.add_dll_directory(folder)  # type: ignore[attr-defined,unused-ignore]


def _dlopen(path: str) -> ctypes.CDLL:
    try:
        _allow_dll_directories(path, os.path.dirname(os.path.abspath(path)))
        return ctypes.CDLL(path, mode=_PLATFORM.dlopen_mode)
    except OSError as exc:
        raise LibraryLoadError(f"cannot load {path}: {exc}") from None


LIB_PATH = find_libtvm_ffi()
LIB = _dlopen(LIB_PATH)


# ---------------------------------------------------------------------------------------------
# Struct mirrors (checked against the C headers by tests/runtime/test_abi_layout.py)
# ---------------------------------------------------------------------------------------------
class TVMFFIByteArray(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


class _AnyUnion(ctypes.Union):
    _fields_ = [
        ("v_int64", ctypes.c_int64),
        ("v_float64", ctypes.c_double),
        ("v_ptr", ctypes.c_void_p),
        ("v_bytes", ctypes.c_char * 8),
        ("v_uint64", ctypes.c_uint64),
    ]


class TVMFFIAny(ctypes.Structure):
    _anonymous_ = ("u",)
    _fields_ = [("type_index", ctypes.c_int32), ("small_len", ctypes.c_uint32), ("u", _AnyUnion)]


class TVMFFIObject(ctypes.Structure):
    _fields_ = [
        ("combined_ref_count", ctypes.c_uint64),
        ("type_index", ctypes.c_int32),
        ("padding", ctypes.c_uint32),
        ("deleter", ctypes.c_void_p),
    ]


class TVMFFISeqCell(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("size", ctypes.c_int64),
        ("capacity", ctypes.c_int64),
        ("data_deleter", ctypes.c_void_p),
    ]


class TVMFFIShapeCell(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]


class TVMFFIErrorCell(ctypes.Structure):
    _fields_ = [
        ("kind", TVMFFIByteArray),
        ("message", TVMFFIByteArray),
        ("backtrace", TVMFFIByteArray),
        ("update_backtrace", ctypes.c_void_p),
        ("cause_chain", ctypes.c_void_p),
        ("extra_context", ctypes.c_void_p),
    ]


class TVMFFIFieldInfo(ctypes.Structure):
    _fields_ = [
        ("name", TVMFFIByteArray),
        ("doc", TVMFFIByteArray),
        ("metadata", TVMFFIByteArray),
        ("flags", ctypes.c_int64),
        ("size", ctypes.c_int64),
        ("alignment", ctypes.c_int64),
        ("offset", ctypes.c_int64),
        ("getter", ctypes.c_void_p),
        ("setter", ctypes.c_void_p),
        ("default_value_or_factory", TVMFFIAny),
        ("field_static_type_index", ctypes.c_int32),
    ]


class TVMFFIMethodInfo(ctypes.Structure):
    _fields_ = [
        ("name", TVMFFIByteArray),
        ("doc", TVMFFIByteArray),
        ("metadata", TVMFFIByteArray),
        ("flags", ctypes.c_int64),
        ("method", TVMFFIAny),
    ]


class TVMFFITypeMetadata(ctypes.Structure):
    _fields_ = [
        ("doc", TVMFFIByteArray),
        ("creator", ctypes.c_void_p),
        ("total_size", ctypes.c_int32),
        ("structural_eq_hash_kind", ctypes.c_int32),
    ]


class TVMFFITypeInfo(ctypes.Structure):
    pass


TVMFFITypeInfo._fields_ = [
    ("type_index", ctypes.c_int32),
    ("type_depth", ctypes.c_int32),
    ("type_key", TVMFFIByteArray),
    ("type_ancestors", ctypes.POINTER(ctypes.POINTER(TVMFFITypeInfo))),
    ("type_key_hash", ctypes.c_uint64),
    ("num_fields", ctypes.c_int32),
    ("num_methods", ctypes.c_int32),
    ("fields", ctypes.POINTER(TVMFFIFieldInfo)),
    ("methods", ctypes.POINTER(TVMFFIMethodInfo)),
    ("metadata", ctypes.POINTER(TVMFFITypeMetadata)),
]


class TVMFFITypeAttrColumn(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.POINTER(TVMFFIAny)),
        ("size", ctypes.c_int32),
        ("begin_index", ctypes.c_int32),
    ]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


class TVMFFIVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("patch", ctypes.c_uint32)]


#: Size of the object header that precedes every object's payload.
OBJECT_HEADER_SIZE = ctypes.sizeof(TVMFFIObject)
ANY_SIZE = ctypes.sizeof(TVMFFIAny)
assert OBJECT_HEADER_SIZE == 24 and ANY_SIZE == 16

# Packed layouts of one TVMFFIAny, used with struct on reusable buffers.
ANY_INT = struct.Struct("=iIq")
ANY_UINT = struct.Struct("=iIQ")
ANY_FLOAT = struct.Struct("=iId")

# ---------------------------------------------------------------------------------------------
# Prototypes. Hot-path functions are left without argtypes so callers pass pre-built ctypes
# objects (measured faster than letting ctypes convert each argument).
# ---------------------------------------------------------------------------------------------
_vp = ctypes.c_void_p
_i32 = ctypes.c_int32


def _proto(name: str, restype: type[Any] | None, argtypes: list[type[Any]] | None) -> CFuncPtr:
    fn: CFuncPtr = getattr(LIB, name)
    fn.restype = restype
    if argtypes is not None:
        fn.argtypes = argtypes
    return fn


def unavailable(missing: str) -> FeatureUnavailableError:
    """The error for using a feature whose C symbol or global function ``missing`` the loaded
    library lacks (``_features`` has the table of what each needs and since when)."""
    feature = feature_of(missing)
    if feature is None:
        raise AssertionError(f"{missing} is in every supported libtvm_ffi; no feature needs it")
    return FeatureUnavailableError(feature, missing, LIB_PATH, installed_release(LIB_PATH))


def _optional_proto(name: str, restype: type[Any] | None, argtypes: list[type[Any]]) -> Callable[..., Any]:
    """``_proto`` for a symbol a supported release may lack (``_features``): without it, a
    function that raises :class:`FeatureUnavailableError` when called, so importing the runtime
    and everything else still work."""
    if hasattr(LIB, name):
        return _proto(name, restype, argtypes)

    def missing(*args: object) -> Any:
        raise unavailable(name)

    missing.__name__ = name
    return missing


FunctionCall = _proto("TVMFFIFunctionCall", ctypes.c_int, None)
# Reference counting never blocks: call it without releasing the GIL (PyDLL), which measured
# ~45 ns cheaper per call. A deleter that runs a Python callback re-enters the GIL it holds.
_LIB_GIL = ctypes.PyDLL(LIB_PATH, mode=_PLATFORM.dlopen_mode)


def _proto_gil(name: str, restype: type[Any] | None, argtypes: list[type[Any]]) -> CFuncPtr:
    fn: CFuncPtr = getattr(_LIB_GIL, name)
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


ObjectIncRef = _proto_gil("TVMFFIObjectIncRef", ctypes.c_int, [_vp])
ObjectDecRef = _proto_gil("TVMFFIObjectDecRef", ctypes.c_int, [_vp])
ErrorMoveFromRaised = _proto("TVMFFIErrorMoveFromRaised", None, [ctypes.POINTER(_vp)])
ErrorSetRaised = _proto("TVMFFIErrorSetRaised", None, [_vp])
ErrorCreate = _proto(
    "TVMFFIErrorCreate",
    ctypes.c_int,
    [ctypes.POINTER(TVMFFIByteArray)] * 3 + [ctypes.POINTER(_vp)],
)
# The global function table has no lock of its own (function.cc: updates are to be "explicitly
# locked from the caller"): a lookup racing a replacement can take a reference to a Function that
# is being deleted, or read the table mid-update. Both calls keep the GIL (PyDLL), which makes
# them atomic to other Python threads, as the tvm_ffi package's Cython binding does.
FunctionGetGlobal = _proto_gil(
    "TVMFFIFunctionGetGlobal", ctypes.c_int, [ctypes.POINTER(TVMFFIByteArray), ctypes.POINTER(_vp)]
)
FunctionSetGlobal = _proto_gil(
    "TVMFFIFunctionSetGlobal", ctypes.c_int, [ctypes.POINTER(TVMFFIByteArray), _vp, ctypes.c_int]
)
# Callback arguments arrive as plain addresses (ints): cheaper than POINTER objects.
SAFE_CALL = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _vp, ctypes.c_int32, _vp)
DELETER = ctypes.CFUNCTYPE(None, _vp)
FunctionCreate = _proto("TVMFFIFunctionCreate", ctypes.c_int, [_vp, SAFE_CALL, DELETER, ctypes.POINTER(_vp)])
# The same function for callbacks given as raw addresses (the structural engines' trampolines,
# typed for indexing their arguments): a prototype of its own, so FunctionCreate keeps its types.
FunctionCreateFromAddress = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _vp, _vp, ctypes.POINTER(_vp))(
    ("TVMFFIFunctionCreate", LIB)
)


class TVMFFIAnyByValue(ctypes.Structure):
    """``TVMFFIAny`` passed or returned *by value* through ctypes: libffi cannot pass a union by
    value, so the 8-byte payload is one ``uint64`` (``v``)."""

    _fields_ = [("type_index", ctypes.c_int32), ("zero_padding", ctypes.c_uint32), ("v", ctypes.c_uint64)]


# FStructuralMutateABI: TVMFFIAny (*)(StructuralMutatorObj*, AnyView) noexcept
STRUCTURAL_MUTATE_ABI = ctypes.CFUNCTYPE(TVMFFIAnyByValue, _vp, TVMFFIAnyByValue)
AnyViewToOwnedAny = _proto(
    "TVMFFIAnyViewToOwnedAny", ctypes.c_int, [ctypes.POINTER(TVMFFIAny), ctypes.POINTER(TVMFFIAny)]
)
StringFromByteArray = _proto(
    "TVMFFIStringFromByteArray",
    ctypes.c_int,
    [ctypes.POINTER(TVMFFIByteArray), ctypes.POINTER(TVMFFIAny)],
)
BytesFromByteArray = _proto(
    "TVMFFIBytesFromByteArray", ctypes.c_int, [ctypes.POINTER(TVMFFIByteArray), ctypes.POINTER(TVMFFIAny)]
)
BigIntFromByteArray = _optional_proto(
    "TVMFFIBigIntFromByteArray", ctypes.c_int, [ctypes.POINTER(TVMFFIByteArray), ctypes.POINTER(TVMFFIAny)]
)
BigIntGetContentByteArray = _optional_proto(
    "TVMFFIBigIntGetContentByteArray", TVMFFIByteArray, [ctypes.POINTER(TVMFFIAny)]
)
DataTypeFromString = _proto(
    "TVMFFIDataTypeFromString", ctypes.c_int, [ctypes.POINTER(TVMFFIByteArray), ctypes.POINTER(DLDataType)]
)
DataTypeToString = _proto(
    "TVMFFIDataTypeToString", ctypes.c_int, [ctypes.POINTER(DLDataType), ctypes.POINTER(TVMFFIAny)]
)
TypeKeyToIndex = _proto("TVMFFITypeKeyToIndex", ctypes.c_int, [ctypes.POINTER(TVMFFIByteArray), ctypes.POINTER(_i32)])
GetTypeInfo = _proto("TVMFFIGetTypeInfo", ctypes.POINTER(TVMFFITypeInfo), [_i32])
GetTypeAttrColumn = _proto(
    "TVMFFIGetTypeAttrColumn", ctypes.POINTER(TVMFFITypeAttrColumn), [ctypes.POINTER(TVMFFIByteArray)]
)
TensorFromDLPack = _proto("TVMFFITensorFromDLPack", ctypes.c_int, [_vp, _i32, _i32, ctypes.POINTER(_vp)])
TensorFromDLPackVersioned = _proto(
    "TVMFFITensorFromDLPackVersioned", ctypes.c_int, [_vp, _i32, _i32, ctypes.POINTER(_vp)]
)
TensorToDLPack = _proto("TVMFFITensorToDLPack", ctypes.c_int, [_vp, ctypes.POINTER(_vp)])
TensorToDLPackVersioned = _proto("TVMFFITensorToDLPackVersioned", ctypes.c_int, [_vp, ctypes.POINTER(_vp)])
EnvRegisterCAPI = _proto("TVMFFIEnvRegisterCAPI", ctypes.c_int, [ctypes.c_char_p, _vp])
GetVersion = _proto("TVMFFIGetVersion", None, [ctypes.POINTER(TVMFFIVersion)])


def byte_array(data: bytes) -> TVMFFIByteArray:
    """A ``TVMFFIByteArray`` viewing ``data``; the caller keeps ``data`` alive."""
    return TVMFFIByteArray(ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value, len(data))


def read_byte_array(ba: TVMFFIByteArray) -> bytes:
    """Copy the bytes a ``TVMFFIByteArray`` views."""
    if not ba.size:
        return b""
    return ctypes.string_at(ba.data, ba.size)


_loaded_user_libraries: dict[str, ctypes.CDLL] = {}


def load_library(path: str | os.PathLike[str]) -> ctypes.CDLL:
    """Load a user library that registers into TVM FFI, after ``libtvm_ffi.so``.

    The library is loaded with ``RTLD_GLOBAL`` (Linux, macOS) so its own dependency on ``libtvm_ffi``
    resolves against the copy already in the process; on Windows, where a DLL's imports name their
    DLL, the tvm_ffi and library folders are added to the DLL search path instead. Loading the same
    path twice returns the first handle.
    Errors name the path and the loader's message: a missing file, a directory, a non-library,
    another architecture, unresolved symbols, or a static initialiser that throws.
    """
    spath = os.fspath(path)
    key = os.path.realpath(spath)
    if key in _loaded_user_libraries:
        return _loaded_user_libraries[key]
    if not os.path.exists(spath):
        raise LibraryLoadError(f"cannot load {spath}: no such file")
    if os.path.isdir(spath):
        raise LibraryLoadError(f"cannot load {spath}: it is a directory, not a shared library")
    problem = library_problem(spath)
    if problem is not None:
        raise LibraryLoadError(f"cannot load {spath}: {problem}")
    try:
        _allow_dll_directories(spath, os.path.dirname(LIB_PATH))
        handle = ctypes.CDLL(spath if os.sep in spath else os.path.abspath(spath), mode=_PLATFORM.dlopen_mode)
    except OSError as exc:
        message = str(exc)
        if "Exception" in message or "terminate" in message:
            message = f"its static initialisers failed: {message}"
        raise LibraryLoadError(f"cannot load {spath}: {message}") from None
    _loaded_user_libraries[key] = handle
    return handle
