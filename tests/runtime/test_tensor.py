"""Tensor: zero-copy DLPack exchange with numpy, dtypes, shapes/strides/devices, lifetimes, leaks."""

from __future__ import annotations

import gc
import os
import weakref
from typing import Any

import numpy as np
import pytest

import tvmffi_runtime as rt
from tvmffi_runtime._backend import accelerated
from tvmffi_runtime._pure import dlpack as pure_dlpack

from conftest import build_shared

# A small native library that looks at tensors the way kernels do: through shape, strides,
# byte offset and dtype; and that allocates tensors of its own (deleters live in this library).
HELPERS_CC = r"""
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/dtype.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace tvm::ffi;

namespace {
struct CPUAlloc {
  void AllocData(DLTensor* t) {
    size_t n = GetDataSize(*t);
    t->data = std::malloc(n ? n : 1);
  }
  void FreeData(DLTensor* t) { std::free(t->data); }
};

const char* Base(const TensorView& x) {
  return static_cast<const char*>(x.data_ptr()) + x.byte_offset();
}

int64_t Stride(const TensorView& x, int d) { return x.strides()[d]; }
}  // namespace

// sum over i, j of x[i, j] * (1 + 1000 i + j), reading through the strides.
double weighted_sum_f64(TensorView x) {
  TVM_FFI_CHECK(x.ndim() == 2, ValueError) << "need a 2-D tensor, got ndim=" << x.ndim();
  TVM_FFI_CHECK(x.dtype() == (DLDataType{kDLFloat, 64, 1}), TypeError) << "need float64, got " << x.dtype();
  const double* p = reinterpret_cast<const double*>(Base(x));
  double s = 0;
  for (int64_t i = 0; i < x.shape()[0]; ++i)
    for (int64_t j = 0; j < x.shape()[1]; ++j)
      s += p[i * Stride(x, 0) + j * Stride(x, 1)] * (1.0 + 1000.0 * i + j);
  return s;
}

// A compact copy of any CPU tensor (any dtype, any strides) in memory this library allocates.
Tensor copy_compact(TensorView x) {
  Tensor out = Tensor::FromNDAlloc(CPUAlloc(), x.shape(), x.dtype(), x.device());
  int64_t n = 1;
  for (int64_t d : x.shape()) n *= d;
  const int64_t item = (x.dtype().bits * x.dtype().lanes + 7) / 8;
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = k, off = 0;
    for (int d = x.ndim() - 1; d >= 0; --d) {
      off += (rem % x.shape()[d]) * Stride(x, d);
      rem /= x.shape()[d];
    }
    std::memcpy(dst + k * item, Base(x) + off * item, item);
  }
  return out;
}

// A new tensor of `shape` and `dtype`, every byte set to `byte`.
Tensor make_filled(Array<int64_t> shape, DLDataType dtype, int64_t byte) {
  std::vector<int64_t> dims(shape.begin(), shape.end());
  Tensor out = Tensor::FromNDAlloc(CPUAlloc(), ShapeView(dims.data(), dims.size()), dtype,
                                   DLDevice{kDLCPU, 0});
  std::memset(out.data_ptr(), static_cast<int>(byte), GetDataSize(*out.GetDLTensorPtr()));
  return out;
}

// What the native side sees: [ndim, code, bits, lanes, device_type, device_id, shape..., strides...]
Array<int64_t> describe(TensorView x) {
  Array<int64_t> out{x.ndim(), x.dtype().code, x.dtype().bits, x.dtype().lanes,
                     x.device().device_type, x.device().device_id};
  for (int64_t d : x.shape()) out.push_back(d);
  for (int d = 0; d < x.ndim(); ++d) out.push_back(Stride(x, d));
  return out;
}

// x.flat[index] = value for a float64 tensor (through the strides).
void set_f64(TensorView x, int64_t index, double value) {
  TVM_FFI_CHECK(x.dtype() == (DLDataType{kDLFloat, 64, 1}), TypeError) << "need float64";
  int64_t rem = index, off = 0;
  for (int d = x.ndim() - 1; d >= 0; --d) {
    off += (rem % x.shape()[d]) * Stride(x, d);
    rem /= x.shape()[d];
  }
  reinterpret_cast<double*>(const_cast<char*>(Base(x)))[off] = value;
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(weighted_sum_f64, weighted_sum_f64);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(copy_compact, copy_compact);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_filled, make_filled);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(describe, describe);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(set_f64, set_f64);
"""

DTYPE_VALUES: dict[str, list[Any]] = {
    "bool": [True, False, True, True, False, False],
    "int8": [-128, 127, 0, -1, 1, 42],
    "int16": [-(2**15), 2**15 - 1, 0, -1, 1, 1234],
    "int32": [-(2**31), 2**31 - 1, 0, -1, 1, 123456],
    "int64": [-(2**63), 2**63 - 1, 0, -1, 1, 2**40 + 3],
    "uint8": [0, 255, 1, 128, 7, 200],
    "uint16": [0, 2**16 - 1, 1, 2**15, 7, 60000],
    "uint32": [0, 2**32 - 1, 1, 2**31, 7, 4000000000],
    "uint64": [0, 2**64 - 1, 1, 2**63, 7, 2**50 + 1],
    "float16": [0.5, -2.0, 65504.0, float("inf"), float("nan"), 6.1e-05],
    "float32": [0.1, -3.4e38, 1e-45, float("-inf"), float("nan"), 1.0],
    "float64": [0.1, -1.7e308, 5e-324, float("inf"), float("nan"), -0.0],
}
NUMPY_DTYPES = list(DTYPE_VALUES)


@pytest.fixture(scope="module")
def helpers(testing_lib: Any, have_gxx: bool) -> rt.Module:
    return rt.Module.load_from_file(build_shared("tensor_helpers", HELPERS_CC))


@pytest.fixture(scope="module")
def echo(testing_lib: Any) -> rt.Function:
    f = rt.get_global_func("testing.echo")
    assert f is not None
    return f


@pytest.fixture(scope="module")
def use_count(testing_lib: Any) -> rt.Function:
    f = rt.get_global_func("testing.object_use_count")
    assert f is not None
    return f


class LegacyOnly:
    """A pre-1.0 DLPack producer: ``__dlpack__`` takes no arguments, returns a "dltensor" capsule."""

    def __init__(self, arr: Any) -> None:
        self.arr = arr
        self.last: Any = None

    def __dlpack__(self) -> Any:
        self.last = self.arr.__dlpack__()
        return self.last

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


class Recording:
    """A DLPack producer that records what the consumer asked for."""

    def __init__(self, arr: Any) -> None:
        self.arr = arr
        self.calls: list[dict[str, Any]] = []
        self.capsules: list[Any] = []

    def __dlpack__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        capsule = self.arr.__dlpack__(**kwargs)
        self.capsules.append(capsule)
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)


def _pending_exported_capsules() -> int:
    """Exported capsules the pure backend has not swept yet (the compiled one gives each a C
    destructor, which releases it as it dies)."""
    return 0 if accelerated() else pure_dlpack.pending_exported_capsules()


def _bits(arr: Any) -> bytes:
    return np.ascontiguousarray(arr).tobytes()


# ------------------------------------------------------------------------------------------
# Zero copy, both ways
# ------------------------------------------------------------------------------------------
def test_numpy_to_tensor_is_zero_copy_both_ways(testing_lib: Any) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = rt.Tensor(a)
    assert t.data_ptr == a.ctypes.data
    a[0, 0] = 42.0
    n = t.numpy()
    assert n[0, 0] == 42.0 and np.shares_memory(n, a)
    n[1, 2] = -1.0
    assert a[1, 2] == -1.0
    b = np.from_dlpack(t)
    assert np.shares_memory(b, a)
    b[0, 1] = 7.0
    assert a[0, 1] == 7.0 and t.numpy()[0, 1] == 7.0
    assert np.shares_memory(np.asarray(t), a)


def test_native_writes_are_seen_by_numpy_and_the_other_way(helpers: rt.Module) -> None:
    a = np.zeros((2, 3), dtype=np.float64)
    set_f64 = helpers.get_function("set_f64")
    set_f64(a, 4, 2.5)  # a numpy array passed directly
    assert a[1, 1] == 2.5
    t = rt.Tensor(a)
    set_f64(t, 0, -1.0)
    assert a[0, 0] == -1.0
    a[1, 2] = 9.0
    assert helpers.get_function("copy_compact")(t).numpy()[1, 2] == 9.0


def test_native_tensor_to_numpy_is_zero_copy(helpers: rt.Module) -> None:
    src = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = helpers.get_function("copy_compact")(src)
    assert isinstance(t, rt.Tensor) and not np.shares_memory(t.numpy(), src)
    n = t.numpy()
    assert n.ctypes.data == t.data_ptr
    helpers.get_function("set_f64")(t, 5, 100.0)
    assert n[1, 1] == 100.0
    n[2, 3] = -5.0
    assert np.from_dlpack(t)[2, 3] == -5.0


# ------------------------------------------------------------------------------------------
# DLPack capsule forms
# ------------------------------------------------------------------------------------------
def test_numpy2_legacy_export_is_a_dltensor_capsule() -> None:
    a = np.arange(3.0)
    assert '"dltensor"' in repr(a.__dlpack__())
    assert '"dltensor_versioned"' in repr(a.__dlpack__(max_version=(1, 0)))


def test_consumes_versioned_capsules(helpers: rt.Module) -> None:
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    producer = Recording(a)
    t = rt.Tensor(producer)
    assert producer.calls[0]["max_version"][0] == 1
    assert '"used_dltensor_versioned"' in repr(producer.capsules[0])
    assert np.shares_memory(t.numpy(), a)
    assert helpers.get_function("weighted_sum_f64")(Recording(a)) == _weighted_sum(a)


def test_consumes_legacy_capsules(helpers: rt.Module) -> None:
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    producer = LegacyOnly(a)
    t = rt.Tensor(producer)
    assert '"used_dltensor"' in repr(producer.last)
    assert t.shape == (2, 3) and t.dtype == "float64"
    n = t.numpy()
    assert np.shares_memory(n, a)
    a[1, 1] = 50.0
    assert n[1, 1] == 50.0
    # wherever a tensor parameter is, legacy producers are accepted too
    assert helpers.get_function("weighted_sum_f64")(LegacyOnly(a)) == _weighted_sum(a)
    helpers.get_function("set_f64")(LegacyOnly(a), 0, 3.0)
    assert a[0, 0] == 3.0


def test_producer_answering_legacy_to_a_versioned_request(helpers: rt.Module) -> None:
    a = np.arange(4.0).reshape(2, 2)

    class IgnoresVersion:
        def __dlpack__(self, **kwargs: Any) -> Any:
            return a.__dlpack__()

    assert np.shares_memory(rt.Tensor(IgnoresVersion()).numpy(), a)


def test_tensor_exports_both_capsule_forms(testing_lib: Any) -> None:
    a = np.arange(4, dtype=np.int32)
    t = rt.Tensor(a)
    assert '"dltensor"' in repr(t.__dlpack__())
    assert '"dltensor_versioned"' in repr(t.__dlpack__(max_version=(1, 0)))
    legacy = np.from_dlpack(LegacyOnly(t))  # numpy retries without max_version
    assert np.shares_memory(legacy, a)
    versioned = np.from_dlpack(t)
    assert np.shares_memory(versioned, a)
    assert t.__dlpack_device__() == (1, 0)


def test_dlpack_request_options(testing_lib: Any) -> None:
    t = rt.Tensor(np.arange(3.0))
    with pytest.raises(BufferError, match="copy"):
        t.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="device"):
        t.__dlpack__(max_version=(1, 0), dl_device=(2, 0))
    assert '"dltensor_versioned"' in repr(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False))


def test_objects_without_dlpack_are_refused(testing_lib: Any) -> None:
    with pytest.raises(TypeError, match="from_sequence"):
        rt.Tensor([1.0, 2.0])


def test_read_only_arrays_are_refused(helpers: rt.Module) -> None:
    a = np.arange(4.0).reshape(2, 2)
    a.flags.writeable = False
    with pytest.raises(BufferError, match="read-only"):
        rt.Tensor(a)
    with pytest.raises(BufferError, match="read-only"):
        helpers.get_function("set_f64")(a, 0, 1.0)
    assert a[0, 0] == 0.0
    assert helpers.get_function("weighted_sum_f64")(a.copy()) == _weighted_sum(a)


# ------------------------------------------------------------------------------------------
# dtypes
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_dtype_round_trips_through_native_code(dtype: str, helpers: rt.Module, echo: rt.Function) -> None:
    a = np.array(DTYPE_VALUES[dtype], dtype=dtype).reshape(2, 3)
    t = rt.Tensor(a)
    assert t.dtype == dtype and str(t.dtype) == dtype
    desc = list(helpers.get_function("describe")(a))
    code, bits = desc[1], desc[2]
    assert bits == a.dtype.itemsize * 8 and desc[3] == 1
    assert code == {"b": 6, "i": 0, "u": 1, "f": 2}[a.dtype.kind]
    # native copy (values read and written by native code), back as a native-allocated tensor
    copied = helpers.get_function("copy_compact")(a)
    assert copied.dtype == dtype and copied.shape == (2, 3)
    out = copied.numpy()
    assert out.dtype == a.dtype and _bits(out) == _bits(a)
    # echo returns the very same tensor object
    back = echo(a)
    assert back.dtype == dtype and _bits(back.numpy()) == _bits(a)
    # the same values built from a Python sequence
    seq = rt.Tensor.from_sequence(DTYPE_VALUES[dtype], (2, 3), dtype)
    assert seq.dtype == dtype and _bits(seq.numpy()) == _bits(a)


def test_bfloat16_round_trips(helpers: rt.Module, echo: rt.Function) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes, which is not installed")
    values = [1.5, -2.25, 3.0e38, float("inf"), 0.0078125, -0.0]
    a = np.array(values, dtype=ml_dtypes.bfloat16).reshape(2, 3)
    t = rt.Tensor(a)
    assert t.dtype == "bfloat16"
    assert list(helpers.get_function("describe")(a))[1:4] == [4, 16, 1]
    n = t.numpy()
    assert n.dtype == ml_dtypes.bfloat16 and np.shares_memory(n, a)
    copied = helpers.get_function("copy_compact")(a)
    assert copied.dtype == "bfloat16" and _bits(copied.numpy()) == _bits(a)
    assert _bits(echo(a).numpy()) == _bits(a)
    seq = rt.Tensor.from_sequence(values, (2, 3), "bfloat16")
    assert _bits(seq.numpy()) == _bits(a)


def test_bfloat16_without_ml_dtypes_is_a_clear_error(helpers: rt.Module) -> None:
    try:
        import ml_dtypes  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("ml_dtypes is installed: the error path is not reachable")
    t = helpers.get_function("make_filled")([2], rt.DataType("bfloat16"), 0)
    assert t.dtype == "bfloat16" and t.shape == (2,)
    with pytest.raises(TypeError, match="ml_dtypes"):
        t.numpy()
    with pytest.raises(TypeError, match="ml_dtypes"):
        rt.Tensor.from_sequence([1.0], (1,), "bfloat16")


def test_failing_consumer_keeps_its_error_and_leaks_nothing(helpers: rt.Module, use_count: rt.Function) -> None:
    """numpy refuses a dtype it cannot represent after taking our capsule: its error must come
    through (not a SystemError from a capsule destructor) and the export must be released."""
    t = helpers.get_function("make_filled")([4], rt.DataType("float32x4"), 0)
    assert t.dtype == "float32x4"
    assert use_count(t) == 1
    for _ in range(3):
        with pytest.raises(Exception) as info:
            np.from_dlpack(t)
        assert not isinstance(info.value, SystemError), info.value
    _pending_exported_capsules()
    assert use_count(t) == 1


def test_unconsumed_exports_are_released(testing_lib: Any, use_count: rt.Function) -> None:
    t = rt.Tensor(np.arange(5.0))
    capsules = [t.__dlpack__(max_version=(1, 0)) for _ in range(20)] + [t.__dlpack__() for _ in range(20)]
    assert use_count(t) == 41
    del capsules
    assert _pending_exported_capsules() == 0
    assert use_count(t) == 1


# ------------------------------------------------------------------------------------------
# Shapes, strides, devices
# ------------------------------------------------------------------------------------------
def _weighted_sum(a: Any) -> float:
    i, j = np.indices(a.shape)
    return float((a * (1.0 + 1000.0 * i + j)).sum())


def _views() -> list[Any]:
    base = np.arange(48, dtype=np.float64).reshape(6, 8) * 1.5
    return [
        base,
        base[:, ::2],
        base[::2, 1::3],
        base.T,
        base[::-1, ::-1],
        base[1:4, 2:7],
        np.asfortranarray(base),
        base[:, 3:4],
        np.lib.stride_tricks.as_strided(base, shape=(3, 8), strides=(0, 8)),
    ]


@pytest.mark.parametrize("index", range(len(_views())))
def test_strided_views_are_read_correctly_by_native_code(index: int, helpers: rt.Module) -> None:
    v = _views()[index]
    t = rt.Tensor(v)
    assert t.shape == v.shape
    assert t.strides == tuple(s // v.itemsize for s in v.strides)
    assert t.is_contiguous() == v.flags.c_contiguous
    desc = list(helpers.get_function("describe")(v))
    assert desc[6:8] == list(v.shape) and desc[8:10] == list(t.strides)
    assert helpers.get_function("weighted_sum_f64")(v) == _weighted_sum(v)
    assert helpers.get_function("weighted_sum_f64")(t) == _weighted_sum(v)
    compact = helpers.get_function("copy_compact")(v).numpy()
    assert np.array_equal(compact, v) and compact.flags.c_contiguous
    n = t.numpy()
    assert n.strides == v.strides and np.shares_memory(n, v) and np.array_equal(n, v)


def test_native_writes_through_strides(helpers: rt.Module) -> None:
    base = np.zeros((4, 6))
    view = base[::2, ::-3]
    set_f64 = helpers.get_function("set_f64")
    for k in range(view.size):
        set_f64(view, k, float(k + 1))
    assert np.array_equal(view.ravel(), np.arange(1.0, view.size + 1))
    assert np.count_nonzero(base) == view.size


def test_shape_dtype_device_properties(helpers: rt.Module) -> None:
    a = np.zeros((2, 3, 4), dtype=np.int16)
    t = rt.Tensor(a)
    assert t.shape == (2, 3, 4) and t.ndim == 3 and len(t) == 2 and t.size == 24
    assert t.strides == (12, 4, 1)
    assert t.dtype == rt.DataType("int16") and t.dtype.bits == 16
    assert t.device == rt.Device.cpu() and t.device.type_name == "cpu"
    assert helpers.get_function("describe")(a)[4:6] == [1, 0]
    assert "shape=(2, 3, 4)" in repr(t) and "int16" in repr(t)


def test_zero_d_tensors(helpers: rt.Module) -> None:
    a = np.array(3.25)
    t = rt.Tensor(a)
    assert t.shape == () and t.ndim == 0 and t.strides == () and t.size == 1
    assert list(helpers.get_function("describe")(a)) == [0, 2, 64, 1, 1, 0]
    n = t.numpy()
    assert n.shape == () and float(n) == 3.25 and np.shares_memory(n, a)
    copied = helpers.get_function("copy_compact")(a)
    assert copied.shape == () and float(copied.numpy()) == 3.25
    with pytest.raises(TypeError):
        len(t)
    s = rt.Tensor.from_sequence([7], (), "int32")
    assert s.shape == () and int(s.numpy()) == 7


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0, 2)])
def test_empty_tensors(shape: tuple[int, ...], helpers: rt.Module, echo: rt.Function) -> None:
    a = np.zeros(shape, dtype=np.float32)
    t = rt.Tensor(a)
    assert t.shape == shape and t.size == 0
    assert t.numpy().shape == shape
    assert echo(a).shape == shape
    copied = helpers.get_function("copy_compact")(a)
    assert copied.shape == shape and copied.numpy().shape == shape
    assert rt.Tensor.from_sequence([], shape, "float32").shape == shape


def test_from_sequence(testing_lib: Any) -> None:
    t = rt.Tensor.from_sequence([1, 2, 3, 4, 5, 6], (2, 3), "int64")
    assert t.shape == (2, 3) and t.dtype == "int64"
    assert t.numpy().tolist() == [[1, 2, 3], [4, 5, 6]]
    assert rt.Tensor.from_sequence([1.5, 2.5], [2], rt.DataType("float32")).numpy().tolist() == [1.5, 2.5]
    with pytest.raises(ValueError, match="do not fill"):
        rt.Tensor.from_sequence([1, 2, 3], (2, 2), "int32")
    with pytest.raises(ValueError, match="data type"):
        rt.Tensor.from_sequence([1], (1,), "notatype")
    with pytest.raises(TypeError, match="numpy has no dtype"):
        rt.Tensor.from_sequence([1], (1,), "float32x4")


# ------------------------------------------------------------------------------------------
# Lifetimes
# ------------------------------------------------------------------------------------------
def test_numpy_array_lives_while_a_tensor_views_it(testing_lib: Any) -> None:
    a = np.arange(1000, dtype=np.int64)
    alive = weakref.ref(a)
    t = rt.Tensor(a)
    del a
    gc.collect()
    assert alive() is not None
    _churn()
    assert t.numpy().tolist() == list(range(1000))
    del t
    gc.collect()
    assert alive() is None  # and released once the Tensor is gone


def test_array_passed_to_native_is_released_after_the_call(echo: rt.Function) -> None:
    a = np.arange(10.0)
    alive = weakref.ref(a)
    echo(a)
    del a
    gc.collect()
    assert alive() is None


def test_tensor_lives_while_numpy_views_it(helpers: rt.Module, use_count: rt.Function) -> None:
    t = helpers.get_function("copy_compact")(np.arange(1000, dtype=np.float64))
    assert use_count(t) == 1
    n = t.numpy()
    assert use_count(t) == 2
    del n
    gc.collect()
    _pending_exported_capsules()
    assert use_count(t) == 1
    n = t.numpy()
    del t
    gc.collect()
    _churn()
    assert n.tolist() == [float(i) for i in range(1000)]


def test_tensor_from_numpy_lives_on_as_a_numpy_view(testing_lib: Any) -> None:
    """numpy -> Tensor -> numpy: the last view keeps the chain (and the first array) alive."""
    a = np.arange(500, dtype=np.float32)
    alive = weakref.ref(a)
    n = rt.Tensor(a).numpy()
    del a
    gc.collect()
    _churn()
    assert alive() is not None and n.tolist() == [float(i) for i in range(500)]
    del n
    gc.collect()
    _pending_exported_capsules()
    assert alive() is None


def _churn() -> None:
    """Allocate and free memory so a use-after-free would read garbage."""
    junk = [np.full(1000, 123456789, dtype=np.int64) for _ in range(200)]
    del junk


# ------------------------------------------------------------------------------------------
# Leaks
# ------------------------------------------------------------------------------------------
def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc/self/statm (Linux)")
def test_ten_thousand_round_trips_leak_nothing(helpers: rt.Module, echo: rt.Function, use_count: rt.Function) -> None:
    a = np.arange(64, dtype=np.float32)
    t = rt.Tensor(a)
    weighted = helpers.get_function("weighted_sum_f64")
    b = np.ones((4, 4))
    legacy = LegacyOnly(a)

    def round_trip() -> None:
        r = echo(a)  # numpy -> temporary Tensor -> native -> Tensor
        assert r.numpy()[3] == 3.0  # Tensor -> numpy
        echo(t)
        rt.Tensor(legacy)
        np.from_dlpack(t)
        weighted(b)

    for _ in range(500):  # warm caches and allocator pools
        round_trip()
    gc.collect()
    _pending_exported_capsules()
    count0 = use_count(t)
    rss0 = _rss_bytes()
    for _ in range(10_000):
        round_trip()
    legacy.last = None
    gc.collect()
    _pending_exported_capsules()
    growth = _rss_bytes() - rss0
    assert use_count(t) == count0 == 1
    assert growth < 4 * 1024 * 1024, f"RSS grew by {growth / 1e6:.1f} MB over 10000 round trips"
