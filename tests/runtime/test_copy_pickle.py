"""``copy.copy``, ``copy.deepcopy`` and ``pickle`` of objects and containers, compared with what
``tvm_ffi`` gives for the same values. The cases run in child interpreters on both runtime
paths (see ``with_tvm_ffi.py``)."""

from __future__ import annotations

import copy
import pickle
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


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "ctypes"])
def test_cases_pass_in_children(pure: bool) -> None:
    run_cases_in_children(__file__, pure)


def _round_trip(value: Any) -> Any:
    return pickle.loads(pickle.dumps(value))


@child_only
def test_shallow_copy_is_a_new_object_sharing_field_values() -> None:
    inner = rt.Array([1, 2])
    obj = T.TestObjectDerived(v_map={"k": inner}, v_array=[inner], v_i64=5)
    made = copy.copy(obj)
    assert type(made) is T.TestObjectDerived and not made.same_as(obj)
    assert made.v_i64 == 5 and made.v_array.same_as(obj.v_array) and made.v_map.same_as(obj.v_map)
    theirs = copy.copy(tvm_ffi.testing.TestIntPair(1, 2))
    ours = copy.copy(T.TestIntPair(1, 2))
    assert (ours.a, ours.b) == (theirs.a, theirs.b) == (1, 2)


@child_only
def test_deep_copy_copies_the_graph_and_keeps_sharing() -> None:
    inner = T.TestIntPair(3, 4)
    arr = rt.Array([inner, inner])
    made = copy.deepcopy(arr)
    assert not made[0].same_as(inner) and made[0].same_as(made[1])
    assert (made[0].a, made[0].b) == (3, 4)
    theirs = copy.deepcopy(tvm_ffi.Array([tvm_ffi.testing.TestIntPair(3, 4)] * 2))
    assert theirs[0].same_as(theirs[1])  # tvm_ffi's deep copy keeps sharing the same way
    obj = T.TestObjectDerived(v_map={"k": [1]}, v_array=[inner], v_i64=5)
    deep = copy.deepcopy(obj)
    assert not deep.v_array.same_as(obj.v_array) and not deep.v_array[0].same_as(inner)
    assert deep.v_array[0].a == 3 and list(deep.v_map["k"]) == [1]


@child_only
@pytest.mark.parametrize("kind", ["Array", "List", "Map", "Dict"])
def test_containers_copy_like_tvm_ffi(kind: str) -> None:
    pair = T.TestIntPair(1, 2)
    content: Any = [pair, 7] if kind in ("Array", "List") else {"p": pair, "n": 7}
    ours, theirs = getattr(rt, kind)(content), getattr(tvm_ffi, kind)(content)
    shallow = copy.copy(ours)
    assert type(shallow) is type(ours) and not shallow.same_as(ours)
    first = shallow[0] if kind in ("Array", "List") else shallow["p"]
    assert first.same_as(pair)  # shallow: the elements are shared
    deep = copy.deepcopy(ours)
    assert type(deep) is type(ours)
    assert not (deep[0] if kind in ("Array", "List") else deep["p"]).same_as(pair)
    for mine, reference in ((shallow, copy.copy(theirs)), (deep, copy.deepcopy(theirs))):
        assert rt.get_global_func("ffi.ReprPrint")(mine) == str(tvm_ffi.get_global_func("ffi.ReprPrint")(reference))


@child_only
def test_pickle_round_trips_objects_and_containers() -> None:
    pair = T.TestIntPair(5, 6)
    back = _round_trip(pair)
    assert type(back) is T.TestIntPair and (back.a, back.b) == (5, 6) and not back.same_as(pair)
    nested = rt.Array([1, "s", rt.Map({"x": rt.List([2.5, None])}), pair])
    again = _round_trip(nested)
    assert rt.structural_equal(again[:3], nested[:3]) and type(again[2]["x"]) is rt.List
    assert again[3].b == 6
    assert list(_round_trip(rt.Shape([2, 3]))) == [2, 3]
    plain = _round_trip({"objects": [pair, nested], "n": 1})
    assert plain["objects"][0].a == 5 and plain["n"] == 1


@child_only
def test_pickle_payload_is_the_json_graph_tvm_ffi_uses() -> None:
    ours = T.TestIntPair(8, 9)
    theirs = tvm_ffi.testing.TestIntPair(8, 9)
    rebuild, (payload,) = ours.__reduce__()
    assert payload == theirs.__getstate__()["handle"]
    assert rebuild(payload).b == 9
    ours_arr = rt.Array([1, rt.Map({"k": "v"})])
    assert ours_arr.__reduce__()[1][0] == tvm_ffi.Array([1, tvm_ffi.Map({"k": "v"})]).__getstate__()["handle"]


@child_only
def test_enum_entries_copy_and_unpickle_to_themselves() -> None:
    entry = T.TestEnumVariant.Beta
    assert copy.copy(entry) is entry and copy.deepcopy(entry) is entry
    assert _round_trip(entry).same_as(entry)


@child_only
@pytest.mark.parametrize("what", ["non_copyable", "function", "tensor"])
def test_what_the_library_cannot_copy_is_a_type_error_naming_the_type(what: str) -> None:
    key, ours, theirs = {
        "non_copyable": (
            "testing.TestNonCopyable",
            lambda: T.TestNonCopyable(1),
            lambda: tvm_ffi.testing.TestNonCopyable(1),
        ),
        "function": (
            "ffi.Function",
            lambda: rt.get_global_func("testing.nop"),
            lambda: tvm_ffi.get_global_func("testing.nop"),
        ),
        "tensor": ("ffi.Tensor", lambda: rt.Tensor(np.zeros(2)), lambda: tvm_ffi.from_dlpack(np.zeros(2))),
    }[what]
    for op in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match=key.replace(".", r"\.")):
            op(ours())
        with pytest.raises((TypeError, RuntimeError)):  # tvm_ffi refuses the same operations
            op(theirs())
