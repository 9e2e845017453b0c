"""Fields of generated classes: descriptors that read and write object memory at reflected
offsets (or go through the registry's accessors), and the memory readers and writers they use.

``gen`` re-exports everything here; generated code reaches it as ``_gen.field(...)``,
``_gen.ReadOnlyField[...]``, and so on.
"""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, Callable, Generic, NoReturn, TypeVar, cast

from . import _core, _lib
from ._core import Object, _c_void_p
from ._fastpath import accel as _accel
from ._errors import (
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

__all__ = [
    "FIELD_KINDS",
    "IN_PLACE_FIELD_KINDS",
    "Field",
    "FieldAccess",
    "ReadOnlyField",
    "RegistryField",
    "UnboundField",
    "field",
    "read_any",
    "read_object",
    "registry_field",
    "write_bool",
    "write_f64",
    "write_i64",
]


def read_object(addr: int) -> Any:
    """The object an ``ObjectRef`` field at ``addr`` points to (None when null), read straight
    from memory: one reference is taken for the returned wrapper."""
    h = _c_void_p.from_address(addr).value
    if not h:
        return None
    _core._IncRef(h)
    return _core._wrap(h, _core._read_type_index(h))


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
    return _core.view_from_buffer(raw, 0)


_unpack_any = _lib.ANY_INT.unpack_from
_SMALL_STR = _core.TypeIndex.SMALL_STR
_STR = _core.TypeIndex.STR
_Any16 = ctypes.c_char * 16
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


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


from operator import index as _index  # noqa: E402

_i64_at = ctypes.c_int64.from_address
_f64_at = ctypes.c_double.from_address
_bool_at = ctypes.c_bool.from_address

_i32_at = ctypes.c_int32.from_address
_f32_at = ctypes.c_float.from_address


_G = TypeVar("_G")
_S = TypeVar("_S")


class FieldAccess:
    """Reads and writes one reflected field through the registry, resolved on first use."""

    __slots__ = ("type_key", "name", "_acc")

    def __init__(self, type_key: str, name: str) -> None:
        self.type_key = type_key
        self.name = name
        self._acc: Any = None

    def _resolve(self) -> Any:
        from .reflection import FieldAccessor

        self._acc = FieldAccessor(self.type_key, self.name)
        return self._acc

    def get(self, obj: Object) -> Any:
        acc = self._acc or self._resolve()
        return acc.get(obj)

    def set(self, obj: Object, value: object) -> None:
        acc = self._acc or self._resolve()
        try:
            acc.set(obj, value)
        except (TypeError, ValueError) as exc:
            raise _naming_field(exc, f"{self.type_key}.{self.name}") from exc.__cause__


def _naming_field(exc: BaseException, qualname: str) -> BaseException:
    """``exc`` of a field write, reworded to name the field (a message that names it is kept)."""
    if qualname in str(exc) or type(exc) not in (TypeError, ValueError, _core.ReleasedObjectError):
        return exc
    return naming_field(qualname, exc)


_FieldT = TypeVar("_FieldT", bound="ReadOnlyField[Any]")


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


#: How a field read from memory is laid out: int64, int32, double, float, bool, an ObjectRef
#: pointer, or a TVMFFIAny (Any, String, Bytes). The one table of field kinds: the generator's
#: layout rules and ``_accel.c``'s table (same order) are checked against it by
#: tests/runtime/test_runtime_layers.py.
FIELD_KINDS = ("i64", "i32", "f64", "f32", "bool", "object", "any")
#: The kinds a descriptor writes in place (what the registry setter would do); others go
#: through the registry setter.
IN_PLACE_FIELD_KINDS = ("i64", "f64", "bool")

_FIELD_READERS: dict[str, Callable[[int], Any]] = dict(
    zip(FIELD_KINDS, (_read_i64, _read_i32, _read_f64, _read_f32, _read_bool, read_object, read_any), strict=True)
)
_FIELD_WRITERS: dict[str, Callable[[int, Any], None]] = dict(
    zip(IN_PLACE_FIELD_KINDS, (write_i64, write_f64, write_bool), strict=True)
)


class ReadOnlyField(Generic[_G]):
    """A field of a generated class, read straight from object memory at its reflected offset.

    ``kind`` says how it is laid out: ``i64``, ``i32``, ``f64``, ``f32``, ``bool``, ``object``
    (an ObjectRef pointer) or ``any`` (a ``TVMFFIAny``: Any, String, Bytes). This is the
    pure-ctypes implementation; :func:`field` gives the compiled one when it is built, with
    the same behaviour. Generated classes annotate fields with this type (and :class:`Field`).
    """

    __slots__ = ("qualname", "kind", "offset", "_read", "_setter", "_doc")

    def __init__(
        self,
        qualname: str,
        kind: str,
        offset: int,
        setter: bool | Callable[[Object, object], None] | None = None,
        doc: str | Callable[[str], str] | None = None,
    ) -> None:
        if kind not in _FIELD_READERS:
            raise field_kind_error(qualname, kind)
        if setter is True and kind not in _FIELD_WRITERS:
            raise field_in_place_error(qualname, kind)
        self.qualname = qualname
        self.kind = kind
        self.offset = offset
        self._read = _FIELD_READERS[kind]
        self._setter = setter
        self._doc = doc

    def _documentation(self) -> str | None:
        doc = self._doc
        if callable(doc):
            doc = self._doc = doc(self.qualname)
        return doc

    # help() and inspect.getdoc() show the field's documentation (from the registry, on demand)
    __doc__ = property(_documentation)  # pyright: ignore[reportAssignmentType]

    def _address(self, obj: Any) -> int:
        if not isinstance(obj, Object):
            raise field_not_an_object_error(self.qualname, obj)
        h = obj._h
        if not h:
            raise field_released_error(self.qualname, obj)
        return h + self.offset

    if TYPE_CHECKING:
        # One signature, no overloads: IDEs (jedi) then complete a field's value with the
        # value's members, not the descriptor's. (Read on the class, a field is typed as its
        # value too; at run time it is the descriptor.)
        def __get__(self, obj: object, owner: Any = None) -> _G: ...

    else:

        def __get__(self, obj, owner=None):
            if obj is None:
                return self
            try:
                h = obj._h
            except AttributeError:
                h = 0
            if not h:
                self._address(obj)  # raises TypeError or ReleasedObjectError
            return self._read(h + self.offset)

    if not TYPE_CHECKING:  # a data descriptor at run time, read-only to the type checker

        def __set__(self, obj, value):
            setter = self._setter
            if setter is None:
                raise field_read_only_error(self.qualname)
            if setter is True:
                addr = self._address(obj)
                try:
                    _FIELD_WRITERS[self.kind](addr, value)
                except (TypeError, OverflowError) as exc:
                    raise naming_field(self.qualname, exc) from None
            else:
                setter(obj, value)  # the registry accessor refuses a released object itself

        def __delete__(self, obj):
            raise field_delete_error(self.qualname)

    if TYPE_CHECKING:
        # Read-only to the type checker: nothing can be assigned, even where the class has no
        # __slots__ (a user's subclass), as at run time. Generated classes also declare these
        # fields Final, so both checkers word the error as an assignment to a read-only name.
        def __set__(self, obj: Object, value: NoReturn) -> None: ...

    def __repr__(self) -> str:
        ro = ", read-only" if self._setter is None else ""
        return f"<field {self.qualname} ({self.kind}, offset {self.offset}{ro})>"


class Field(ReadOnlyField[_G], Generic[_G, _S]):
    # A writable field: reads give _G, writes take _S (see ReadOnlyField). No class docstring:
    # __doc__ is the field's documentation, as in ReadOnlyField.

    __slots__ = ()
    __doc__ = ReadOnlyField.__dict__["__doc__"]

    if TYPE_CHECKING:

        def __set__(self, obj: Object, value: _S) -> None: ...


def _ctypes_field(qualname: str, kind: str, offset: int, setter: Any, doc: Any) -> Any:
    return cast("Any", (ReadOnlyField if setter is None else Field)(qualname, kind, offset, setter, doc))


#: How a field descriptor is made, chosen once: the compiled ``_accel.Field`` when the fast
#: path is in use (same behaviour, same messages), else the ctypes classes above.
_new_field: Callable[[str, str, int, Any, Any], Any] = _ctypes_field if _accel is None else _accel.Field


def field(kind: str, offset: int, *, write: str | None = None, name: str | None = None) -> Any:
    """A field read from object memory: ``field(kind, offset)`` in a generated class body.

    ``kind`` is the layout (``i64``, ``i32``, ``f64``, ``f32``, ``bool``, ``object``, ``any``) and
    ``offset`` the byte offset in the object. The field learns its attribute name from the class
    (``name`` gives the registry name where it differs) and its type key from :func:`register`,
    which also checks the offset against the loaded library. ``write`` is None for a read-only
    field, ``"in_place"`` to store int64/double/bool values in memory (what the registry setter
    does), or ``"registry"`` to call the registry setter.
    """
    if not isinstance(kind, str) or not isinstance(offset, int):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"field(kind, offset): expected (str, int), got {_arg_types((kind, offset))}")
    return UnboundField(kind, offset, write, name)


def _arg_types(args: tuple[object, ...]) -> str:
    return f"({', '.join(type(a).__name__ for a in args)})"


def _bound_field(type_key: str, name: str, kind: str, offset: int, write: str | None) -> Any:
    """The runtime descriptor of field ``type_key.name``: compiled when built, else ctypes."""
    qualname = f"{type_key}.{name}"
    setter: Any = None
    if write == "in_place":
        setter = True
    elif write == "registry":
        setter = FieldAccess(type_key, name).set
    elif write is not None:
        raise ValueError(f"field {qualname}: write must be None, 'in_place' or 'registry', not {write!r}")
    return _new_field(qualname, kind, offset, setter, _field_doc)


def registry_field(write: bool = False, name: str | None = None) -> Any:
    """A field read (and, with ``write``, written) through the registry's accessors: for fields
    whose layout is not read from memory (Optional, Device, DataType, variants, ...). Bound by
    :func:`register` like :func:`field`."""
    return UnboundField(None, None, "registry" if write else None, name)


class RegistryField(property):
    """The descriptor of a field read and written through the registry (see
    :func:`registry_field`); typed, like :func:`field`'s, as :class:`ReadOnlyField` or
    :class:`Field` in generated classes. A property over the accessor's own methods: a read is
    one Python call, as fast as the generated property it replaces (faster: no wrapper)."""

    def __init__(self, type_key: str, name: str, writable: bool) -> None:
        self.qualname = f"{type_key}.{name}"
        access = FieldAccess(type_key, name)
        super().__init__(access.get, access.set if writable else self._read_only, self._no_delete)
        self._writable = writable

    def _read_only(self, obj: Object, value: Any) -> None:
        raise field_read_only_error(self.qualname)

    def _no_delete(self, obj: Object) -> None:
        raise field_delete_error(self.qualname)

    def _get_doc(self) -> str | None:
        doc = self.__dict__.get("_doc")
        if doc is None:
            doc = self.__dict__["_doc"] = _field_doc(self.qualname)
        return doc

    def _set_doc(self, value: str | None) -> None:
        pass  # property.__init__ stores the getter's doc; the registry's is shown instead

    # help() and inspect.getdoc() show the field's documentation (from the registry, on demand)
    __doc__ = property(_get_doc, _set_doc)  # pyright: ignore[reportAssignmentType] -- a per-instance doc

    def __repr__(self) -> str:
        return f"<field {self.qualname} (registry{'' if self._writable else ', read-only'})>"


class UnboundField:
    """A field declared in a class body, before :func:`register` binds it to its type.

    ``__set_name__`` records the class and attribute; ``register`` checks the offset against the
    library and puts the runtime descriptor (:class:`ReadOnlyField` or the compiled one, same
    speed as ever) in its place, so an instance never reads through this object.
    """

    __slots__ = ("kind", "offset", "write", "name", "owner", "attr")

    def __init__(
        self, kind: str | None, offset: int | None, write: str | None = None, name: str | None = None
    ) -> None:
        self.kind = kind  # None: through the registry (registry_field)
        self.offset = offset
        self.write = write
        self.name = name  # the registry name, when it differs from the attribute
        self.owner: type | None = None
        self.attr = ""

    def __set_name__(self, owner: type, attr: str) -> None:
        self.owner = owner
        self.attr = attr
        if self.name is None:
            self.name = attr

    def bind(self, type_key: str) -> object:
        """The runtime descriptor that takes this declaration's place in the class of ``type_key``."""
        assert self.name is not None, "bind() before __set_name__"
        if self.kind is None or self.offset is None:
            return RegistryField(type_key, self.name, self.write is not None)
        return _bound_field(type_key, self.name, self.kind, self.offset, self.write)

    def __get__(self, obj: object, owner: type | None = None) -> UnboundField:
        if obj is None:
            return self
        where = self.owner.__name__ if self.owner is not None else "?"
        raise TypeError(
            f"field {where}.{self.attr} is not bound to a type: decorate {where} with"
            " tvmffi_runtime.gen.register(type_key)"
        )

    def __repr__(self) -> str:
        where = "registry" if self.kind is None else f"{self.kind}, offset {self.offset}"
        return f"<unbound field {self.name} ({where})>"


def _field_doc(qualname: str) -> str:
    """Documentation of a field for ``help()``: the registry's doc of ``type_key.name``."""
    from .reflection import type_info

    type_key, _, name = qualname.rpartition(".")
    text = ""
    try:
        for f in type_info(type_key).fields:
            if f.name == name:
                text = f.doc.strip()
                break
    except Exception:  # noqa: BLE001 - documentation must never make attribute access fail
        pass
    line = f"Registry field: ``{qualname}``."
    return f"{text}\n\n{line}" if text else line
