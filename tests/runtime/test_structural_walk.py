"""Structural walk over the library's engine (tvmffi_runtime.structural): orders, skip, def regions,
policies, and the cost and checking of hooks, on the ``exprir`` expression IR fixture
(tests/fixtures/expr_ir.cc).
"""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import pytest

import tvmffi_runtime as rt
from tvmffi_runtime import _backend
from tvmffi_runtime.containers import Array, Map
from tvmffi_runtime.structural import (
    ContextPolicy,
    DefRegionKind,
    MutatorBase,
    VisitCallbacks,
    VisitorBase,
    WalkerBase,
    WalkOrder,
    WalkResult,
    default_hook,
    on,
    structural_mutate,
    structural_visit,
    structural_walk,
)

from structural_ir import ir


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


def walk_count_nodes(root: object, node_type: object = rt.Object) -> int:
    """Number of values of ``node_type`` in a pre-order walk of ``root``: one typed handler."""
    count = 0

    def handler(value: Any) -> None:
        nonlocal count
        count += 1

    structural_walk(root, on(node_type, handler), WalkOrder.PRE_ORDER)
    return count


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
    one Python call per node (not one for the hook and more to build its context)."""
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
    else:  # the ctypes trampoline and the handler: a few calls per node
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
