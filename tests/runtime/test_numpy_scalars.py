"""numpy scalars as arguments: integers through ``__index__``, floats through ``__float__``,
``np.bool_`` as a bool; alone and inside lists, tuples and dicts; compared with what ``tvm_ffi``
gives for the same values. The cases run in child interpreters on both runtime paths."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tvmffi_runtime as rt

from conftest import ROOT
from with_tvm_ffi import IN_CHILD, child_only, run_cases_in_children

if str(ROOT / "generated") not in sys.path:
    sys.path.insert(0, str(ROOT / "generated"))

if IN_CHILD:
    import tvm_ffi
    import tvm_ffi.testing  # loads the testing library

    import tvmffi_testing.testing as T

NUMBERS = [
    np.int8(-5), np.int16(300), np.int32(-4), np.int64(3), np.uint8(200), np.uint32(4000000000),
    np.uint64(2**64 - 1), np.float16(0.5), np.float32(1.5), np.float64(2.25), np.longlong(-7),
]  # fmt: skip


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "ctypes"])
def test_cases_pass_in_children(pure: bool) -> None:
    run_cases_in_children(__file__, pure)


def _echo() -> rt.Function:
    f = rt.get_global_func("testing.echo")
    assert f is not None
    return f


@child_only
@pytest.mark.parametrize("value", NUMBERS, ids=lambda v: type(v).__name__)
def test_numbers_cross_as_tvm_ffi_passes_them(value: object) -> None:
    ours = _echo()(value)
    theirs = tvm_ffi.get_global_func("testing.echo")(value)
    assert type(ours) is type(theirs) and type(ours) in (int, float)
    assert ours == theirs == value


@child_only
def test_numpy_bool_becomes_a_bool() -> None:
    assert _echo()(np.bool_(True)) is True
    assert _echo()(np.bool_(False)) is False
    assert _echo()([np.bool_(True)])[0] is True
    # tvm_ffi passes np.bool_ as an opaque Python object: ours is the plain bool it stands for
    assert tvm_ffi.get_global_func("testing.echo")(np.bool_(True)) == np.True_


@child_only
def test_numbers_inside_containers() -> None:
    values = [np.int64(1), np.float32(2.5), np.int32(-3), np.uint8(4)]
    ours = _echo()(values)
    assert list(ours) == [1, 2.5, -3, 4] and [type(x) for x in ours] == [int, float, int, int]
    assert list(_echo()(tuple(values))) == [1, 2.5, -3, 4]
    assert tvm_ffi.structural_equal(ours, tvm_ffi.get_global_func("testing.echo")(values))
    mapped = _echo()({"a": np.int32(1), np.int64(5): np.float64(0.25)})
    assert dict(mapped.items()) == {"a": 1, 5: 0.25}
    assert type(mapped["a"]) is int


@child_only
def test_generated_constructors_and_callbacks_take_numbers() -> None:
    pair = T.TestIntPair(np.int64(3), np.int32(4))
    assert (pair.a, pair.b) == (3, 4)
    half = rt.Function.from_callable(lambda x: np.float32(x) / np.float32(2))
    assert rt.get_global_func("testing.apply")(half, np.int16(3)) == 1.5


@child_only
def test_other_values_are_still_refused_by_name() -> None:
    class Opaque:
        pass

    with pytest.raises(TypeError, match="argument 0 has type Opaque"):
        _echo()(Opaque())
