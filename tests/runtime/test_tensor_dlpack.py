"""DLPack producers passed to native functions: both capsule forms, the C exchange API, strides,
dtypes, read-only buffers, failing producers; deleters run once and nothing is kept, over many
calls. The last test reruns this file on the other backend in a child process; torch (when
installed) has its own optional test.

Reference counts of the numpy array stand for its DLPack deleter: numpy's managed tensor holds
one reference to the array, dropped by the deleter, so a count back at its start after N calls
means N deleters ran (a missed one leaks a reference, a second one would underflow it).
"""

from __future__ import annotations

import ctypes
import gc
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tvmffi_runtime as rt
from tvmffi_runtime._backend import accelerated
from tvmffi_runtime._pure import dlpack as pure_dlpack

from conftest import build_shared, rerun_on_pure_ctypes

ROOT = Path(__file__).resolve().parents[2]
EXCHANGE_SOURCE = (ROOT / "tests" / "fixtures" / "dlpack_exchange.cc").read_text()
CALLS = 500


@pytest.fixture(scope="module")
def echo(testing_lib: Any) -> rt.Function:
    f = rt.get_global_func("testing.echo")
    assert f is not None
    return f


@pytest.fixture(scope="module")
def describe(testing_lib: Any, have_gxx: bool) -> rt.Function:
    """A kernel that reads a tensor's shape and strides: tests/runtime/test_tensor.py's helpers."""
    from test_tensor import HELPERS_CC

    return rt.Module.load_from_file(build_shared("tensor_helpers", HELPERS_CC)).get_function("weighted_sum_f64")


class Versioned:
    """A producer that takes max_version and answers with a versioned capsule."""

    def __init__(self, arr: Any) -> None:
        self.arr = arr
        self.asked: list[Any] = []

    def __dlpack__(self, **kwargs: Any) -> Any:
        self.asked.append(kwargs.get("max_version"))
        return self.arr.__dlpack__(**kwargs)


class Legacy:
    """A pre-1.0 producer: ``__dlpack__`` takes no arguments and answers "dltensor"."""

    def __init__(self, arr: Any) -> None:
        self.arr = arr
        self.calls = 0

    def __dlpack__(self) -> Any:
        self.calls += 1
        return self.arr.__dlpack__()


class Raising:
    def __dlpack__(self, **kwargs: Any) -> Any:
        raise RuntimeError("the producer cannot export today")


def _weighted(a: Any) -> float:
    i, j = np.indices(a.shape)
    return float((a * (1.0 + 1000.0 * i + j)).sum())


def test_versioned_capsules_over_many_calls(describe: rt.Function) -> None:
    arr = np.arange(6.0).reshape(2, 3)
    producer = Versioned(arr)
    refs = sys.getrefcount(arr)
    for _ in range(CALLS):
        assert describe(producer) == _weighted(arr)
    assert set(producer.asked) == {(1, 3)}
    assert len(producer.asked) == CALLS
    gc.collect()
    assert sys.getrefcount(arr) == refs


def test_legacy_capsules_over_many_calls(describe: rt.Function) -> None:
    arr = np.arange(6.0).reshape(2, 3)
    producer = Legacy(arr)
    refs = sys.getrefcount(arr)
    for _ in range(CALLS):
        assert describe(producer) == _weighted(arr)
    assert producer.calls == CALLS
    gc.collect()
    assert sys.getrefcount(arr) == refs


def test_producer_classes_interleaved_keep_their_own_ways(describe: rt.Function) -> None:
    # the compiled path remembers the last producer class's way: a Legacy one between two
    # Versioned ones must not make the next Versioned one asked without max_version
    arr = np.arange(6.0).reshape(2, 3)
    versioned, legacy = Versioned(arr), Legacy(arr)
    for _ in range(20):
        assert describe(versioned) == _weighted(arr) and describe(legacy) == _weighted(arr)
        assert rt.Tensor.from_dlpack(legacy).shape == (2, 3) and rt.Tensor.from_dlpack(versioned).shape == (2, 3)
    assert versioned.asked == [(1, 3)] * 40 and legacy.calls == 40


@pytest.mark.parametrize("view", ["transposed", "sliced", "reversed", "fortran"])
def test_strided_arrays_pass_with_their_strides(view: str, describe: rt.Function) -> None:
    base = np.arange(24.0).reshape(4, 6)
    arr = {
        "transposed": base.T[:2],
        "sliced": base[::2, 1::2],
        "reversed": base[::-1, ::-1][:2],
        "fortran": np.asfortranarray(base),
    }[view]
    assert not arr.flags.c_contiguous
    refs = sys.getrefcount(base)
    for _ in range(50):
        assert describe(arr) == _weighted(arr)
    assert rt.Tensor.from_dlpack(arr).strides == tuple(s // 8 for s in arr.strides)
    gc.collect()
    assert sys.getrefcount(base) == refs


def test_wrong_dtype_is_the_kernels_error_and_leaks_nothing(describe: rt.Function) -> None:
    arr = np.zeros((2, 3), dtype=np.float32)
    refs = sys.getrefcount(arr)
    for _ in range(20):
        with pytest.raises(TypeError, match="need float64"):
            describe(arr)
    gc.collect()
    assert sys.getrefcount(arr) == refs


def test_read_only_arrays_are_refused_and_released(echo: rt.Function) -> None:
    arr = np.arange(4.0)
    arr.flags.writeable = False
    refs = sys.getrefcount(arr)
    for _ in range(20):
        with pytest.raises(BufferError, match="read-only"):
            echo(arr)
        with pytest.raises(BufferError, match="read-only"):
            rt.Tensor.from_dlpack(arr)
    gc.collect()
    assert sys.getrefcount(arr) == refs


def test_a_raising_producer_names_its_error(echo: rt.Function) -> None:
    with pytest.raises(RuntimeError, match="cannot export today"):
        echo(Raising())
    with pytest.raises(RuntimeError, match="cannot export today"):
        rt.Tensor.from_dlpack(Raising())


def test_objects_without_dlpack_are_refused() -> None:
    with pytest.raises(TypeError, match="has no __dlpack__"):
        rt.Tensor.from_dlpack(object())


def test_returned_tensors_export_in_both_forms(echo: rt.Function) -> None:
    arr = np.arange(5.0)
    refs = sys.getrefcount(arr)
    for _ in range(CALLS):
        t = echo(arr)
        assert isinstance(t, rt.Tensor)
        assert t.__dlpack_device__() == (1, 0)
        assert np.from_dlpack(t)[4] == 4.0
        assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
        assert '"dltensor"' in repr(t.__dlpack__())
    del t
    gc.collect()
    if not accelerated():  # its capsules are swept, not destroyed (see _pure/dlpack.py)
        assert pure_dlpack.pending_exported_capsules() == 0
    assert sys.getrefcount(arr) == refs


# ------------------------------------------------------------------------------------------
# The C exchange API (a g++ fixture playing torch's part)
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def exchange(have_gxx: bool) -> Any:
    lib = ctypes.CDLL(str(build_shared("dlpack_exchange", EXCHANGE_SOURCE, link_tvm_ffi=False)))
    lib.exchange_api.restype = ctypes.c_void_p
    lib.exchange_buffer.restype = ctypes.POINTER(ctypes.c_double)
    return lib


def _producer_class(exchange: Any) -> type:
    class Exchanging:
        """Offers only the C exchange API: its __dlpack__ must not be called."""

        __dlpack_c_exchange_api__ = exchange.exchange_api()

        def __dlpack__(self, **kwargs: Any) -> Any:
            raise AssertionError("__dlpack__ called although the class offers the C exchange API")

    return Exchanging


def _counts(exchange: Any) -> tuple[int, int]:
    return exchange.exchange_made(), exchange.exchange_deleted()


def test_exchange_api_converts_without_dlpack_calls(exchange: Any, describe: rt.Function) -> None:
    producer = _producer_class(exchange)()
    exchange.exchange_set_mode(0)
    made, deleted = _counts(exchange)
    for _ in range(CALLS):
        assert describe(producer) == _weighted(np.arange(6.0).reshape(2, 3))
    t = rt.Tensor.from_dlpack(producer)
    assert (t.shape, str(t.dtype), t.strides) == ((2, 3), "float64", (3, 1))
    assert _counts(exchange) == (made + CALLS + 1, deleted + CALLS)
    del t
    gc.collect()
    assert _counts(exchange) == (made + CALLS + 1, deleted + CALLS + 1)


def test_exchange_api_strided(exchange: Any, describe: rt.Function) -> None:
    producer = _producer_class(exchange)()
    exchange.exchange_set_mode(4)
    try:
        expected = np.arange(12.0).reshape(2, 6)[:, ::2]
        assert describe(producer) == _weighted(expected)
        assert rt.Tensor.from_dlpack(producer).strides == (6, 2)
    finally:
        exchange.exchange_set_mode(0)


@pytest.mark.parametrize(("mode", "error"), [(1, "read-only"), (2, "DLPack 2"), (3, "could not export")])
def test_exchange_api_refusals_release_what_was_made(mode: int, error: str, exchange: Any, echo: rt.Function) -> None:
    producer = _producer_class(exchange)()
    exchange.exchange_set_mode(mode)
    try:
        made, deleted = _counts(exchange)
        for _ in range(10):
            with pytest.raises(BufferError, match=error):
                echo(producer)
            with pytest.raises(BufferError, match=error):
                rt.Tensor.from_dlpack(producer)
        now_made, now_deleted = _counts(exchange)
        assert now_made - made == now_deleted - deleted == (0 if mode == 3 else 20)
    finally:
        exchange.exchange_set_mode(0)


# ------------------------------------------------------------------------------------------
# torch (optional: not installed in CI)
# ------------------------------------------------------------------------------------------
def test_torch_tensors_through_the_exchange_api(echo: rt.Function, describe: rt.Function) -> None:
    torch = pytest.importorskip("torch")
    x = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    base = sys.getrefcount(x)
    for _ in range(CALLS):
        assert describe(x) == _weighted(x.numpy())
        assert describe(x.T.contiguous().T) == _weighted(x.numpy())  # strided
    t = rt.Tensor.from_dlpack(x)
    back = torch.from_dlpack(t)
    back[0, 0] = 42.0
    assert x[0, 0].item() == 42.0  # one buffer, three views
    assert echo(x).shape == (2, 3)
    del t, back
    gc.collect()
    assert sys.getrefcount(x) == base


@pytest.mark.skipif(not accelerated(), reason="the compiled backend is off (TVMFFI_RUNTIME_PURE=1 or not built)")
def test_this_file_passes_on_pure_ctypes() -> None:
    proc = rerun_on_pure_ctypes([__file__])
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
