"""_pure/fields.py: the field descriptor of generated classes, reading and writing object
memory at a reflected offset, and the memory readers and writers it uses (the twin of
``_accel_parts/fields.h``; ``_field_kinds`` is the one table of the kinds)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from operator import index as _index
from typing import Any

from .. import _lib
from .._errors import (
    field_delete_error,
    field_in_place_error,
    field_kind_error,
    field_not_an_object_error,
    field_read_only_error,
    field_released_error,
    int64_overflow_error,
    naming_field,
    value_type_error,
)
from .._field_kinds import FIELD_KINDS, IN_PLACE_FIELD_KINDS
from .._values import TypeIndex
from .objects import ObjectBase

__all__ = ["Field", "connect", "read_any", "read_object", "write_bool", "write_f64", "write_i64"]

_c_void_p = ctypes.c_void_p
_IncRef = _lib.ObjectIncRef
_unpack_any = _lib.ANY_INT.unpack_from
_SMALL_STR, _STR = TypeIndex.SMALL_STR, TypeIndex.STR
_Any16 = ctypes.c_char * 16
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_i64_at = ctypes.c_int64.from_address
_f64_at = ctypes.c_double.from_address
_bool_at = ctypes.c_bool.from_address
_i32_at = ctypes.c_int32.from_address
_f32_at = ctypes.c_float.from_address


def _not_connected(*args: Any) -> Any:
    raise RuntimeError("tvmffi_runtime: the pure backend is used before init() (import tvmffi_runtime)")


# What init() hands over from the layers above (the names of _wiring.BACKEND_HELPERS)
_wrap: Callable[[int, int], Any] = _not_connected
_view: Callable[[Any, int], Any] = _not_connected


def connect(hooks: Any) -> None:
    """Take the Python helpers this part calls from ``_wiring.BACKEND_HELPERS``."""
    global _wrap, _view
    _wrap, _view = hooks.wrap, hooks.view_from_buffer


def read_object(addr: int) -> Any:
    """The object an ``ObjectRef`` field at ``addr`` points to (None when null), read straight
    from memory: one reference is taken for the returned wrapper."""
    h = _c_void_p.from_address(addr).value
    if not h:
        return None
    _IncRef(h)
    return _wrap(h, _i32_at(h + 8).value)


def read_any(addr: int) -> Any:
    """The value of a field laid out as a ``TVMFFIAny`` (``Any``, ``String``, ``Bytes``).

    Strings are read in place (inline small strings, or the String object's bytes, borrowed
    while the owning object is alive); everything else is converted like a call argument.
    """
    raw = _Any16.from_address(addr)
    tindex, small_len, value = _unpack_any(raw, 0)
    if tindex == _SMALL_STR:
        return raw.raw[8 : 8 + small_len].decode("utf-8", "surrogateescape")
    if tindex == _STR:
        cell = _lib.TVMFFIByteArray.from_address(value + _lib.OBJECT_HEADER_SIZE)
        return ctypes.string_at(cell.data, cell.size).decode("utf-8", "surrogateescape") if cell.size else ""
    return _view(raw, 0)


def write_i64(addr: int, value: int) -> None:
    """Store an int field in place (what its registry setter does), refusing what does not fit."""
    if type(value) is not int:
        value = _as_index(value, "i64")
    if not _I64_MIN <= value <= _I64_MAX:
        raise int64_overflow_error(value)
    _i64_at(addr).value = value


def write_f64(addr: int, value: float) -> None:
    """Store a float field in place; ints are accepted, other types are a TypeError."""
    if type(value) is not float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise value_type_error("f64", value)
        value = float(value)
    _f64_at(addr).value = value


def write_bool(addr: int, value: bool) -> None:
    """Store a bool field in place. It accepts what the native bool conversion (and so a bool
    argument) accepts: a bool, or an int (non-zero is true)."""
    if type(value) is not bool:
        value = bool(_as_index(value, "bool"))
    _bool_at(addr).value = value


def _as_index(value: Any, kind: str) -> int:
    try:
        return _index(value)
    except TypeError:
        raise value_type_error(kind, value) from None


def _read_i64(addr: int) -> int:
    return _i64_at(addr).value


def _read_i32(addr: int) -> int:
    return _i32_at(addr).value


def _read_f64(addr: int) -> float:
    return _f64_at(addr).value


def _read_f32(addr: int) -> float:
    return _f32_at(addr).value


def _read_bool(addr: int) -> bool:
    return _bool_at(addr).value


_READERS: dict[str, Callable[[int], Any]] = {
    "i64": _read_i64, "i32": _read_i32, "f64": _read_f64, "f32": _read_f32, "bool": _read_bool,
    "object": read_object, "any": read_any,
}  # fmt: skip
_WRITERS: dict[str, Callable[[int, Any], None]] = {"i64": write_i64, "f64": write_f64, "bool": write_bool}
assert tuple(_READERS) == FIELD_KINDS and tuple(_WRITERS) == IN_PLACE_FIELD_KINDS, "_field_kinds changed"


class Field:
    """A field of a generated class, read straight from object memory at its reflected offset.

    ``kind`` says how it is laid out (one of :data:`FIELD_KINDS`); ``setter`` is None for a
    read-only field, True to write in place (``IN_PLACE_FIELD_KINDS``), or a callable
    ``setter(obj, value)`` (the registry accessor); ``doc`` is the documentation, or a callable
    that makes it from the qualified name on first ``help()``.
    """

    __slots__ = ("qualname", "kind", "offset", "_read", "_setter", "_doc")

    def __init__(self, qualname: str, kind: str, offset: int, setter: Any = None, doc: Any = None) -> None:
        if kind not in _READERS:
            raise field_kind_error(qualname, kind)
        if setter is True and kind not in _WRITERS:
            raise field_in_place_error(qualname, kind)
        self.qualname = qualname
        self.kind = kind
        self.offset = offset
        self._read = _READERS[kind]
        self._setter = setter
        self._doc = doc

    def _documentation(self) -> str | None:
        doc = self._doc
        if callable(doc):
            doc = self._doc = doc(self.qualname)
        return doc  # type: ignore[no-any-return]

    # help() and inspect.getdoc() show the field's documentation (from the registry, on demand)
    __doc__ = property(_documentation)  # pyright: ignore[reportAssignmentType]

    def _address(self, obj: Any) -> int:
        if not isinstance(obj, ObjectBase):
            raise field_not_an_object_error(self.qualname, obj)
        h = obj._h
        if not h:
            raise field_released_error(self.qualname, obj)
        return h + self.offset

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        try:
            h = obj._h
        except AttributeError:
            h = 0
        if not h:
            self._address(obj)  # raises TypeError or ReleasedObjectError
        return self._read(h + self.offset)

    def __set__(self, obj: Any, value: Any) -> None:
        setter = self._setter
        if setter is None:
            raise field_read_only_error(self.qualname)
        if setter is True:
            addr = self._address(obj)
            try:
                _WRITERS[self.kind](addr, value)
            except (TypeError, OverflowError) as exc:
                raise naming_field(self.qualname, exc) from None
        else:
            setter(obj, value)  # pyright: ignore[reportCallIssue]  (a callable: the registry accessor, which refuses a released object itself)

    def __delete__(self, obj: Any) -> None:
        raise field_delete_error(self.qualname)

    def __repr__(self) -> str:
        ro = ", read-only" if self._setter is None else ""
        return f"<field {self.qualname} ({self.kind}, offset {self.offset}{ro})>"
