"""_pure/containers.py: the read side of Array / List, Map / Dict and Shape (the twin of
``_accel_parts/containers.h``).

Sequences and shapes are read from object memory (their ``TVMFFISeqCell`` /
``TVMFFIShapeCell``); a Map's length from its ``MapBaseObj``; lookups, membership and iteration
call the library's own functions, named by ``_container_functions.MAP_FUNCTIONS`` (handed over
by ``init`` as ``map_functions``, with the lookup and the missing marker).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from operator import index as _index
from typing import Any

from .. import _lib
from .._errors import _released_object_error, index_error
from .._values import TypeIndex
from .calls import call
from .objects import ObjectBase

__all__ = ["MapBase", "SeqBase", "ShapeBase", "connect"]

_HEADER = _lib.OBJECT_HEADER_SIZE
_c_void_p = ctypes.c_void_p
_c_int64 = ctypes.c_int64
_c_uint64 = ctypes.c_uint64
_string_at = ctypes.string_at


def _not_connected(*args: Any) -> Any:
    raise RuntimeError("tvmffi_runtime: the pure backend is used before init() (import tvmffi_runtime)")


# What init() hands over (the names of _wiring.BACKEND_HELPERS)
_view: Callable[[Any, int], Any] = _not_connected
_global_handle: Callable[[str], Any] = _not_connected
_map_missing: Callable[[], Any] = _not_connected
_map_function_names: dict[int, tuple[str, str, str]] = {}
#: type index -> ((handle, name) of get-or-missing, count, iterator), looked up on first use
_map_functions: dict[int, tuple[tuple[Any, str], ...]] = {}
_missing: list[int] = []  # the missing marker's handle, once asked for (its wrapper kept too)
_missing_keep: list[Any] = []


def connect(hooks: Any) -> None:
    """Take the Python helpers this part calls from ``_wiring.BACKEND_HELPERS``."""
    global _view, _global_handle, _map_missing, _map_function_names
    _view, _global_handle, _map_missing = hooks.view_from_buffer, hooks.global_handle, hooks.map_missing
    _map_function_names = hooks.map_functions


def _handle(obj: ObjectBase, kinds: tuple[int, ...]) -> int:
    """The handle of a live container of one of ``kinds`` (the compiled backend's checks)."""
    h = obj._h
    if not h:
        raise _released_object_error(obj)
    if obj._t not in kinds:
        raise TypeError(f"{type(obj).__name__} wraps type index {obj._t}, which is not a container of its kind")
    return h


def _position(obj: object, key: Any, size: Callable[[], int]) -> int:
    """The position ``key`` names (negative from the end); ``size`` read after ``__index__``."""
    i = _index(key)
    n = size()
    j = i + n if i < 0 else i
    if not 0 <= j < n:
        raise index_error(type(obj).__name__, i, n)
    return j


_SEQS = (TypeIndex.ARRAY, TypeIndex.LIST)
_MAPS = (TypeIndex.MAP, TypeIndex.DICT)
_SHAPES = (TypeIndex.SHAPE,)


class SeqBase(ObjectBase):
    """The read side of Array and List, over their ``TVMFFISeqCell``."""

    __slots__ = ()

    def _cell(self) -> tuple[int, int]:
        h = _handle(self, _SEQS)
        return _c_void_p.from_address(h + _HEADER).value or 0, _c_int64.from_address(h + _HEADER + 8).value

    def __len__(self) -> int:
        return self._cell()[1]

    def _items(self) -> list[Any]:
        data, n = self._cell()
        raw = _string_at(data, 16 * n) if n else b""
        return [_view(raw, 16 * i) for i in range(n)]

    def __getitem__(self, key: Any, /) -> Any:
        if isinstance(key, slice):
            return self._items()[key]
        j = _position(self, key, lambda: self._cell()[1])
        return _view(_string_at(self._cell()[0] + 16 * j, 16), 0)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items())

    def __contains__(self, value: object, /) -> bool:
        return any(x == value for x in self._items())


def _map_function(obj: ObjectBase, which: int) -> tuple[Any, str]:
    """(handle, name) of map function ``which`` for ``obj``'s type, and the missing marker."""
    functions = _map_functions.get(obj._t)
    if functions is None:
        if not _missing:
            marker = _map_missing()
            _missing_keep.append(marker)
            _missing.append(marker._h)
        names = _map_function_names[obj._t]
        functions = _map_functions[obj._t] = tuple((_global_handle(name), name) for name in names)
    return functions[which]


_GET, _COUNT, _ITER = 0, 1, 2


class MapBase(ObjectBase):
    """The read side of Map and Dict: the length from memory, the rest by the library's functions."""

    __slots__ = ()

    def __len__(self) -> int:
        return _c_uint64.from_address(_handle(self, _MAPS) + _HEADER + 8).value

    def _lookup(self, key: Any) -> tuple[bool, Any]:
        _handle(self, _MAPS)
        handle, name = _map_function(self, _GET)
        value = call(handle, (self, key), name)
        if isinstance(value, ObjectBase) and value._h == _missing[0]:
            return False, None
        return True, value

    def __getitem__(self, key: Any, /) -> Any:
        found, value = self._lookup(key)
        if not found:
            raise KeyError(key)
        return value

    def get(self, key: Any, default: Any = None, /) -> Any:
        found, value = self._lookup(key)
        return value if found else default

    def __contains__(self, key: object, /) -> bool:
        _handle(self, _MAPS)
        handle, name = _map_function(self, _COUNT)
        try:
            return bool(call(handle, (self, key), name))
        except TypeError:
            return False

    def _collect(self, key: bool, value: bool) -> list[Any]:
        if len(self) == 0:
            return []
        handle, name = _map_function(self, _ITER)
        it = call(handle, (self,), name)
        out: list[Any] = []
        while True:
            k = it(0) if key else None
            v = it(1) if value else None
            out.append((k, v) if key and value else k if key else v)
            if not it(2):
                return out

    def _pairs(self) -> list[tuple[Any, Any]]:
        return self._collect(True, True)

    def _values(self) -> list[Any]:
        return self._collect(False, True)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._collect(True, False))


class ShapeBase(ObjectBase):
    """The read side of Shape, over its ``TVMFFIShapeCell`` (int64 dimensions)."""

    __slots__ = ()

    def _cell(self) -> tuple[int, int]:
        h = _handle(self, _SHAPES)
        return _c_void_p.from_address(h + _HEADER).value or 0, _c_uint64.from_address(h + _HEADER + 8).value

    def __len__(self) -> int:
        return self._cell()[1]

    def _dims(self) -> tuple[int, ...]:
        data, n = self._cell()
        return tuple((_c_int64 * n).from_address(data)) if n else ()

    def __getitem__(self, key: Any, /) -> Any:
        if isinstance(key, slice):
            return self._dims()[key]
        j = _position(self, key, lambda: self._cell()[1])
        return _c_int64.from_address(self._cell()[0] + 8 * j).value

    def __iter__(self) -> Iterator[int]:
        return iter(self._dims())
