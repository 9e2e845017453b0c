"""Native callbacks of the structural engines: each handler becomes a Function in one of the
backend's callback modes (``_values.CallbackMode``: plain, walk, raw, raw-walk, hook), and how a
handler's result is checked and written for each engine.
"""

from __future__ import annotations

import ctypes
import enum
from collections.abc import Callable
from typing import Any

from .. import _lib
from .._call import Function
from .._callback import function_in_mode
from .._errors import moved_result_error, walk_result_error
from .._object import Object
from .._values import CallbackMode, TypeIndex
from ._context import HookCall, HookFrame, MutateContext, VisitContext
from ._markers import _KINDS, _MODES, VisitInterrupt, WalkResult
from ._match import _Entry, _overlap

__all__ = [
    "write_walk_at",
    "_T_MAP_KIND",
    "_T_MAP_PLAIN",
    "_T_MUTATE",
    "_T_VISIT",
    "_T_WALK_KIND",
    "_T_WALK_PLAIN",
    "_links",
    "_native",
    "_split",
    "hook_frame",
]


class _Callback(enum.Enum):
    """What an engine calls a handler for, and so how it is called and its result written."""

    WALK_PLAIN = "walk: handler(value)"
    WALK_KIND = "walk: handler(value, kind)"
    MAP_PLAIN = "map: handler(value)"
    MAP_KIND = "map: handler(value, kind)"
    VISIT = "visit: adapter(value, VisitContext)"
    MUTATE = "mutate: adapter(value, MutateContext)"


_T_WALK_PLAIN = _Callback.WALK_PLAIN
_T_WALK_KIND = _Callback.WALK_KIND
_T_MAP_PLAIN = _Callback.MAP_PLAIN
_T_MAP_KIND = _Callback.MAP_KIND
_T_VISIT = _Callback.VISIT
_T_MUTATE = _Callback.MUTATE

_P64 = ctypes.POINTER(ctypes.c_int64)
_IncRef = _lib.ObjectIncRef
_MASK64 = 0xFFFFFFFFFFFFFFFF


def _write_walk(result: Any, r: Any) -> None:
    """Write a walk handler's non-None result (``result``: int64 slots, initialised to None)."""
    if r is None:
        return  # None is Advance
    cls = r.__class__
    if cls is WalkResult or cls is int:
        if r == 0:
            return
        if r == 1:
            result[0] = TypeIndex.INT
            result[1] = 1
            return
    elif cls is VisitInterrupt:
        _IncRef(r._h)
        result[0] = r._t
        result[1] = r._h
        return
    raise walk_result_error(r)


def write_walk_at(value: Any, addr: int) -> None:
    _write_walk(ctypes.cast(addr, _P64), value)


def _callback_mode(trampoline: _Callback, payload: Any) -> tuple[int, Any]:
    """(mode, callable) of the backend callback doing what ``trampoline`` says with ``payload``
    (for ``CallbackMode.HOOK`` a (hook, frame, check, objects_ok) tuple instead of a callable):
    a handler, or for a visit or mutate an (adapter, run[, frame]) tuple."""
    if trampoline is _T_WALK_PLAIN:
        return CallbackMode.WALK, payload
    if trampoline is _T_MAP_PLAIN:
        return CallbackMode.PLAIN, payload
    if trampoline is _T_WALK_KIND or trampoline is _T_MAP_KIND:
        fn = payload

        def with_kind(value: Any, tindex: int, kind: int) -> Any:
            return fn(value, _KINDS[kind])

        return (CallbackMode.RAW_WALK if trampoline is _T_WALK_KIND else CallbackMode.RAW), with_kind
    adapter, run = payload[0], payload[1]
    frame: HookFrame | None = payload[2] if len(payload) > 2 else None
    if frame is not None and isinstance(adapter, HookCall) and not adapter.extra:
        # the hook is called as hook(value) from C; its context waits in the frame
        if trampoline is _T_VISIT:
            return CallbackMode.HOOK, (adapter.fn, frame.items, _checked_visit_result, False)
        return CallbackMode.HOOK, (adapter.fn, frame.items, _checked_mutate_result, True)
    if trampoline is _T_VISIT:

        def visit(value: Any, tindex: int, visitor: int) -> Any:
            r = adapter(value, _visit_context(run, value, tindex, visitor))
            return r if r is None else _checked_visit_result(r)

        return CallbackMode.RAW, visit
    assert trampoline is _T_MUTATE

    def mutate(value: Any, tindex: int, mutator: int, mode: int) -> Any:
        return _checked_mutate_result(adapter(value, _mutate_context(run, value, tindex, mutator, mode)))

    return CallbackMode.RAW, mutate


def _visit_context(run: Any, value: Any, tindex: int, visitor: int) -> VisitContext:
    """The context of a visit callback, from its raw arguments."""
    return VisitContext(value, tindex, run.state, run.engine(visitor & _MASK64), run)


def _mutate_context(run: Any, value: Any, tindex: int, mutator: int, mode: int) -> MutateContext:
    """The context of a mutate callback, from its raw arguments."""
    return MutateContext(value, tindex, run.state, run.engine(mutator & _MASK64), _MODES[mode], run)


def _checked_visit_result(r: Any) -> Any:
    """A visit hook's result other than None: a VisitInterrupt, else a TypeError."""
    if r.__class__ is not VisitInterrupt:
        raise TypeError(f"a structural visit callback must return None or a VisitInterrupt, not {r!r}")
    return r


def _checked_mutate_result(r: Any) -> Any:
    """A mutate hook's result: refuse a moved-from object."""
    if isinstance(r, Object) and not r._h:
        raise moved_result_error()
    return r


def hook_frame(trampoline: _Callback, run: Any) -> HookFrame:
    """The frame the hooks of one visit (``_T_VISIT``) or mutate run keep their node in (the
    hook mode's frame list; a hook's helpers build its context from it when called)."""
    if trampoline is _T_VISIT:  # (value, type index, visitor handle)
        return HookFrame(3, lambda it: _visit_context(run, it[0], it[1], it[2]))
    # (value, type index, mutator handle, in-place mode)
    return HookFrame(4, lambda it: _mutate_context(run, it[0], it[1], it[2], it[3]))


def _native(trampoline: _Callback, payload: Any) -> Function:
    """A Function whose calls run ``payload`` as ``trampoline`` says (released with the Function)."""
    return function_in_mode(*_callback_mode(trampoline, payload))


def _links(entries: list[_Entry], trampoline: _Callback) -> list[tuple[int, Function]]:
    """``[(type_index, Function)]`` for the engine; one Function per distinct callable."""
    made: dict[int, Function] = {}
    out: list[tuple[int, Function]] = []
    for e in entries:
        f = made.get(id(e.fn))
        if f is None:
            f = made[id(e.fn)] = _native(trampoline, e.fn)
        for i in e.indices:
            out.append((i, f))
    return out


def _split(entries: list[_Entry]) -> tuple[list[_Entry], list[_Entry]]:
    """Split entries into (value) and (value, kind) lists keeping first-match order.

    The engine tries every plain link before any kind link. When a kind link precedes a plain
    link it could shadow, every link goes to the kind list (plain ones ignore the kind).
    """
    plain = [e for e in entries if not e.extra]
    kinded = [e for e in entries if e.extra]
    if not plain or not kinded:
        return plain, kinded
    for i, e in enumerate(entries):
        if not e.extra:
            continue
        for later in entries[i + 1 :]:
            if not later.extra and any(_overlap(a, b) for a in e.indices for b in later.indices):
                wrapped = [e2 if e2.extra else _Entry(e2.indices, _ignore_kind(e2.fn), True) for e2 in entries]
                return [], wrapped
    return plain, kinded


def _ignore_kind(fn: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda value, kind: fn(value)
