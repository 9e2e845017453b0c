"""Structural traversal helpers (walk / visit / map / mutate) over the library's own engine.

All traversal runs in ``libtvm_ffi``'s structural engine, driven through its global functions:

- ``ffi.StructuralWalk(root, [(type_index, fn)], [(type_index, fn_with_kind)], order)``
- ``ffi.StructuralVisit(root, [(type_index, fn(value, visitor))])``
- ``ffi.StructuralMap(root, [(type_index, fn)], [(type_index, fn_with_kind)], order)``
- ``ffi.StructuralMutate(root, [(type_index, fn(value, mutator, inplace_mode), True)])``
- the ``ffi.StructuralVisitor*`` / ``ffi.StructuralMutator*`` helpers for recursion.

So child order, definition regions, variable remapping, copy-on-write and in-place reuse are
exactly those of C++ and Rust. Python only supplies callbacks: the engine matches a callback by
type index (with the runtime's ancestor rules) and calls it through the backend's callback
trampoline (C, or ctypes on the pure backend) whose per-call work is one lookup (the callable),
the argument conversion, the call, and writing the result. Hook tables of dispatch classes (``WalkerBase``
and friends) are resolved once per class.

Public names: ``structural_walk``, ``structural_visit``, ``structural_map``,
``structural_mutate``, ``WalkResult``, ``WalkOrder``, ``VisitInterrupt``, ``DefRegionKind``,
``InplaceMode``, ``VisitCallbacks``, ``MutateCallbacks``, ``VisitContext``, ``MutateContext``,
``ContextPolicy``, ``Unchanged``, ``UNCHANGED``, ``move``, ``on``, ``default_hook``,
``WalkerBase``, ``VisitorBase``, ``MapperBase``, ``MutatorBase``.

This module holds the four engine entry points and re-exports the rest, which lives in layers
that import one way: ``_markers`` (markers, enums) → ``_match``
(annotations to type indices) → ``_context`` (contexts, policies) →
``_native`` (trampolines) → ``_hooks`` (hook bases) → here. Structural equality and hashing over
the same engine are the public submodule ``equality``, which the traversal does not import.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, overload

from .._errors import walk_result_error
from .._graph_guard import check_graph
from .._object import Object
from ._context import (
    ContextPolicy,
    HookCall,
    MutateContext,
    Policy,
    VisitContext,
    _Policies,
    _policies,
    _refcounts,
    _Run,
)
from ._hooks import (
    HookNameWarning,
    MapperBase,
    MutateCallbacks,
    MutatorBase,
    VisitCallbacks,
    VisitorBase,
    WalkerBase,
    _HookBase,
    default_hook,
)
from ._markers import (
    _MODES,
    UNCHANGED,
    DefRegionKind,
    InplaceMode,
    Moved,
    Unchanged,
    VisitInterrupt,
    WalkOrder,
    WalkResult,
    _call,
    _unmove,
    move,
)
from ._match import Handler, Handlers, _entries, _Entry, _first_match, _matches, _same, _tindex_of, on
from ._native import (
    _T_MAP_KIND,
    _T_MAP_PLAIN,
    _T_MUTATE,
    _T_VISIT,
    _T_WALK_KIND,
    _T_WALK_PLAIN,
    _links,
    _native,
    _split,
    hook_frame,
)

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
]

# Public classes keep the module users import them from (reprs, pickles, docs).
for _cls in (ContextPolicy, DefRegionKind, HookNameWarning, InplaceMode, MapperBase, MutateCallbacks, MutateContext,
             MutatorBase, Unchanged, VisitCallbacks, VisitContext, VisitInterrupt, VisitorBase, WalkOrder,
             WalkResult, WalkerBase, on):  # fmt: skip
    _cls.__module__ = __name__


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


# Handler, Handlers (typed handlers) and Policy (context policies) are defined where the layers
# below need them (_match, _context).

_ENTRY_OF_BASE = {
    "WalkerBase": "structural_walk",
    "VisitorBase": "structural_visit",
    "MapperBase": "structural_map",
    "MutatorBase": "structural_mutate",
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
    check_graph(root, "structural_walk")
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
    raise walk_result_error(r)


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


def _run_links(
    trampoline: Any, program: list[tuple[tuple[int, ...], Callable[..., Any]]], run: _Run, owner: Any
) -> tuple[list[tuple[int, Any]], Any]:
    """(type index, Function) links of a visit / mutate without a policy, and the frame the
    hooks of a Visitor / Mutator ``owner`` keep their node in (None for plain callbacks): the
    caller makes it ``owner._ctx`` while the traversal runs."""
    frame = hook_frame(trampoline, run) if owner is not None else None
    links: list[tuple[int, Any]] = []
    for indices, adapter in program:
        f = _native(trampoline, (adapter, run, frame) if frame is not None else (adapter, run))
        links.extend((i, f) for i in indices)
    return links, frame


def _program_owner(program: list[tuple[tuple[int, ...], Callable[..., Any]]]) -> Any:
    """The Visitor / Mutator whose hooks make up ``program`` (None for plain callbacks)."""
    return next((a.owner for _, a in program if isinstance(a, HookCall)), None)


def _ctx_program(
    handlers: Any, base: type[VisitorBase] | type[MutatorBase], callbacks: type[Any], policy: Any
) -> tuple[list[tuple[tuple[int, ...], Callable[..., Any]]], Any, Any]:
    """(program, state, policy) of a visit / mutate: a Visitor/Mutator instance's hooks, or
    handlers (given as such or wrapped in ``callbacks``); an explicit ``policy`` wins."""
    if isinstance(handlers, base):
        program: list[tuple[tuple[int, ...], Callable[..., Any]]] = [
            (e.indices, HookCall(handlers, e.fn, e.extra)) for e in handlers._bound_hooks()
        ]
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
    root = _unmove(root)
    check_graph(root, "structural_visit")
    return _run_visit(root, program, state, _policies(policy))


def _run_visit(
    root: Any, program: list[tuple[tuple[int, ...], Callable[..., Any]]], state: Any, pol: _Policies | None
) -> VisitInterrupt | None:
    run = _Run(state, pol)
    owner = _program_owner(program) if pol is None else None
    prev = owner.__dict__.get("_ctx") if owner is not None else None
    try:
        if pol is None:
            links, frame = _run_links(_T_VISIT, program, run, owner)
            if frame is not None and owner is not None:
                owner._ctx = frame
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
        if owner is not None:
            owner._ctx = prev
        run.close()


# =============================================================================================
# structural_map
# =============================================================================================
#: The root of a map or mutate, and so its result: a mapper keeps each value's type (a handler
#: returning another type for the root is the caller's to cast), as ``copy.replace`` does.
_Root = TypeVar("_Root")
_MovedRoot = TypeVar("_MovedRoot", bound=Object)


@overload
def structural_map(
    root: Moved[_MovedRoot],
    mapper: MapperBase | Handlers,
    order: WalkOrder | str = ...,
    *,
    policy: Policy | None = ...,
) -> _MovedRoot: ...
@overload
def structural_map(
    root: _Root, mapper: MapperBase | Handlers, order: WalkOrder | str = ..., *, policy: Policy | None = ...
) -> _Root: ...
def structural_map(
    root: object,
    mapper: MapperBase | Handlers,
    order: WalkOrder | str = WalkOrder.POST_ORDER,
    *,
    policy: Policy | None = None,
) -> object:
    """Map ``root`` in the engine with typed replacement handlers and return the result.

    ``mapper`` is a typed callable ``(value[, kind]) -> replacement``, a tuple of them (first
    match wins) or a :class:`MapperBase` instance. A handler returns the replacement, the value
    itself or ``UNCHANGED`` (``None`` is the FFI None value, a replacement like any other).
    Unmatched values are preserved and their children mapped.

    ``PRE_ORDER``: the handler runs first; a replacement root is not passed to the handler again
    but its children are mapped. ``POST_ORDER``: children are mapped first and the handler's
    result is final. Keys of Map / Dict are never mapped. Copy-on-write unless the root is
    passed with :func:`move` (uniquely owned containers are then reused in place). Handlers
    run at every occurrence (results are not cached). The result is typed as the root (the moved
    object for ``move(root)``), as ``copy.replace`` types its result: a mapper that replaces the
    root by a value of another type needs a cast (``cast(IntImm, structural_map(expr, fold))``)
    or an ``isinstance`` check.
    """
    _expect_base(mapper, MapperBase, "structural_map")
    check_graph(_unmove(root), "structural_map")
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
@overload
def structural_mutate(
    root: Moved[_MovedRoot], mutator: MutatorBase | MutateCallbacks | Handlers, *, policy: Policy | None = ...
) -> _MovedRoot: ...
@overload
def structural_mutate(
    root: _Root, mutator: MutatorBase | MutateCallbacks | Handlers, *, policy: Policy | None = ...
) -> _Root: ...
def structural_mutate(
    root: object, mutator: MutatorBase | MutateCallbacks | Handlers, *, policy: Policy | None = None
) -> object:
    """Mutate ``root`` in the engine; matched callbacks own the mutation of their values.

    ``mutator`` is a :class:`MutatorBase` instance, a :class:`MutateCallbacks`, or handlers
    ``(value[, ctx])`` (first match wins). A callback returns the result for its value
    (``UNCHANGED`` keeps it) and recurses through its context; unmatched values get the default
    mutation with their current in-place permission. Copy-on-write unless ``root`` is passed
    with :func:`move`. Returns the mutated value, typed as the root (the moved object for
    ``move(root)``), as ``copy.replace`` types its result: a mutator that replaces the root by a
    value of another type needs a cast or an ``isinstance`` check.
    """
    _expect_base(mutator, MutatorBase, "structural_mutate")
    check_graph(_unmove(root), "structural_mutate")
    program, state, policy = _ctx_program(mutator, MutatorBase, MutateCallbacks, policy)
    return _run_mutate(root, program, state, _policies(policy))


def _run_mutate(
    root: Any, program: list[tuple[tuple[int, ...], Callable[..., Any]]], state: Any, pol: _Policies | None
) -> Any:
    run = _Run(state, pol)
    owner = _program_owner(program) if pol is None else None
    prev = owner.__dict__.get("_ctx") if owner is not None else None
    try:
        if pol is None:
            plain, frame = _run_links(_T_MUTATE, program, run, owner)
            links: list[tuple[Any, ...]] = [(i, f, True) for i, f in plain]
            if frame is not None and owner is not None:
                owner._ctx = frame
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
        if owner is not None:
            owner._ctx = prev
        run.close()
