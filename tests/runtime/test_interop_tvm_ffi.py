"""Objects crossing between our runtime and the ``tvm_ffi`` package in one process.

Ours → theirs goes through ``tvm_ffi``'s object protocol (``Object.__tvm_ffi_object__``): the
receiver gets its own class over the same native handle, never an ``OpaquePyObject``. Theirs →
ours goes through their ``__chandle__``. The cases run in child interpreters, on both runtime
paths (see ``with_tvm_ffi.py``).
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import tvmffi_runtime as rt
from tvmffi_runtime import _backend, _object

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


def test_importing_the_runtime_does_not_import_tvm_ffi() -> None:
    code = (
        "import sys, tvmffi_runtime as rt, tvmffi_testing.testing as T\n"
        "p = T.TestIntPair(1, 2); copy = __import__('copy').copy(p); rt.structural_equal([1], [1])\n"
        "print('tvm_ffi' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "generated"), str(ROOT / "runtime")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _strong_refs(obj: rt.Object) -> int:
    return _object._ref_counts(obj.handle)[1]


@child_only
def test_child_runs_on_the_requested_path() -> None:
    assert _backend.accelerated() == (os.environ.get("TVMFFI_RUNTIME_PURE") != "1")


@child_only
def test_protocol_gives_tvm_ffi_its_own_class_over_the_same_handle() -> None:
    ours = T.TestIntPair(1, 2)
    theirs = ours.__tvm_ffi_object__()
    assert type(theirs) is tvm_ffi.testing.TestIntPair
    assert theirs.__chandle__() == ours.handle
    assert (theirs.a, theirs.b) == (1, 2)


@child_only
def test_tvm_ffi_containers_hold_our_objects_as_theirs() -> None:
    ours = T.TestIntPair(3, 4)
    item = tvm_ffi.Array([ours])[0]
    assert not isinstance(item, tvm_ffi.core.OpaquePyObject)
    assert isinstance(item, tvm_ffi.testing.TestIntPair)
    assert item.__chandle__() == ours.handle
    held = tvm_ffi.Map({"k": ours})["k"]
    assert held.__chandle__() == ours.handle


@child_only
def test_tvm_ffi_structural_equal_sees_our_containers() -> None:
    ours = rt.Array([1, "two", rt.Map({"k": rt.Array([3.5])})])
    assert tvm_ffi.structural_equal(ours, tvm_ffi.Array([1, "two", tvm_ffi.Map({"k": [3.5]})]))
    assert not tvm_ffi.structural_equal(ours, tvm_ffi.Array([1, "two", tvm_ffi.Map({"k": [4.5]})]))
    assert tvm_ffi.structural_hash(ours) == rt.structural_hash(ours)


@child_only
def test_tvm_ffi_functions_take_our_objects() -> None:
    ours = T.TestIntPair(5, 6)
    assert tvm_ffi.get_global_func("testing.TestIntPairSum")(ours) == 11
    back = tvm_ffi.get_global_func("testing.echo")(ours)
    assert isinstance(back, tvm_ffi.testing.TestIntPair) and back.__chandle__() == ours.handle


@child_only
def test_tvm_ffi_gets_our_tensors_as_its_tensors() -> None:
    data = np.arange(6, dtype=np.float32)
    ours = rt.Tensor(data)
    theirs = tvm_ffi.get_global_func("testing.echo")(ours)
    assert isinstance(theirs, tvm_ffi.Tensor)
    assert theirs.__chandle__() == ours.handle
    assert theirs.shape == (6,)
    data[2] = 42.0  # one buffer behind both
    assert np.from_dlpack(theirs)[2] == 42.0


@child_only
def test_tvm_ffi_calls_our_functions() -> None:
    ours = rt.Function.from_callable(lambda x: x * 10)
    theirs = tvm_ffi.Array([ours])[0]
    assert isinstance(theirs, tvm_ffi.Function) and theirs.__chandle__() == ours.handle
    assert theirs(4) == 40
    assert tvm_ffi.get_global_func("testing.apply")(ours, 7) == 70


@child_only
def test_we_take_tvm_ffi_objects() -> None:
    theirs = tvm_ffi.testing.TestIntPair(7, 8)
    back = rt.get_global_func("testing.echo")(theirs)
    assert isinstance(back, T.TestIntPair) and back.handle == theirs.__chandle__()
    assert rt.Array([theirs])[0].same_as(back)
    assert rt.structural_equal(rt.Array([1, 2]), tvm_ffi.Array([1, 2]))


@child_only
def test_round_trip_keeps_one_native_object() -> None:
    ours = T.TestIntPair(1, 1)
    there = tvm_ffi.get_global_func("testing.echo")(ours)
    again = rt.get_global_func("testing.echo")(there)
    assert again.same_as(ours)


@child_only
def test_hand_overs_leave_the_reference_count_as_it_was() -> None:
    ours = T.TestIntPair(2, 2)
    base = _strong_refs(ours)
    for _ in range(200):
        tvm_ffi.Array([ours, ours])
        ours.__tvm_ffi_object__()
        tvm_ffi.get_global_func("testing.TestIntPairSum")(ours)
    gc.collect()
    assert _strong_refs(ours) == base


@child_only
def test_a_moved_object_is_refused_by_name() -> None:
    ours = T.TestIntPair(2, 3)
    rt.get_global_func("testing.echo")(rt.move(ours))
    assert ours.handle == 0
    with pytest.raises(rt.ReleasedObjectError):
        ours.__tvm_ffi_object__()


def test_a_tvm_ffi_on_another_libtvm_ffi_is_refused() -> None:
    import ctypes
    from types import SimpleNamespace

    from tvmffi_runtime import interop

    other = SimpleNamespace(TVMFFIObjectIncRef=ctypes.pythonapi.Py_IncRef, _name="/elsewhere/libtvm_ffi.so")
    with pytest.raises(TypeError, match=r"/elsewhere/libtvm_ffi\.so"):
        interop._check_same_library(SimpleNamespace(LIB=other))
    interop._check_same_library(SimpleNamespace(LIB=rt._lib.LIB))  # the same library: accepted
