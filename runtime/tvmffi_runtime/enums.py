"""Base classes for registered enums (``ffi.Enum``, ``ffi.IntEnum``, ``ffi.StrEnum``).

Generated enum classes derive from these; their entries are class attributes. As with Python's
``enum``, iterating the class gives its entries in registration order, and every entry is one
Python object: native code returning an entry gives the class attribute itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from . import _lib, _object
from ._object import Object

__all__ = ["Enum", "IntEnum", "StrEnum", "intern_entries"]

_E = TypeVar("_E")


class EnumType(type):
    """Metaclass of the enum bases: ``for entry in Color``, ``len(Color)``."""

    def __iter__(cls: type[_E]) -> Iterator[_E]:
        return iter(_entries(cls))

    def __len__(cls) -> int:
        return len(_entries(cls))

    def __bool__(cls) -> bool:
        return True  # a class is true, whatever its number of entries (the runtime tests `cls or ...`)


def _entries(cls: type) -> list[Any]:
    """The entries registered for ``cls``'s type, in registration order (none for the bases)."""
    from .reflection import get_field, type_attr

    index = cls.__dict__.get("_type_index")
    state = None if index is None else type_attr(index, "__ffi_enum__")
    if state is None:
        return []
    return list(get_field(state, "entries"))


#: handle of an entry -> its one wrapper (entries are native singletons that live forever)
_INTERNED: dict[int, Any] = {}


def intern_entries(cls: type) -> None:
    """Make every value of ``cls``'s type that comes back from native code the same wrapper."""
    index: int = getattr(cls, "_type_index")

    def entry_from_handle(handle: int) -> Any:
        obj: Any = _INTERNED.get(handle)
        if obj is not None and obj._h == handle:
            _lib.ObjectDecRef(handle)  # the wrapper already holds its reference
            return obj
        obj = _object._new(_object._CLASS_CACHE.get(index) or _object.class_for_index(index))
        obj._h = handle
        obj._t = index
        _INTERNED[handle] = obj  # (replaces a wrapper the user moved away with rt.move)
        return obj

    _object.set_object_return(index, entry_from_handle)


def _field(obj: Object, name: str) -> Any:
    from .reflection import get_field

    return get_field(obj, name)


@_object.register_object("ffi.Enum")
class Enum(Object, metaclass=EnumType):
    """An entry of a registered enum; ``name`` is the entry's registered name."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return str(_field(self, "_str_index"))

    @property
    def ordinal(self) -> int:
        return int(_field(self, "_int_index"))


@_object.register_object("ffi.IntEnum")
class IntEnum(Enum):
    """An enum whose entries carry an int ``value``."""

    __slots__ = ()

    @property
    def value(self) -> int:
        return int(_field(self, "value"))


@_object.register_object("ffi.StrEnum")
class StrEnum(Enum):
    """An enum whose entries carry a str ``value``."""

    __slots__ = ()

    @property
    def value(self) -> str:
        return str(_field(self, "value"))
