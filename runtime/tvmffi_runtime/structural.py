"""Structural traversal helpers (walk / visit / map / mutate) over the library's own engine.

All traversal runs in ``libtvm_ffi``'s structural engine, driven through its global functions:

- ``ffi.StructuralWalk(root, [(type_index, fn)], [(type_index, fn_with_kind)], order)``
- ``ffi.StructuralVisit(root, [(type_index, fn(value, visitor))])``
- ``ffi.StructuralMap(root, [(type_index, fn)], [(type_index, fn_with_kind)], order)``
- ``ffi.StructuralMutate(root, [(type_index, fn(value, mutator, inplace_mode), True)])``
- the ``ffi.StructuralVisitor*`` / ``ffi.StructuralMutator*`` helpers for recursion.

So child order, definition regions, variable remapping, copy-on-write and in-place reuse are
exactly those of C++ and Rust. Python only supplies callbacks: the engine matches a callback by
type index (with the runtime's ancestor rules) and calls it through a small ctypes trampoline
whose per-call work is one dict lookup (callback key -> Python callable), the argument
conversion, the call, and writing the result. Hook tables of dispatch classes (``WalkerBase``
and friends) are resolved once per class.

Public names: ``structural_walk``, ``structural_visit``, ``structural_map``,
``structural_mutate``, ``WalkResult``, ``WalkOrder``, ``VisitInterrupt``, ``DefRegionKind``,
``InplaceMode``, ``VisitCallbacks``, ``MutateCallbacks``, ``VisitContext``, ``MutateContext``,
``ContextPolicy``, ``Unchanged``, ``UNCHANGED``, ``move``, ``on``, ``default_hook``,
``WalkerBase``, ``VisitorBase``, ``MapperBase``, ``MutatorBase``, ``walk_count_nodes``.
"""

from __future__ import annotations

import ctypes
import functools
import inspect
import itertools
import struct
import sys
import types
import typing
import warnings
from enum import IntEnum
from typing import Any, Callable, ClassVar, Iterable, Mapping, NamedTuple, TypeAlias, TypeVar

from . import _core, _lib
from ._core import DataType, Device, Function, Object, TypeIndex

__all__ = [
    "UNCHANGED",
    "ContextPolicy",
    "DefRegionKind",
    "Handler",
    "Handlers",
    "InplaceMode",
    "MapperBase",
    "MutateCallbacks",
    "MutateContext",
    "MutatorBase",
    "Unchanged",
    "VisitCallbacks",
    "VisitContext",
    "VisitInterrupt",
    "VisitorBase",
    "WalkOrder",
    "WalkResult",
    "WalkerBase",
    "HookNameWarning",
    "default_hook",
    "move",
    "on",
    "Policy",
    "structural_map",
    "structural_mutate",
    "structural_visit",
    "structural_walk",
    "walk_count_nodes",
]


# =============================================================================================
# Markers and enums
# =============================================================================================
class Unchanged:
    """Marker returned by structural mappers: the value was not changed."""

    _instance: Unchanged | None = None

    def __new__(cls) -> Unchanged:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHANGED"

    def __reduce__(self) -> Any:
        return (Unchanged, ())


UNCHANGED = Unchanged()


class WalkOrder(IntEnum):
    """Whether a callback runs before (``PRE_ORDER``) or after (``POST_ORDER``) the children."""

    PRE_ORDER = 0
    POST_ORDER = 1


class DefRegionKind(IntEnum):
    """Definition region active while a value is visited (``TVMFFIDefRegionKind``).

    ``NONE``: an ordinary use. ``PATTERN``: inside a field flagged ``SEqHashDefPattern``.
    ``SIMPLE``: inside a field flagged ``SEqHashDefSimple`` (for example the variable a ``Let``
    binds).
    """

    NONE = 0
    PATTERN = 1
    SIMPLE = 2
    DEF_PATTERN = 1  # alias, tvm_ffi spelling
    DEF_SIMPLE = 2  # alias, tvm_ffi spelling


class InplaceMode(IntEnum):
    """Permission to mutate the current value in place (it is uniquely owned on its whole path)."""

    DISALLOW = 0
    ALLOW = 1


class WalkResult(IntEnum):
    """What a walk handler tells the engine: advance into children, or skip them.

    ``WalkResult.interrupt_with(payload)`` (a :class:`VisitInterrupt`) stops the whole walk;
    a handler returning ``None`` advances.
    """

    ADVANCE = 0
    SKIP = 1

    @staticmethod
    def interrupt_with(payload: Any = None) -> VisitInterrupt:
        """An interrupt that stops the walk; ``structural_walk`` returns it (``.value`` = payload)."""
        return VisitInterrupt(payload)

    @staticmethod
    def interrupt() -> VisitInterrupt:
        """An interrupt without payload."""
        return VisitInterrupt(None)


_KINDS = (DefRegionKind.NONE, DefRegionKind.PATTERN, DefRegionKind.SIMPLE)
_MODES = (InplaceMode.DISALLOW, InplaceMode.ALLOW)


# =============================================================================================
# Engine entry points (global functions, resolved once)
# =============================================================================================
def _call(name: str, *args: Any) -> Any:
    return _core.ffi_call(_core.global_handle(name), args, name)


@_core.register_object("ffi.VisitInterrupt")
class VisitInterrupt(Object):
    """Stops a structural walk or visit; ``.value`` is the payload given to the caller."""

    __slots__ = ()

    def __init__(self, value: Any = None) -> None:
        made = _call("ffi.VisitInterrupt", value)
        self._h, self._t = made._h, made._t
        made._h = 0

    @property
    def value(self) -> Any:
        """The payload carried by the interrupt (None when there is none)."""
        return _interrupt_value_field().get(self)

    def __repr__(self) -> str:
        return f"VisitInterrupt({self.value!r})"


@functools.lru_cache(maxsize=None)
def _interrupt_value_field() -> Any:
    from .reflection import FieldAccessor

    return FieldAccessor("ffi.VisitInterrupt", "value")


# Arguments: UNCHANGED packs as the reserved kTVMFFIUnchanged marker.
def _pack_unchanged(buf: Any, off: int, v: Any, temps: list[Any]) -> None:
    _core._pack_int(buf, off, TypeIndex.UNCHANGED, 0, 0)


_core.register_packer(Unchanged, _pack_unchanged)
_core.set_unchanged(UNCHANGED)


# =============================================================================================
# move(): give up the caller's reference so the engine may reuse uniquely owned storage
# =============================================================================================
class Moved:
    """An object whose wrapper gives up its reference when passed (see :func:`move`)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Object) -> None:
        if not isinstance(obj, Object):
            raise TypeError(f"move() takes a runtime Object, got {type(obj).__name__}")
        if not obj._h:
            raise ValueError("move(): the object has already been moved from")
        self.obj = obj

    def __repr__(self) -> str:
        return f"move({self.obj!r})"


def move(obj: Object) -> Moved:
    """Pass ``obj`` to ``structural_map`` / ``structural_mutate`` giving up this reference.

    The wrapper's handle is stolen when the call packs its arguments (the wrapper is empty
    afterwards and must not be used). If no other reference exists, the engine sees a uniquely
    owned root and may reuse built-in containers (Array, List, Map, Dict) in place along uniquely
    owned paths; without ``move`` the source is preserved by copy-on-write.
    """
    return Moved(obj)


class _StolenRef:
    """Holds a stolen handle in a cell the callee may take (``kTVMFFIObjectRValueRef``)."""

    __slots__ = ("cell",)

    def __init__(self, handle: int) -> None:
        self.cell = ctypes.c_void_p(handle)

    def __del__(self) -> None:
        h = self.cell.value
        if h:
            self.cell.value = None
            try:
                _lib.ObjectDecRef(h)
            except Exception:  # interpreter shutdown
                pass


def _pack_moved(buf: Any, off: int, v: Moved, temps: list[Any]) -> None:
    obj = v.obj
    h = obj._h
    if not h:
        raise ValueError("move(): the object has already been moved from")
    obj._h = 0
    ref = _StolenRef(h)
    temps.append(ref)  # dropped after the call: releases the handle if the callee did not take it
    _core._pack_uint(buf, off, TypeIndex.OBJECT_RVALUE_REF, 0, ctypes.addressof(ref.cell))


_core.register_packer(Moved, _pack_moved)


def _unmove(root: Any) -> Any:
    return root.obj if isinstance(root, Moved) else root


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


@functools.lru_cache(maxsize=None)
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
    except Exception:
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
    try:
        namespace.update(inspect.getclosurevars(target).nonlocals)
    except Exception:
        pass
    try:
        return eval(ann, namespace)  # noqa: S307 - the annotation text of the caller's own code
    except Exception as exc:
        raise TypeError(
            f"cannot resolve the annotation {ann!r} of {fn!r}: {exc}; "
            "give the type explicitly with on(tp, fn)"
        ) from None


def _code_contains(outer: types.CodeType, code: types.CodeType, depth: int = 3) -> bool:
    """Whether ``code`` is defined in ``outer`` (directly or in a nested class body/function)."""
    for const in outer.co_consts:
        if const is code:
            return True
        if depth and isinstance(const, types.CodeType) and _code_contains(const, code, depth - 1):
            return True
    return False


class on:  # noqa: N801 - reads as a verb at the call site: on(int, handler)
    """An explicitly typed handler: ``on(int, lambda v: ...)`` (lambdas cannot be annotated).

    ``tp`` may be a runtime Object subclass, a builtin (int, float, bool, str, bytes), a union
    of those, or ``object``/``Any``.
    """

    __slots__ = ("tp", "fn")

    def __init__(self, tp: Any, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"on(): {fn!r} is not callable")
        self.tp = tp
        self.fn = fn

    def __repr__(self) -> str:
        return f"on({self.tp!r}, {self.fn!r})"


class _Entry(NamedTuple):
    """One dispatch link: the type indices it matches, the callable, and its extra argument."""

    indices: tuple[int, ...]
    fn: Callable[..., Any]
    extra: bool  # walk/map/hooks: takes a trailing DefRegionKind; callbacks: takes a context


def _flatten(handlers: Any, out: list[Any]) -> list[Any]:
    if isinstance(handlers, (tuple, list)):
        for h in handlers:
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
_ENTRIES: dict[int, Any] = {}
_keys = itertools.count(1)
_P64 = ctypes.POINTER(ctypes.c_int64)
_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _P64, ctypes.c_int32, _P64)
_FunctionCreate = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
)(("TVMFFIFunctionCreate", _lib.LIB))
_IncRef = _lib.ObjectIncRef
_new = object.__new__
_grc = sys.getrefcount
_CLASSES = _core._CLASS_CACHE  # type index -> wrapper class (filled by the runtime's _wrap)
_CONVERTED = _core._OBJECT_RETURN  # object types that come back as Python values (str, bytes, ...)
# One spare (empty) wrapper per class: a wrapper that did not escape its callback is kept for
# the next call instead of being freed (saves the allocation and the Python-level __del__).
# Only for classes without instance __dict__, and never for a wrapper a weakref points to.
_SPARE: dict[type, Any] = {}
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_QQ = struct.Struct("=qq")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _slow_view(args: Any, i: int) -> Any:
    """Any argument ``i`` as an owned Python value (the runtime's general conversion)."""
    return _core.view_from_buffer(_QQ.pack(args[2 * i], args[2 * i + 1]), 0)


def _fail(exc: BaseException) -> int:
    try:
        _core._raise_into_native(exc)
    except BaseException:  # noqa: BLE001
        _lib.LIB.TVMFFIErrorSetRaisedFromCStr(b"RuntimeError", b"error while converting a Python exception")
    return -1


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
    raise TypeError(
        "a structural walk handler must return WalkResult.ADVANCE, WalkResult.SKIP, "
        f"WalkResult.interrupt_with(...) or None, not {r!r}"
    )


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
            raise ValueError("a callback returned an object that has been moved from")
        _IncRef(h)
        result[0] = r._t
        result[1] = h
    elif r is UNCHANGED:
        result[0] = TypeIndex.UNCHANGED
    elif r.__class__ is int and _INT64_MIN <= r <= _INT64_MAX:
        result[0] = TypeIndex.INT
        result[1] = r
    else:
        _core._py_to_owned_any(r, ctypes.addressof(result.contents))


def _value_trampoline(
    write: Callable[[Any, Any], None], kinded: bool, write_none: bool
) -> Callable[[int, Any, int, Any], int]:
    """A ctypes trampoline calling the handler registered under its key on the Any argument 0
    (and the DefRegionKind in argument 1 when ``kinded``), then ``write``-ing its result.

    An object of a known class is passed in a borrowed wrapper (one spare per class, reused);
    the wrapper takes its own reference only when the handler kept it. The body is one frame:
    per node, Python sees the trampoline and the handler only.
    """

    def trampoline(key: int, args: Any, nargs: int, result: Any) -> int:
        try:
            fn = _ENTRIES[key]
            kind = _KINDS[args[3]] if kinded else None
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
            elif t == 1:
                r = fn(args[1], kind) if kinded else fn(args[1])
            else:
                r = fn(_slow_view(args, 0), kind) if kinded else fn(_slow_view(args, 0))
            if write_none or r is not None:
                write(result, r)
            return 0
        except BaseException as exc:  # noqa: BLE001 - every exception crosses as an error
            return _fail(exc)

    return trampoline


_walk_plain = _value_trampoline(_write_walk, kinded=False, write_none=False)
_walk_kind = _value_trampoline(_write_walk, kinded=True, write_none=False)
_map_plain = _value_trampoline(_write_any, kinded=False, write_none=True)
_map_kind = _value_trampoline(_write_any, kinded=True, write_none=True)


def _visit_cb(key: int, args: Any, nargs: int, result: Any) -> int:
    """(value, visitor); the payload is (adapter(value, ctx), run)."""
    try:
        adapter, run = _ENTRIES[key]
        engine = run.engine(args[3] & _MASK64)
        t = args[0] & _MASK32
        if t >= 64 and t not in _CONVERTED and _CLASSES.get(t) is not None:
            h = args[1] & _MASK64
            obj: Any = _new(_CLASSES[t])
            obj._h = h
            obj._t = t
            ctx: VisitContext | None = None
            try:
                ctx = VisitContext(obj, t, run.state, engine, run)
                r = adapter(obj, ctx)
            finally:
                ctx = None
                if _grc(obj) > 2:
                    _IncRef(h)
                else:
                    obj._h = 0
        else:
            value = args[1] if t == 1 else _slow_view(args, 0)
            r = adapter(value, VisitContext(value, t, run.state, engine, run))
        _write_visit(result, r)
        return 0
    except BaseException as exc:  # noqa: BLE001
        return _fail(exc)


def _mutate_cb(key: int, args: Any, nargs: int, result: Any) -> int:
    """(value, mutator, inplace_mode); the payload is (adapter(value, ctx), run)."""
    try:
        adapter, run = _ENTRIES[key]
        engine = run.engine(args[3] & _MASK64)
        mode = _MODES[args[5]]
        t = args[0] & _MASK32
        if t >= 64 and t not in _CONVERTED and _CLASSES.get(t) is not None:
            h = args[1] & _MASK64
            obj: Any = _new(_CLASSES[t])
            obj._h = h
            obj._t = t
            ctx: MutateContext | None = None
            try:
                ctx = MutateContext(obj, t, run.state, engine, mode, run, True)
                r = adapter(obj, ctx)
            finally:
                ctx = None
                if _grc(obj) > 2:
                    _IncRef(h)
                else:
                    obj._h = 0
        else:
            value = args[1] if t == 1 else _slow_view(args, 0)
            r = adapter(value, MutateContext(value, t, run.state, engine, mode, run, False))
        _write_any(result, r)
        return 0
    except BaseException as exc:  # noqa: BLE001
        return _fail(exc)


def _delete_entry(key: int) -> None:
    try:
        _ENTRIES.pop(key, None)
    except Exception:  # interpreter shutdown
        pass


_T_WALK_PLAIN = _CALLBACK(_walk_plain)
_T_WALK_KIND = _CALLBACK(_walk_kind)
_T_MAP_PLAIN = _CALLBACK(_map_plain)
_T_MAP_KIND = _CALLBACK(_map_kind)
_T_VISIT = _CALLBACK(_visit_cb)
_T_MUTATE = _CALLBACK(_mutate_cb)
_T_DELETE = _lib.DELETER(_delete_entry)
_ADDR = {
    id(t): ctypes.cast(t, ctypes.c_void_p)
    for t in (_T_WALK_PLAIN, _T_WALK_KIND, _T_MAP_PLAIN, _T_MAP_KIND, _T_VISIT, _T_MUTATE)
}
_DELETE_ADDR = ctypes.cast(_T_DELETE, ctypes.c_void_p)


def _write_walk_at(value: Any, addr: int) -> None:
    _write_walk(ctypes.cast(addr, _P64), value)


_core.set_walk_result(_write_walk_at)


_MODE_RAW, _MODE_RAW_WALK = 3, 4  # compiled modes: fn(value, type_index, raw1, ...)


def _compiled_callback(trampoline: Any, payload: Any) -> tuple[int, Callable[..., Any]]:
    """(mode, callable) for the compiled trampoline doing what ``trampoline`` does with
    ``payload``; results are written as the ctypes trampolines write them."""
    if trampoline is _T_WALK_PLAIN:
        return _core._MODE_WALK, payload
    if trampoline is _T_MAP_PLAIN:
        return _core._MODE_PLAIN, payload
    if trampoline is _T_WALK_KIND or trampoline is _T_MAP_KIND:
        fn = payload

        def with_kind(value: Any, tindex: int, kind: int) -> Any:
            return fn(value, _KINDS[kind])

        return (_MODE_RAW_WALK if trampoline is _T_WALK_KIND else _MODE_RAW), with_kind
    adapter, run = payload
    if trampoline is _T_VISIT:

        def visit(value: Any, tindex: int, visitor: int) -> Any:
            ctx = VisitContext(value, tindex, run.state, run.engine(visitor & _MASK64), run)
            r = adapter(value, ctx)
            if r is not None and r.__class__ is not VisitInterrupt:
                _write_visit(None, r)  # raises the TypeError the ctypes path raises
            return r

        return _MODE_RAW, visit
    assert trampoline is _T_MUTATE

    def mutate(value: Any, tindex: int, mutator: int, mode: int) -> Any:
        ctx = MutateContext(value, tindex, run.state, run.engine(mutator & _MASK64), _MODES[mode], run)
        r = adapter(value, ctx)
        if isinstance(r, Object) and not r._h:
            raise ValueError("a callback returned an object that has been moved from")
        return r

    return _MODE_RAW, mutate


def _native(trampoline: Any, payload: Any) -> Function:
    """A Function whose calls run ``trampoline`` with ``payload`` (released with the Function)."""
    if _core._accel is not None:
        # the compiled trampoline: the same calls, without a ctypes callback per node
        mode, fn = _compiled_callback(trampoline, payload)
        return _core._wrap(_core._accel.function_create(fn, mode), TypeIndex.FUNCTION)  # type: ignore[no-any-return]
    key = next(_keys)
    _ENTRIES[key] = payload
    out = ctypes.c_void_p()
    if _FunctionCreate(key, _ADDR[id(trampoline)], _DELETE_ADDR, ctypes.byref(out)) != 0:
        _ENTRIES.pop(key, None)
        raise _core._fetch_error()
    return _core._wrap(out.value or 0, TypeIndex.FUNCTION)  # type: ignore[no-any-return]


def _links(entries: list[_Entry], trampoline: Any) -> list[tuple[int, Function]]:
    """``[(type_index, Function)]`` for the engine; one Function per distinct callable."""
    made: dict[int, Function] = {}
    out = []
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
                wrapped = [
                    e2 if e2.extra else _Entry(e2.indices, _ignore_kind(e2.fn), True) for e2 in entries
                ]
                return [], wrapped
    return plain, kinded


def _ignore_kind(fn: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda value, kind: fn(value)


# =============================================================================================
# Borrowed engine objects (visitor / mutator) for context calls
# =============================================================================================
class _Borrowed(Object):
    """A wrapper that does not own its handle (the engine object lives for the traversal)."""

    __slots__ = ()

    def __del__(self) -> None:
        self._h = 0  # not ours to release (the base would release a non-zero handle)


def _borrowed(handle: int) -> _Borrowed:
    w = object.__new__(_Borrowed)
    w._h = handle
    w._t = _core._read_type_index(handle)
    return w


# =============================================================================================
# Context policies
# =============================================================================================
class ContextPolicy:
    """Hooks around the default recursion into a value (for example to track scopes).

    ``types`` selects the values whose default recursion is wrapped (runtime Object classes,
    builtins or ``object`` for all). Override ``enter`` / ``exit`` or, for full control,
    ``around(value, ctx, descend)`` which must call ``descend()`` (at most once) and return its
    result: an interrupt-or-None for walk/visit, the mutated value for map/mutate.

    ``ctx`` is the :class:`VisitContext` (walk, visit) or :class:`MutateContext` (map, mutate)
    of the value; ``ctx.state`` is the state of the callbacks, ``ctx.def_region_kind`` the
    active region.

    Policies compose as a tuple ``(outer, inner)``: the outer policy wraps the inner one.
    """

    types: tuple[Any, ...] = (object,)

    def enter(self, value: Any, ctx: Any) -> None:
        """Called before default recursion into ``value``."""

    def exit(self, value: Any, ctx: Any) -> None:
        """Called after default recursion into ``value`` (also when it raised)."""

    def around(self, value: Any, ctx: Any, descend: Callable[[], Any]) -> Any:
        """Run ``descend()`` (the default recursion) between ``enter`` and ``exit``."""
        self.enter(value, ctx)
        try:
            return descend()
        finally:
            self.exit(value, ctx)


class _Policies:
    """A flattened (outer, ..., inner) chain of policies with their type indices."""

    __slots__ = ("chain", "indices")

    def __init__(self, policy: Any) -> None:
        items = _flatten(policy, [])
        chain = []
        for p in items:
            if not isinstance(p, ContextPolicy):
                raise TypeError(f"a context policy must be a ContextPolicy or a tuple of them, not {p!r}")
            idx: list[int] = []
            for tp in tuple(p.types):
                idx.extend(_annotation_indices(tp, f"{type(p).__name__}.types"))
            chain.append((p, tuple(idx)))
        self.chain = tuple(chain)
        self.indices = tuple(dict.fromkeys(i for _, idx in chain for i in idx))

    def wrap(self, value: Any, tindex: int, ctx: Any, descend: Callable[[], Any]) -> Any:
        for p, idx in reversed(self.chain):
            if any(_matches(tindex, i) for i in idx):
                descend = functools.partial(p.around, value, ctx, descend)
        return descend()


def _policies(policy: Any) -> _Policies | None:
    if policy is None:
        return None
    if isinstance(policy, _Policies):
        return policy
    p = _Policies(policy)
    return p if p.chain else None


# =============================================================================================
# Traversal runs and contexts
# =============================================================================================
class _Run:
    """Per-call state shared by every callback of one traversal."""

    __slots__ = ("state", "policy", "_h", "_w")

    def __init__(self, state: Any, policy: _Policies | None) -> None:
        self.state = state
        self.policy = policy
        self._h = 0
        self._w: _Borrowed | None = None

    def engine(self, handle: int) -> _Borrowed:
        if handle != self._h:
            self._w = _borrowed(handle)
            self._h = handle
        return self._w  # type: ignore[return-value]

    def close(self) -> None:
        self._w = None
        self._h = 0


class VisitContext:
    """What a visit callback (and a walk / visit context policy) gets besides the value.

    ``visit_children()`` runs the default child traversal of the value (through the active
    context policy); ``visit(child)`` dispatches a child through the visitor; both return None
    or the :class:`VisitInterrupt` to return. Valid only during the callback.
    """

    __slots__ = ("value", "_ti", "state", "_v", "_run")

    def __init__(self, value: Any, tindex: int, state: Any, visitor: _Borrowed, run: _Run) -> None:
        self.value = value
        self._ti = tindex
        self.state = state
        self._v = visitor
        self._run = run

    def _live(self) -> _Borrowed:
        if self._run._w is None:
            raise RuntimeError("a VisitContext is valid only while its traversal runs")
        return self._v

    def visit_children(self) -> VisitInterrupt | None:
        """Default traversal of this value's children (its ``__s_visit__`` hook or fields)."""
        return self._default_visit(self.value, self._ti)

    def default_visit(self, value: Any) -> VisitInterrupt | None:
        """Default traversal of ``value``'s children, bypassing callback dispatch for it."""
        if value is self.value:
            return self.visit_children()
        return self._default_visit(value, _tindex_of(value))

    def _default_visit(self, value: Any, tindex: int) -> VisitInterrupt | None:
        policy = self._run.policy
        v = self._live()
        if policy is None:
            return _call("ffi.StructuralVisitorDefaultVisit", v, value)  # type: ignore[no-any-return]
        return policy.wrap(value, tindex, self, lambda: _call("ffi.StructuralVisitorDefaultVisit", v, value))  # type: ignore[no-any-return]

    def visit(self, child: Any) -> VisitInterrupt | None:
        """Visit ``child`` through the visitor (callbacks apply to it)."""
        return _call("ffi.StructuralVisitorVisit", self._live(), child)  # type: ignore[no-any-return]

    @property
    def def_region_kind(self) -> DefRegionKind:
        """The definition region active for this value."""
        return _KINDS[_call("ffi.StructuralVisitorDefRegionKind", self._live())]

    def with_def_region_kind(self, kind: DefRegionKind | int, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` with ``kind`` as the active region (no effect inside a pattern region)."""
        return _call("ffi.StructuralVisitorWithDefRegionKind", self._live(), int(kind), fn)


class MutateContext:
    """What a mutate callback (and a map / mutate context policy) gets besides the value.

    - ``mutate(child)``: mutate a child through the mutator, copy-on-write.
    - ``default_mutate(value=<this value>)``: the default mutation of the value (its
      ``__s_mutate__`` hook or reflected fields), copy-on-write.
    - ``default_maybe_inplace_mutate(value=<this value>)``: the same, reusing the value's
      storage (its ``__s_maybe_inplace_mutate__`` hook) when ``inplace_mode`` is ``ALLOW`` and
      the value is still uniquely owned (the engine's reference plus this callback's wrapper).
    - ``var_remap_get(var)`` / ``var_remap_set(var, new)``: the identity substitutions of this
      traversal (the engine records them for changed variable definitions; uses look them up).

    The helpers return the resolved value (never ``UNCHANGED``). Valid only during the callback.
    """

    __slots__ = ("value", "_ti", "state", "_m", "inplace_mode", "_run", "_borrowed")

    def __init__(
        self,
        value: Any,
        tindex: int,
        state: Any,
        mutator: _Borrowed,
        mode: InplaceMode,
        run: _Run,
        borrowed: bool = False,
    ) -> None:
        self.value = value
        self._ti = tindex
        self.state = state
        self._m = mutator
        self.inplace_mode = mode
        self._run = run
        self._borrowed = borrowed  # the value's wrapper holds no reference of its own

    def _live(self) -> _Borrowed:
        if self._run._w is None:
            raise RuntimeError("a MutateContext is valid only while its traversal runs")
        return self._m

    def mutate(self, child: Any) -> Any:
        """Mutate ``child`` through the mutator (callbacks apply), copy-on-write."""
        return _call("ffi.StructuralMutatorMutate", self._live(), child)

    def default_mutate(self, value: Any = UNCHANGED) -> Any:
        """Default mutation of ``value`` (default: this value), copy-on-write."""
        if value is UNCHANGED:
            value = self.value
        out = self._default(value, False)
        return value if out is UNCHANGED else out

    def default_maybe_inplace_mutate(self, value: Any = UNCHANGED) -> Any:
        """Default mutation of ``value`` (default: this value), in place when permitted."""
        if value is UNCHANGED:
            value = self.value
        out = self._default(value, self._inplace_ok(value))
        return value if out is UNCHANGED else out

    def _inplace_ok(self, value: Any) -> bool:
        if self.inplace_mode != InplaceMode.ALLOW or not isinstance(value, Object):
            return False
        if not isinstance(self.value, Object) or value._h != self.value._h:
            return False
        # Only the engine's reference (plus the callback's wrapper, when it owns one): nothing
        # else can observe an in-place write.
        return _refcounts(value._h) == (1, 1 if self._borrowed else 2)

    def _default(self, value: Any, inplace: bool) -> Any:
        """Default mutation; returns UNCHANGED or the new value (policy applied)."""
        m = self._live()
        if inplace:
            fn = functools.partial(_default_maybe_inplace_raw, m, value)
        else:
            fn = functools.partial(_default_mutate_raw, m, value)
        policy = self._run.policy
        if policy is None:
            return fn()
        ti = self._ti if value is self.value else _tindex_of(value)

        def descend() -> Any:
            out = fn()
            return value if out is UNCHANGED else out

        out = policy.wrap(value, ti, self, descend)
        return UNCHANGED if _same(out, value) else out

    def var_remap_get(self, var: Any) -> Any:
        """The replacement recorded for the identity ``var`` in this traversal, or None."""
        return _call("ffi.StructuralMutatorVarRemapGet", self._live(), var)

    def var_remap_set(self, var: Any, new: Any) -> None:
        """Record ``new`` as the replacement of the identity ``var`` (FreeVar / DAG node types)."""
        _call("ffi.StructuralMutatorVarRemapSet", self._live(), var, new)

    @property
    def def_region_kind(self) -> DefRegionKind:
        """The definition region active for this value."""
        return _KINDS[_call("ffi.StructuralMutatorDefRegionKind", self._live())]

    def with_def_region_kind(self, kind: DefRegionKind | int, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` with ``kind`` as the active region (no effect inside a pattern region)."""
        return _call("ffi.StructuralMutatorWithDefRegionKind", self._live(), int(kind), fn)


_refcounts = _core._ref_counts


def _default_mutate_raw(mutator: _Borrowed, value: Any) -> Any:
    out = _call("ffi.StructuralMutatorDefaultMutate", mutator, value)
    return UNCHANGED if _same(out, value) else out


class _RawAny(ctypes.Structure):
    _fields_ = [("type_index", ctypes.c_int32), ("zero_padding", ctypes.c_uint32), ("v", ctypes.c_uint64)]


# FStructuralMutateABI: TVMFFIAny (*)(StructuralMutatorObj*, AnyView) noexcept
_MUTATE_ABI = ctypes.CFUNCTYPE(_RawAny, ctypes.c_void_p, _RawAny)
_HOOKS: dict[int, Any] = {}
_INPLACE_COLUMN: list[Any] = []


def _inplace_hook(tindex: int) -> Any:
    """The ``__s_maybe_inplace_mutate__`` attribute of a type: (kind, value) or None."""
    if not _INPLACE_COLUMN:
        name = b"__s_maybe_inplace_mutate__"
        _INPLACE_COLUMN.append(_lib.GetTypeAttrColumn(ctypes.byref(_lib.byte_array(name))))
    column = _INPLACE_COLUMN[0]
    if not column:
        return None
    col = column.contents  # re-read each time: the column grows as types register
    slot = tindex - col.begin_index
    if slot < 0 or slot >= col.size or not col.data:
        return None
    cell = col.data[slot]
    if cell.type_index == TypeIndex.OPAQUE_PTR:
        addr = int(cell.v_ptr or 0)
        fn = _HOOKS.get(addr)
        if fn is None:
            fn = _HOOKS[addr] = _MUTATE_ABI(addr)
        return ("native", fn)
    if cell.type_index == TypeIndex.FUNCTION:
        return ("function", int(cell.v_ptr or 0))
    return None


def _default_maybe_inplace_raw(mutator: _Borrowed, value: Any) -> Any:
    """``DefaultMutateExpected(value, kAllow)`` of the engine: the in-place hook or the copy path."""
    hook = _inplace_hook(value._t)
    if hook is None:
        return _default_mutate_raw(mutator, value)
    kind, fn = hook
    if kind == "native":
        res = fn(mutator._h, _RawAny(value._t, 0, value._h))
        if res.type_index == TypeIndex.ERROR:
            raise _core._exception_from_error_handle(res.v, raised=False)
        return _core.owned_from_buffer(bytes(res), 0)
    return _core.ffi_call(ctypes.c_void_p(fn), (mutator, value), "__s_maybe_inplace_mutate__")


# =============================================================================================
# Dispatch classes: WalkerBase, VisitorBase, MapperBase, MutatorBase
# =============================================================================================
_HookFn = TypeVar("_HookFn", bound=Callable[..., Any])


def default_hook(fn: _HookFn) -> _HookFn:
    """Mark a hook as the default behaviour: it is not registered with the engine.

    Generated dispatch bases declare one such hook per class; only hooks a subclass overrides
    (without this marker) cost a Python call per matching node. The default body must do what
    the engine does for an unmatched value (walk: ``return None``; visit:
    ``return self.default_visit_children(value)``; map: ``return UNCHANGED``; mutate:
    ``return self.default_maybe_inplace_mutate(value)``) so that ``super()`` calls work.
    """
    fn.__structural_default__ = True  # type: ignore[attr-defined]
    return fn


class _HookSpec(NamedTuple):
    name: str
    indices: tuple[int, ...]
    extra: bool  # takes a trailing DefRegionKind


class _HookBase:
    """Hook discovery shared by the dispatch bases (resolved once per class)."""

    #: Prefix of hook method names (``walk_``, ``visit_``, ``map_``, ``mutate_``).
    _hook_prefix: ClassVar[str] = ""
    #: Hook method name -> Python class (or builtin) it handles. Generated bases declare this.
    _hook_types: ClassVar[Mapping[str, Any]] = {}
    #: Helper methods of the base that look like hooks but are not.
    _hook_reserved: ClassVar[frozenset[str]] = frozenset()
    #: A ContextPolicy (or an (outer, inner) tuple) wrapping default recursion.
    context_policy: Any = None

    @classmethod
    def _hook_table(cls) -> tuple[_HookSpec, ...]:
        """The class's hooks in dispatch order, built once per class."""
        cached = cls.__dict__.get("_hook_table_cache")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        prefix = cls._hook_prefix
        declared: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            declared.update(klass.__dict__.get("_hook_types", {}) or {})
        others: list[str] = []
        # Where a (generated) base declares its hooks, those names are the only hooks; a bare
        # runtime base (nothing declared) takes any prefixed method, chosen by its annotation.
        for klass in reversed(cls.__mro__) if not declared else ():
            for name, attr in klass.__dict__.items():
                if (
                    name.startswith(prefix)
                    and name not in declared
                    and name not in cls._hook_reserved
                    and name not in others
                    and isinstance(attr, (types.FunctionType, functools.partialmethod))
                ):
                    others.append(name)
        specs: list[tuple[int, _HookSpec]] = []
        what = f"{cls.__name__}"
        for rank, name in enumerate([*declared, *others]):
            fn = getattr(cls, name, None)
            if fn is None or not callable(fn) or getattr(fn, "__structural_default__", False):
                continue
            params, var = _positional(fn)
            params = params[1:]  # self
            if name in declared:
                indices = _annotation_indices(declared[name], f"{what}.{name}")
            else:
                tp = _resolve_annotation(fn, params[0]) if params else Any
                indices = _annotation_indices(tp, f"{what}.{name}")
            if not params and not var:
                raise TypeError(f"{what}.{name} must take the value as its first parameter")
            spec = _HookSpec(name, indices, len(params) >= 2)
            # Declared hooks (one per class, generated): more-derived classes first, so the most
            # specific hook wins; hand-written hooks keep their definition order, after them.
            if name in declared:
                depth = max((_type_depth(i) if i >= 0 else -1) for i in indices) if indices else -1
                specs.append(((0, -depth, rank), spec))  # type: ignore[arg-type]
            else:
                specs.append(((1, 0, rank), spec))  # type: ignore[arg-type]
        table = tuple(s for _, s in sorted(specs, key=lambda x: x[0]))
        cls._hook_table_cache = table  # type: ignore[attr-defined]
        return table

    def _bound_hooks(self) -> list[_Entry]:
        return [_Entry(s.indices, getattr(self, s.name), s.extra) for s in type(self)._hook_table()]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, hook in _near_hook_names(cls):
            warnings.warn(
                f"{cls.__qualname__}.{name} is not a hook of {cls.__qualname__} (only the names its"
                f" base declares are); did you mean {hook}?",
                HookNameWarning,
                stacklevel=2,
            )


class HookNameWarning(UserWarning):
    """A method of a Walker / Visitor / Mapper / Mutator subclass is named almost like a hook
    (a typo, or another base's prefix): it is not called by the traversal."""


_HOOK_PREFIXES = ("walk_", "visit_", "map_", "mutate_")


def _near_hook_names(cls: type[_HookBase]) -> list[tuple[str, str]]:
    """(method, hook it is probably meant to be) for the methods ``cls`` defines that are not
    hooks but are close to one: an edit away, or a hook's name under another base's prefix."""
    declared: set[str] = set()
    for klass in cls.__mro__:
        declared.update(klass.__dict__.get("_hook_types", {}) or {})
    if not declared:
        return []
    prefix = cls._hook_prefix
    out: list[tuple[str, str]] = []
    for name, attr in cls.__dict__.items():
        if name in declared or name in cls._hook_reserved or name.startswith("_"):
            continue
        if not isinstance(attr, (types.FunctionType, functools.partialmethod)):
            continue
        other = next((p for p in _HOOK_PREFIXES if name.startswith(p) and p != prefix), None)
        if other is not None and prefix + name[len(other):] in declared:
            out.append((name, prefix + name[len(other):]))
            continue
        if not name.startswith(prefix):
            continue
        suffix = name[len(prefix):]
        limit = 1 if len(suffix) < 8 else 2
        near = sorted(
            (_edit_distance(suffix, hook[len(prefix):]), hook) for hook in declared if hook.startswith(prefix)
        )
        if near and near[0][0] <= limit:
            out.append((name, near[0][1]))
    return out


def _edit_distance(a: str, b: str) -> int:
    """Edits (insert, delete, replace, swap of neighbours) that turn ``a`` into ``b``."""
    if abs(len(a) - len(b)) > 2:
        return 3  # more than any limit we use
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


class WalkerBase(_HookBase):
    """Base of walker classes: ``walk_*`` hooks, each ``(self, value[, kind]) -> WalkResult | None``.

    A hook handles the values its first parameter's annotation selects (or the class given in
    ``_hook_types``); the first matching hook wins. Pass an instance to ``structural_walk``.
    """

    _hook_prefix: ClassVar[str] = "walk_"


class VisitorBase(_HookBase):
    """Base of visitor classes: ``visit_*`` hooks ``(self, value[, kind]) -> VisitInterrupt | None``.

    A matched hook owns the traversal of its value: call ``self.default_visit_children(value)``
    to descend, ``self.visit(child)`` for selected children. Unmatched values get the default
    child traversal. The helpers are valid while a hook runs.
    """

    _hook_prefix: ClassVar[str] = "visit_"
    _hook_reserved: ClassVar[frozenset[str]] = frozenset({"visit_children"})
    _ctx: VisitContext | None = None

    @property
    def context(self) -> VisitContext:
        """The context of the hook currently running."""
        ctx = self._ctx
        if ctx is None:
            raise RuntimeError(f"{type(self).__name__}: no structural visit hook is running")
        return ctx

    def visit(self, child: Any) -> VisitInterrupt | None:
        """Visit ``child`` through the active visitor (hooks apply to it)."""
        return self.context.visit(child)

    def default_visit_children(self, value: Any = UNCHANGED, def_region_kind: Any = None) -> VisitInterrupt | None:
        """Default child traversal of ``value`` (default: the hook's value).

        ``def_region_kind``, when given and different from the active one, is made active for
        the traversal.
        """
        ctx = self.context
        if value is UNCHANGED:
            value = ctx.value
        if def_region_kind is not None and int(def_region_kind) != int(ctx.def_region_kind):
            return ctx.with_def_region_kind(def_region_kind, lambda: ctx.default_visit(value))  # type: ignore[no-any-return]
        return ctx.default_visit(value)

    def def_region_kind(self) -> DefRegionKind:
        """The definition region active for the hook's value."""
        return self.context.def_region_kind

    def with_def_region_kind(self, kind: DefRegionKind | int, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` with ``kind`` as the active definition region."""
        return self.context.with_def_region_kind(kind, fn)


class MapperBase(_HookBase):
    """Base of mapper classes: ``map_*`` hooks ``(self, value[, kind]) -> replacement``.

    A hook returns the replacement, ``UNCHANGED``, or the value itself; unmatched values are
    preserved (their children are still mapped). Pass an instance to ``structural_map``.
    """

    _hook_prefix: ClassVar[str] = "map_"


class MutatorBase(_HookBase):
    """Base of mutator classes: ``mutate_*`` hooks ``(self, value[, kind]) -> replacement``.

    A matched hook owns the mutation of its value: use ``self.mutate(child)``,
    ``self.default_mutate(value)`` or ``self.default_maybe_inplace_mutate(value)`` to recurse
    (``self.inplace_mode`` tells whether in-place reuse is permitted), and
    ``self.var_remap_get`` / ``self.var_remap_set`` for identity substitutions. Unmatched
    values get the default mutation with their current in-place permission.
    """

    _hook_prefix: ClassVar[str] = "mutate_"
    _ctx: MutateContext | None = None

    @property
    def context(self) -> MutateContext:
        """The context of the hook currently running."""
        ctx = self._ctx
        if ctx is None:
            raise RuntimeError(f"{type(self).__name__}: no structural mutate hook is running")
        return ctx

    @property
    def inplace_mode(self) -> InplaceMode:
        """Whether the hook's value may be mutated in place."""
        return self.context.inplace_mode

    def mutate(self, child: Any) -> Any:
        """Mutate ``child`` through the active mutator (hooks apply to it), copy-on-write."""
        return self.context.mutate(child)

    def default_mutate(self, value: Any = UNCHANGED) -> Any:
        """Default mutation of ``value`` (default: the hook's value), copy-on-write."""
        return self.context.default_mutate(value)

    def default_maybe_inplace_mutate(self, value: Any = UNCHANGED) -> Any:
        """Default mutation of ``value`` (default: the hook's value), in place when permitted."""
        return self.context.default_maybe_inplace_mutate(value)

    def var_remap_get(self, var: Any) -> Any:
        """The replacement recorded for ``var`` in this traversal, or None."""
        return self.context.var_remap_get(var)

    def var_remap_set(self, var: Any, new: Any) -> None:
        """Record ``new`` as the replacement of ``var`` for the rest of this traversal."""
        self.context.var_remap_set(var, new)

    def def_region_kind(self) -> DefRegionKind:
        """The definition region active for the hook's value."""
        return self.context.def_region_kind

    def with_def_region_kind(self, kind: DefRegionKind | int, fn: Callable[[], Any]) -> Any:
        """Run ``fn()`` with ``kind`` as the active definition region."""
        return self.context.with_def_region_kind(kind, fn)


# =============================================================================================
# Callback bundles with shared state
# =============================================================================================
class VisitCallbacks:
    """Visit callbacks ``(value[, ctx])`` sharing ``state`` (``ctx.state``), tried in order.

    A matched callback owns the traversal of its value (``ctx.visit_children()``,
    ``ctx.visit(child)``) and returns None or a :class:`VisitInterrupt`. ``policy`` wraps the
    default recursion.
    """

    def __init__(self, state: Any, handlers: Any, policy: Any = None) -> None:
        self.state = state
        self.handlers = handlers
        self.policy = policy
        self._entries = _entries(handlers, "VisitCallbacks")


class MutateCallbacks:
    """Mutate callbacks ``(value[, ctx])`` sharing ``state`` (``ctx.state``), tried in order.

    A matched callback owns the mutation of its value and returns the result (``ctx.mutate``,
    ``ctx.default_mutate``, ``ctx.default_maybe_inplace_mutate`` recurse). ``policy`` wraps the
    default recursion.
    """

    def __init__(self, state: Any, handlers: Any, policy: Any = None) -> None:
        self.state = state
        self.handlers = handlers
        self.policy = policy
        self._entries = _entries(handlers, "MutateCallbacks")


# =============================================================================================
# structural_walk
# =============================================================================================
def _order(order: WalkOrder | str | int, what: str) -> WalkOrder:
    if isinstance(order, str):
        key = order.lower().replace("-", "_")
        if key in ("pre", "pre_order", "preorder"):
            return WalkOrder.PRE_ORDER
        if key in ("post", "post_order", "postorder"):
            return WalkOrder.POST_ORDER
        raise ValueError(f"{what}: unknown order {order!r}")
    return WalkOrder(int(order))


#: A typed handler: a callable whose first parameter's annotation selects the values it gets,
#: or ``on(tp, fn)``.
Handler: TypeAlias = "Callable[..., object] | on"
#: One handler or several (a tuple or list, nested ones flattened; the first match wins).
Handlers: TypeAlias = "Handler | tuple[Handlers, ...] | list[Handlers]"
#: A :class:`ContextPolicy`, or an ``(outer, ..., inner)`` tuple of them.
Policy: TypeAlias = "ContextPolicy | tuple[Policy, ...]"

_ENTRY_OF_BASE = {
    "WalkerBase": "structural_walk", "VisitorBase": "structural_visit",
    "MapperBase": "structural_map", "MutatorBase": "structural_mutate",
}


def _expect_base(handlers: object, base: type[_HookBase], what: str) -> None:
    """Refuse hook bases of another traversal (a Walker given to ``structural_map``) with a
    message naming both, instead of "not callable"."""
    if isinstance(handlers, _HookBase) and not isinstance(handlers, base):
        other = next((b for b in type(handlers).__mro__ if b.__name__ in _ENTRY_OF_BASE), type(handlers))
        raise TypeError(
            f"{what}: expected a {base.__name__.removesuffix('Base')} (a {base.__name__} subclass)"
            f" or typed handlers, got {type(handlers).__name__}, a {other.__name__} for"
            f" {_ENTRY_OF_BASE.get(other.__name__, 'another traversal')}"
        )


def structural_walk(
    root: object,
    handlers: WalkerBase | Handlers,
    order: WalkOrder | str = WalkOrder.PRE_ORDER,
    *,
    policy: Policy | None = None,
) -> VisitInterrupt | None:
    """Walk ``root`` in the engine and call the first matching handler for every value.

    ``handlers`` is a typed callable (its first parameter's annotation selects the values it
    gets; a trailing ``DefRegionKind`` parameter is optional), a tuple of them (first match
    wins; nested tuples flatten) or a :class:`WalkerBase` instance. A handler returns
    ``WalkResult.ADVANCE`` / ``None``, ``WalkResult.SKIP`` (pre-order: skip the children) or
    ``WalkResult.interrupt_with(payload)``. Map and Dict keys are not passed to handlers.

    Returns None when the whole graph was visited, else the :class:`VisitInterrupt`.
    Exceptions raised by handlers propagate with their type. ``policy`` (a
    :class:`ContextPolicy` or an ``(outer, inner)`` tuple) wraps default recursion into the
    values its ``types`` select.
    """
    _expect_base(handlers, WalkerBase, "structural_walk")
    order = _order(order, "structural_walk")
    if isinstance(handlers, WalkerBase):
        entries = handlers._bound_hooks()
        if policy is None:
            policy = handlers.context_policy
    else:
        entries = _entries(handlers, "structural_walk")
    root = _unmove(root)
    pol = _policies(policy)
    if pol is not None:
        return _walk_with_policy(root, entries, order, pol)
    if not entries:
        return _call("ffi.StructuralWalk", root, [], [], int(order))  # type: ignore[no-any-return]
    plain, kinded = _split(entries)
    return _call(  # type: ignore[no-any-return]
        "ffi.StructuralWalk", root, _links(plain, _T_WALK_PLAIN), _links(kinded, _T_WALK_KIND), int(order)
    )


def _walk_result(r: Any) -> int | VisitInterrupt:
    if r is None:
        return 0
    if r.__class__ is VisitInterrupt:
        return r
    if (r.__class__ is WalkResult or r.__class__ is int) and r in (0, 1):
        return int(r)
    raise TypeError(
        "a structural walk handler must return WalkResult.ADVANCE, WalkResult.SKIP, "
        f"WalkResult.interrupt_with(...) or None, not {r!r}"
    )


def _walk_with_policy(root: Any, entries: list[_Entry], order: WalkOrder, pol: _Policies) -> VisitInterrupt | None:
    """A walk whose default recursion runs through a context policy (on the visit engine).

    Per value: pre-order handler, the default child traversal wrapped by the policy, post-order
    handler -- exactly the walk engine's sequence.
    """
    pre = order == WalkOrder.PRE_ORDER

    def call(e: _Entry, value: Any, ctx: VisitContext) -> int | VisitInterrupt:
        return _walk_result(e.fn(value, ctx.def_region_kind) if e.extra else e.fn(value))

    def node(value: Any, ctx: VisitContext) -> VisitInterrupt | None:
        e = _first_match(entries, ctx._ti)
        if e is not None and pre:
            r = call(e, value, ctx)
            if isinstance(r, VisitInterrupt):
                return r
            if r == 1:
                return None
        res = ctx.visit_children()
        if res is not None:
            return res
        if e is not None and not pre:
            r = call(e, value, ctx)
            if isinstance(r, VisitInterrupt):
                return r
        return None

    indices = tuple(dict.fromkeys([i for e in entries for i in e.indices] + list(pol.indices)))
    return _run_visit(root, [(indices, node)], None, pol)


# =============================================================================================
# structural_visit
# =============================================================================================
_Ctx = TypeVar("_Ctx", "VisitContext", "MutateContext")


def _ctx_adapter(e: _Entry) -> Callable[[Any, _Ctx], Any]:
    """A visit / mutate handler as ``(value, ctx)``: handlers that take no context get none."""
    fn = e.fn
    if e.extra:
        return fn
    return lambda value, ctx: fn(value)


def _ctx_hook_adapter(owner: VisitorBase | MutatorBase, e: _Entry) -> Callable[[Any, _Ctx], Any]:
    """A hook of a Visitor / Mutator as ``(value, ctx)``; ``owner``'s helpers (visit_children,
    default_mutate, ...) reach the running context while it runs."""
    fn, extra = e.fn, e.extra

    def adapter(value: Any, ctx: _Ctx) -> Any:
        prev = owner.__dict__.get("_ctx")
        owner._ctx = ctx
        try:
            return fn(value, ctx.def_region_kind) if extra else fn(value)
        finally:
            owner._ctx = prev

    return adapter


def _ctx_program(
    handlers: Any, base: type[VisitorBase] | type[MutatorBase], callbacks: type[Any], policy: Any
) -> tuple[list[tuple[tuple[int, ...], Callable[..., Any]]], Any, Any]:
    """(program, state, policy) of a visit / mutate: a Visitor/Mutator instance's hooks, or
    handlers (given as such or wrapped in ``callbacks``); an explicit ``policy`` wins."""
    if isinstance(handlers, base):
        program = [(e.indices, _ctx_hook_adapter(handlers, e)) for e in handlers._bound_hooks()]
        return program, None, handlers.context_policy if policy is None else policy
    if not isinstance(handlers, callbacks):
        handlers = callbacks(None, handlers)
    program = [(e.indices, _ctx_adapter(e)) for e in handlers._entries]
    return program, handlers.state, handlers.policy if policy is None else policy


def structural_visit(
    root: object, visitor: VisitorBase | VisitCallbacks | Handlers, *, policy: Policy | None = None
) -> VisitInterrupt | None:
    """Visit ``root`` in the engine; matched callbacks own the traversal of their values.

    ``visitor`` is a :class:`VisitorBase` instance, a :class:`VisitCallbacks`, or handlers
    ``(value[, ctx])`` (a callable or a tuple, first match wins). Unmatched values get the
    default child traversal. Returns None or the :class:`VisitInterrupt` that stopped it.
    """
    _expect_base(visitor, VisitorBase, "structural_visit")
    program, state, policy = _ctx_program(visitor, VisitorBase, VisitCallbacks, policy)
    return _run_visit(_unmove(root), program, state, _policies(policy))


def _run_visit(
    root: Any, program: list[tuple[tuple[int, ...], Callable[..., Any]]], state: Any, pol: _Policies | None
) -> VisitInterrupt | None:
    run = _Run(state, pol)
    try:
        if pol is None:
            links: list[tuple[Any, ...]] = []
            for indices, adapter in program:
                f = _native(_T_VISIT, (adapter, run))
                links.extend((i, f) for i in indices)
        else:
            # One dispatcher for every type a callback or the policy handles; first match in
            # Python, then the callback (or the policy-wrapped default traversal).
            def dispatch(value: Any, ctx: VisitContext) -> Any:
                ti = ctx._ti
                for indices, adapter in program:
                    for i in indices:
                        if _matches(ti, i):
                            return adapter(value, ctx)
                return ctx.visit_children()

            all_indices = dict.fromkeys([i for indices, _ in program for i in indices] + list(pol.indices))
            f = _native(_T_VISIT, (dispatch, run))
            links = [(i, f) for i in all_indices]
        return _call("ffi.StructuralVisit", root, links)  # type: ignore[no-any-return]
    finally:
        run.close()


# =============================================================================================
# structural_map
# =============================================================================================
def structural_map(
    root: object,
    mapper: MapperBase | Handlers,
    order: WalkOrder | str = WalkOrder.POST_ORDER,
    *,
    policy: Policy | None = None,
) -> Any:
    """Map ``root`` in the engine with typed replacement handlers and return the result.

    ``mapper`` is a typed callable ``(value[, kind]) -> replacement``, a tuple of them (first
    match wins) or a :class:`MapperBase` instance. A handler returns the replacement, the value
    itself or ``UNCHANGED`` (``None`` is the FFI None value, a replacement like any other).
    Unmatched values are preserved and their children mapped.

    ``PRE_ORDER``: the handler runs first; a replacement root is not passed to the handler again
    but its children are mapped. ``POST_ORDER``: children are mapped first and the handler's
    result is final. Keys of Map / Dict are never mapped. Copy-on-write unless the root is
    passed with :func:`move` (uniquely owned containers are then reused in place). Handlers
    run at every occurrence (results are not cached).
    """
    _expect_base(mapper, MapperBase, "structural_map")
    order = _order(order, "structural_map")
    if isinstance(mapper, MapperBase):
        entries = mapper._bound_hooks()
        if policy is None:
            policy = mapper.context_policy
    else:
        entries = _entries(mapper, "structural_map")
    pol = _policies(policy)
    if pol is not None:
        return _map_with_policy(root, entries, order, pol)
    plain, kinded = _split(entries)
    return _call("ffi.StructuralMap", root, _links(plain, _T_MAP_PLAIN), _links(kinded, _T_MAP_KIND), int(order))


def _map_with_policy(root: Any, entries: list[_Entry], order: WalkOrder, pol: _Policies) -> Any:
    """A map whose default descent ``D`` runs through a context policy (on the mutate engine).

    Per value, the map engine's ``post(D(pre(x)))`` with the same in-place rules: pre-order
    replacements are descended but not passed to the handler again; post-order results are
    final; ``UNCHANGED`` keeps the value.
    """
    pre = order == WalkOrder.PRE_ORDER

    def call(e: _Entry, value: Any, ctx: MutateContext) -> Any:
        return e.fn(value, ctx.def_region_kind) if e.extra else e.fn(value)

    def node(value: Any, ctx: MutateContext) -> Any:
        allow = ctx.inplace_mode == InplaceMode.ALLOW
        if pre:
            e = _first_match(entries, ctx._ti)
            r = call(e, value, ctx) if e is not None else UNCHANGED
            if r is UNCHANGED or _same(r, value):
                d = ctx._default(value, allow and ctx._inplace_ok(value))
            else:
                # A fresh replacement may be reused in place when the caller permits it and the
                # callback's result is its only owner.
                unique = allow and isinstance(r, Object) and _refcounts(r._h) == (1, 1)
                inner = MutateContext(r, _tindex_of(r), ctx.state, ctx._m, _MODES[unique], ctx._run)
                d = inner._default(r, unique)
            return r if d is UNCHANGED else d
        d = ctx._default(value, allow and ctx._inplace_ok(value))
        cur = value if d is UNCHANGED else d
        e = _first_match(entries, _tindex_of(cur) if d is not UNCHANGED else ctx._ti)
        if e is None:
            return d
        r = call(e, cur, ctx)
        return d if r is UNCHANGED else r

    indices = tuple(dict.fromkeys([i for e in entries for i in e.indices] + list(pol.indices)))
    return _run_mutate(root, [(indices, node)], None, pol)


# =============================================================================================
# structural_mutate
# =============================================================================================
def structural_mutate(
    root: object, mutator: MutatorBase | MutateCallbacks | Handlers, *, policy: Policy | None = None
) -> Any:
    """Mutate ``root`` in the engine; matched callbacks own the mutation of their values.

    ``mutator`` is a :class:`MutatorBase` instance, a :class:`MutateCallbacks`, or handlers
    ``(value[, ctx])`` (first match wins). A callback returns the result for its value
    (``UNCHANGED`` keeps it) and recurses through its context; unmatched values get the default
    mutation with their current in-place permission. Copy-on-write unless ``root`` is passed
    with :func:`move`. Returns the mutated value.
    """
    _expect_base(mutator, MutatorBase, "structural_mutate")
    program, state, policy = _ctx_program(mutator, MutatorBase, MutateCallbacks, policy)
    return _run_mutate(root, program, state, _policies(policy))


def _run_mutate(
    root: Any, program: list[tuple[tuple[int, ...], Callable[..., Any]]], state: Any, pol: _Policies | None
) -> Any:
    run = _Run(state, pol)
    try:
        if pol is None:
            links: list[tuple[Any, ...]] = []
            for indices, adapter in program:
                f = _native(_T_MUTATE, (adapter, run))
                links.extend((i, f, True) for i in indices)
        else:

            def dispatch(value: Any, ctx: MutateContext) -> Any:
                ti = ctx._ti
                for indices, adapter in program:
                    for i in indices:
                        if _matches(ti, i):
                            return adapter(value, ctx)
                return ctx._default(value, ctx._inplace_ok(value))

            all_indices = dict.fromkeys([i for indices, _ in program for i in indices] + list(pol.indices))
            f = _native(_T_MUTATE, (dispatch, run))
            links = [(i, f, True) for i in all_indices]
        if not links:
            return _call("ffi.StructuralMap", root, [], [], int(WalkOrder.POST_ORDER))
        return _call("ffi.StructuralMutate", root, links)
    finally:
        run.close()


# =============================================================================================
# Benchmark helper
# =============================================================================================
def walk_count_nodes(root: Any, node_type: Any = Object) -> int:
    """Number of values of ``node_type`` (default: every object) in a pre-order walk of ``root``.

    One typed handler; per matching node the engine calls it through the walk trampoline (one
    dict lookup, the wrapper for the node, the call).
    """
    count = 0

    def handler(value: Any) -> None:
        nonlocal count
        count += 1

    structural_walk(root, on(node_type, handler), WalkOrder.PRE_ORDER)
    return count
