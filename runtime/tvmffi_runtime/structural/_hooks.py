"""Hook bases: ``WalkerBase``, ``VisitorBase``, ``MapperBase``, ``MutatorBase`` (hook tables
resolved once per class, generated-name-only hooks, near-miss ``HookNameWarning``), and the
callback bundles ``VisitCallbacks`` / ``MutateCallbacks``.
"""

from __future__ import annotations

import functools
import types
import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple, TypeVar

from ._context import HookFrame, MutateContext, Policy, VisitContext
from ._markers import UNCHANGED, DefRegionKind, InplaceMode, VisitInterrupt
from ._match import Handlers, _annotation_indices, _entries, _Entry, _positional, _resolve_annotation, _type_depth

__all__ = [
    "HookNameWarning",
    "MapperBase",
    "MutateCallbacks",
    "MutatorBase",
    "VisitCallbacks",
    "VisitorBase",
    "WalkerBase",
    "default_hook",
    "_HookBase",
]


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
    context_policy: Policy | None = None

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

    def __init_subclass__(cls, **kwargs: object) -> None:
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
        if other is not None and prefix + name[len(other) :] in declared:
            out.append((name, prefix + name[len(other) :]))
            continue
        if not name.startswith(prefix):
            continue
        suffix = name[len(prefix) :]
        limit = 1 if len(suffix) < 8 else 2
        near = sorted(
            (_edit_distance(suffix, hook[len(prefix) :]), hook) for hook in declared if hook.startswith(prefix)
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
    _ctx: VisitContext | HookFrame | None = None

    @property
    def context(self) -> VisitContext:
        """The context of the hook currently running."""
        ctx = self._ctx
        found = ctx.context() if isinstance(ctx, HookFrame) else ctx
        if not isinstance(found, VisitContext):
            raise RuntimeError(f"{type(self).__name__}: no structural visit hook is running")
        return found

    def visit(self, child: object) -> VisitInterrupt | None:
        """Visit ``child`` through the active visitor (hooks apply to it)."""
        return self.context.visit(child)

    def default_visit_children(
        self, value: object = UNCHANGED, def_region_kind: DefRegionKind | int | None = None
    ) -> VisitInterrupt | None:
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

    def with_def_region_kind(self, kind: DefRegionKind | int, fn: Callable[[], object]) -> Any:
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
    _ctx: MutateContext | HookFrame | None = None

    @property
    def context(self) -> MutateContext:
        """The context of the hook currently running."""
        ctx = self._ctx
        found = ctx.context() if isinstance(ctx, HookFrame) else ctx
        if not isinstance(found, MutateContext):
            raise RuntimeError(f"{type(self).__name__}: no structural mutate hook is running")
        return found

    @property
    def inplace_mode(self) -> InplaceMode:
        """Whether the hook's value may be mutated in place."""
        return self.context.inplace_mode

    def mutate(self, child: object) -> Any:
        """Mutate ``child`` through the active mutator (hooks apply to it), copy-on-write."""
        return self.context.mutate(child)

    def default_mutate(self, value: object = UNCHANGED) -> Any:
        """Default mutation of ``value`` (default: the hook's value), copy-on-write."""
        return self.context.default_mutate(value)

    def default_maybe_inplace_mutate(self, value: object = UNCHANGED) -> Any:
        """Default mutation of ``value`` (default: the hook's value), in place when permitted."""
        return self.context.default_maybe_inplace_mutate(value)

    def var_remap_get(self, var: object) -> Any:
        """The replacement recorded for ``var`` in this traversal, or None."""
        return self.context.var_remap_get(var)

    def var_remap_set(self, var: object, new: object) -> None:
        """Record ``new`` as the replacement of ``var`` for the rest of this traversal."""
        self.context.var_remap_set(var, new)

    def def_region_kind(self) -> DefRegionKind:
        """The definition region active for the hook's value."""
        return self.context.def_region_kind

    def with_def_region_kind(self, kind: DefRegionKind | int, fn: Callable[[], object]) -> Any:
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

    def __init__(self, state: object, handlers: Handlers, policy: Policy | None = None) -> None:
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

    def __init__(self, state: object, handlers: Handlers, policy: Policy | None = None) -> None:
        self.state = state
        self.handlers = handlers
        self.policy = policy
        self._entries = _entries(handlers, "MutateCallbacks")
