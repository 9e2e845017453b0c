"""The Rust guide's examples of structural walk / visit / map / mutate, in Python (tvmffi_runtime.structural).

Every example of the guide's "Structural Walk and Visit" and "Structural Mapping and Mutation"
sections, re-stated with the same results. The engine's semantics on the ``exprir`` IR are in
test_structural_walk.py and test_structural_visit_map_mutate.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tvmffi_runtime import Object
from tvmffi_runtime.containers import Array
from tvmffi_runtime.structural import (
    DefRegionKind,
    MapperBase,
    MutateCallbacks,
    MutatorBase,
    VisitCallbacks,
    VisitInterrupt,
    VisitorBase,
    WalkerBase,
    WalkOrder,
    WalkResult,
    on,
    structural_map,
    structural_mutate,
    structural_visit,
    structural_walk,
)


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
