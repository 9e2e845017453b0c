"""Call every generated function of the testing library with values of its declared types, and
check that what comes back has the declared return type."""

from __future__ import annotations

import collections.abc as abc
import inspect
import sys
import types
import typing
from typing import Any

import numpy as np
import pytest

import tvmffi_runtime as rt

from conftest import ROOT

sys.path.insert(0, str(ROOT / "generated"))

import tvmffi_testing.testing as T

# Functions whose arguments need specific values (their declared types are too loose to guess).
SPECIAL: dict[str, tuple[tuple[Any, ...], Any]] = {
    "test_raise_error": (("ValueError", "boom"), ValueError),
    "run_check_signal": ((0,), None),
    "apply": ((lambda x: x + 1, 41), 42),
    "echo": (("abc",), "abc"),
    "nop": ((), None),
    "schema_packed": ((1, 2), None),
    "enum_variant_get": (("Alpha",), None),
    "make_visit_region_graph": ((False,), None),
    "object_use_count": ((T.TestIntPair(1, 2),), 1),
    # The native function itself cannot return a DLTensor* view (it owns nothing); the error
    # must arrive as a Python exception, not a crash.
    "schema_id_dltensor": ((np.arange(4, dtype="float32"),), RuntimeError),
}


def sample(tp: Any) -> Any:
    """A value of annotation ``tp``."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is int or tp is typing.SupportsIndex:  # parameters take SupportsIndex, results are int
        return 3
    if tp is float or tp is typing.SupportsFloat:
        return 1.5
    if tp is bool:
        return True
    if tp is str:
        return "text"
    if tp is bytes:
        return b"bytes"
    if tp is type(None) or tp is None:
        return None
    if tp is Any:
        return 7
    if origin in (typing.Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        if rt.Tensor in non_none:
            return np.arange(4, dtype="float32")
        if rt.DataType in non_none:
            return "float32"
        return sample(non_none[0])
    if origin in (abc.Sequence,):
        return [sample(args[0])]
    if origin in (abc.Mapping,):
        return {sample(args[0]): sample(args[1])}
    if origin is rt.List:
        return rt.List([sample(args[0])])
    if origin is rt.Dict:
        return rt.Dict({sample(args[0]): sample(args[1])})
    if origin is abc.Callable:
        return lambda *a: None
    if tp is rt.Device:
        return rt.Device("cpu", 0)
    if tp is rt.Object:
        return T.TestIntPair(1, 2)
    if isinstance(tp, type) and issubclass(tp, rt.Object):
        return T.TestIntPair(1, 2) if tp is T.TestIntPair else None
    raise NotImplementedError(f"no sample for {tp!r}")


def conforms(value: Any, tp: Any) -> bool:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return True
    if tp is None or tp is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if tp is float:
        return isinstance(value, float)
    if origin in (rt.Array, rt.List):
        return isinstance(value, origin) and all(conforms(v, args[0]) for v in value)
    if origin in (rt.Map, rt.Dict):
        return isinstance(value, origin) and all(
            conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items()
        )
    if origin is abc.Callable:
        return callable(value)
    if isinstance(tp, type):
        return isinstance(value, tp)
    return True


FUNCTIONS = sorted(
    name for name, obj in vars(T).items() if inspect.isroutine(obj) and getattr(obj, "__module__", None) == T.__name__
)


def test_all_functions_are_covered() -> None:
    assert len(FUNCTIONS) >= 55


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_accepts_declared_types(name: str) -> None:
    fn = getattr(T, name)
    hints = typing.get_type_hints(fn, globalns=vars(T), localns={"_rt": rt, "_t": typing, "_abc": abc})
    ret_type = hints.pop("return")
    if name in SPECIAL:
        args, expected = SPECIAL[name]
        if isinstance(expected, type) and issubclass(expected, BaseException):
            with pytest.raises(expected):
                fn(*args)
            return
        result = fn(*args)
        if expected is not None:
            assert result == expected
    else:
        params = list(inspect.signature(fn).parameters.values())
        args = tuple(sample(hints[p.name]) for p in params)
        result = fn(*args)
    assert conforms(result, ret_type), f"{name} returned {result!r}, declared {ret_type!r}"
