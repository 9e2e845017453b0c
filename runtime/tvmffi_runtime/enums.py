"""Base classes for registered enums (``ffi.Enum``, ``ffi.IntEnum``, ``ffi.StrEnum``).

Generated enum classes derive from these; their entries are class attributes. As with Python's
``enum``, iterating the class gives its entries in registration order, and every entry is one
Python object: native code returning an entry gives the class attribute itself.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, TypeVar

from . import _lib, _object
from ._object import Object

__all__ = ["Enum", "IntEnum", "StrEnum", "entry_name", "entry_ordinal", "intern_entries", "registered_entries"]

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
    index = cls.__dict__.get("_type_index")
    return [] if index is None else registered_entries(index)


def registered_entries(type_index: int) -> list[Any]:
    """The enum entries registered for the type at ``type_index``, in registration order (empty
    when it registers none). apache-tvm-ffi 0.1.13 on keeps them in the type's ``__ffi_enum__``
    state; 0.1.11 and 0.1.12 in its ``__ffi_enum_entries__`` dict (name -> entry), ordered here
    by each entry's ordinal."""
    from .reflection import get_field, type_attr

    state = type_attr(type_index, "__ffi_enum__")
    if state is not None:
        return list(get_field(state, "entries"))
    by_name = type_attr(type_index, "__ffi_enum_entries__")
    if by_name is None:
        return []
    return sorted(by_name.values(), key=entry_ordinal)


@functools.cache
def _entry_fields() -> tuple[str, str]:
    """The names of an entry's (name, ordinal) fields in the loaded library: ``_str_index`` and
    ``_int_index`` from apache-tvm-ffi 0.1.13 on (the release that added ``ffi.EnumState``),
    ``_name`` and ``_value`` before."""
    if _object.type_key_to_index("ffi.EnumState") is not None:
        return ("_str_index", "_int_index")
    return ("_name", "_value")


def entry_name(entry: Object) -> str:
    """The name an enum entry is registered under."""
    return str(_field(entry, _entry_fields()[0]))


def entry_ordinal(entry: Object) -> int:
    """An enum entry's ordinal (0 for its class's first entry)."""
    return int(_field(entry, _entry_fields()[1]))


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
        return entry_name(self)

    @property
    def ordinal(self) -> int:
        return entry_ordinal(self)


@_object.register_object_if_present("ffi.IntEnum")
class IntEnum(Enum):
    """An enum whose entries carry an int ``value``."""

    __slots__ = ()

    @property
    def value(self) -> int:
        return int(_field(self, "value"))


@_object.register_object_if_present("ffi.StrEnum")
class StrEnum(Enum):
    """An enum whose entries carry a str ``value``."""

    __slots__ = ()

    @property
    def value(self) -> str:
        return str(_field(self, "value"))
