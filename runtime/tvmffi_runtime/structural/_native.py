"""Native callbacks of the structural engines: trampolines with one dict lookup per call, the
payload table, and how a handler's result is written for each engine.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections.abc import Callable
from typing import Any, TypeAlias

from .. import _callback, _convert, _lib, _object
from .._backend import accelerated
from .._call import Function
from .._callback import function_in_mode
from .._errors import moved_result_error, walk_result_error
from .._object import Object, _wrap
from .._pure.callbacks import CALLBACKS, fail_for_want_of_stack, fail_into_native, trampoline_function
from .._values import CallbackMode, TypeIndex
from ._context import HookCall, HookFrame, MutateContext, VisitContext
from ._markers import _KINDS, _MODES, UNCHANGED, DefRegionKind, InplaceMode, VisitInterrupt, WalkResult
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


# =============================================================================================
# Native callbacks: trampolines with one dict lookup per call
# =============================================================================================
# A callback receives (self_key, args, nargs, result) with ``args`` / ``result`` typed as int64
# pointers: arguments are read by indexing (no buffer copies, no ctypes calls) and the result is
# written the same way; the caller has initialised it to None.
#
# An object argument is handed to Python as a *borrowed* wrapper (no IncRef): the engine keeps
# the value alive during the call. When the callback returns (or raises), a wrapper that is
# still referenced elsewhere (stored by the callback, returned, held by a traceback) takes its
# own reference; otherwise it is emptied (and kept as the spare wrapper of its class). So the
# common case costs no native reference counting and no allocation.
_ENTRIES = CALLBACKS  # the pure backend's one callback payload table (key -> payload)
_P64 = ctypes.POINTER(ctypes.c_int64)
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _P64, ctypes.c_int32, _P64)
_IncRef = _lib.ObjectIncRef
_new: Callable[[type], Any] = object.__new__  # a bare instance (no __init__)
_grc = sys.getrefcount
_CLASSES = _object._CLASS_CACHE  # type index -> wrapper class (filled by the runtime's _wrap)
_CONVERTED = _object._OBJECT_RETURN  # object types that come back as Python values (str, bytes, ...)
# One spare (empty) wrapper per class: a wrapper that did not escape its callback is kept for
# the next call instead of being freed (saves the allocation and the Python-level __del__).
# Only for classes without instance __dict__, and never for a wrapper a weakref points to.
_SPARE: dict[type, Any] = {}
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_QQ = struct.Struct("=qq")
_INT = TypeIndex.INT
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


#: How the trampolines see their arguments and result: int64 slots read and written by index.
_Slots: TypeAlias = "ctypes._Pointer[ctypes.c_int64]"


def _slow_view(args: _Slots, i: int) -> Any:
    """Any argument ``i`` as an owned Python value (the runtime's general conversion)."""
    return _convert.view_from_buffer(_QQ.pack(args[2 * i], args[2 * i + 1]), 0)


_fail = fail_into_native


def _write_walk(result: Any, r: Any) -> None:
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


def _write_visit(result: Any, r: Any) -> None:
    if r is None:
        return
    if r.__class__ is VisitInterrupt:
        _IncRef(r._h)
        result[0] = r._t
        result[1] = r._h
        return
    raise TypeError(f"a structural visit callback must return None or a VisitInterrupt, not {r!r}")


def _write_any(result: Any, r: Any) -> None:
    if r is None:
        return
    if isinstance(r, Object):
        h = r._h
        if not h:
            raise moved_result_error()
        _IncRef(h)
        result[0] = r._t
        result[1] = h
    elif r is UNCHANGED:
        result[0] = TypeIndex.UNCHANGED
    elif r.__class__ is int and _INT64_MIN <= r <= _INT64_MAX:
        result[0] = TypeIndex.INT
        result[1] = r
    else:
        _callback.to_owned_any(r, ctypes.addressof(result.contents))


def _value_trampoline(
    write: Callable[[Any, Any], None], kinded: bool, write_none: bool
) -> Callable[[int, Any, int, Any], int]:
    """A ctypes trampoline calling the handler registered under its key on the Any argument 0
    (and the DefRegionKind in argument 1 when ``kinded``), then ``write``-ing its result.

    An object of a known class is passed in a borrowed wrapper (one spare per class, reused);
    the wrapper takes its own reference only when the handler kept it. The body is one frame:
    per node, Python sees the trampoline and the handler only.
    """

    def trampoline(key: int, args: _Slots, nargs: int, result: _Slots) -> int:
        try:
            fn = _ENTRIES[key]
            kind: DefRegionKind | None = _KINDS[args[3]] if kinded else None
            t = args[0] & _MASK32
            cls = _CLASSES.get(t) if t >= 64 and t not in _CONVERTED else None
            if cls is not None:
                h = args[1] & _MASK64
                obj = _SPARE.pop(cls, None)
                if obj is None:
                    obj = _new(cls)
                obj._h = h
                obj._t = t
                try:
                    r = fn(obj, kind) if kinded else fn(obj)
                finally:
                    if _grc(obj) > 2:
                        _IncRef(h)
                    else:
                        obj._h = 0
                        if not cls.__dictoffset__ and obj.__weakref__ is None:
                            _SPARE[cls] = obj
            elif t == _INT:
                r = fn(args[1], kind) if kinded else fn(args[1])
            else:
                r = fn(_slow_view(args, 0), kind) if kinded else fn(_slow_view(args, 0))
            if write_none or r is not None:
                write(result, r)
            return 0
        except BaseException as exc:  # noqa: BLE001 - every exception crosses as an error
            try:
                return _fail(exc)
            except RecursionError:
                fail_for_want_of_stack()
                return -1

    return trampoline


_walk_plain = _value_trampoline(_write_walk, kinded=False, write_none=False)
_walk_kind = _value_trampoline(_write_walk, kinded=True, write_none=False)
_map_plain = _value_trampoline(_write_any, kinded=False, write_none=True)
_map_kind = _value_trampoline(_write_any, kinded=True, write_none=True)


def _context_trampoline(mutate: bool) -> Callable[[int, Any, int, Any], int]:
    """A ctypes trampoline calling ``adapter(value, ctx)``, the payload being (adapter, run):
    for a visit (arguments (value, visitor); ``ctx`` a VisitContext, the result None or a
    VisitInterrupt) or, when ``mutate``, a mutate (arguments (value, mutator, inplace_mode);
    ``ctx`` a MutateContext, the result any value).

    An object of a known class is passed in a fresh borrowed wrapper that takes its own
    reference only when the callback kept it. Per node, Python sees the trampoline,
    ``run.engine``, the context's ``__init__``, the adapter and the result's writer.
    """
    write = _write_any if mutate else _write_visit
    no_mode = InplaceMode.DISALLOW  # a visit has no in-place mode (and no argument 2 to read)

    def trampoline(key: int, args: _Slots, nargs: int, result: _Slots) -> int:
        try:
            adapter, run = _ENTRIES[key]
            engine = run.engine(args[3] & _MASK64)
            mode: InplaceMode = _MODES[args[5]] if mutate else no_mode
            t = args[0] & _MASK32
            if t >= 64 and t not in _CONVERTED and _CLASSES.get(t) is not None:
                h = args[1] & _MASK64
                obj: Any = _new(_CLASSES[t])
                obj._h = h
                obj._t = t
                ctx: VisitContext | MutateContext | None = None
                try:
                    if mutate:
                        ctx = MutateContext(obj, t, run.state, engine, mode, run, True)
                    else:
                        ctx = VisitContext(obj, t, run.state, engine, run)
                    r = adapter(obj, ctx)
                finally:
                    ctx = None
                    if _grc(obj) > 2:
                        _IncRef(h)
                    else:
                        obj._h = 0
            else:
                value = args[1] if t == _INT else _slow_view(args, 0)
                r = adapter(
                    value,
                    MutateContext(value, t, run.state, engine, mode, run, False)
                    if mutate
                    else VisitContext(value, t, run.state, engine, run),
                )
            write(result, r)
            return 0
        except BaseException as exc:  # noqa: BLE001 - every exception crosses as an error
            try:
                return _fail(exc)
            except RecursionError:
                fail_for_want_of_stack()
                return -1

    return trampoline


_visit_cb = _context_trampoline(mutate=False)
_mutate_cb = _context_trampoline(mutate=True)


_T_WALK_PLAIN = _CALLBACK(_walk_plain)
_T_WALK_KIND = _CALLBACK(_walk_kind)
_T_MAP_PLAIN = _CALLBACK(_map_plain)
_T_MAP_KIND = _CALLBACK(_map_kind)
_T_VISIT = _CALLBACK(_visit_cb)
_T_MUTATE = _CALLBACK(_mutate_cb)
_ADDR = {
    id(t): ctypes.cast(t, ctypes.c_void_p)
    for t in (_T_WALK_PLAIN, _T_WALK_KIND, _T_MAP_PLAIN, _T_MAP_KIND, _T_VISIT, _T_MUTATE)
}


def write_walk_at(value: Any, addr: int) -> None:
    _write_walk(ctypes.cast(addr, _P64), value)


def _compiled_callback(trampoline: Any, payload: Any) -> tuple[int, Any]:
    """(mode, callable) for the compiled trampoline doing what ``trampoline`` does with
    ``payload`` (for ``CallbackMode.HOOK`` a (hook, frame, check, objects_ok) tuple instead of a
    callable); results are written as the ctypes trampolines write them."""
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
    """The context of a compiled-path visit callback, from the trampoline's raw arguments."""
    return VisitContext(value, tindex, run.state, run.engine(visitor & _MASK64), run)


def _mutate_context(run: Any, value: Any, tindex: int, mutator: int, mode: int) -> MutateContext:
    """The context of a compiled-path mutate callback, from the trampoline's raw arguments."""
    return MutateContext(value, tindex, run.state, run.engine(mutator & _MASK64), _MODES[mode], run)


def _checked_visit_result(r: Any) -> Any:
    """A visit hook's result other than None: a VisitInterrupt, else the ctypes path's TypeError."""
    if r.__class__ is not VisitInterrupt:
        _write_visit(None, r)  # raises the TypeError the ctypes path raises
    return r


def _checked_mutate_result(r: Any) -> Any:
    """A mutate hook's result: refuse a moved-from object."""
    if isinstance(r, Object) and not r._h:
        raise moved_result_error()
    return r


def hook_frame(trampoline: Any, run: Any) -> HookFrame | None:
    """The frame compiled-path hooks of one visit (``_T_VISIT``) or mutate run keep their node
    in, or None on the pure-ctypes path (hooks get their context per call there)."""
    if not accelerated():
        return None
    if trampoline is _T_VISIT:  # (value, type index, visitor handle)
        return HookFrame(3, lambda it: _visit_context(run, it[0], it[1], it[2]))
    # (value, type index, mutator handle, in-place mode)
    return HookFrame(4, lambda it: _mutate_context(run, it[0], it[1], it[2], it[3]))


def _native(trampoline: Any, payload: Any) -> Function:
    """A Function whose calls run ``trampoline`` with ``payload`` (released with the Function)."""
    if accelerated():
        # the compiled trampoline: the same calls, without a ctypes callback per node
        return function_in_mode(*_compiled_callback(trampoline, payload))
    # the pure backend's: this module's ctypes trampolines over its callback table
    return _wrap(trampoline_function(_ADDR[id(trampoline)], payload), TypeIndex.FUNCTION)  # type: ignore[no-any-return]


def _links(entries: list[_Entry], trampoline: Any) -> list[tuple[int, Function]]:
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
