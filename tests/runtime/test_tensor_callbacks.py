"""A borrowed DLTensor* handed to a Python callback arrives as a Tensor view (both backends).

The fixture (tests/fixtures/dltensor_callback.cc) calls back with a pointer to a stack copy of a
tensor's DLTensor, shape and strides, and scribbles over them once the callback returns: a view
must have copied its metadata, while its data is the caller's memory. The last test reruns this
file on the other backend in a child process.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tvmffi_runtime as rt
from tvmffi_runtime._backend import accelerated, backend

from conftest import build_shared, rerun_on_pure_ctypes

ROOT = Path(__file__).resolve().parents[2]
SOURCE = (ROOT / "tests" / "fixtures" / "dltensor_callback.cc").read_text()


class _Globals:
    """The fixture's global functions by their short names (``dlcb.<name>``)."""

    def get_function(self, name: str) -> rt.Function:
        f = rt.get_global_func(f"dlcb.{name}")
        assert f is not None, name
        return f


@pytest.fixture(scope="module")
def dlcb(testing_lib: Any, have_gxx: bool) -> _Globals:
    rt.load_library(build_shared("dltensor_callback", SOURCE))
    return _Globals()


def _views(arr: Any) -> list[Any]:
    return [arr, arr.T, arr[:, ::2], arr[::-1], np.asfortranarray(arr)]


def test_callback_gets_a_tensor_view_with_shape_dtype_and_data(dlcb: _Globals) -> None:
    call_with_view = dlcb.get_function("call_with_view")
    a = np.arange(12.0).reshape(3, 4)
    for arr in _views(a):
        seen: list[Any] = []

        def callback(t: Any, seen: list[Any] = seen) -> float:
            seen.append((type(t), t.shape, t.strides, str(t.dtype), t.device.device_type))
            return float((np.from_dlpack(t) * np.arange(t.size).reshape(t.shape)).sum())

        expected = float((arr * np.arange(arr.size).reshape(arr.shape)).sum())
        assert call_with_view(callback, arr) == expected
        strides = tuple(s // arr.itemsize for s in arr.strides)
        assert seen == [(rt.Tensor, arr.shape, strides, "float64", 1)]


def test_view_metadata_outlives_the_call(dlcb: _Globals) -> None:
    """The caller's shape/strides arrays are overwritten after the callback: a kept view still
    reports the shape it was given (its data is documented as valid during the call only)."""
    kept: list[Any] = []
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)[:, ::2]
    dlcb.get_function("call_with_view")(kept.append, arr)
    (t,) = kept
    assert (t.shape, t.strides, str(t.dtype), t.ndim) == ((2, 2), (3, 2), "int32", 2)


def test_callback_writes_through_the_view(dlcb: _Globals) -> None:
    fill_through = dlcb.get_function("fill_through")

    def fill(t: Any) -> None:
        np.from_dlpack(t)[...] = 2.5

    for arr in _views(np.zeros((4, 6))):
        assert fill_through(fill, arr, 2.5) is True
        assert (arr == 2.5).all()


def test_view_passes_back_into_native_code(dlcb: _Globals) -> None:
    echo = rt.get_global_func("testing.echo")
    assert echo is not None
    arr = np.arange(5.0)
    out = dlcb.get_function("call_with_view")(lambda t: echo(t), arr)
    assert isinstance(out, rt.Tensor) and out.shape == (5,)


def test_views_are_released_after_many_calls(dlcb: _Globals) -> None:
    call_with_view = dlcb.get_function("call_with_view")
    arr = np.arange(8.0)
    gc.collect()
    before = backend.live_tensor_views()
    refs = sys.getrefcount(arr)
    for _ in range(2000):
        call_with_view(lambda t: t.shape[0], arr)
    gc.collect()
    assert backend.live_tensor_views() == before
    assert sys.getrefcount(arr) == refs
    kept: list[Any] = []
    call_with_view(kept.append, arr)
    assert backend.live_tensor_views() == before + 1
    kept.clear()
    assert backend.live_tensor_views() == before


def test_callback_error_reaches_the_caller(dlcb: _Globals) -> None:
    def fail(t: Any) -> None:
        raise ValueError(f"refused a tensor of shape {t.shape}")

    with pytest.raises(ValueError, match=r"refused a tensor of shape \(3,\)"):
        dlcb.get_function("call_with_view")(fail, np.zeros(3))
    assert backend.live_tensor_views() == 0


@pytest.mark.skipif(not accelerated(), reason="the compiled backend is off (TVMFFI_RUNTIME_PURE=1 or not built)")
def test_this_file_passes_on_pure_ctypes() -> None:
    proc = rerun_on_pure_ctypes([__file__])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
