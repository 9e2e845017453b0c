"""Matching handlers to values: annotations and ``on(...)`` to type indices, the runtime's
ancestor rules, and reading a handler's parameters.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple, TypeAlias, cast

from .. import _lib
from .._object import Object
from .._values import DataType, Device, TypeIndex

__all__ = [
    "Handler",
    "Handlers",
    "on",
    "_Entry",
    "_annotation_indices",
    "_entries",
    "_first_match",
    "_flatten",
    "_matches",
    "_overlap",
    "_positional",
    "_resolve_annotation",
    "_same",
    "_tindex_of",
    "_type_depth",
]


# =============================================================================================
# Type indices, annotations and matching
# =============================================================================================
_ANY_INDEX = -1
_BUILTIN_INDEX: dict[Any, int] = {
    int: TypeIndex.INT,
    bool: TypeIndex.BOOL,
    float: TypeIndex.FLOAT,
    str: TypeIndex.STR,
    bytes: TypeIndex.BYTES,
    DataType: TypeIndex.DATA_TYPE,
    Device: TypeIndex.DEVICE,
}


def _annotation_indices(tp: Any, what: str) -> tuple[int, ...]:
    """Type indices a handler annotated with ``tp`` receives (``-1`` is every value)."""
    if tp is Any or tp is object or tp is inspect.Parameter.empty:
        return (_ANY_INDEX,)
    origin = typing.get_origin(tp)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        out: list[int] = []
        for arg in typing.get_args(tp):
            if arg is type(None):
                continue
            for i in _annotation_indices(arg, what):
                if i not in out:
                    out.append(i)
        return tuple(out)
    if origin is not None:
        tp = origin
    if isinstance(tp, type):
        if issubclass(tp, Object):
            return (int(tp._type_index),)
        for base, index in _BUILTIN_INDEX.items():
            if tp is base:
                return (index,)
    raise TypeError(
        f"{what}: cannot dispatch on annotation {tp!r}; annotate the first parameter with a "
        "runtime Object subclass, int, float, bool, str, bytes, DataType, Device or Any/object"
    )


def _ancestors(index: int) -> frozenset[int]:
    info = _lib.GetTypeInfo(index)
    if not info:
        return frozenset()
    ti = info.contents
    return frozenset(ti.type_ancestors[d].contents.type_index for d in range(ti.type_depth))


@functools.cache
def _type_depth(index: int) -> int:
    if index < TypeIndex.OBJECT:
        return 0
    info = _lib.GetTypeInfo(index)
    return int(info.contents.type_depth) if info else 0


@functools.lru_cache(maxsize=4096)
def _matches(actual: int, target: int) -> bool:
    """``RuntimeTypeIndexMatch`` of the engine: does a value of ``actual`` match ``target``."""
    if actual == target or target == _ANY_INDEX:
        return True
    if target == TypeIndex.STR:
        return actual == TypeIndex.SMALL_STR
    if target == TypeIndex.BYTES:
        return actual == TypeIndex.SMALL_BYTES
    if target == TypeIndex.OBJECT:
        return actual >= TypeIndex.OBJECT
    if actual < TypeIndex.OBJECT or target < TypeIndex.OBJECT or actual < target:
        return False
    return target in _ancestors(actual)


def _overlap(a: int, b: int) -> bool:
    return _matches(a, b) or _matches(b, a)


def _tindex_of(v: Any) -> int:
    """Type index an engine would see for a Python value (after conversion)."""
    if isinstance(v, Object):
        return v._t
    if v is None:
        return TypeIndex.NONE
    if isinstance(v, bool):
        return TypeIndex.BOOL
    if isinstance(v, int):
        return TypeIndex.INT
    if isinstance(v, float):
        return TypeIndex.FLOAT
    if isinstance(v, DataType):
        return TypeIndex.DATA_TYPE
    if isinstance(v, str):
        return TypeIndex.STR
    if isinstance(v, (bytes, bytearray)):
        return TypeIndex.BYTES
    if isinstance(v, Device):
        return TypeIndex.DEVICE
    return -2


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Object):
        return isinstance(b, Object) and a._h == b._h
    if isinstance(b, Object):
        return False
    return type(a) is type(b) and a == b


# =============================================================================================
# Callable introspection
# =============================================================================================
def _positional(fn: Callable[..., Any]) -> tuple[list[inspect.Parameter], bool]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], True
    params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
    return params, var


def _resolve_annotation(fn: Callable[..., Any], param: inspect.Parameter) -> Any:
    ann = param.annotation
    if not isinstance(ann, str):
        return ann
    target = inspect.unwrap(getattr(fn, "__func__", fn))
    try:
        hints = typing.get_type_hints(target)
        if param.name in hints:
            return hints[param.name]
    except Exception:  # noqa: BLE001 - any failure: resolved by hand below
        pass
    namespace: dict[str, Any] = dict(getattr(target, "__globals__", {}))
    # A nested function's string annotation may name locals of the function that defined it
    # (``from __future__ import annotations``): find that frame on the stack.
    code = getattr(target, "__code__", None)
    frame = sys._getframe(1)
    while frame is not None and code is not None:
        if _code_contains(frame.f_code, code):
            namespace.update(frame.f_locals)
            break
        frame = frame.f_back  # type: ignore[assignment]
    del frame
    try:  # noqa: SIM105 - reads as the tries around it
        namespace.update(inspect.getclosurevars(target).nonlocals)
    except Exception:  # noqa: BLE001 - no closure variables to read
        pass
    try:
        return eval(ann, namespace)  # the annotation text of the caller's own code
    except Exception as exc:  # noqa: BLE001 - re-raised as TypeError naming the annotation
        raise TypeError(
            f"cannot resolve the annotation {ann!r} of {fn!r}: {exc}; give the type explicitly with on(tp, fn)"
        ) from None


def _code_contains(outer: types.CodeType, code: types.CodeType, depth: int = 3) -> bool:
    """Whether ``code`` is defined in ``outer`` (directly or in a nested class body/function)."""
    for const in outer.co_consts:
        if const is code:
            return True
        if depth and isinstance(const, types.CodeType) and _code_contains(const, code, depth - 1):
            return True
    return False


class on:  # lower case: reads as a verb at the call site, on(int, handler)
    """An explicitly typed handler: ``on(int, lambda v: ...)`` (lambdas cannot be annotated).

    ``tp`` may be a runtime Object subclass, a builtin (int, float, bool, str, bytes), a union
    of those, or ``object``/``Any``.
    """

    __slots__ = ("tp", "fn")

    def __init__(self, tp: object, fn: Callable[..., object]) -> None:
        if not callable(fn):
            raise TypeError(f"on(): {fn!r} is not callable")
        self.tp = tp
        self.fn = fn

    def __repr__(self) -> str:
        return f"on({self.tp!r}, {self.fn!r})"


#: A typed handler: a callable whose first parameter's annotation selects the values it gets,
#: or ``on(tp, fn)``.
Handler: TypeAlias = "Callable[..., object] | on"
#: One handler or several (a tuple or list, nested ones flattened; the first match wins).
Handlers: TypeAlias = "Handler | tuple[Handlers, ...] | list[Handlers]"


class _Entry(NamedTuple):
    """One dispatch link: the type indices it matches, the callable, and its extra argument."""

    indices: tuple[int, ...]
    fn: Callable[..., Any]
    extra: bool  # walk/map/hooks: takes a trailing DefRegionKind; callbacks: takes a context


def _flatten(handlers: Any, out: list[Any]) -> list[Any]:
    if isinstance(handlers, (tuple, list)):
        for h in cast("Iterable[Any]", handlers):
            _flatten(h, out)
    else:
        out.append(handlers)
    return out


def _entry_of(handler: Any, what: str) -> _Entry:
    if isinstance(handler, on):
        fn, tp = handler.fn, handler.tp
        params, var = _positional(fn)
    else:
        fn = handler
        if not callable(fn):
            raise TypeError(f"{what}: handler {fn!r} is not callable")
        params, var = _positional(fn)
        tp = _resolve_annotation(fn, params[0]) if params else Any
    n = len(params)
    if n == 0 and not var:
        raise TypeError(f"{what}: handler {fn!r} must take the value as its first parameter")
    if n > 2:
        required = [p for p in params[2:] if p.default is p.empty]
        if required:
            raise TypeError(f"{what}: handler {fn!r} takes at most two positional parameters")
    return _Entry(_annotation_indices(tp, what), fn, n >= 2 or (n < 2 and var))


def _entries(handlers: Any, what: str) -> list[_Entry]:
    flat = _flatten(handlers, [])
    if not flat:
        raise TypeError(f"{what}: no handlers given")
    return [_entry_of(h, what) for h in flat]


def _first_match(entries: Iterable[_Entry], tindex: int) -> _Entry | None:
    for e in entries:
        for i in e.indices:
            if _matches(tindex, i):
                return e
    return None
