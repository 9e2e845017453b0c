"""The error messages both backends raise are defined once, in ``tvmffi_runtime._errors``.

The ctypes path raises the builders' exceptions itself; the compiled path (``_accel.c``) is given
the builders at init (``_errors.BACKEND_ERRORS``, by name) and calls them on its error paths. So
each test below checks the error raised on the path in use against the builder, not against a
second copy of the text; ``test_accel.test_runtime_suite_passes_on_pure_ctypes`` reruns this file
on pure ctypes.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Callable

import pytest

from conftest import ROOT, accel_source
from tvmffi_runtime import _callback, _core, _errors, _fields
from tvmffi_runtime.structural import move, structural_mutate, structural_walk

if str(ROOT / "generated") not in sys.path:
    sys.path.insert(0, str(ROOT / "generated"))

from tvmffi_testing import testing as T  # noqa: E402
from tvmffi_testing.visitors import Mutator  # noqa: E402

ACCEL_SOURCE = accel_source()


def test_compiled_path_asks_init_for_every_builder_by_name() -> None:
    names = re.search(r"error_names\[E_COUNT\] = \{([^}]*)\};", ACCEL_SOURCE)
    enum = re.search(r"enum \{\s*(E_NOT_CALLABLE.*?)E_COUNT", ACCEL_SOURCE, re.S)
    assert names is not None and enum is not None
    c_names = re.findall(r'"(\w+)"', names.group(1))
    # the E_* enum indexes the name table: the same names, in the same order
    assert re.findall(r"\b(E_\w+),", enum.group(1)) == [f"E_{n.upper()}" for n in c_names]
    assert sorted(c_names) == sorted(_errors.BACKEND_ERRORS)


class _Sentinel:
    """A value whose type name and repr are a marker, to split a message into its fixed text."""

    def __repr__(self) -> str:
        return "VVV"


_Sentinel.__name__ = "VVV"

SAMPLE_ARGS: dict[str, tuple[Any, ...]] = {
    "not_callable": (_Sentinel(),),
    "field_value": ("QQQ", "i64", _Sentinel()),
    "field_overflow": ("QQQ", 987654321),
    "field_not_an_object": ("QQQ", _Sentinel()),
    "field_released": ("QQQ", _Sentinel()),
    "field_read_only": ("QQQ",),
    "field_delete": ("QQQ",),
    "field_kind": ("QQQ", "KKK"),
    "field_in_place": ("QQQ", "KKK"),
    "arity": ("QQQ", 987654321, 987654321),
    "no_keywords": ("QQQ",),
    "init_result": ("QQQ", _Sentinel()),
}


def test_compiled_path_words_none_of_the_messages_itself() -> None:
    assert sorted(SAMPLE_ARGS) == sorted(_errors.BACKEND_ERRORS)
    fixed: list[str] = [_errors.CONVERSION_FAILED[1].decode()]
    for name, make in _errors.BACKEND_ERRORS.items():
        fixed += re.split(r"QQQ|VVV|KKK|987654321", str(make(*SAMPLE_ARGS[name])))
    for text in (t.strip() for t in fixed):
        if len(text) >= 8:  # "field", ":" and the like are too short to mean a copy
            assert text not in ACCEL_SOURCE, f"_accel.c words {text!r} itself"
    for kind in _fields.IN_PLACE_FIELD_KINDS:  # every in-place kind says what it accepts
        assert kind in _errors.FIELD_ACCEPTS
        assert f"expected {_errors.FIELD_ACCEPTS[kind]}," not in ACCEL_SOURCE


def _released_pair() -> Any:
    return _released(T.TestIntPair(1, 2))


def _all_types() -> Any:
    return T.SchemaAllTypes.make_with(1, 2.0, "s")


def _released(obj: Any) -> Any:
    h, obj._h = obj._h, 0
    _core._DecRef(h)
    return obj


NOT_AN_OBJECT = object()
BAD = object()


def _set(obj: Any, name: str, value: Any) -> Callable[[], None]:
    return lambda: setattr(obj, name, value)


# (what fails, the error it must raise, built by the one definition)
CASES: dict[str, tuple[Callable[[], Any], BaseException]] = {
    "read_not_an_object": (
        lambda: T.TestIntPair.__dict__["a"].__get__(NOT_AN_OBJECT, None),
        _errors.field_not_an_object_error("testing.TestIntPair.a", NOT_AN_OBJECT),
    ),
    "write_not_an_object": (
        lambda: T.SchemaAllTypes.__dict__["v_int"].__set__(NOT_AN_OBJECT, 1),
        _errors.field_not_an_object_error("testing.SchemaAllTypes.v_int", NOT_AN_OBJECT),
    ),
    "read_released": (
        lambda: _released_pair().a,
        _errors.field_released_error("testing.TestIntPair.a", _released_pair()),
    ),
    "write_released": (
        lambda: setattr(_released(_all_types()), "v_int", 1),
        _errors.field_released_error("testing.SchemaAllTypes.v_int", _all_types()),
    ),
    "registry_released": (  # a field read through the registry's accessor (reflection)
        lambda: _read_registry(_released_pair()),
        _errors.field_released_error("testing.TestIntPair.a", _released_pair()),
    ),
    "read_only": (
        _set(T.TestObjectBase(), "v_f64", 1.0),
        _errors.field_read_only_error("testing.TestObjectBase.v_f64"),
    ),
    "delete": (
        lambda: delattr(T.TestIntPair(1, 2), "a"),
        _errors.field_delete_error("testing.TestIntPair.a"),
    ),
    "i64_wrong_type": (
        _set(_all_types(), "v_int", BAD),
        _errors.field_value_error("testing.SchemaAllTypes.v_int", "i64", BAD),
    ),
    "i64_float": (
        _set(_all_types(), "v_int", 1.5),
        _errors.field_value_error("testing.SchemaAllTypes.v_int", "i64", 1.5),
    ),
    "i64_overflow": (
        _set(_all_types(), "v_int", 1 << 70),
        _errors.field_overflow_error("testing.SchemaAllTypes.v_int", 1 << 70),
    ),
    "f64_wrong_type": (
        _set(_all_types(), "v_float", "x"),
        _errors.field_value_error("testing.SchemaAllTypes.v_float", "f64", "x"),
    ),
    "f64_bool": (
        _set(_all_types(), "v_float", True),
        _errors.field_value_error("testing.SchemaAllTypes.v_float", "f64", True),
    ),
    "bool_wrong_type": (  # the bool rule: a bool or an int, as a bool argument takes
        _set(_all_types(), "v_bool", 0.5),
        _errors.field_value_error("testing.SchemaAllTypes.v_bool", "bool", 0.5),
    ),
    "unknown_kind": (
        lambda: _fields._bound_field("a.B", "c", "i128", 8, None),
        _errors.field_kind_error("a.B.c", "i128"),
    ),
    "kind_not_in_place": (
        lambda: _fields._bound_field("a.B", "c", "object", 8, "in_place"),
        _errors.field_in_place_error("a.B.c", "object"),
    ),
    "not_callable": (
        lambda: _callback._callback_function(BAD, _callback._MODE_PLAIN),
        _errors.not_callable_error(BAD),
    ),
}


def _read_registry(obj: Any) -> Any:
    from tvmffi_runtime.reflection import FieldAccessor

    return FieldAccessor("testing.TestIntPair", "a").get(obj)


@pytest.mark.parametrize("case", sorted(CASES))
def test_errors_come_from_the_one_definition(case: str) -> None:
    fail, expected = CASES[case]
    with pytest.raises(BaseException) as info:
        fail()
    assert type(info.value) is type(expected)
    assert str(info.value) == str(expected)


def test_bool_and_int_are_what_a_bool_field_takes() -> None:
    obj = _all_types()
    for value, stored in ((True, True), (0, False), (7, True)):
        obj.v_bool = value  # type: ignore[assignment]
        assert obj.v_bool is stored


@pytest.mark.skipif(not _core.accelerated(), reason="the compiled path's own check")
def test_compiled_callback_maker_refuses_a_non_callable_with_the_same_message() -> None:
    with pytest.raises(TypeError) as info:
        _callback.compiled_function(_callback._MODE_PLAIN, BAD)
    assert str(info.value) == str(_errors.not_callable_error(BAD))


def test_callback_results_are_refused_with_the_one_message() -> None:
    def bad(node: Any) -> Any:
        return "bad"

    with pytest.raises(TypeError) as walk:
        structural_walk(T.TestIntPair(1, 2), bad)
    assert str(walk.value) == str(_errors.walk_result_error("bad"))

    class Moved(Mutator):
        def mutate_test_int_pair(self, node: T.TestIntPair) -> T.TestIntPair:
            fresh = T.TestIntPair(5, 6)
            T.echo(move(fresh))  # its reference is handed over
            return fresh

    with pytest.raises(ValueError) as mutate:
        structural_mutate(_core.get_global_func("ffi.Array")(T.TestIntPair(1, 2)), Moved())
    assert str(mutate.value) == str(_errors.moved_result_error())
