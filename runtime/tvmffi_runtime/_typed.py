"""Argument checking for ``Function.from_typed``: convert and check from a callable's annotations."""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, cast

from .containers import Array, Dict, List, Map

__all__ = ["typed_adapter", "checker_for"]

Checker = Callable[[Any], Any]


def _describe(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


def checker_for(tp: Any) -> Checker | None:
    """A function that converts a value to ``tp`` or raises TypeError; None accepts anything."""
    if tp is Any or tp is inspect.Parameter.empty or tp is object:
        return None
    if tp is None or tp is type(None):

        def check_none(v: Any) -> Any:
            if v is not None:
                raise TypeError(f"expected None, got {type(v).__name__}")
            return v

        return check_none
    if tp is float:

        def check_float(v: Any) -> Any:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"expected float, got {type(v).__name__}")
            return float(v)

        return check_float
    if tp is int:

        def check_int(v: Any) -> Any:
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"expected int, got {type(v).__name__}")
            return v

        return check_int
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        checks = [checker_for(o) for o in options]
        if any(c is None for c in checks):
            return None

        def check_union(v: Any) -> Any:
            for c in checks:
                assert c is not None
                try:
                    return c(v)
                except TypeError:
                    continue
            raise TypeError(f"expected {' | '.join(_describe(o) for o in options)}, got {type(v).__name__}")

        return check_union
    if origin is not None:
        base = origin
    else:
        base = tp
    if base in (list, tuple, dict):
        # Native callers pass Python lists/tuples/dicts as Array/List and Map/Dict: accept those
        # and hand the callable the Python type its annotation names.
        # Typed loosely on purpose: the checker returns whatever container the annotation names.
        builtin = cast("type[Any]", base)
        wants_dict = base is dict
        ffi_types = cast("tuple[type[Any], ...]", (Map, Dict) if wants_dict else (Array, List))

        def check_builtin_container(v: Any) -> Any:
            if isinstance(v, builtin):
                return v
            if isinstance(v, ffi_types):
                return builtin(v.items()) if wants_dict else builtin(v)
            raise TypeError(f"expected {_describe(tp)}, got {type(v).__name__}")

        return check_builtin_container
    if isinstance(base, type):

        def check_instance(v: Any) -> Any:
            if not isinstance(v, base):
                raise TypeError(f"expected {_describe(tp)}, got {type(v).__name__}")
            return v

        return check_instance
    return None


def _resolve_hints(f: Callable[..., Any], params: list[inspect.Parameter]) -> dict[str, Any]:
    """Annotations of ``f`` as types; ones that cannot be resolved are left out (not checked)."""
    try:
        return typing.get_type_hints(f)
    except Exception:  # noqa: BLE001 - any failure: resolve them one at a time below
        pass
    # One at a time, so a single unresolvable name does not switch off every check; typing's
    # names are a fallback (string annotations often name a locally imported Optional or Union).
    namespace = dict(vars(typing))
    namespace.update(getattr(f, "__globals__", {}))
    try:
        local = dict(inspect.getclosurevars(f).nonlocals) if inspect.isfunction(f) else {}
    except Exception:  # noqa: BLE001 - no closure variables to read: only the globals
        local = {}
    hints: dict[str, Any] = {}
    for p in params:
        ann = p.annotation
        if isinstance(ann, str):
            try:
                ann = eval(ann, namespace, local)  # what typing.get_type_hints does
            except Exception:  # noqa: BLE001 - what get_type_hints would raise: left unchecked
                continue
        hints[p.name] = ann
    return hints


def typed_adapter(f: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``f`` so calls from native code are checked against its annotations.

    A wrong argument count or type raises TypeError naming the function and the parameter
    position (and name), which crosses back into the caller as a TypeError.
    """
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return f
    params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    hints = _resolve_hints(f, params)
    has_varargs = any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())
    required = sum(1 for p in params if p.default is p.empty)
    checks = [checker_for(hints.get(p.name, Any)) for p in params]
    name = getattr(f, "__qualname__", repr(f))

    @functools.wraps(f)
    def adapter(*args: Any) -> Any:
        n = len(args)
        if n < required or (n > len(params) and not has_varargs):
            expected = f"{required}" if required == len(params) else f"{required} to {len(params)}"
            raise TypeError(f"{name}() expects {expected} arguments, got {n}")
        converted = list(args)
        # fewer arguments than parameters (defaults) or more (*args): zip stops at the shorter
        for i, (value, check) in enumerate(zip(args, checks, strict=False)):
            if check is not None:
                try:
                    converted[i] = check(value)
                except TypeError as exc:
                    raise TypeError(f"{name}(): argument {i} ({params[i].name}): {exc}") from None
        return f(*converted)

    return adapter
