"""Base classes for registered enums (``ffi.Enum``, ``ffi.IntEnum``, ``ffi.StrEnum``).

Generated enum classes derive from these; their entries are class attributes.
"""

from __future__ import annotations

from typing import Any

from . import _core
from ._core import Object

__all__ = ["Enum", "IntEnum", "StrEnum"]


def _field(obj: Object, name: str) -> Any:
    from .reflection import get_field

    return get_field(obj, name)


@_core.register_object("ffi.Enum")
class Enum(Object):
    """An entry of a registered enum; ``name`` is the entry's registered name."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return str(_field(self, "_str_index"))

    @property
    def ordinal(self) -> int:
        return int(_field(self, "_int_index"))


@_core.register_object("ffi.IntEnum")
class IntEnum(Enum):
    """An enum whose entries carry an int ``value``."""

    __slots__ = ()

    @property
    def value(self) -> int:
        return int(_field(self, "value"))


@_core.register_object("ffi.StrEnum")
class StrEnum(Enum):
    """An enum whose entries carry a str ``value``."""

    __slots__ = ()

    @property
    def value(self) -> str:
        return str(_field(self, "value"))
