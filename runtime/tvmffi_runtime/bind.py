"""What a generated package declares its bindings with (imported there as ``_bind``): classes
bound to their type keys (``@_bind.register``), their fields (``_bind.field``,
``_bind.registry_field``), constructors, enum entries, native functions and methods
(``@_bind.registry_function`` ...), dispatch bases, and (from ``_packages``) library loading and
lazy class registration.

Generated code calls only what is here and the public runtime classes, so the generated text
stays small and the hot paths stay in one place.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar, cast

from . import _call, _errors, _object
from ._api_level import API_LEVEL, FIELDS_CLASS
from ._backend import backend
from ._call import _INITS, ffi_init
from ._errors import no_init_in_library_error, not_constructible_error
from ._fields import (
    IN_PLACE_FIELD_KINDS,
    Field,
    FieldAccess,
    ReadOnlyField,
    RegistryField,
    UnboundField,
    field,
    registry_field,
)
from ._functions import (
    GlobalFunction,
    ModuleFunction,
    TypeMethod,
    exported_function,
    registry_function,
    registry_method,
)
from ._object import Object, type_key_to_index
from ._packages import (
    find_package_library,
    load_package_library,
    load_package_module,
    loaded_library_of,
    register_lazy_types,
)
from .records import KEEP, replace_method
from .structural import UNCHANGED, default_hook

__all__ = [
    "API_LEVEL",
    "IN_PLACE_FIELD_KINDS",
    "NATIVE_DEFAULT",
    "KEEP",
    "replace_method",
    "GlobalFunction",
    "TypeMethod",
    "registry_function",
    "registry_method",
    "exported_function",
    "FieldAccess",
    "RegistryField",
    "registry_field",
    "Field",
    "ReadOnlyField",
    "field",
    "UnboundField",
    "dispatch_base",
    "construct",
    "construct_auto",
    "not_constructible",
    "register",
    "enum_entry",
    "load_package_library",
    "find_package_library",
    "load_package_module",
    "ModuleFunction",
    "register_lazy_types",
]


class _NativeDefault:
    """Marks an argument the caller did not give: the native side applies the default.

    It shows as ``...`` (in ``inspect.signature``, ``help()``): a default the registry has but
    cannot spell as a Python literal (a factory, an object)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "..."


#: the default of an auto-init parameter whose native default has no Python literal: typed as the
#: bottom type, which every parameter's type accepts (see records.KEEP)
NATIVE_DEFAULT: NoReturn = cast("NoReturn", _NativeDefault())


def _init_entry(type_key: str) -> tuple[int, str]:
    """The constructor of ``type_key`` (after a miss in the cache, ``_call._INITS``)."""
    entry = ffi_init(type_key)
    if entry is None:
        raise no_init_in_library_error(type_key)
    return entry


_construct_into = backend.construct


def construct(self: Object, type_key: str, args: tuple[Any, ...]) -> None:
    """Initialise ``self`` with the type's ``__ffi_init__`` called on positional ``args``."""
    try:  # a subscript in try, not ".get(k) or miss(k)": the faster lookup (benchmarks/README.md)
        handle, name = _INITS[type_key]
    except KeyError:
        handle, name = _init_entry(type_key)
    _construct_into(self, handle, args, name, type_key)


def construct_auto(self: Object, type_key: str, named: tuple[tuple[str, Any], ...]) -> None:
    """Initialise ``self`` through reflected auto-init: every argument by name (KWARGS protocol);
    arguments left as ``NATIVE_DEFAULT`` are not passed, so the native defaults apply."""
    args: list[Any] = [_call._kwargs_marker()]
    for key, value in named:
        if value is not NATIVE_DEFAULT:
            args.append(key)
            args.append(value)
    try:
        handle, name = _INITS[type_key]
    except KeyError:
        handle, name = _init_entry(type_key)
    try:
        _construct_into(self, handle, tuple(args), name, type_key)
    except (TypeError, ValueError) as exc:
        raise _auto_argument_error(self, type_key, named, args, exc) from exc.__cause__


def _auto_argument_error(
    self: Object, type_key: str, named: tuple[tuple[str, Any], ...], args: list[Any], exc: BaseException
) -> BaseException:
    """``exc`` reworded to name the parameter the caller wrote, not the slot of the packed
    keyword call (``[marker, key, value, ...]``) the runtime saw."""
    slot = getattr(exc, "ffi_argument", None)
    if slot is None:
        # the value converted to an FFI value but not to the field's type: the native init's
        # message names the field only ("T.__ffi_init__() field 'x': Cannot convert ...")
        native = _NATIVE_FIELD_ERROR.match(str(exc))
        keys = [k for k, _ in named]
        if native is None or native["field"] not in keys:
            return exc
        what = _argument_words(self, type_key, native["field"], keys)
        return TypeError(f"{type_key}.__init__: {what}: {native['detail']}")
    if slot < 2 or slot % 2:
        return exc  # not an argument conversion
    key = args[slot - 1]
    what = _argument_words(self, type_key, key, [k for k, _ in named])
    value = args[slot]
    detail = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
    if isinstance(exc, _errors.ReleasedObjectError):
        return _errors.ReleasedObjectError(f"{type_key}.__init__: {what}: {_errors._released_object_error(value)}")
    return TypeError(
        f"{type_key}.__init__: {what} has type {type(value).__name__}, which cannot be converted"
        f" to a TVM FFI value{detail}"
    )


_NATIVE_FIELD_ERROR = re.compile(r"\S*__ffi_init__\(\) field '(?P<field>[^']*)':\s*(?P<detail>.*)", re.S)


def _argument_words(self: Object, type_key: str, key: str, keys: list[str]) -> str:
    """How an error names the argument ``key``: by name and position, or as keyword-only."""
    if _keyword_only(self, type_key, key):
        return f"keyword argument {key!r}"
    return f"argument {key!r} (position {keys.index(key)})"


def _keyword_only(self: Object, type_key: str, key: str) -> bool:
    """Whether the generated ``__init__`` of ``type_key`` takes ``key`` as keyword-only."""
    import inspect

    for klass in type(self).__mro__:
        if getattr(klass, "_type_key", None) == type_key and "__init__" in vars(klass):
            param = inspect.signature(vars(klass)["__init__"]).parameters.get(key)
            return param is not None and param.kind is inspect.Parameter.KEYWORD_ONLY
    return False


def not_constructible(self: Object, type_key: str) -> NoReturn:
    raise not_constructible_error(type(self).__name__, type_key)


_ClsT = TypeVar("_ClsT", bound=type)


def _refuse_new(cls: type, *args: Any, **kwargs: Any) -> NoReturn:
    raise not_constructible_error(cls.__name__, getattr(cls, "_type_key", "?"))


def _plain_new(cls: type[Any], *args: Any, **kwargs: Any) -> Any:
    return object.__new__(cls)


class _InitSignature:
    """``cls.__signature__`` for classes whose ``__new__`` takes anything: the signature of the
    class's ``__init__`` without ``self`` (what ``help()``, IDEs and ``inspect`` should show)."""

    def __get__(self, obj: object, owner: type) -> Any:
        import inspect

        if obj is not None:
            raise AttributeError("__signature__")  # instances are not callable
        sig = inspect.signature(getattr(owner, "__init__"))  # the class's, not an instance's
        return sig.replace(parameters=list(sig.parameters.values())[1:])


def register(type_key: str, constructible: bool = True) -> Callable[[_ClsT], _ClsT]:
    """Register a generated class for ``type_key``; check that fields read straight from memory
    are still where the package was generated to look (else the package is stale).

    The class's :func:`field` declarations are bound here: each offset is checked, then the
    field's runtime descriptor takes the declaration's place. The declarations are read from the
    class's nested ``__fields`` class (which is then removed) or, in packages generated before
    it, from the class body itself.

    A class that is not ``constructible`` refuses construction with a TypeError naming the type
    (the runtime itself makes wrappers without calling the class)."""
    index = type_key_to_index(type_key)
    if index is None:
        raise ImportError(
            f"type {type_key!r} is not registered by {loaded_library_of(type_key)}; the generated"
            " package is out of date for it (regenerate it with tvmffi-gen)"
        )
    registrar = _object.register_object(type_key)

    def decorate(cls: _ClsT) -> _ClsT:
        declared = _declared_fields(cls)
        # the fields in declaration order, (attribute, registry name), for records.fields()
        cls._ffi_fields = tuple((a, f.name or a) for a, f in declared.items())  # type: ignore[attr-defined]
        if declared:
            in_memory = {f.name or a: f.offset for a, f in declared.items() if f.offset is not None}
            if in_memory:
                _check_offsets(type_key, index, in_memory)
            for attr, unbound in declared.items():
                setattr(cls, attr, unbound.bind(type_key))
        if not constructible:
            cls.__new__ = _refuse_new  # type: ignore[assignment]
        elif any(getattr(b, "__new__", None) is _refuse_new for b in cls.__mro__[1:]):
            cls.__new__ = _plain_new  # type: ignore[assignment]
            # inspect.signature would report this __new__'s (*args, **kwargs): show __init__'s
            cls.__signature__ = _InitSignature()  # type: ignore[attr-defined]
        init = vars(cls).get("__init__")
        if init is not None and "construct_auto" in getattr(init, "__code__", _NO_CODE).co_names:
            _omitted_arguments_are_not_sent(init)
        registered = registrar(cls)
        from .enums import Enum, intern_entries

        if issubclass(cls, Enum):
            intern_entries(cls)
        return registered

    return decorate


_NO_CODE = (lambda: None).__code__


def _declared_fields(cls: type) -> dict[str, UnboundField]:
    """The fields ``cls`` declares, by attribute in declaration order: those of its nested
    ``FIELDS_CLASS`` (each now named for ``cls``, its annotation now ``cls``'s; the nested class
    is removed), then any in its own body."""
    declared: dict[str, UnboundField] = {}
    stem = cls.__name__.lstrip("_")
    mangled = f"_{stem}{FIELDS_CLASS}" if stem else FIELDS_CLASS  # as Python names it in the body
    nested = vars(cls).get(mangled)
    if isinstance(nested, type):
        annotations: dict[str, Any] = getattr(nested, "__annotations__", {})
        for attr, value in vars(nested).items():
            if isinstance(value, UnboundField):
                value.__set_name__(cls, attr)
                declared[attr] = value
                if attr in annotations:  # what records.fields() and get_type_hints() read
                    cls.__annotations__[attr] = annotations[attr]
        delattr(cls, mangled)
    declared.update((a, v) for a, v in vars(cls).items() if isinstance(v, UnboundField))
    return declared


def _omitted_arguments_are_not_sent(init: Any) -> None:
    """Make an auto-init ``__init__`` pass ``NATIVE_DEFAULT`` for each argument the caller omits,
    so ``construct_auto`` leaves it out and the native default applies (also where the library's
    default changed since generation). Its signature still shows the registry's defaults."""
    if not (init.__defaults__ or init.__kwdefaults__):
        return  # nothing to replace: the signature stays the def's own, read when asked for
    import inspect

    init.__signature__ = inspect.signature(init)
    if init.__defaults__:
        init.__defaults__ = (NATIVE_DEFAULT,) * len(init.__defaults__)
    if init.__kwdefaults__:
        init.__kwdefaults__ = dict.fromkeys(init.__kwdefaults__, NATIVE_DEFAULT)


def _check_offsets(type_key: str, index: int, offsets: dict[str, int]) -> None:
    """ImportError unless each field is still at the offset the package was generated for."""
    from .reflection import type_info

    actual = {f.name: f.offset for f in type_info(index).fields}
    for name, offset in offsets.items():
        if name not in actual:
            raise ImportError(
                f"field {type_key}.{name} no longer exists in the library; the generated package"
                " is out of date (regenerate it)"
            )
        if actual[name] != offset:
            raise ImportError(
                f"field {type_key}.{name} moved (offset {actual[name]}, generated for"
                f" {offset}); the generated package is out of date (regenerate it)"
            )


_DEFAULT_HOOK_BODIES: dict[str, Callable[[Any, Any], Any]] = {
    "walk_": lambda self, node: None,
    "visit_": lambda self, node: self.default_visit_children(node),
    "map_": lambda self, node: UNCHANGED,
    "mutate_": lambda self, node: self.default_maybe_inplace_mutate(node),
}


def dispatch_base(prefix: str, hook_types: dict[str, Any]) -> Callable[[_ClsT], _ClsT]:
    """Class decorator of a generated dispatch base (``Walker``, ``Visitor``, ...).

    ``hook_types`` maps each hook's suffix to the class (or builtin) it handles; the hook is
    ``prefix + suffix``. The class declares each hook as a one-line stub (``...``) for type
    checkers and IDEs; here each stub becomes the default behaviour (what the engine does for
    an unmatched value, so ``super()`` calls work), marked so that only hooks a subclass
    overrides cost a Python call per node.
    """
    body = _DEFAULT_HOOK_BODIES.get(prefix)
    if body is None:
        raise ValueError(f"dispatch_base: unknown hook prefix {prefix!r} (one of {', '.join(_DEFAULT_HOOK_BODIES)})")

    def decorate(cls: _ClsT) -> _ClsT:
        names = {prefix + suffix: tp for suffix, tp in hook_types.items()}
        cls._hook_types = names  # type: ignore[attr-defined]
        for name in names:
            stub = vars(cls).get(name)
            if stub is None:
                continue
            default = _copy_function(body, name, stub)
            setattr(cls, name, default_hook(default))
        return cls

    return decorate


def _copy_function(body: Callable[..., Any], name: str, stub: Any) -> Any:
    """``body`` as a function of its own named like ``stub`` (and showing its signature)."""
    import types

    code = body.__code__
    fn: Any = types.FunctionType(code.replace(co_name=name), body.__globals__, name)
    fn.__qualname__ = stub.__qualname__
    fn.__module__ = stub.__module__
    fn.__doc__ = stub.__doc__
    fn.__wrapped__ = stub  # inspect.signature shows the stub's typed signature
    return fn


class _EnumEntry:
    """Class attribute resolving to a registered enum entry on first access."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.value: Any = None

    def __set_name__(self, owner: type, attr: str) -> None:
        self.attr = attr

    def __get__(self, obj: object, owner: type) -> Any:
        if self.value is None:
            from .enums import entry_name, registered_entries

            entries = registered_entries(getattr(owner, "_type_index"))
            if not entries:
                raise AttributeError(f"{owner._type_key} has no enum entries")  # type: ignore[attr-defined]
            for entry in entries:
                if entry_name(entry) == self.name:
                    self.value = entry
                    break
            else:
                raise AttributeError(f"{owner._type_key} has no enum entry {self.name!r}")  # type: ignore[attr-defined]
        return self.value


def enum_entry(name: str) -> Any:
    """A class attribute for the enum entry registered as ``name``."""
    return _EnumEntry(name)
