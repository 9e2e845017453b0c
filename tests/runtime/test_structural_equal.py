"""Structural equality, hashing, first mismatch (with access paths) and StructuralKey, compared
with ``tvm_ffi``'s answers for the same values. The cases run in child interpreters on both
runtime paths (see ``with_tvm_ffi.py``)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import tvmffi_runtime as rt

from conftest import ROOT
from with_tvm_ffi import IN_CHILD, child_only, run_cases_in_children

if str(ROOT / "generated") not in sys.path:
    sys.path.insert(0, str(ROOT / "generated"))

if IN_CHILD:
    import tvm_ffi
    import tvm_ffi.testing

    import tvmffi_testing.testing as T

PAIRS: list[tuple[Any, Any]] = [
    ([1, 2, 3], [1, 2, 3]),
    ([1, 2, 3], [1, 2, 4]),
    ([1, [2, "x"]], [1, [2, "y"]]),
    ({"a": [1, 2], "b": 2.5}, {"a": [1, 2], "b": 2.5}),
    ({"a": [1, 2]}, {"a": [1, 2, 3]}),
    ({"a": 1}, {"b": 1}),
    ("text", "text"),
    (1, 1.0),
    ([], {}),
]


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "ctypes"])
def test_cases_pass_in_children(pure: bool) -> None:
    run_cases_in_children(__file__, pure)


def _ours(value: Any) -> Any:
    """``value`` as our containers (lists become Arrays, dicts Maps), others unchanged."""
    if isinstance(value, list):
        return rt.Array([_ours(v) for v in value])
    if isinstance(value, dict):
        return rt.Map({k: _ours(v) for k, v in value.items()})
    return value


@child_only
@pytest.mark.parametrize(("lhs", "rhs"), PAIRS)
def test_equal_and_hash_agree_with_tvm_ffi(lhs: Any, rhs: Any) -> None:
    expected = tvm_ffi.structural_equal(lhs, rhs)
    assert rt.structural_equal(lhs, rhs) is expected
    assert rt.structural_equal(_ours(lhs), _ours(rhs)) is expected
    assert rt.structural_hash(_ours(lhs)) == tvm_ffi.structural_hash(lhs)
    assert 0 <= rt.structural_hash(lhs) < 1 << 64
    if expected:
        assert rt.structural_hash(_ours(lhs)) == rt.structural_hash(rhs)


def _steps(path: Any) -> list[tuple[int, Any]]:
    if isinstance(path, rt.AccessPath):
        return [(int(s.kind), s.key) for s in path.steps]
    return [(int(s.kind), s.key) for s in path._to_steps()]


@child_only
@pytest.mark.parametrize(("lhs", "rhs"), PAIRS)
def test_first_mismatch_gives_the_access_paths_tvm_ffi_gives(lhs: Any, rhs: Any) -> None:
    ours = rt.get_first_structural_mismatch(_ours(lhs), _ours(rhs))
    theirs = tvm_ffi.get_first_structural_mismatch(lhs, rhs)
    if theirs is None:
        assert ours is None
        return
    assert ours is not None
    for mine, reference in zip(ours, theirs, strict=True):
        assert isinstance(mine, rt.AccessPath)
        assert str(mine) == str(reference)
        assert _steps(mine) == _steps(reference)
        assert mine.depth == len(mine.steps)


@child_only
def test_access_path_steps_name_what_differs() -> None:
    found = rt.get_first_structural_mismatch({"a": [1, 2]}, {"a": [1, 5]})
    assert found is not None
    lhs, _ = found
    assert str(lhs) == '<root>["a"][1]'
    assert [(s.kind, s.key) for s in lhs.steps] == [(rt.AccessKind.MAP_ITEM, "a"), (rt.AccessKind.ARRAY_ITEM, 1)]
    assert lhs.parent is not None and str(lhs.parent) == '<root>["a"]'


@child_only
def test_options_reach_the_engine() -> None:
    a, b = rt.Tensor(np.zeros(3)), rt.Tensor(np.ones(3))
    assert not rt.structural_equal(a, b)
    assert rt.structural_equal(a, b, skip_tensor_content=True)
    assert rt.structural_equal(a, b, skip_tensor_content=True) is tvm_ffi.structural_equal(
        a, b, skip_tensor_content=True
    )
    assert rt.structural_hash(a, skip_tensor_content=True) == rt.structural_hash(b, skip_tensor_content=True)


@child_only
def test_our_objects_and_theirs_compare_together() -> None:
    assert rt.structural_equal(rt.Array([1, "a"]), tvm_ffi.Array([1, "a"]))
    assert tvm_ffi.structural_equal(tvm_ffi.Array([1, "a"]), rt.Array([1, "a"]))


@child_only
def test_structural_key_finds_equal_content_in_dicts_and_maps() -> None:
    k0, k1, k2 = rt.StructuralKey([1, 2]), rt.StructuralKey(rt.Array([1, 2])), rt.StructuralKey([1, 3])
    table = {k0: "a", k2: "b"}
    assert table[k1] == "a" and table[k2] == "b"
    assert k0 == k1 and k0 != k2 and k0 != [1, 2]
    assert hash(k0) == hash(tvm_ffi.StructuralKey([1, 2]))
    assert list(k0.key) == [1, 2]
    assert len(rt.Map({k0: 1, k1: 2})) == 1


@child_only
def test_types_without_structural_equality_are_refused_by_name() -> None:
    pair = T.TestIntPair(1, 2)
    with pytest.raises(TypeError, match=r"testing\.TestIntPair"):
        rt.structural_equal(pair, pair)
    with pytest.raises(TypeError, match=r"testing\.TestIntPair"):
        rt.structural_hash(pair)
    with pytest.raises(TypeError):
        tvm_ffi.structural_equal(tvm_ffi.testing.TestIntPair(1, 2), tvm_ffi.testing.TestIntPair(1, 2))
