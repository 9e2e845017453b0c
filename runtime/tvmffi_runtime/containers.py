"""Typed container wrappers: ``Array``, ``List``, ``Map``, ``Dict`` and ``Shape``.

Sequences read their elements straight from the object's ``TVMFFISeqCell`` (an array of
``TVMFFIAny``); everything else, and every mutation, goes through the library's own container
functions (``ffi.MapGetItem``, ``ffi.ListAppend``, ...), so semantics match C++.
"""

from __future__ import annotations

import threading
from collections.abc import (
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    MutableMapping,
    MutableSequence,
    Sequence,
    ValuesView,
)
from operator import index as _index  # a TypeError, like list, for a non-integer index
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast, overload

from ._backend import backend
from ._call import ffi_call, global_handle, new_container
from ._container_functions import MAP_FUNCTIONS
from ._errors import index_error
from ._object import Object, _adopt, register_object
from ._values import TypeIndex

__all__ = ["Array", "List", "Map", "Dict", "Shape", "missing_object"]

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")
_D = TypeVar("_D")


def _call(name: str, *args: Any) -> Any:
    return ffi_call(global_handle(name), args, name)


def _norm_index(i: int, n: int, what: str) -> int:
    j = i + n if i < 0 else i
    if not 0 <= j < n:
        raise index_error(what, i, n)
    return j


class _SeqBase(Object, backend.SeqBase, Generic[T]):
    """Shared read side of Array and List (both are a TVMFFISeqCell of Any): the backend's
    ``SeqBase``, typed here."""

    __slots__ = ()

    if TYPE_CHECKING:

        def __len__(self) -> int: ...
        def _items(self) -> list[T]: ...
        @overload
        def __getitem__(self, i: int, /) -> T: ...
        @overload
        def __getitem__(self, i: slice, /) -> list[T]: ...
        def __getitem__(self, i: int | slice, /) -> T | list[T]: ...
        def __iter__(self) -> Iterator[T]: ...
        def __contains__(self, value: object, /) -> bool: ...

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _SeqBase):
            other_seq = cast("_SeqBase[object]", other)
            return self.same_as(other_seq) or self._items() == other_seq._items()
        if isinstance(other, (list, tuple)):
            return self._items() == list(cast("Sequence[object]", other))
        return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = Object.__hash__

    def __repr__(self) -> str:
        return _repr_once(self, lambda: f"{type(self).__name__}({self._items()!r})")

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        return cast("list[object]", self._items()).index(value, start, len(self) if stop is None else stop)

    def count(self, value: object) -> int:
        return cast("list[object]", self._items()).count(value)

    def __reversed__(self) -> Iterator[T]:
        return reversed(self._items())


@register_object("ffi.Array")
class Array(_SeqBase[T], Sequence[T]):
    """An immutable TVM FFI array; a ``Sequence[T]``. ``Array([1, 2])`` builds one."""

    __slots__ = ()

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._h = new_container("ffi.Array", list(items))
        self._t = TypeIndex.ARRAY


@register_object("ffi.List")
class List(_SeqBase[T], MutableSequence[T]):
    """A mutable TVM FFI list; a ``MutableSequence[T]``. ``List([1, 2])`` builds one."""

    __slots__ = ()

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._h = new_container("ffi.List", list(items))
        self._t = TypeIndex.LIST

    @overload
    def __setitem__(self, i: int, value: T) -> None: ...
    @overload
    def __setitem__(self, i: slice, value: Iterable[T]) -> None: ...
    def __setitem__(self, i: int | slice, value: T | Iterable[T]) -> None:
        n = len(self)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            values = list(cast("Iterable[T]", value))
            if step == 1:
                stop = max(stop, start)
                _call("ffi.ListReplaceSlice", self, start, stop, List(values))
                return
            targets = list(range(start, stop, step))
            if len(targets) != len(values):
                raise ValueError(
                    f"attempt to assign sequence of size {len(values)} to extended slice of size {len(targets)}"
                )
            for j, v in zip(targets, values, strict=True):
                _call("ffi.ListSetItem", self, j, v)
            return
        _call("ffi.ListSetItem", self, _norm_index(_index(i), n, "List"), value)

    @overload
    def __delitem__(self, i: int) -> None: ...
    @overload
    def __delitem__(self, i: slice) -> None: ...
    def __delitem__(self, i: int | slice) -> None:
        n = len(self)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step == 1:
                if stop > start:
                    _call("ffi.ListEraseRange", self, start, stop)
                return
            for j in sorted(range(start, stop, step), reverse=True):
                _call("ffi.ListErase", self, j)
            return
        _call("ffi.ListErase", self, _norm_index(_index(i), n, "List"))

    def insert(self, index: int, value: T) -> None:
        n = len(self)
        j = max(0, min(n, index + n if index < 0 else index))
        _call("ffi.ListInsert", self, j, value)

    def append(self, value: T) -> None:
        _call("ffi.ListAppend", self, value)

    def pop(self, index: int = -1) -> T:
        n = len(self)
        if n == 0:
            raise IndexError("pop from empty List")
        return _call("ffi.ListPop", self, _norm_index(index, n, "List"))  # type: ignore[no-any-return]

    def clear(self) -> None:
        _call("ffi.ListClear", self)

    def reverse(self) -> None:
        _call("ffi.ListReverse", self)


class _ItemsView(ItemsView[K, V]):
    """``Map.items()``: iterates the native iterator once instead of a lookup per key."""

    _mapping: _MapBase[K, V]

    def __iter__(self) -> Iterator[tuple[K, V]]:
        return iter(self._mapping._pairs())


class _ValuesView(ValuesView[V]):
    """``Map.values()``: iterates the native iterator once instead of a lookup per key."""

    _mapping: _MapBase[Any, V]

    def __iter__(self) -> Iterator[V]:
        return iter(self._mapping._values())


class _MapBase(Object, backend.MapBase, Generic[K, V]):
    """Shared read side of Map and Dict: the backend's ``MapBase``, typed here."""

    __slots__ = ()

    if TYPE_CHECKING:

        def __len__(self) -> int: ...
        def __getitem__(self, key: K, /) -> V: ...
        def __contains__(self, key: object, /) -> bool: ...
        def __iter__(self) -> Iterator[K]: ...
        def _pairs(self) -> list[tuple[K, V]]: ...
        def _values(self) -> list[V]: ...
        @overload
        def get(self, key: K, /) -> V | None: ...
        @overload
        def get(self, key: K, default: V, /) -> V: ...
        @overload
        def get(self, key: K, default: _D, /) -> V | _D: ...
        def get(self, key: K, default: object = None, /) -> object: ...

    def items(self) -> ItemsView[K, V]:
        """A view of the (key, value) pairs, read in one pass of the native iterator."""
        return _ItemsView(self)

    def keys(self) -> KeysView[K]:
        return KeysView(self)

    def values(self) -> ValuesView[V]:
        """A view of the values, read in one pass of the native iterator."""
        return _ValuesView(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _MapBase) and self.same_as(cast("_MapBase[object, object]", other)):
            return True
        if isinstance(other, (_MapBase, dict, Mapping)):
            # _MapBase answers len/in/[] like a Mapping; checkers only know the Mapping part.
            other_map = cast("Mapping[object, object]", other)
            if len(self) != len(other_map):
                return False
            try:
                return all(k in other_map and other_map[k] == v for k, v in self._pairs())
            except TypeError:
                return False
        return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = Object.__hash__

    def __repr__(self) -> str:
        return _repr_once(self, lambda: f"{type(self).__name__}({dict(self._pairs())!r})")


#: (thread, handle) of the containers whose repr is being built: a List or Dict that holds
#: itself shows as ``List(...)`` inside, as a list shows ``[...]``, instead of recursing until
#: RecursionError (each wrapper is new, so reprlib's id-based guard cannot see the repeat).
_IN_REPR: set[tuple[int, int]] = set()


def _repr_once(obj: Object, build: Callable[[], str]) -> str:
    """``build()``, or ``Type(...)`` when ``obj`` is already being shown further up."""
    key = (threading.get_ident(), obj._h)
    if key in _IN_REPR:
        return f"{type(obj).__name__}(...)"
    _IN_REPR.add(key)
    try:
        return build()
    finally:
        _IN_REPR.discard(key)


def _flat_pairs(items: Mapping[K, V] | Iterable[tuple[K, V]]) -> list[object]:
    """``[k0, v0, k1, v1, ...]``: the argument layout of ``ffi.Map``/``ffi.Dict``."""
    if isinstance(items, Mapping):
        # Narrowing the union by Mapping loses K and V; the annotation says what they are.
        pairs: Iterable[tuple[K, V]] = cast("Mapping[K, V]", items).items()
    else:
        pairs = items
    return [x for kv in pairs for x in kv]


def missing_object() -> Object:
    """The marker ``ffi.MapGetItemOrMissing`` (and ``ffi.DictGetItemOrMissing``) returns for an
    absent key: the backends ask for it once (``_wiring``: ``map_missing``)."""
    return _call(MAP_FUNCTIONS[TypeIndex.MAP][0], Map({}), "__tvmffi_runtime_probe__")  # type: ignore[no-any-return]


@register_object("ffi.Map")
class Map(_MapBase[K, V], Mapping[K, V]):
    """An immutable TVM FFI map; a ``Mapping[K, V]``. ``Map({"a": 1})`` builds one."""

    __slots__ = ()

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._h = new_container("ffi.Map", _flat_pairs(items))
        self._t = TypeIndex.MAP


@register_object("ffi.Dict")
class Dict(_MapBase[K, V], MutableMapping[K, V]):
    """A mutable TVM FFI dict; a ``MutableMapping[K, V]``. ``Dict({"a": 1})`` builds one."""

    __slots__ = ()

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        self._h = new_container("ffi.Dict", _flat_pairs(items))
        self._t = TypeIndex.DICT

    def __setitem__(self, key: K, value: V) -> None:
        _call("ffi.DictSetItem", self, key, value)

    def __delitem__(self, key: K) -> None:
        if key not in self:
            raise KeyError(key)
        _call("ffi.DictErase", self, key)

    def clear(self) -> None:
        _call("ffi.DictClear", self)


@register_object("ffi.Shape")
class Shape(Object, backend.ShapeBase, Sequence[int]):
    """An immutable shape (a sequence of int64); compares equal to tuples and lists of ints.
    Its read side is the backend's ``ShapeBase``, typed here."""

    __slots__ = ()

    def __init__(self, dims: Iterable[int] = ()) -> None:
        made = _call("ffi.Shape", *list(dims))
        _adopt(self, made)

    if TYPE_CHECKING:

        def _dims(self) -> tuple[int, ...]: ...
        def __len__(self) -> int: ...
        @overload
        def __getitem__(self, i: int, /) -> int: ...
        @overload
        def __getitem__(self, i: slice, /) -> tuple[int, ...]: ...
        def __getitem__(self, i: int | slice, /) -> int | tuple[int, ...]: ...
        def __iter__(self) -> Iterator[int]: ...

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Shape):
            return self._dims() == other._dims()
        if isinstance(other, (tuple, list)):
            return self._dims() == tuple(cast("Sequence[object]", other))
        return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._dims())

    def __repr__(self) -> str:
        return f"Shape({list(self._dims())!r})"
