"""Every Python <-> TVMFFIAny conversion round-trips through the reference library.

Two paths are checked for each value:
- ``echo``: Python packs an argument view, native code copies it into an owned result, Python
  unpacks the owned result;
- ``callback``: native ``testing.apply`` hands the value to a Python callable (argument *view*
  unpacking, including the raw ``const char*`` and byte-array views), whose return value is packed
  into an owned Any and comes back.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

import tvmffi_runtime as rt
from tvmffi_runtime._features import BIG_INT

from conftest import needs


@pytest.fixture(scope="module")
def echo(testing_lib):
    return rt.get_global_func("testing.echo")


@pytest.fixture(scope="module")
def apply(testing_lib):
    return rt.get_global_func("testing.apply")


@pytest.fixture(scope="module", params=["echo", "callback"])
def roundtrip(request, echo, apply):
    """A function that sends one value to native code and returns what comes back."""
    if request.param == "echo":
        return echo
    identity = rt.Function.from_callable(lambda x: x)
    return lambda value: apply(identity, value)


SCALARS = [
    None,
    True,
    False,
    0,
    1,
    -1,
    (1 << 31),
    (1 << 63) - 1,
    -(1 << 63),
    1.5,
    -0.0,
    1e300,
    float("inf"),
    float("-inf"),
]


@pytest.mark.parametrize("value", SCALARS, ids=repr)
def test_scalars_keep_value_and_type(roundtrip, value):
    out = roundtrip(value)
    assert type(out) is type(value)
    assert out == value
    if isinstance(value, float):
        assert math.copysign(1.0, out) == math.copysign(1.0, value)


def test_nan(roundtrip):
    out = roundtrip(float("nan"))
    assert type(out) is float and math.isnan(out)


BIG_INTS = [
    1 << 63,
    -(1 << 63) - 1,
    (1 << 64) - 1,
    1 << 64,
    -(1 << 64),
    3**100,
    -(3**100),
    (1 << 1000) + 12345,
    -(1 << 1000) - 12345,
]


@needs(BIG_INT)
@pytest.mark.parametrize("value", BIG_INTS, ids=lambda v: f"{'-' if v < 0 else ''}2^{abs(v).bit_length()}")
def test_ints_beyond_64_bits_roundtrip_through_bigint(roundtrip, value):
    out = roundtrip(value)
    assert type(out) is int
    assert out == value


@needs(BIG_INT)
def test_big_int_really_is_a_bigint_natively(testing_lib):
    # A typed int64 parameter rejects a BigInt, so the value did not silently wrap to 64 bits.
    with pytest.raises((TypeError, OverflowError)):
        rt.get_global_func("testing.schema_id_int")(1 << 64)
    assert rt.get_global_func("testing.schema_id_int")((1 << 63) - 1) == (1 << 63) - 1


STRINGS = [
    "",
    "a",
    "abc",
    "1234567",  # 7 bytes: longest inline small string
    "12345678",  # 8 bytes: heap string
    "a\0b",  # small, with NUL
    "\0",
    "long string with an embedded \0 NUL in the middle",
    "trailing nul\0",
    "x" * 10_000,
    "héllo",  # 6 bytes of UTF-8, inline
    "héllo wörld",  # non-ASCII, heap
    "日本語のテキスト",
    "emoji \U0001f600 and more",
    "\u00e9",
]


@pytest.mark.parametrize("value", STRINGS, ids=lambda s: repr(s[:20]) + f"[{len(s.encode())}B]")
def test_strings(roundtrip, value):
    out = roundtrip(value)
    assert type(out) is str
    assert out == value


BYTES = [
    b"",
    b"\0",
    b"ab",
    b"1234567",
    b"12345678",
    b"\0\0\0\0\0\0\0\0\0",
    bytes(range(256)),
    b"\xff" * 100_000,
]


@pytest.mark.parametrize("value", BYTES, ids=lambda b: f"{len(b)}B")
def test_bytes(roundtrip, value):
    out = roundtrip(value)
    assert type(out) is bytes
    assert out == value


def test_bytearray_and_memoryview_become_bytes(echo):
    assert echo(bytearray(b"hello world!")) == b"hello world!"
    assert echo(bytearray(b"hi")) == b"hi"
    assert echo(memoryview(b"a view of bytes")) == b"a view of bytes"


def test_str_subclass_converts_as_str(echo):
    class Name(str):
        pass

    out = echo(Name("a subclassed string"))
    assert type(out) is str and out == "a subclassed string"


@pytest.mark.parametrize(
    "spec, code, bits, lanes",
    [
        ("float32", 2, 32, 1),
        ("float16", 2, 16, 1),
        ("float64", 2, 64, 1),
        ("int8", 0, 8, 1),
        ("int64", 0, 64, 1),
        ("uint16", 1, 16, 1),
        ("bool", 6, 8, 1),
        ("bfloat16", 4, 16, 1),
        ("int8x4", 0, 8, 4),
        ("float32x8", 2, 32, 8),
    ],
)
def test_data_types(roundtrip, spec, code, bits, lanes):
    dt = rt.DataType(spec)
    assert (dt.type_code, dt.bits, dt.lanes) == (code, bits, lanes)
    out = roundtrip(dt)
    assert type(out) is rt.DataType
    assert out == spec and str(out) == spec
    assert (out.type_code, out.bits, out.lanes) == (code, bits, lanes)


def test_data_type_is_a_str_and_validates():
    assert isinstance(rt.DataType("float32"), str)
    assert rt.dtype is rt.DataType
    with pytest.raises(ValueError, match="not_a_dtype"):
        rt.DataType("not_a_dtype")


@pytest.mark.parametrize(
    "device",
    [
        rt.Device("cpu", 0),
        rt.Device("cpu"),
        rt.Device("cuda", 1),
        rt.Device("cuda:3"),
        rt.Device(2, 7),
        rt.Device("rocm", (1 << 31) - 1),
        rt.Device("cpu", -1),
    ],
    ids=repr,
)
def test_devices(roundtrip, device):
    out = roundtrip(device)
    assert type(out) is rt.Device
    assert out == device
    assert (out.device_type, out.index) == (device.device_type, device.index)


def test_device_helpers():
    assert rt.Device("cuda:3") == rt.Device(2, 3)
    assert rt.Device.cpu() == rt.Device("cpu", 0)
    assert rt.Device("cuda", 1).type_name == "cuda"
    assert hash(rt.Device("cpu", 0)) == hash(rt.Device(1, 0))
    with pytest.raises(ValueError):
        rt.Device("no_such_device")


@pytest.mark.parametrize("address", [1, 0xDEADBEEF, 0x7FFF_FFFF_FFF0, (1 << 64) - 16])
def test_opaque_pointers(roundtrip, address):
    out = roundtrip(ctypes.c_void_p(address))
    assert isinstance(out, ctypes.c_void_p)
    assert out.value == address


def test_null_opaque_pointer_comes_back_as_none(roundtrip):
    assert roundtrip(ctypes.c_void_p(None)) is None
    assert roundtrip(ctypes.c_void_p(0)) is None


def test_object(roundtrip, testing_lib):
    pair = rt.Function.from_type_key_method("testing.TestIntPair", "__ffi_init__")(3, 4)
    out = roundtrip(pair)
    assert isinstance(out, rt.Object)
    assert out.same_as(pair) and out is not pair
    assert out.type_key == "testing.TestIntPair"


def test_python_callable_becomes_a_function_that_calls_back(roundtrip):
    calls = []

    def double(x):
        calls.append(x)
        return x * 2

    f = roundtrip(double)
    assert isinstance(f, rt.Function)
    assert f(21) == 42
    assert f("ab") == "abab"
    assert calls == [21, "ab"]


def test_native_code_calls_a_python_callable(apply):
    assert apply(lambda a, b: a + b, 40, 2) == 42
    assert apply(lambda *args: list(args), 1, "x", None) == [1, "x", None]
    assert apply(lambda: None) is None


def test_function_roundtrip_keeps_identity(roundtrip, testing_lib):
    add_one = rt.get_global_func("testing.add_one")
    out = roundtrip(add_one)
    assert isinstance(out, rt.Function) and out.same_as(add_one)
    assert out(1) == 2


def test_error_value_roundtrip(roundtrip):
    err = rt.Error("MyOwnKind", "a message", "a backtrace line")
    out = roundtrip(err)  # passed and returned as a value, not raised
    assert isinstance(out, rt.Error)
    assert out.kind == "MyOwnKind"
    assert out.message == "a message" and str(out) == "a message"
    assert "a backtrace line" in out.backtrace


def test_builtin_exception_value_roundtrip(roundtrip):
    out = roundtrip(ValueError("bad value"))
    assert type(out) is ValueError
    assert str(out) == "bad value"
    assert out.kind == "ValueError"


def test_shape(roundtrip):
    shape = rt.Shape([2, 3, 4])
    out = roundtrip(shape)
    assert type(out) is rt.Shape
    assert out == (2, 3, 4) and out.same_as(shape)
    assert roundtrip(rt.Shape([])) == ()


@pytest.mark.parametrize("shape, dtype", [((2, 3), "float32"), ((5,), "int64"), ((1, 2, 3), "uint8"), ((), "float64")])
def test_tensor_from_numpy(roundtrip, shape, dtype):
    arr = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    out = roundtrip(arr)
    assert isinstance(out, rt.Tensor)
    assert out.shape == shape
    assert out.dtype == dtype
    assert out.device == rt.Device("cpu", 0)
    np.testing.assert_array_equal(out.numpy(), arr)


def test_tensor_roundtrip_keeps_identity(roundtrip):
    t = rt.Tensor(np.zeros((4, 4), dtype="float32"))
    out = roundtrip(t)
    assert isinstance(out, rt.Tensor) and out.same_as(t)


@pytest.mark.parametrize("cls", [rt.Array, rt.List])
def test_sequences_keep_identity(roundtrip, cls):
    seq = cls([1, "two", 3.0, None])
    out = roundtrip(seq)
    assert type(out) is cls
    assert out.same_as(seq)
    assert out == [1, "two", 3.0, None]


@pytest.mark.parametrize("cls", [rt.Map, rt.Dict])
def test_mappings_keep_identity(roundtrip, cls):
    mapping = cls({"a": 1, 2: "b"})
    out = roundtrip(mapping)
    assert type(out) is cls
    assert out.same_as(mapping)
    assert out == {"a": 1, 2: "b"}


@pytest.mark.parametrize("value", [[1, 2, 3], (1, "a", None), [], ()], ids=repr)
def test_python_list_and_tuple_become_array(roundtrip, value):
    out = roundtrip(value)
    assert type(out) is rt.Array
    assert out == list(value)
    assert len(out) == len(value)


@pytest.mark.parametrize("value", [{"a": 1, "b": "x"}, {}, {1: 2.5, "k": None}], ids=repr)
def test_python_dict_becomes_map(roundtrip, value):
    out = roundtrip(value)
    assert type(out) is rt.Map
    assert out == value
    assert dict(out.items()) == value


def test_nested_python_containers(roundtrip):
    value = {"xs": [1, [2, 3]], "m": {"k": (4, 5)}, "s": "long string value here"}
    out = roundtrip(value)
    assert type(out) is rt.Map
    assert type(out["xs"]) is rt.Array and type(out["xs"][1]) is rt.Array
    assert type(out["m"]) is rt.Map
    assert out == {"xs": [1, [2, 3]], "m": {"k": [4, 5]}, "s": "long string value here"}


def test_generic_sequence_and_mapping_types_convert(echo):
    import collections

    assert echo(range(4)) == [0, 1, 2, 3]
    assert echo(collections.OrderedDict([("a", 1)])) == {"a": 1}


def test_module(roundtrip, testing_lib):
    system_lib = rt.get_global_func("ffi.SystemLib")()
    assert isinstance(system_lib, rt.Module)
    out = roundtrip(system_lib)
    assert isinstance(out, rt.Module) and out.same_as(system_lib)


def test_results_of_typed_native_functions(testing_lib):
    g = rt.get_global_func
    assert g("testing.schema_id_float")(2) == 2.0 and type(g("testing.schema_id_float")(2)) is float
    assert g("testing.schema_id_bool")(True) is True
    assert g("testing.schema_id_string")("héllo wörld") == "héllo wörld"
    assert g("testing.schema_id_bytes")(b"\0bytes\0") == b"\0bytes\0"
    assert g("testing.schema_id_dtype")(rt.DataType("int8x4")) == "int8x4"
    assert g("testing.schema_id_device")(rt.Device("cuda", 2)) == rt.Device("cuda", 2)
    assert g("testing.schema_id_arr_int")([1, 2, 3]) == [1, 2, 3]
    assert g("testing.schema_id_map_str_int")({"a": 1}) == {"a": 1}
    assert g("testing.schema_id_opt_int")(None) is None
    assert g("testing.schema_no_return")(1) is None
