"""Contexts and policies: ``VisitContext`` / ``MutateContext`` (recursion, definition regions,
in-place mode), ``ContextPolicy`` hooks around the default recursion, and the borrowed engine
objects they call through.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any, TypeAlias

from .. import _convert, _errors, _lib, _object
from .._call import ffi_call
from .._object import Object
from .._values import TypeIndex
from ._markers import _KINDS, UNCHANGED, DefRegionKind, InplaceMode, VisitInterrupt, _call
from ._match import _annotation_indices, _flatten, _matches, _same, _tindex_of

__all__ = [
    "ContextPolicy",
    "HookCall",
    "HookFrame",
    "MutateContext",
    "Policy",
    "VisitContext",
    "_Policies",
    "_Run",
    "_policies",
    "_refcounts",
]


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
    w._t = _object._read_type_index(handle)
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

    types: tuple[object, ...] = (object,)

    # ``value: Any``: an override annotates the values its ``types`` select.
    def enter(self, value: Any, ctx: VisitContext | MutateContext) -> None:
        """Called before default recursion into ``value``."""

    def exit(self, value: Any, ctx: VisitContext | MutateContext) -> None:
        """Called after default recursion into ``value`` (also when it raised)."""

    def around(self, value: Any, ctx: VisitContext | MutateContext, descend: Callable[[], Any]) -> object:
        """Run ``descend()`` (the default recursion) between ``enter`` and ``exit``."""
        self.enter(value, ctx)
        try:
            return descend()
        finally:
            self.exit(value, ctx)


#: A :class:`ContextPolicy`, or an ``(outer, ..., inner)`` tuple of them.
Policy: TypeAlias = "ContextPolicy | tuple[Policy, ...]"


class _Policies:
    """A flattened (outer, ..., inner) chain of policies with their type indices."""

    __slots__ = ("chain", "indices")

    def __init__(self, policy: Any) -> None:
        items = _flatten(policy, [])
        chain: list[tuple[ContextPolicy, tuple[int, ...]]] = []
        for p in items:
            if not isinstance(p, ContextPolicy):
                raise TypeError(f"a context policy must be a ContextPolicy or a tuple of them, not {p!r}")
            idx: list[int] = []
            for tp in tuple(p.types):
                idx.extend(_annotation_indices(tp, f"{type(p).__name__}.types"))
            chain.append((p, tuple(idx)))
        self.chain = tuple(chain)
        self.indices = tuple(dict.fromkeys(i for _, idx in chain for i in idx))

    def wrap(self, value: object, tindex: int, ctx: VisitContext | MutateContext, descend: Callable[[], object]) -> Any:
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
    #: The value the callback runs on.
    value: Any
    #: The ``state`` of the callbacks (the caller's own object).
    state: Any

    def __init__(self, value: object, tindex: int, state: object, visitor: _Borrowed, run: _Run) -> None:
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

    def default_visit(self, value: object) -> VisitInterrupt | None:
        """Default traversal of ``value``'s children, bypassing callback dispatch for it."""
        if value is self.value:
            return self.visit_children()
        return self._default_visit(value, _tindex_of(value))

    def _default_visit(self, value: object, tindex: int) -> VisitInterrupt | None:
        policy = self._run.policy
        v = self._live()
        if policy is None:
            return _call("ffi.StructuralVisitorDefaultVisit", v, value)  # type: ignore[no-any-return]
        return policy.wrap(value, tindex, self, lambda: _call("ffi.StructuralVisitorDefaultVisit", v, value))  # type: ignore[no-any-return]

    def visit(self, child: object) -> VisitInterrupt | None:
        """Visit ``child`` through the visitor (callbacks apply to it)."""
        return _call("ffi.StructuralVisitorVisit", self._live(), child)  # type: ignore[no-any-return]

    @property
    def def_region_kind(self) -> DefRegionKind:
        """The definition region active for this value."""
        kind: int = _call("ffi.StructuralVisitorDefRegionKind", self._live())
        return _KINDS[kind]

    def with_def_region_kind(self, kind: DefRegionKind | int, fn: Callable[[], object]) -> Any:
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

    __slots__ = ("value", "_ti", "state", "_m", "inplace_mode", "_run")
    #: The value the callback runs on.
    value: Any
    #: The ``state`` of the callbacks (the caller's own object).
    state: Any

    def __init__(
        self, value: object, tindex: int, state: object, mutator: _Borrowed, mode: InplaceMode, run: _Run
    ) -> None:
        self.value = value
        self._ti = tindex
        self.state = state
        self._m = mutator
        self.inplace_mode = mode
        self._run = run

    def _live(self) -> _Borrowed:
        if self._run._w is None:
            raise RuntimeError("a MutateContext is valid only while its traversal runs")
        return self._m

    def mutate(self, child: object) -> Any:
        """Mutate ``child`` through the mutator (callbacks apply), copy-on-write."""
        return _call("ffi.StructuralMutatorMutate", self._live(), child)

    def default_mutate(self, value: object = UNCHANGED) -> Any:
        """Default mutation of ``value`` (default: this value), copy-on-write."""
        if value is UNCHANGED:
            value = self.value
        out = self._default(value, False)
        return value if out is UNCHANGED else out

    def default_maybe_inplace_mutate(self, value: object = UNCHANGED) -> Any:
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
        # Only the engine's reference and the callback's wrapper's: nothing else can observe an
        # in-place write.
        return _refcounts(value._h) == (1, 2)

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

    def var_remap_get(self, var: object) -> Any:
        """The replacement recorded for the identity ``var`` in this traversal, or None."""
        return _call("ffi.StructuralMutatorVarRemapGet", self._live(), var)

    def var_remap_set(self, var: object, new: object) -> None:
        """Record ``new`` as the replacement of the identity ``var`` (FreeVar / DAG node types)."""
        _call("ffi.StructuralMutatorVarRemapSet", self._live(), var, new)

    @property
    def def_region_kind(self) -> DefRegionKind:
        """The definition region active for this value."""
        kind: int = _call("ffi.StructuralMutatorDefRegionKind", self._live())
        return _KINDS[kind]

    def with_def_region_kind(self, kind: DefRegionKind | int, fn: Callable[[], object]) -> Any:
        """Run ``fn()`` with ``kind`` as the active region (no effect inside a pattern region)."""
        return _call("ffi.StructuralMutatorWithDefRegionKind", self._live(), int(kind), fn)


_refcounts = _object._ref_counts


def _default_mutate_raw(mutator: _Borrowed, value: Any) -> Any:
    out = _call("ffi.StructuralMutatorDefaultMutate", mutator, value)
    return UNCHANGED if _same(out, value) else out


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
            fn = _HOOKS[addr] = _lib.STRUCTURAL_MUTATE_ABI(addr)
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
        res = fn(mutator._h, _lib.TVMFFIAnyByValue(value._t, 0, value._h))
        if res.type_index == TypeIndex.ERROR:
            raise _errors._exception_from_error_handle(res.v, raised=False)
        return _convert.owned_from_buffer(bytes(res), 0)
    return ffi_call(ctypes.c_void_p(fn), (mutator, value), "__s_maybe_inplace_mutate__")


# =============================================================================================
# Hooks of Visitor / Mutator instances
# =============================================================================================
class HookCall:
    """A hook of a Visitor / Mutator run as a visit / mutate callback ``(value, ctx)``: the
    owner's helpers (``default_visit_children``, ``mutate``, ...) reach ``ctx`` while it runs.

    A hook that takes no definition-region kind is called as ``fn(value)`` straight from the
    backend's trampoline instead (the hook callback mode), its context kept in a :class:`HookFrame`.
    """

    __slots__ = ("owner", "fn", "extra")

    def __init__(self, owner: Any, fn: Callable[..., Any], extra: bool) -> None:
        self.owner = owner
        self.fn = fn
        self.extra = extra  # the hook takes the definition-region kind too

    def __call__(self, value: Any, ctx: VisitContext | MutateContext) -> Any:
        owner = self.owner
        prev = owner.__dict__.get("_ctx")
        owner._ctx = ctx
        try:
            return self.fn(value, ctx.def_region_kind) if self.extra else self.fn(value)
        finally:
            owner._ctx = prev


_IDLE = object()  # a HookFrame's value while no hook runs on it


class HookFrame:
    """Where the compiled trampoline keeps the node a hook runs on: around each call it writes
    (value, type index, engine handle[, mutate mode]) into ``items`` and puts the previous ones
    back after (hooks nest). ``context()`` builds the hook's context only when a helper asks,
    so a hook that just inspects its node costs no context object."""

    __slots__ = ("items", "_make")

    def __init__(self, size: int, make: Callable[[list[Any]], VisitContext | MutateContext]) -> None:
        self.items: list[Any] = [_IDLE] * size
        self._make = make

    def context(self) -> VisitContext | MutateContext | None:
        """The running hook's context, or None between hooks."""
        items = self.items
        return None if items[0] is _IDLE else self._make(items)
