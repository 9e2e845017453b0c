"""Objects and the type-index → class registry.

``Object`` holds one reference to a native object; :func:`class_for_index` picks the Python class
a type index is wrapped in (registered with :func:`register_object`, or found by the lazy class
loader a generated package installs). Layers above install what ``Object``'s own methods need
(construction, repr, copy, interop) with :func:`set_object_service`, so this layer imports none
of them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, ClassVar, Literal, TypeVar

from . import _lib
from ._backend import backend
from ._errors import _exception_from_error_handle, _fetch_error
from ._values import TypeIndex, _bigint_from_handle, _bytes_from_handle, _str_from_handle

__all__ = [
    "Object",
    "class_for_index",
    "register_object",
    "register_object_if_present",
    "set_class_loader",
    "type_key_to_index",
    "_wrap",
    "_read_type_index",
    "_ref_counts",
    "_adopt",
    "_release_into",
]

_byref = ctypes.byref
_DecRef = _lib.ObjectDecRef

#: What ``Object``'s methods delegate to a higher layer, by name.
ObjectService = Literal["construct", "repr", "to_tvm_ffi", "copy", "deepcopy", "reduce"]
_SERVICES: dict[str, Callable[..., Any]] = {}


def set_object_service(name: ObjectService, fn: Callable[..., Any]) -> None:
    """Install the implementation of one ``Object`` method (done by the layer that owns it)."""
    _SERVICES[name] = fn


def _service(name: ObjectService) -> Callable[..., Any]:
    try:
        return _SERVICES[name]
    except KeyError:
        raise RuntimeError(f"tvmffi_runtime: {name!r} of Object is not installed (import tvmffi_runtime)") from None


_Self = TypeVar("_Self", bound="Object")


class Object(backend.ObjectBase):
    """A reference-counted TVM FFI object. The wrapper owns exactly one reference.

    Equality and hashing are by identity of the underlying object (``same_as``); containers
    override equality with element-wise comparison.
    """

    __slots__ = ("__weakref__",)
    #: Registered type key of this class (``ffi.Object`` for the root).
    _type_key: ClassVar[str] = "ffi.Object"
    _type_index: ClassVar[int] = TypeIndex.OBJECT

    def __init__(self, *args: object, **kwargs: object) -> None:
        # the type's __ffi_init__, through the calling layer
        _service("construct")(self, args, kwargs)

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
            return str(_service("repr")(self))
        except Exception:  # noqa: BLE001 - repr must not fail
            return f"<{self.type_key} at 0x{self._h:x}>"

    def __tvm_ffi_object__(self) -> Any:
        """This object as the ``tvm_ffi`` package's wrapper of the same handle (the protocol
        ``tvm_ffi`` converts arguments by); imports ``tvm_ffi`` on first use."""
        return _service("to_tvm_ffi")(self)

    def __copy__(self: _Self) -> _Self:
        return _service("copy")(self)  # type: ignore[no-any-return]

    def __deepcopy__(self: _Self, memo: dict[int, object] | None = None) -> _Self:
        return _service("deepcopy")(self)  # type: ignore[no-any-return]

    def __reduce__(self) -> tuple[Callable[[str], Any], tuple[str]]:
        return _service("reduce")(self)  # type: ignore[no-any-return]


_new: Callable[[type], Any] = object.__new__  # a bare instance (no __init__)
_TYPE_CLASSES: dict[int, type] = {}
_CLASS_CACHE: dict[int, type] = {}
# Installed by tvmffi_runtime.bind (set_class_loader): imports the module of a generated class on
# first sight of its type.
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
        register_class(index, cls)
        return cls

    return decorate


def register_object_if_present(type_key: str) -> Callable[[_TypeT], _TypeT]:
    """``register_object(type_key)`` when the loaded libtvm_ffi has the type (an older release
    may not: ``_features``); otherwise the class stays unregistered, and no call returns one."""

    def decorate(cls: _TypeT) -> _TypeT:
        if type_key_to_index(type_key) is None:
            return cls
        return register_object(type_key)(cls)

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


def register_class(index: int, cls: type) -> None:
    """Wrap objects of type ``index`` (and its unregistered subtypes) in ``cls``."""
    _TYPE_CLASSES[index] = cls
    _CLASS_CACHE.clear()


def set_class_loader(loader: Callable[[str], bool] | None) -> None:
    """Install the function that imports a generated class by type key (True if it did)."""
    _LAZY_CLASS_LOADER[0] = loader
    _CLASS_CACHE.clear()


# Objects that come back as plain Python values (str, bytes, int): index -> handle -> value.
_OBJECT_RETURN: dict[int, Callable[[int], Any]] = {}


def set_object_return(index: int, convert: Callable[[int], Any]) -> None:
    """Return objects of type ``index`` as ``convert(owned_handle)`` instead of a wrapper."""
    _OBJECT_RETURN[index] = convert


def _adopt(obj: Object, made: Object) -> None:
    """``obj`` takes over the reference ``made`` owns (``made`` is left owning nothing)."""
    obj._h, obj._t = made._h, made._t
    made._h = 0


def _release_into(made: Object) -> int:
    """The handle ``made`` owns, handed to the caller (``made`` is left owning nothing)."""
    h: int = made._h
    made._h = 0
    return h


def _error_from_handle(handle: int) -> BaseException:
    return _exception_from_error_handle(handle, raised=False)


_OBJECT_RETURN[TypeIndex.STR] = _str_from_handle
_OBJECT_RETURN[TypeIndex.BYTES] = _bytes_from_handle
_OBJECT_RETURN[TypeIndex.BIG_INT] = _bigint_from_handle
_OBJECT_RETURN[TypeIndex.ERROR] = _error_from_handle


def _read_type_index(handle: int) -> int:
    return ctypes.c_int32.from_address(handle + 8).value


def _ref_counts(handle: int) -> tuple[int, int]:
    """(weak, strong) reference counts of a native object (``combined_ref_count``)."""
    combined = ctypes.c_uint64.from_address(handle).value
    return combined >> 32, combined & 0xFFFFFFFF


_TYPE_CLASSES[TypeIndex.OBJECT] = Object
