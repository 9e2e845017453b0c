"""Structural walk / visit / map / mutate over the library's engine (tvmffi_runtime.structural).

The first group re-states every example of the Rust guide's "Structural Walk and Visit" and
"Structural Mapping and Mutation" sections in Python with the same results; the rest runs on
the ``exprir`` expression IR fixture (tests/fixtures/expr_ir.cc).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

import tvmffi_runtime as rt
from tvmffi_runtime import Object, _backend
from tvmffi_runtime.containers import Array, List, Map
from tvmffi_runtime.structural import (
    UNCHANGED,
    ContextPolicy,
    DefRegionKind,
    InplaceMode,
    MapperBase,
    MutateCallbacks,
    MutatorBase,
    Unchanged,
    VisitCallbacks,
    VisitInterrupt,
    VisitorBase,
    WalkerBase,
    WalkOrder,
    WalkResult,
    default_hook,
    move,
    on,
    structural_map,
    structural_mutate,
    structural_visit,
    structural_walk,
    walk_count_nodes,
)

from fixtures import load_expr_ir


@pytest.fixture(scope="module")
def ir(have_gxx: bool) -> Any:
    return load_expr_ir()


def seq_equal(a: Any, b: Any) -> bool:
    return bool(rt.get_global_func("ffi.StructuralEqual")(a, b, False, False))


class Boom(Exception):
    """Raised inside hooks: must come out of the engine with its type."""


# =============================================================================================
# The guide's examples: Structural Walk and Visit
# =============================================================================================
def test_guide_walker_probe() -> None:
    class Probe(WalkerBase):
        def __init__(self) -> None:
            self.total = 0
            self.floats = 0

        def walk_integer(self, value: int) -> WalkResult:
            self.total += value
            return WalkResult.ADVANCE

        def walk_float(self, _value: float, _kind: DefRegionKind) -> WalkResult:
            self.floats += 1
            return WalkResult.ADVANCE

    values = Array([1, 2, 3])
    probe = Probe()
    assert structural_walk(values, probe, WalkOrder.PRE_ORDER) is None
    assert probe.total == 6
    assert probe.floats == 0
    structural_walk(Array([1, 2.5, [0.5]]), probe, WalkOrder.PRE_ORDER)
    assert (probe.total, probe.floats) == (7, 2)


def test_guide_single_typed_lambda_sum() -> None:
    values = Array([1, 2, 3])
    total = 0

    def add(value: int) -> WalkResult:
        nonlocal total
        total += value
        return WalkResult.ADVANCE

    assert structural_walk(values, add, WalkOrder.PRE_ORDER) is None
    assert total == 6


def test_guide_evens_and_objects() -> None:
    values = Array([1, 2, 3])
    evens = 0
    objects = 0

    def on_int(value: int) -> WalkResult:
        nonlocal evens
        if value % 2 == 0:
            evens += 1
        return WalkResult.ADVANCE

    def on_object(_object: Object, _kind: DefRegionKind) -> WalkResult:
        nonlocal objects
        objects += 1
        return WalkResult.ADVANCE

    structural_walk(values, (on_int, on_object), WalkOrder.PRE_ORDER)
    assert (evens, objects) == (1, 1)


def test_guide_interrupt_on_two() -> None:
    values = Array([1, 2, 3])
    seen: list[int] = []

    def find(value: int) -> WalkResult | VisitInterrupt:
        seen.append(value)
        if value == 2:
            return WalkResult.interrupt_with(value)
        return WalkResult.ADVANCE

    found = structural_walk(values, find, WalkOrder.PRE_ORDER)
    assert isinstance(found, VisitInterrupt)
    assert found.value == 2
    assert seen == [1, 2]  # the walk stopped
    assert structural_walk(values, on(int, lambda v: None)) is None


def test_guide_visit_callbacks_with_state() -> None:
    @dataclass
    class Stats:
        total: int = 0

    values = Array([1, 2])

    def on_int(value: int, visitor: Any) -> None:
        visitor.state.total += value

    def on_any(_value: object, visitor: Any) -> VisitInterrupt | None:
        return visitor.visit_children()

    visitor = VisitCallbacks(Stats(), (on_int, on_any))
    assert structural_visit(values, visitor) is None
    assert visitor.state.total == 3

    # A catch-all that does not call visit_children() owns (and here prunes) the traversal.
    pruned = VisitCallbacks(Stats(), (on_int, lambda _v, _ctx: None))
    structural_visit(values, pruned)
    assert pruned.state.total == 0


def test_guide_depth_visitor() -> None:
    class Depth(VisitorBase):
        def __init__(self) -> None:
            self.max = 0
            self.current = 0

        def visit_any(self, value: object, def_region_kind: DefRegionKind) -> VisitInterrupt | None:
            self.current += 1
            self.max = max(self.max, self.current)
            interrupt = self.default_visit_children(value, def_region_kind)
            self.current -= 1
            return interrupt

    values = Array([1, 2])
    depth = Depth()
    assert structural_visit(values, depth) is None
    assert depth.max == 2
    depth2 = Depth()
    structural_visit(Array([1, [2, [3]]]), depth2)
    assert depth2.max == 4


# =============================================================================================
# The guide's examples: Structural Mapping and Mutation
# =============================================================================================
def test_guide_increment_mapper_class() -> None:
    class Increment(MapperBase):
        def __init__(self) -> None:
            self.integers = 0

        def map_integer(self, value: int, _kind: DefRegionKind) -> int:
            self.integers += 1
            return value + 1

        def map_other(self, value: object) -> Any:
            return value

    increment = Increment()
    mapped = structural_map(Array([1, 2]), increment, WalkOrder.POST_ORDER)
    assert isinstance(mapped, Array)
    assert list(mapped) == [2, 3]
    assert increment.integers == 2


def test_guide_increment_mapper_closures() -> None:
    source = Array([1, 2])
    assert list(structural_map(source, on(int, lambda v: v + 1), WalkOrder.POST_ORDER)) == [2, 3]

    calls: list[str] = []

    def inc(value: int) -> int:
        calls.append("int")
        return value + 1

    def other(value: object) -> Any:
        calls.append("other")
        return value

    # A tuple is first-match, not broadcast: the catch-all does not run for integers.
    mapped = structural_map(source, (inc, other), WalkOrder.POST_ORDER)
    assert list(mapped) == [2, 3]
    assert calls == ["int", "int", "other"]
    # Nested tuples flatten in left-to-right order.
    mapped = structural_map(source, ((on(int, lambda v: v * 10),), (inc, other)), WalkOrder.POST_ORDER)
    assert list(mapped) == [10, 20]
    assert list(source) == [1, 2]  # copy-on-write


def test_guide_mutate_callbacks_with_state() -> None:
    @dataclass
    class Stats:
        integers: int = 0

    def on_int(value: int, mutator: Any) -> int:
        mutator.state.integers += 1
        return value + 1

    def on_any(value: object, mutator: Any) -> Any:
        return mutator.default_maybe_inplace_mutate(value)

    mutator = MutateCallbacks(Stats(), (on_int, on_any))
    mutated = structural_mutate(Array([1, 2]), mutator)
    assert list(mutated) == [2, 3]
    assert mutator.state.integers == 2


def test_guide_increment_mutator_class() -> None:
    class Increment(MutatorBase):
        def __init__(self) -> None:
            self.integers = 0

        def mutate_integer(self, value: int) -> int:
            self.integers += 1
            return value + 1

    increment = Increment()
    mutated = structural_mutate(Array([1, 2]), increment)
    assert list(mutated) == [2, 3]
    assert increment.integers == 2


def test_guide_low_level_mutator() -> None:
    # dispatch_mutate: integers are replaced, everything else takes the default mutation.
    class Increment(MutatorBase):
        def mutate_any(self, value: object) -> Any:
            if type(value) is int:
                return value + 1
            return self.default_maybe_inplace_mutate(value)

    mutated = structural_mutate(Array([1, 2]), Increment())
    assert list(mutated) == [2, 3]


# =============================================================================================
# Walk semantics
# =============================================================================================
def test_walk_orders_and_skip(ir: Any) -> None:
    e = ir.Add(ir.IntImm(1), ir.Mul(ir.IntImm(2), ir.IntImm(3)))

    def trace(order: WalkOrder) -> list[str]:
        seen: list[str] = []

        def node(x: ir.Expr) -> None:
            seen.append(type(x).__name__ if not isinstance(x, ir.IntImm) else str(x.value))

        structural_walk(e, node, order)
        return seen

    assert trace(WalkOrder.PRE_ORDER) == ["Add", "1", "Mul", "2", "3"]
    assert trace(WalkOrder.POST_ORDER) == ["1", "2", "3", "Mul", "Add"]
    assert trace("post") == trace(WalkOrder.POST_ORDER)

    seen: list[Any] = []

    def skip_mul(x: ir.Expr) -> WalkResult:
        seen.append(x)
        return WalkResult.SKIP if isinstance(x, ir.Mul) else WalkResult.ADVANCE

    structural_walk(e, skip_mul, WalkOrder.PRE_ORDER)
    assert [type(x).__name__ for x in seen] == ["Add", "IntImm", "Mul"]
    assert seen[1].value == 1  # wrappers kept past the callback stay valid


def test_walk_first_match_with_mixed_kind_handlers() -> None:
    # The engine tries plain links before kind links; the runtime must keep first-match order.
    got: list[tuple[str, Any]] = []

    def catch_all(value: object, kind: DefRegionKind) -> None:
        got.append(("any", value if isinstance(value, int) else "obj"))

    def ints(value: int) -> None:
        got.append(("int", value))

    structural_walk(Array([1]), (catch_all, ints), WalkOrder.PRE_ORDER)
    assert got == [("any", "obj"), ("any", 1)]
    got.clear()
    structural_walk(Array([1]), (ints, catch_all), WalkOrder.PRE_ORDER)
    assert got == [("any", "obj"), ("int", 1)]


def test_walk_def_region_kinds(testing_lib: Any) -> None:
    make = rt.get_global_func("testing.make_visit_region_graph")
    got: list[tuple[int, DefRegionKind]] = []

    def ints(value: int, kind: DefRegionKind) -> None:
        got.append((value, kind))

    structural_walk(make(False), ints, WalkOrder.PRE_ORDER)
    assert got == [(1, DefRegionKind.SIMPLE), (2, DefRegionKind.PATTERN), (3, DefRegionKind.NONE)]
    got.clear()
    structural_walk(make(True), ints, WalkOrder.PRE_ORDER)  # registered __s_visit__ hook
    assert got == [
        (1, DefRegionKind.SIMPLE),
        (2, DefRegionKind.PATTERN),
        (3, DefRegionKind.SIMPLE),
        (4, DefRegionKind.NONE),
    ]


def test_walk_map_keys_are_not_visited(ir: Any) -> None:
    key, value = ir.IntImm(1), ir.IntImm(2)
    seen: list[Any] = []
    structural_walk(Map({key: value}), on(ir.IntImm, seen.append), WalkOrder.PRE_ORDER)
    assert len(seen) == 1 and seen[0].same_as(value)
    ints: list[int] = []
    structural_walk(Map({1: 2, 3: 4}), on(int, ints.append), WalkOrder.PRE_ORDER)
    assert sorted(ints) == [2, 4]


def test_walk_free_variables_with_def_region_kind(ir: Any) -> None:
    x, y, z, w = (ir.Var(n) for n in "xyzw")
    fn = ir.Func([x], ir.Let(y, ir.Add(x, z), ir.Mul(y, w)), {"name": "f"})

    class FreeVars(WalkerBase):
        _hook_types: ClassVar[dict[str, Any]] = {"walk_var": ir.Var}

        def __init__(self) -> None:
            self.defined: list[Any] = []
            self.free: list[str] = []

        def walk_var(self, var: Any, kind: DefRegionKind) -> WalkResult:
            if kind != DefRegionKind.NONE:
                self.defined.append(var)
            elif not any(var.same_as(d) for d in self.defined) and var.name not in self.free:
                self.free.append(var.name)
            return WalkResult.ADVANCE

    walker = FreeVars()
    assert structural_walk(fn, walker, WalkOrder.PRE_ORDER) is None
    assert walker.free == ["z", "w"]
    assert [v.name for v in walker.defined] == ["x", "y"]


def test_walk_free_variables_with_scope_policy(ir: Any) -> None:
    # y is bound inside the Let only: the y after it is free. A context policy scopes the Let.
    y = ir.Var("y")
    e = ir.Add(ir.Let(y, ir.IntImm(1), y), y)

    class Scopes(ContextPolicy):
        types = (ir.Let,)

        def __init__(self) -> None:
            self.stack: list[list[Any]] = [[]]
            self.events: list[str] = []

        def enter(self, value: Any, ctx: Any) -> None:
            self.stack.append([])
            self.events.append("enter")

        def exit(self, value: Any, ctx: Any) -> None:
            self.stack.pop()
            self.events.append("exit")

    scopes = Scopes()
    free: list[str] = []

    def var(v: ir.Var, kind: DefRegionKind) -> None:
        if kind != DefRegionKind.NONE:
            scopes.stack[-1].append(v)
        elif not any(v.same_as(d) for frame in scopes.stack for d in frame):
            free.append(v.name)

    structural_walk(e, var, WalkOrder.PRE_ORDER, policy=scopes)
    assert free == ["y"]
    assert scopes.events == ["enter", "exit"]

    naive: list[str] = []
    bound: list[Any] = []

    def naive_var(v: ir.Var, kind: DefRegionKind) -> None:
        if kind != DefRegionKind.NONE:
            bound.append(v)
        elif not any(v.same_as(d) for d in bound):
            naive.append(v.name)

    structural_walk(e, naive_var, WalkOrder.PRE_ORDER)
    assert naive == []  # without scopes the free y is missed


def test_walk_policy_composition_and_visit_policy(ir: Any) -> None:
    events: list[str] = []

    class Tag(ContextPolicy):
        def __init__(self, name: str) -> None:
            self.name = name
            self.types = (ir.Let,)

        def enter(self, value: Any, ctx: Any) -> None:
            events.append(f"{self.name}+")

        def exit(self, value: Any, ctx: Any) -> None:
            events.append(f"{self.name}-")

    e = ir.Let(ir.Var("a"), ir.IntImm(1), ir.IntImm(2))
    hits: list[int] = []
    structural_walk(e, on(ir.IntImm, lambda i: hits.append(i.value)), "pre", policy=(Tag("outer"), Tag("inner")))
    assert events == ["outer+", "inner+", "inner-", "outer-"]
    assert hits == [1, 2]

    events.clear()
    visitor = VisitCallbacks(None, on(ir.IntImm, lambda i, ctx: None), policy=Tag("v"))
    structural_visit(e, visitor)
    assert events == ["v+", "v-"]


def _python_calls(run: Any) -> int:
    calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls


def test_walk_count_nodes_one_dict_lookup_per_node(ir: Any) -> None:
    root = ir.make_sum_tree(5000)  # 4999 Add + 5000 IntImm = 9999 nodes
    assert walk_count_nodes(root) == 9999
    assert walk_count_nodes(root, ir.Add) == 4999

    class CountAdds(WalkerBase):
        _hook_types: ClassVar[dict[str, Any]] = {"walk_add": ir.Add}

        def __init__(self) -> None:
            self.n = 0

        def walk_add(self, node: Any) -> None:
            self.n += 1

    walker = CountAdds()
    calls = _python_calls(lambda: structural_walk(root, walker, WalkOrder.PRE_ORDER))
    assert walker.n == 4999
    # Per matched node: the hook, plus the trampoline when it is Python (pure ctypes); nothing
    # for the 5000 unmatched leaves.
    per_node = 1 if _backend.accelerated() else 2
    assert per_node * 4999 <= calls < per_node * 4999 + 300, calls


def test_visit_and_mutate_hooks_cost_one_python_call_per_node(ir: Any) -> None:
    """On the compiled path a Visitor / Mutator hook is called straight from the trampoline:
    its context is built only when a helper asks for it, so a hook that does not descend costs
    one Python call per node (visit and mutate used to cost five, with two objects made)."""
    leaves = Array([ir.IntImm(i) for i in range(2000)])

    class Count(VisitorBase):
        _hook_types: ClassVar[dict[str, Any]] = {"visit_int_imm": ir.IntImm}

        def __init__(self) -> None:
            self.n = 0

        def visit_int_imm(self, node: Any) -> None:
            self.n += 1

    class Keep(MutatorBase):
        _hook_types: ClassVar[dict[str, Any]] = {"mutate_int_imm": ir.IntImm}

        def mutate_int_imm(self, node: Any) -> Any:
            return node

    visitor = Count()
    visits = _python_calls(lambda: structural_visit(leaves, visitor))
    mutated: list[Any] = []
    mutates = _python_calls(lambda: mutated.append(structural_mutate(leaves, Keep())))
    assert visitor.n == 2000 and len(mutated[0]) == 2000 and mutated[0][7].same_as(leaves[7])
    if _backend.accelerated():
        assert 2000 <= visits < 2000 + 300, visits
        assert 2000 <= mutates < 2000 + 300, mutates
    else:  # the ctypes trampoline, the context and the hook adapter: a few calls per node
        assert visits >= 2 * 2000 and mutates >= 2 * 2000, (visits, mutates)


def test_hook_results_are_checked_on_both_paths(ir: Any) -> None:
    class Wrong(VisitorBase):
        _hook_types: ClassVar[dict[str, Any]] = {"visit_int_imm": ir.IntImm}

        def visit_int_imm(self, node: Any) -> Any:
            return node  # a visit hook returns None or a VisitInterrupt

    with pytest.raises(TypeError):
        structural_visit(Array([ir.IntImm(1)]), Wrong())

    class Moved(MutatorBase):
        _hook_types: ClassVar[dict[str, Any]] = {"mutate_int_imm": ir.IntImm}

        def mutate_int_imm(self, node: Any) -> Any:
            fresh = ir.IntImm(5)
            rt.get_global_func("ffi.Array")(rt.move(fresh))  # its reference is handed over
            return fresh

    with pytest.raises(ValueError, match="moved from"):
        structural_mutate(Array([ir.IntImm(1)]), Moved())

    class Outside(VisitorBase):
        _hook_types: ClassVar[dict[str, Any]] = {"visit_int_imm": ir.IntImm}

        def visit_int_imm(self, node: Any) -> None:
            self.seen = self.context.value

    outside = Outside()
    structural_visit(Array([ir.IntImm(3)]), outside)
    assert outside.seen.value == 3
    with pytest.raises(RuntimeError, match="no structural visit hook is running"):
        outside.context  # noqa: B018 - the property access is what raises


def test_walker_base_hook_table_generated_style(ir: Any) -> None:
    class ExprWalker(WalkerBase):
        # Declared base-first: dispatch still tries the more derived classes first.
        _hook_types: ClassVar[dict[str, Any]] = {"walk_Expr": ir.Expr, "walk_Add": ir.Add, "walk_IntImm": ir.IntImm}

        @default_hook
        def walk_Expr(self, node: Any) -> WalkResult | None:
            return None

        @default_hook
        def walk_Add(self, node: Any) -> WalkResult | None:
            return None

        @default_hook
        def walk_IntImm(self, node: Any) -> WalkResult | None:
            return None

    class Mine(ExprWalker):
        def __init__(self) -> None:
            self.log: list[str] = []

        def walk_Expr(self, node: Any) -> None:
            self.log.append("expr:" + type(node).__name__)

        def walk_Add(self, node: Any, kind: DefRegionKind) -> None:
            self.log.append(f"add:{kind.name}")

    table = Mine._hook_table()
    assert table is Mine._hook_table()  # resolved once per class
    assert [s.name for s in table] == ["walk_Add", "walk_Expr"]  # defaults are not registered
    assert ExprWalker._hook_table() == ()
    mine = Mine()
    structural_walk(ir.Add(ir.IntImm(1), ir.Mul(ir.IntImm(2), ir.IntImm(3))), mine, "pre")
    assert mine.log == ["add:NONE", "expr:IntImm", "expr:Mul", "expr:IntImm", "expr:IntImm"]


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
