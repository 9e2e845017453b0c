"""Dataclass habits for generated classes: :func:`fields` describes a class's fields, and
:func:`replace` makes a new object with some fields changed (what a generated class's
``replace`` and ``__replace__`` call).

Both read what ``bind.register`` recorded about the class (its field declarations, in order) and
the library's reflection registry (documentation, flags, schemas, defaults).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NoReturn, TypeVar, cast, get_args, get_origin

from ._call import Function, _kwargs_marker
from ._fields import FieldView
from ._object import Object, type_key_to_index

__all__ = ["FieldDescription", "fields", "replace", "KEEP", "replace_method"]

_O = TypeVar("_O", bound=Object)
_F = TypeVar("_F", bound=Callable[..., Any])


@dataclass(frozen=True)
class FieldDescription:
    """One field of a generated class, as :func:`fields` describes it."""

    #: the attribute name on the Python class
    name: str
    #: the Python type a read gives (the generated annotation, evaluated; the annotation's text
    #: where it names something that cannot be imported at run time)
    type: object
    #: the registry's type schema as JSON text (``'{"type": "int"}'``), "" when it gives none
    schema: str
    #: whether the library refuses writes (a read-only field is set only by a constructor)
    read_only: bool
    #: the registry's documentation of the field ("" when it has none)
    doc: str
    #: whether the native constructor has a default for it
    has_default: bool
    #: the name the registry knows the field by (differs from ``name`` where Python needs it to)
    registry_name: str
    #: the type key of the class that declares it
    owner: str


_CACHE: dict[type, tuple[FieldDescription, ...]] = {}


def fields(cls_or_obj: type[Object] | Object) -> tuple[FieldDescription, ...]:
    """The fields of a generated class (or of an object's class) in declaration order, the
    fields of ancestors first; a field a subclass declares again keeps its first position."""
    cls: type = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    cached = _CACHE.get(cls)
    if cached is not None:
        return cached
    if not issubclass(cls, Object):
        raise TypeError(f"fields() takes a generated class or one of its objects, not {cls.__qualname__}")
    by_attr: dict[str, FieldDescription] = {}
    for klass in reversed(cls.__mro__):
        declared = vars(klass).get("_ffi_fields")
        if not declared:
            continue
        type_key: str = vars(klass)["_type_key"]
        registry = _registry_fields(type_key)
        for attr, reg_name in declared:
            info = registry.get(reg_name)
            schema = _schema_text(None if info is None else info.type_schema)
            by_attr[attr] = FieldDescription(
                name=attr,
                type=_field_type(klass, attr),
                schema=schema,
                read_only=info is None or not info.writable,
                doc=info.doc.strip() if info is not None else "",
                has_default=info is not None and info.has_default,
                registry_name=reg_name,
                owner=type_key,
            )
    out = _CACHE[cls] = tuple(by_attr.values())
    return out


def _schema_text(schema: Any) -> str:
    if schema is None:
        return ""
    return schema if isinstance(schema, str) else json.dumps(schema)


def _registry_fields(type_key: str) -> dict[str, Any]:
    from .reflection import type_info

    return {f.name: f for f in type_info(type_key).fields}


def _field_type(klass: type, attr: str) -> Any:
    """The read type of ``klass``'s field ``attr``: its annotation (``Field[G, S]``,
    ``Final[ReadOnlyField[G]]``) evaluated, and ``G`` taken out of it."""
    text = vars(klass).get("__annotations__", {}).get(attr)
    if not isinstance(text, str):
        return _read_type(text)
    module = sys.modules.get(klass.__module__)
    namespace = _LazyModules(vars(module) if module is not None else {}, klass.__module__)
    try:
        value = eval(text, {"__builtins__": __builtins__}, namespace)  # generated annotation text
    except Exception:  # noqa: BLE001 - a name only a type checker sees: keep the text
        return _read_type_text(text)
    return _read_type(value)


def _read_type(annotation: Any) -> Any:
    if get_origin(annotation) is Final:
        annotation = get_args(annotation)[0]
    origin = get_origin(annotation)
    if isinstance(origin, type) and issubclass(origin, FieldView):
        return get_args(annotation)[0]
    return annotation


def _read_type_text(text: str) -> str:
    for prefix in ("_t.Final[_bind.ReadOnlyField[", "_bind.Field["):
        if text.startswith(prefix):
            inner = text[len(prefix) :]
            depth = 0
            for i, ch in enumerate(inner):
                if ch == "[":
                    depth += 1
                elif ch == "]" or (ch == "," and depth == 0):
                    if depth == 0:
                        return inner[:i].strip()
                    depth -= 1
    return text


class _LazyModules(dict[str, Any]):
    """A module's namespace that also finds the package modules a generated module imports for
    type checkers only (``_ffi_ns_a__b``: ``<package>.a.b``), importing them on use."""

    def __init__(self, namespace: dict[str, Any], module: str) -> None:
        super().__init__(namespace)
        self._module = module

    def __missing__(self, name: str) -> Any:
        if not name.startswith("_ffi_ns_"):
            raise KeyError(name)
        import importlib

        root = self._module
        while root and f"{root}._lib" not in sys.modules:
            root = root.rpartition(".")[0]
        if not root:
            raise KeyError(name)
        path = name[len("_ffi_ns_") :]
        target = root if path == "root_" else f"{root}.{path.replace('__', '.')}"
        return importlib.import_module(target)


class _Keep:
    """The default of a generated ``replace`` parameter: keep the field's value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "..."  # what help() shows: "a: int = ..."


#: the default of every parameter of a generated ``replace``. Typed as the bottom type, which
#: every parameter's type accepts (as ``Any`` would, without making the default an ``Any``)
KEEP: NoReturn = cast("NoReturn", _Keep())


def replace(obj: _O, /, **changes: object) -> _O:
    """A new object like ``obj`` with the fields named in ``changes`` set (``obj`` is unchanged).

    The new object is the library's shallow copy of ``obj`` with the changes written through
    the fields' setters, where every changed field is writable and the type can be copied; else
    it is built by the type's reflected auto-init from every field's value (the way the library
    sets read-only fields). A TypeError names a field that cannot be changed either way.
    """
    return _replace(obj, changes, "replace")


def _replace(obj: _O, changes: dict[str, Any], method: str) -> _O:
    cls = type(obj)
    name = f"{cls.__qualname__}.{method}()"
    described = {f.name: f for f in fields(cls)}
    for key in changes:
        if key not in described:
            raise TypeError(f"{name} got an unexpected keyword argument {key!r} ({obj.type_key} has no such field)")
    changes = {k: v for k, v in changes.items() if v is not KEEP}
    read_only = [k for k in changes if described[k].read_only]
    if not read_only:
        copied = _shallow_copy_or_none(obj)
        if copied is not None:
            for key, value in changes.items():
                setattr(copied, key, value)
            return copied
    return _rebuild(obj, name, described, changes, read_only)


def _shallow_copy_or_none(obj: _O) -> _O | None:
    from ._call import type_attr_value

    copier = type_attr_value(obj.type_index, "__ffi_shallow_copy__")
    if isinstance(copier, Function):
        return copier(obj)  # type: ignore[no-any-return]  # the same type
    return None


def _rebuild(
    obj: _O, name: str, described: dict[str, FieldDescription], changes: dict[str, Any], read_only: list[str]
) -> _O:
    """``obj``'s type built anew by its auto-init, every field from ``obj`` or ``changes``."""
    from .reflection import type_attr, type_info

    type_key = obj.type_key
    reason = (
        f"field {read_only[0]!r} is read-only"
        if read_only
        else f"{type_key} cannot be copied (it registers no __ffi_shallow_copy__)"
    )
    index = type_key_to_index(type_key)
    info = type_info(type_key)
    explicit = any(m.name == "__ffi_init__" for m in info.methods)
    init = None if explicit or index is None else type_attr(index, "__ffi_init__")
    if not isinstance(init, Function):
        raise TypeError(f"{name}: {reason}, and {type_key} has no reflected auto-init to build the changed object with")
    by_registry: dict[str, Any] = {}
    for attr, desc in described.items():
        by_registry[desc.registry_name] = changes[attr] if attr in changes else getattr(obj, attr)
    registry = [f for t in (*info.ancestors, type_key) for f in _registry_fields_or_empty(t).values()]
    skipped = [f.name for f in registry if not f.init and f.name in by_registry]
    if skipped:
        raise TypeError(
            f"{name}: {reason}, and {type_key}'s auto-init does not take field {skipped[0]!r} (a"
            " rebuilt object would lose its value)"
        )
    args: list[Any] = [_kwargs_marker()]  # the keyword protocol of reflected auto-init
    for f in registry:
        if f.name in by_registry:
            args += [f.name, by_registry[f.name]]
    try:
        made = init(*args)
    except TypeError as exc:
        # an inherited field registered after the type's auto-init was built is not one of its
        # parameters (Apache TVM's ir.PrimType and span): its value cannot be carried over
        taken = re.search(r"unexpected keyword argument '([^']*)'", str(exc))
        if taken is None or taken.group(1) not in by_registry:
            raise
        raise TypeError(
            f"{name}: {reason}, and {type_key}'s auto-init does not take field {taken.group(1)!r} (a"
            " rebuilt object would lose its value)"
        ) from exc
    if not isinstance(made, type(obj)):
        raise TypeError(f"{name}: {type_key}'s auto-init returned {type(made).__name__}, not {type(obj).__name__}")
    return made


def _registry_fields_or_empty(type_key: str) -> dict[str, Any]:
    try:
        return _registry_fields(type_key)
    except Exception:  # noqa: BLE001 - an ancestor without reflection (ffi.Object)
        return {}


def replace_method(f: _F) -> _F:
    """Decorator of a generated ``replace``: the def declares the typed keyword-only signature
    (every default :data:`KEEP`), :func:`replace` does the work."""
    name = f.__name__

    def method(self: Object, /, **changes: Any) -> Any:
        return _replace(self, changes, name)

    method.__name__ = name
    method.__qualname__ = f.__qualname__
    method.__module__ = f.__module__
    method.__doc__ = f.__doc__
    method.__wrapped__ = f  # type: ignore[attr-defined]  # inspect.signature shows the def's
    return method  # type: ignore[return-value]
