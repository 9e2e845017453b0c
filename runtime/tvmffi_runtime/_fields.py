"""Fields of generated classes: the types generated code annotates them with, the declarations
:func:`register` binds, and the descriptors it binds them to (the backend's ``Field``, reading
and writing object memory at reflected offsets, or the registry's accessors).

``bind`` re-exports everything here; generated code reaches it as ``_bind.field(...)``,
``_bind.ReadOnlyField[...]``, and so on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

from . import _errors
from ._backend import backend
from ._errors import field_delete_error, field_read_only_error, naming_field
from ._field_kinds import FIELD_KINDS, IN_PLACE_FIELD_KINDS
from ._object import Object

__all__ = [
    "FIELD_KINDS",
    "IN_PLACE_FIELD_KINDS",
    "Field",
    "FieldAccess",
    "ReadOnlyField",
    "RegistryField",
    "UnboundField",
    "field",
    "registry_field",
]


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
    if qualname in str(exc) or type(exc) not in (TypeError, ValueError, _errors.ReleasedObjectError):
        return exc
    return naming_field(qualname, exc)


class FieldView(Generic[_G]):
    """What both field annotations share: a field of a generated class read straight from object
    memory at its reflected offset, as ``_G``. Generated classes annotate fields with
    :class:`ReadOnlyField` or :class:`Field`; at run time the descriptor is the backend's
    ``Field`` (``_accel.Field`` or ``_pure.fields.Field``, the same behaviour and messages), made
    by :func:`register` from :func:`field`.
    """

    __slots__ = ()

    if TYPE_CHECKING:
        qualname: str
        kind: str
        offset: int

        # One signature, no overloads: IDEs (jedi) then complete a field's value with the
        # value's members, not the descriptor's. (Read on the class, a field is typed as its
        # value too; at run time it is the descriptor.)
        def __get__(self, obj: object, owner: Any = None) -> _G: ...


class ReadOnlyField(FieldView[_G]):
    """The type of a read-only field. Generated classes declare such fields ``Final``, which is
    what both checkers report at an assignment, in a user's subclass too."""

    __slots__ = ()

    if TYPE_CHECKING:
        # Accepts the value's type so that mypy reports an assignment once (to a Final name), not
        # a second time as an incompatible value; being a data descriptor, pyright words the
        # error as the Final name's.
        def __set__(self, obj: Object, value: _G) -> None: ...


class Field(FieldView[_G], Generic[_G, _S]):
    """The type of a writable field: reads give ``_G``, writes take ``_S``."""

    __slots__ = ()

    if TYPE_CHECKING:

        def __set__(self, obj: Object, value: _S) -> None: ...


@overload
def field(kind: str, offset: int, *, write: None = None, name: str | None = None) -> ReadOnlyField[Any]: ...
@overload
def field(kind: str, offset: int, *, write: str, name: str | None = None) -> Field[Any, Any]: ...
def field(
    kind: str, offset: int, *, write: str | None = None, name: str | None = None
) -> ReadOnlyField[Any] | Field[Any, Any]:
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
    # typed as what register makes of it, so a class body's annotation (Field[int, int], ...) holds
    return cast("ReadOnlyField[Any] | Field[Any, Any]", UnboundField(kind, offset, write, name))


def _arg_types(args: tuple[object, ...]) -> str:
    return f"({', '.join(type(a).__name__ for a in args)})"


def _bound_field(type_key: str, name: str, kind: str, offset: int, write: str | None) -> Any:
    """The runtime descriptor of field ``type_key.name``: the backend's ``Field``."""
    qualname = f"{type_key}.{name}"
    setter: Any = None
    if write == "in_place":
        setter = True
    elif write == "registry":
        setter = FieldAccess(type_key, name).set
    elif write is not None:
        raise ValueError(f"field {qualname}: write must be None, 'in_place' or 'registry', not {write!r}")
    return backend.Field(qualname, kind, offset, setter, _field_doc)


@overload
def registry_field(write: Literal[False] = False, name: str | None = None) -> ReadOnlyField[Any]: ...
@overload
def registry_field(write: Literal[True], name: str | None = None) -> Field[Any, Any]: ...
def registry_field(write: bool = False, name: str | None = None) -> ReadOnlyField[Any] | Field[Any, Any]:
    """A field read (and, with ``write``, written) through the registry's accessors: for fields
    whose layout is not read from memory (Optional, Device, DataType, variants, ...). Bound by
    :func:`register` like :func:`field`."""
    return cast("ReadOnlyField[Any] | Field[Any, Any]", UnboundField(None, None, "registry" if write else None, name))


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
    library and puts the runtime descriptor (the backend's ``Field``, same
    speed as ever) in its place, so an instance never reads through this object.
    """

    __slots__ = ("kind", "offset", "write", "name", "owner", "attr")

    def __init__(self, kind: str | None, offset: int | None, write: str | None = None, name: str | None = None) -> None:
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
            " tvmffi_runtime.bind.register(type_key)"
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
