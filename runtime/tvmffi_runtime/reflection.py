"""Read the TVM FFI registry: types (parent chain, fields, methods, metadata, attributes) and
global functions. The generator builds its snapshot from this layer only.

Everything returned is plain data (dataclasses of str/int/bool), except default values and
attribute values, which are converted Python values.
"""

from __future__ import annotations

import ctypes
import json
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from . import _call, _convert, _lib, _object
from ._errors import _check, field_released_error
from ._field_kinds import FieldFlag
from ._lib import ObjectIncRef as _IncRef
from ._object import Object, _wrap
from ._values import TypeIndex

__all__ = [
    "JSON",
    "FieldFlag",
    "FieldInfo",
    "MethodInfo",
    "TypeInfo",
    "list_type_keys",
    "type_info",
    "list_global_functions",
    "global_function_metadata",
    "type_attr",
    "FieldAccessor",
    "get_field",
    "set_field",
]


def _text(ba: _lib.TVMFFIByteArray) -> str:
    return _lib.read_byte_array(ba).decode("utf-8", "replace")


#: A parsed JSON value (what member metadata holds).
JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"


def _json_or_none(text: str) -> JSON:
    if not text:
        return None
    try:
        value: JSON = json.loads(text)
    except ValueError:
        return None
    return value


@dataclass(frozen=True)
class FieldInfo:
    """One reflected field of a type."""

    name: str
    doc: str
    flags: int
    size: int
    alignment: int
    offset: int
    static_type_index: int
    metadata: JSON = None
    has_default: bool = False
    default: object = None
    default_is_factory: bool = False

    @property
    def writable(self) -> bool:
        return bool(self.flags & FieldFlag.WRITABLE)

    @property
    def kw_only(self) -> bool:
        return bool(self.flags & FieldFlag.KW_ONLY)

    @property
    def init(self) -> bool:
        return not self.flags & FieldFlag.INIT_OFF

    @property
    def type_schema(self) -> JSON:
        """The field's type schema (``{"type": ..., "args": [...]}``) if the registry has one."""
        return _type_schema(self.metadata)


@dataclass(frozen=True)
class MethodInfo:
    """One reflected method of a type."""

    name: str
    doc: str
    flags: int
    metadata: JSON = None

    @property
    def is_static(self) -> bool:
        return bool(self.flags & FieldFlag.IS_STATIC_METHOD)

    @property
    def type_schema(self) -> JSON:
        """The method's type schema (``{"type": ..., "args": [...]}``) if the registry has one."""
        return _type_schema(self.metadata)


def _type_schema(metadata: JSON) -> JSON:
    """The ``type_schema`` entry of a member's metadata; None when the metadata is not a JSON object."""
    if isinstance(metadata, dict):
        return metadata.get("type_schema")
    return None


@dataclass(frozen=True)
class TypeInfo:
    """A registered type: its key, index, parent chain, fields and methods."""

    type_key: str
    type_index: int
    ancestors: tuple[str, ...]
    fields: tuple[FieldInfo, ...]
    methods: tuple[MethodInfo, ...]
    doc: str = ""
    total_size: int = 0
    structural_eq_hash_kind: int = 0
    has_creator: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def parent(self) -> str | None:
        return self.ancestors[-1] if self.ancestors else None


def _any_view_value(any_: _lib.TVMFFIAny) -> Any:
    raw = ctypes.string_at(ctypes.addressof(any_), 16)
    return _convert.view_from_buffer(raw, 0)


def _read_type_info(ptr: Any) -> TypeInfo:
    ti = ptr.contents
    ancestors = tuple(_text(ti.type_ancestors[i].contents.type_key) for i in range(ti.type_depth))
    fields: list[FieldInfo] = []
    for i in range(ti.num_fields):
        f = ti.fields[i]
        has_default = bool(f.flags & FieldFlag.HAS_DEFAULT)
        default: object = None
        if has_default:
            try:
                default = _any_view_value(f.default_value_or_factory)
            except Exception:  # noqa: BLE001 - a default native code cannot give: None
                default = None
        fields.append(
            FieldInfo(
                name=_text(f.name),
                doc=_text(f.doc),
                flags=int(f.flags),
                size=int(f.size),
                alignment=int(f.alignment),
                offset=int(f.offset),
                static_type_index=int(f.field_static_type_index),
                metadata=_json_or_none(_text(f.metadata)),
                has_default=has_default,
                default=default,
                default_is_factory=bool(f.flags & FieldFlag.DEFAULT_FROM_FACTORY),
            )
        )
    methods: list[MethodInfo] = []
    for i in range(ti.num_methods):
        m = ti.methods[i]
        methods.append(
            MethodInfo(
                name=_text(m.name),
                doc=_text(m.doc),
                flags=int(m.flags),
                metadata=_json_or_none(_text(m.metadata)),
            )
        )
    doc, total_size, kind, has_creator = "", 0, 0, False
    if ti.metadata:
        md = ti.metadata.contents
        doc = _text(md.doc)
        total_size = int(md.total_size)
        kind = int(md.structural_eq_hash_kind)
        has_creator = bool(md.creator)
    return TypeInfo(
        type_key=_text(ti.type_key),
        type_index=int(ti.type_index),
        ancestors=ancestors,
        fields=tuple(fields),
        methods=tuple(methods),
        doc=doc,
        total_size=total_size,
        structural_eq_hash_kind=kind,
        has_creator=has_creator,
    )


def type_info(type_key_or_index: str | int) -> TypeInfo:
    """TypeInfo of a registered type, by key or index; KeyError if unknown."""
    if isinstance(type_key_or_index, str):
        index = _object.type_key_to_index(type_key_or_index)
        if index is None:
            raise KeyError(f"type key {type_key_or_index!r} is not registered")
    else:
        index = type_key_or_index
    ptr = _lib.GetTypeInfo(index)
    if not ptr:
        raise KeyError(f"type index {index} is not registered")
    return _read_type_info(ptr)


def _global(name: str) -> _call.Function:
    return _call.global_func(name)


def list_type_keys() -> list[str]:
    """Every registered type key, in registration order."""
    return [str(k) for k in _global("ffi.GetRegisteredTypeKeys")()]


def list_global_functions() -> list[str]:
    """Every registered global function name (sorted)."""
    functor = _global("ffi.FunctionListGlobalNamesFunctor")()
    n = functor(-1)
    return sorted(str(functor(i)) for i in range(n))


def global_function_metadata(name: str) -> dict[str, Any]:
    """Metadata of a global function (its ``type_schema``, ``doc``...) as a dict; {} if none."""
    try:
        raw = _global("ffi.GetGlobalFuncMetadata")(name)
    except Exception:  # noqa: BLE001 - no metadata to read: {}
        return {}
    if raw is None:
        return {}
    if isinstance(raw, str):
        value = _json_or_none(str(raw))
        return value if isinstance(value, dict) else {}
    return cast("dict[str, Any]", raw) if isinstance(raw, dict) else {}


#: Type attribute columns readers commonly want.
KNOWN_TYPE_ATTRS = (
    "__ffi_init__",
    "__ffi_new__",
    "__ffi_enum__",
    "__ffi_convert__",
    "__ffi_convert_type_schema__",
    "__ffi_shallow_copy__",
    "__ffi_type_final__",
    "__ffi_repr__",
)


def type_attr(type_index: int, name: str) -> Any:
    """Value of type attribute ``name`` for a type index (no inheritance), or None."""
    return _call.type_attr_value(type_index, name)


# ---------------------------------------------------------------------------------------------
# Field access
# ---------------------------------------------------------------------------------------------
_GETTER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_SETTER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
# POD fields read straight from object memory: (static type index, size) -> ctypes type
_POD_FIELDS: dict[tuple[int, int], Any] = {
    (TypeIndex.INT, 8): ctypes.c_int64,
    (TypeIndex.INT, 4): ctypes.c_int32,
    (TypeIndex.INT, 2): ctypes.c_int16,
    (TypeIndex.INT, 1): ctypes.c_int8,
    (TypeIndex.FLOAT, 8): ctypes.c_double,
    (TypeIndex.FLOAT, 4): ctypes.c_float,
    (TypeIndex.BOOL, 1): ctypes.c_bool,
}


class FieldAccessor:
    """Get and set one reflected field through the registry's getter and setter.

    ``pod`` is the ctypes type when the field is a plain int/float/bool whose value can be read
    straight from the object's memory at ``offset``.
    """

    __slots__ = ("type_key", "name", "offset", "getter", "setter", "setter_is_function", "pod", "_keep")

    def __init__(self, type_key: str, name: str) -> None:
        index = _object.type_key_to_index(type_key)
        if index is None:
            raise KeyError(f"type key {type_key!r} is not registered")
        ptr = _lib.GetTypeInfo(index)
        while ptr:
            ti = ptr.contents
            for i in range(ti.num_fields):
                f = ti.fields[i]
                if _text(f.name) == name:
                    self.type_key = type_key
                    self.name = name
                    self.offset = int(f.offset)
                    self.getter = _GETTER(f.getter) if f.getter else None
                    self.setter_is_function = bool(f.flags & FieldFlag.SETTER_IS_FUNCTION_OBJ)
                    self.setter: Any = None
                    if f.setter:
                        if self.setter_is_function:
                            _IncRef(f.setter)
                            self.setter = _wrap(f.setter, TypeIndex.FUNCTION)
                        else:
                            self.setter = _SETTER(f.setter)
                    self.pod = _POD_FIELDS.get((int(f.field_static_type_index), int(f.size)))
                    self._keep = ti
                    return
            if ti.type_depth == 0:
                break
            ptr = ti.type_ancestors[ti.type_depth - 1]
        raise AttributeError(f"type {type_key!r} has no field {name!r}")

    def _address(self, obj: Object) -> int:
        """Where the field of ``obj`` is; a wrapper that holds no reference is refused (the
        registry's getter and setter would touch address ``offset``)."""
        h = obj._h
        if not h:
            raise field_released_error(f"{self.type_key}.{self.name}", obj)
        return h + self.offset

    def get(self, obj: Object) -> Any:
        """Read the field of ``obj``."""
        addr = self._address(obj)
        if self.pod is not None:
            return self.pod.from_address(addr).value
        if self.getter is None:
            raise AttributeError(f"{self.type_key}.{self.name} has no getter")
        out = (ctypes.c_char * 16)()
        _check(self.getter(addr, ctypes.addressof(out)))
        return _convert.owned_from_buffer(out, 0)

    def set(self, obj: Object, value: object) -> None:
        """Write the field of ``obj`` (conversion and checks done by the registry's setter)."""
        if self.setter is None:
            raise AttributeError(f"{self.type_key}.{self.name} has no setter")
        addr = self._address(obj)
        if self.setter_is_function:
            self.setter(ctypes.c_void_p(addr), value)
            return
        buf = (ctypes.c_char * 16)()
        temps: list[Any] = []
        try:
            _convert.pack_value(buf, 0, value, temps)
            _check(self.setter(addr, ctypes.addressof(buf)))
        finally:
            _convert.release_temps(temps)


_ACCESSORS: dict[tuple[int, str], FieldAccessor] = {}


def _accessor(obj: Object, name: str) -> FieldAccessor:
    key = (obj._t, name)
    acc = _ACCESSORS.get(key)
    if acc is None:
        acc = _ACCESSORS[key] = FieldAccessor(obj.type_key, name)
    return acc


def get_field(obj: Object, name: str) -> Any:
    """Read field ``name`` of ``obj`` by reflection."""
    return _accessor(obj, name).get(obj)


def set_field(obj: Object, name: str, value: object) -> None:
    """Write field ``name`` of ``obj`` by reflection."""
    _accessor(obj, name).set(obj, value)
