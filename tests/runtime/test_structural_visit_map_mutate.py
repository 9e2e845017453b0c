"""Structural visit / map / mutate over the library's engine (tvmffi_runtime.structural) on the
``exprir`` expression IR fixture (tests/fixtures/expr_ir.cc): interrupts, replacement order,
variable remapping, in-place reuse versus copy-on-write, exceptions inside hooks, and contexts.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

import tvmffi_runtime as rt
from tvmffi_runtime.containers import Array, List, Map
from tvmffi_runtime.structural import (
    UNCHANGED,
    ContextPolicy,
    DefRegionKind,
    InplaceMode,
    MutateCallbacks,
    MutatorBase,
    Unchanged,
    VisitInterrupt,
    VisitorBase,
    WalkerBase,
    WalkOrder,
    move,
    on,
    structural_map,
    structural_mutate,
    structural_visit,
    structural_walk,
)

from structural_ir import ir


def seq_equal(a: Any, b: Any) -> bool:
    return bool(rt.get_global_func("ffi.StructuralEqual")(a, b, False, False))


class Boom(Exception):
    """Raised inside hooks: must come out of the engine with its type."""


# =============================================================================================
# Visit
# =============================================================================================
def test_visit_interrupt_and_children(ir: Any) -> None:
    e = ir.Add(ir.IntImm(1), ir.Mul(ir.IntImm(2), ir.IntImm(3)))

    class FindMul(VisitorBase):
        def __init__(self) -> None:
            self.visited: list[str] = []

        def visit_mul(self, node: ir.Mul) -> VisitInterrupt | None:
            self.visited.append("mul")
            return VisitInterrupt(node)

        def visit_int(self, node: ir.IntImm) -> None:
            self.visited.append(f"int{node.value}")

    finder = FindMul()
    found = structural_visit(e, finder)
    assert isinstance(found, VisitInterrupt) and found.value.same_as(e.b)
    assert finder.visited == ["int1", "mul"]  # Add unmatched: default traversal

    picked: list[int] = []

    def add(node: ir.Add, ctx: Any) -> Any:
        return ctx.visit(node.b)  # only the right child

    structural_visit(e, (add, on(ir.IntImm, lambda i, ctx: picked.append(i.value))))
    assert picked == [2, 3]


# =============================================================================================
# Map on the IR
# =============================================================================================
def test_map_constant_folding_post_order(ir: Any) -> None:
    x = ir.Var("x")
    e = ir.Add(x, ir.Add(ir.IntImm(1), ir.Mul(ir.IntImm(2), ir.IntImm(3))))

    def fold(node: ir.Binary) -> Any:
        a, b = node.a, node.b
        if isinstance(a, ir.IntImm) and isinstance(b, ir.IntImm):
            return ir.IntImm(a.value + b.value if isinstance(node, ir.Add) else a.value * b.value)
        return UNCHANGED

    folded = structural_map(e, fold, WalkOrder.POST_ORDER)
    assert isinstance(folded, ir.Add)
    assert folded.a.same_as(x)
    assert isinstance(folded.b, ir.IntImm) and folded.b.value == 7
    assert seq_equal(e, ir.Add(x, ir.Add(ir.IntImm(1), ir.Mul(ir.IntImm(2), ir.IntImm(3)))))
    all_const = ir.Mul(ir.Add(ir.IntImm(1), ir.IntImm(2)), ir.IntImm(4))
    assert structural_map(all_const, fold, WalkOrder.POST_ORDER).value == 12
    # Pre-order sees the unfolded children, so only the innermost node folds.
    pre = structural_map(all_const, fold, WalkOrder.PRE_ORDER)
    assert isinstance(pre, ir.Mul) and pre.a.value == 3


def test_map_pre_order_replacement_not_revisited_post_order_final(ir: Any) -> None:
    e = ir.Add(ir.IntImm(1), ir.IntImm(2))
    seen: list[str] = []

    def pre(node: ir.Expr) -> Any:
        seen.append(type(node).__name__)
        if isinstance(node, ir.Add):
            return ir.Mul(node.a, node.b)
        return ir.IntImm(node.value * 10)

    out = structural_map(e, pre, WalkOrder.PRE_ORDER)
    assert seen == ["Add", "IntImm", "IntImm"]  # the Mul replacement is not passed again
    assert isinstance(out, ir.Mul) and (out.a.value, out.b.value) == (10, 20)

    seen.clear()

    def post(node: ir.Expr) -> Any:
        seen.append(type(node).__name__)
        if isinstance(node, ir.Add):
            return ir.Add(ir.IntImm(100), ir.IntImm(100))
        return ir.IntImm(node.value + 1)

    out = structural_map(e, post, WalkOrder.POST_ORDER)
    assert seen == ["IntImm", "IntImm", "Add"]
    assert (out.a.value, out.b.value) == (100, 100)  # final: its children are not mapped


def test_map_unchanged_keeps_identity(ir: Any) -> None:
    e = ir.Add(ir.IntImm(1), ir.IntImm(2))
    assert structural_map(e, on(ir.IntImm, lambda i: UNCHANGED)).same_as(e)
    assert structural_map(e, on(ir.IntImm, lambda i: i), WalkOrder.PRE_ORDER).same_as(e)
    assert Unchanged() is UNCHANGED


def test_map_keys_untouched(ir: Any) -> None:
    k1, k2 = ir.IntImm(1), ir.IntImm(2)
    m = Map({k1: ir.IntImm(10), k2: ir.IntImm(20)})
    out = structural_map(m, on(ir.IntImm, lambda i: ir.IntImm(i.value + 1)))
    assert len(out) == 2
    keys = list(out.keys())
    assert any(k.same_as(k1) for k in keys) and any(k.same_as(k2) for k in keys)
    assert out[k1].value == 11 and out[k2].value == 21

    ints = structural_map(Map({1: 10, 2: 20}), on(int, lambda v: v + 1))
    assert dict(ints.items()) == {1: 11, 2: 21}

    fn = ir.Func([], ir.IntImm(0), {"k": ir.IntImm(5)})
    out_fn = structural_map(fn, on(ir.IntImm, lambda i: ir.IntImm(i.value + 1)))
    assert list(out_fn.attrs.keys()) == ["k"] and out_fn.attrs["k"].value == 6
    assert out_fn.body.value == 1
    assert fn.attrs["k"].value == 5


def test_map_renames_definition_and_engine_remaps_uses(ir: Any) -> None:
    x, y = ir.Var("x"), ir.Var("y")
    e = ir.Let(x, ir.IntImm(1), ir.Add(x, y))
    # Mapping the name string changes x's definition; the engine records x -> x' and replaces
    # every use of x by the same new Var. y is free (no definition), so it is left alone.
    out = structural_map(e, on(str, lambda s: s + "'"), WalkOrder.POST_ORDER)
    assert out.var.name == "x'"
    assert out.body.a.same_as(out.var)
    assert out.body.b.same_as(y)
    assert e.var.name == "x" and e.body.a.same_as(x)


# =============================================================================================
# Mutate on the IR
# =============================================================================================
def test_mutate_rename_with_var_remap(ir: Any) -> None:
    x, y = ir.Var("x"), ir.Var("y")
    fn = ir.Func([x], ir.Let(y, ir.Add(x, ir.IntImm(1)), ir.Mul(y, x)), {})

    class Rename(MutatorBase):
        _hook_types: ClassVar[dict[str, Any]] = {"mutate_var": ir.Var}

        def __init__(self) -> None:
            self.defs = 0

        def mutate_var(self, var: Any, kind: DefRegionKind) -> Any:
            if kind != DefRegionKind.NONE:
                self.defs += 1
                new = ir.Var(var.name + "_1")
                self.var_remap_set(var, new)
                return new
            mapped = self.var_remap_get(var)
            return var if mapped is None else mapped

    renamer = Rename()
    out = structural_mutate(fn, renamer)
    assert renamer.defs == 2
    (x1,) = list(out.params)
    let = out.body
    assert (x1.name, let.var.name) == ("x_1", "y_1")
    assert let.value.a.same_as(x1)
    assert let.body.a.same_as(let.var) and let.body.b.same_as(x1)
    assert fn.params[0].same_as(x) and fn.body.var.same_as(y)  # copy-on-write source


def test_mutate_policy_tracks_let_depth(ir: Any) -> None:
    e = ir.Let(ir.Var("a"), ir.IntImm(0), ir.Let(ir.Var("b"), ir.IntImm(0), ir.IntImm(0)))

    class Depth(ContextPolicy):
        types = (ir.Let,)

        def __init__(self) -> None:
            self.depth = 0

        def around(self, value: Any, ctx: Any, descend: Any) -> Any:
            self.depth += 1
            try:
                return descend()
            finally:
                self.depth -= 1

    depth = Depth()

    def on_int(i: ir.IntImm, ctx: Any) -> Any:
        ctx.state.append(depth.depth)
        return ir.IntImm(depth.depth)

    callbacks = MutateCallbacks([], on_int, policy=depth)
    out = structural_mutate(e, callbacks)
    assert (out.value.value, out.body.value.value, out.body.body.value) == (1, 2, 2)
    assert callbacks.state == [1, 2, 2]

    for order in (WalkOrder.PRE_ORDER, WalkOrder.POST_ORDER):
        mapped = structural_map(e, on(ir.IntImm, lambda i: ir.IntImm(i.value + 10 * depth.depth)), order, policy=depth)
        assert (mapped.value.value, mapped.body.value.value, mapped.body.body.value) == (10, 20, 20)
        assert depth.depth == 0


# =============================================================================================
# In-place reuse versus copy-on-write
# =============================================================================================
def test_copy_on_write_by_default() -> None:
    source = Array([[1, 2], [3]])
    out = structural_mutate(source, on(int, lambda v: v * 10))
    assert not out.same_as(source)
    assert [list(a) for a in source] == [[1, 2], [3]]
    assert [list(a) for a in out] == [[10, 20], [30]]


def test_move_reuses_unique_containers_in_place() -> None:
    source = Array([[1, 2], [3]])
    outer, inner0 = source.handle, source[0].handle
    out = structural_mutate(move(source), on(int, lambda v: v * 10))
    assert source.handle == 0  # the wrapper gave up its reference
    assert out.handle == outer and out[0].handle == inner0
    assert [list(a) for a in out] == [[10, 20], [30]]
    with pytest.raises(ValueError):
        move(source)

    mapped_source = List([1, 2])
    handle = mapped_source.handle
    mapped = structural_map(move(mapped_source), on(int, lambda v: v + 1))
    assert mapped.handle == handle and list(mapped) == [2, 3]


def test_shared_child_is_copied_even_when_moved() -> None:
    shared = Array([1, 2])
    source = Array([shared, [3]])
    inner1 = source[1].handle
    out = structural_mutate(move(source), on(int, lambda v: v + 1))
    assert [list(a) for a in out] == [[2, 3], [4]]
    assert list(shared) == [1, 2] and not out[0].same_as(shared)  # still referenced here
    assert out[1].handle == inner1  # uniquely owned: reused


def test_inplace_mode_and_default_mutations() -> None:
    modes: list[InplaceMode] = []

    def lists(value: List, ctx: Any) -> Any:
        modes.append(ctx.inplace_mode)
        return ctx.default_maybe_inplace_mutate(value)

    def copy_lists(value: List, ctx: Any) -> Any:
        return ctx.default_mutate(value)

    handlers = (lists, on(int, lambda v, ctx: v + 1))
    shared = List([1, 2])
    out = structural_mutate(shared, handlers)
    assert modes == [InplaceMode.DISALLOW] and not out.same_as(shared) and list(shared) == [1, 2]

    owned = List([1, 2])
    h = owned.handle
    out = structural_mutate(move(owned), handlers)
    assert modes[-1] == InplaceMode.ALLOW and out.handle == h and list(out) == [2, 3]

    owned = List([1, 2])
    h = owned.handle
    out = structural_mutate(move(owned), (copy_lists, on(int, lambda v, ctx: v + 1)))
    assert out.handle != h and list(out) == [2, 3]

    # A callback that takes another (native) reference first forces the copy path, like an
    # owning alias in C++ / Rust: the kept list is not written.
    kept = List()

    def keep(value: List, ctx: Any) -> Any:
        kept.append(value)
        return ctx.default_maybe_inplace_mutate(value)

    owned = List([1, 2])
    h = owned.handle
    out = structural_mutate(move(owned), (keep, on(int, lambda v, ctx: v + 1)))
    assert list(out) == [2, 3] and out.handle != h
    assert kept[0].handle == h and list(kept[0]) == [1, 2]


# =============================================================================================
# Exceptions inside hooks propagate with their type
# =============================================================================================
def test_exceptions_propagate_with_their_type(ir: Any) -> None:
    e = ir.Add(ir.IntImm(1), ir.IntImm(2))

    def boom(*_args: Any) -> Any:
        raise Boom("inside a hook")

    class W(WalkerBase):
        def walk_int(self, node: ir.IntImm) -> None:
            raise Boom("walker")

    cases = [
        lambda: structural_walk(e, on(ir.IntImm, boom), WalkOrder.PRE_ORDER),
        lambda: structural_walk(e, W(), WalkOrder.POST_ORDER),
        lambda: structural_walk(e, on(ir.IntImm, boom), "pre", policy=ContextPolicy()),
        lambda: structural_visit(e, on(ir.IntImm, boom)),
        lambda: structural_map(e, on(ir.IntImm, boom), WalkOrder.POST_ORDER),
        lambda: structural_map(e, on(ir.IntImm, boom), WalkOrder.PRE_ORDER),
        lambda: structural_mutate(e, on(ir.IntImm, boom)),
        lambda: structural_mutate(Array([e]), on(ir.Add, lambda a, ctx: ctx.mutate(a.a) and boom())),
    ]
    for case in cases:
        with pytest.raises(Boom):
            case()

    with pytest.raises(TypeError, match="walk handler must return"):
        structural_walk(e, on(ir.IntImm, lambda i: "advance"))
    with pytest.raises(TypeError, match="cannot dispatch"):
        structural_walk(e, on(list, lambda v: None))


def test_wrappers_kept_by_callbacks_own_references(ir: Any) -> None:
    kept: list[Any] = []
    tree = ir.make_sum_tree(8)
    structural_walk(tree, on(ir.IntImm, kept.append), WalkOrder.PRE_ORDER)
    del tree
    assert [k.value for k in kept] == list(range(8))
    assert len({k.handle for k in kept}) == 8


def test_contexts_are_only_valid_during_the_traversal() -> None:
    stash: list[Any] = []

    def keep(value: int, ctx: Any) -> None:
        stash.append(ctx)

    structural_visit(Array([1]), keep)
    with pytest.raises(RuntimeError, match="valid only while"):
        stash[0].visit_children()
    structural_mutate(Array([1]), lambda v, ctx: stash.append(ctx) or v)
    with pytest.raises(RuntimeError, match="valid only while"):
        stash[-1].mutate(1)
