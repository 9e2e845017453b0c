"""Errors cross the boundary in both directions with their class, message and backtrace; the
messages both backends raise are defined once.

The ctypes path raises the builders' exceptions itself; the compiled path (``_accel.c``) is given
the builders at init (``_errors.BACKEND_ERRORS``, by name) and calls them on its error paths. So
each test in the Messages section checks the error raised on the path in use against the builder,
not against a second copy of the text; ``test_accel.test_runtime_suite_passes_on_pure_ctypes``
reruns this file on pure ctypes.
"""

from __future__ import annotations

import builtins
import ctypes
import os
import re
import subprocess
import sys
import textwrap
import traceback
from collections.abc import Callable
from typing import Any

import pytest

import tvmffi_runtime as rt
from tvmffi_runtime import _call, _callback, _errors, _fields, _lib, _native_traceback
from tvmffi_runtime._values import CallbackMode
from tvmffi_runtime.structural import move, structural_mutate, structural_walk

from conftest import ROOT, TESTING_LIB, accel_source

if str(ROOT / "generated") not in sys.path:
    sys.path.insert(0, str(ROOT / "generated"))

from tvmffi_testing import testing as T
from tvmffi_testing.visitors import Mutator

ACCEL_SOURCE = accel_source()


@pytest.fixture(scope="module")
def raise_error(testing_lib):
    return rt.get_global_func("testing.test_raise_error")


@pytest.fixture(scope="module")
def apply(testing_lib):
    return rt.get_global_func("testing.apply")


# --------------------------------------------------------------------------------------------
# Native -> Python
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kind, cls",
    [
        ("ValueError", ValueError),
        ("TypeError", TypeError),
        ("IndexError", IndexError),
        ("KeyError", KeyError),
        ("AttributeError", AttributeError),
        ("RuntimeError", RuntimeError),
        ("AssertionError", AssertionError),
        ("MemoryError", MemoryError),
        ("NotImplementedError", NotImplementedError),  # tvm_ffi's RuntimeError, and its own class
        ("RecursionError", RecursionError),
    ],
)
def test_native_errors_become_the_matching_python_class(raise_error, kind, cls):
    with pytest.raises(cls) as info:
        raise_error(kind, f"{kind} message from C++")
    exc = info.value
    assert type(exc) is cls
    assert exc.args[0] == f"{kind} message from C++"
    assert exc.kind == kind
    assert "TestRaiseError" in exc.backtrace  # the native frame that threw
    assert not isinstance(exc, rt.Error)


@pytest.mark.parametrize("kind", ["CustomKind", "Some Kind With Spaces", "my.dotted.Kind", "InternalError"])
def test_unknown_kinds_become_error_subclasses(raise_error, kind):
    with pytest.raises(rt.Error) as info:
        raise_error(kind, "unusual")
    exc = info.value
    assert type(exc) is not rt.Error and issubclass(type(exc), rt.Error)
    assert isinstance(exc, RuntimeError)  # as tvm_ffi raises a kind it has no class for
    assert exc.kind == kind
    assert exc.message == "unusual" and str(exc) == "unusual"
    assert isinstance(exc.backtrace, str) and "TestRaiseError" in exc.backtrace
    # the same kind maps to the same class every time, so it can be caught by class
    with pytest.raises(type(exc)):
        raise_error(kind, "again")


def test_error_subclass_is_named_after_an_identifier_kind(raise_error):
    with pytest.raises(rt.Error) as info:
        raise_error("DeviceLostError", "gone")
    assert type(info.value).__name__ == "DeviceLostError"


@pytest.mark.parametrize("kind", ["ZeroDivisionError", "OSError", "StopIteration", "KeyboardInterrupt"])
def test_other_builtin_kinds_are_runtime_errors_of_their_own_class(raise_error, kind):
    """tvm_ffi raises these as RuntimeError; ours is one too, and the builtin of the kind's name."""
    with pytest.raises(RuntimeError) as info:
        raise_error(kind, "builtin name")
    exc = info.value
    assert isinstance(exc, getattr(builtins, kind)) and isinstance(exc, rt.Error)
    assert type(exc).__name__ == kind and str(exc) == "builtin name" and exc.kind == kind


def test_a_builtin_class_that_crossed_does_not_change_its_kind(raise_error, apply):
    """A Python ZeroDivisionError returned through native code comes back as the kind's class,
    which a library's ZeroDivisionError is raised as afterwards too."""
    value = apply(lambda: ZeroDivisionError("from Python"))
    assert isinstance(value, ZeroDivisionError) and str(value) == "from Python"
    with pytest.raises(RuntimeError) as info:
        raise_error("ZeroDivisionError", "from C++")
    assert type(info.value) is type(value)


# What the library's backtrace looks like on each path: the library's frame, then the binding's.
COMPILED_BACKTRACE = """\
  File "/project/src/ffi/testing/testing.cc", line 521, in void tvm::ffi::TestRaiseError(String, String)
  File "tvmffi_runtime/_accel_parts/calls.h", line 199, in call_raw
  File "tvmffi_runtime/_accel_parts/calls.h", line 230, in call_packed
  File "Objects/methodobject.c", line 427, in cfunction_vectorcall_FASTCALL
"""
PURE_BACKTRACE = """\
  File "/project/src/ffi/testing/testing.cc", line 521, in void tvm::ffi::TestRaiseError(String, String)
  File "<unknown>", line 0, in ffi_call
  File "/tmp/python-build/Python-3.11.7/Modules/_ctypes/callproc.c", line 923, in _call_function_pointer
  File "/tmp/python-build/Python-3.11.7/Modules/_ctypes/_ctypes.c", line 4201, in PyCFuncPtr_call
"""


@pytest.mark.parametrize("backtrace", [COMPILED_BACKTRACE, PURE_BACKTRACE], ids=["compiled", "ctypes"])
def test_backtrace_is_cut_at_the_binding(backtrace):
    text, frames = _native_traceback.library_part(backtrace)
    assert frames == (("/project/src/ffi/testing/testing.cc", 521, "void tvm::ffi::TestRaiseError(String, String)"),)
    assert text == backtrace.splitlines(keepends=True)[0]
    assert _native_traceback.library_part("no frame here\n") == ("no frame here\n", ())


def _native_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    return [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.endswith(".py")]


def test_traceback_ends_in_the_library_frames_without_the_bindings(raise_error):
    with pytest.raises(ValueError) as info:
        raise_error("ValueError", "in the traceback")
    exc = info.value
    native = _native_frames(exc)
    assert [f.name for f in native] == ["void tvm::ffi::TestRaiseError(String, String)"]
    assert native[0].filename.endswith("testing.cc") and native[0].lineno
    assert traceback.extract_tb(exc.__traceback__)[-1].name == native[0].name  # innermost
    assert exc.backtrace == f'  File "{native[0].filename}", line {native[0].lineno}, in {native[0].name}\n'
    assert not getattr(exc, "__notes__", None)
    shown = "".join(traceback.format_exception(exc))
    for binding in ("_accel", "calls.h", "methodobject.c", "_ctypes", "ffi_call"):
        assert binding not in shown


def test_library_frames_hold_no_caller_frames(raise_error):
    """The frames woven in belong to no call stack: they keep no caller (nor its locals) alive."""
    with pytest.raises(ValueError) as info:
        raise_error("ValueError", "x")
    tb = info.value.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_frame.f_code.co_name.endswith("TestRaiseError(String, String)")
    assert tb.tb_frame.f_back is None and tb.tb_frame.f_locals == {}


def test_library_frames_of_an_error_raised_under_a_callback(raise_error, apply):
    with pytest.raises(KeyError) as info:
        apply(lambda: raise_error("KeyError", "inner"))
    names = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert names[-1] == "void tvm::ffi::TestRaiseError(String, String)"
    assert "<lambda>" in names  # the callback's frame, above the library's


def test_errors_leave_the_runtime_usable(raise_error, testing_lib):
    for _ in range(100):
        with pytest.raises(ValueError):
            raise_error("ValueError", "x")
    assert rt.get_global_func("testing.add_one")(1) == 2


# --------------------------------------------------------------------------------------------
# Python -> native -> Python
# --------------------------------------------------------------------------------------------
class CustomPythonError(Exception):
    pass


@pytest.mark.parametrize(
    "exc",
    [
        CustomPythonError("custom message"),
        ValueError("bad value"),
        KeyError("missing key"),
        ZeroDivisionError("division"),
        RuntimeError(""),
    ],
    ids=lambda e: type(e).__name__,
)
def test_exception_in_callback_comes_back_identical(apply, exc):
    def callback(x):
        raise exc

    with pytest.raises(type(exc)) as info:
        apply(callback, 1)
    assert info.value is exc
    assert str(info.value) == str(exc)


def test_exception_through_two_native_frames(apply):
    exc = CustomPythonError("deep")

    def inner():
        raise exc

    with pytest.raises(CustomPythonError) as info:
        apply(lambda: apply(inner))
    assert info.value is exc


def test_rt_error_raised_from_a_callback(apply):
    err = rt.Error("CallbackKind", "raised from Python", "python backtrace text")

    def callback():
        raise err

    with pytest.raises(rt.Error) as info:
        apply(callback)
    assert info.value is err
    assert info.value.kind == "CallbackKind"
    assert info.value.message == "raised from Python"
    assert "python backtrace text" in info.value.backtrace


def test_exception_returned_as_a_value_from_a_callback(apply):
    """A Python exception *returned* (not raised) crosses as an Error value and keeps its class."""
    value = apply(lambda: CustomPythonError("as a value"))
    assert type(value) is CustomPythonError
    assert str(value) == "as a value"
    # a non-builtin class crosses as its qualified name (same-named classes stay apart)
    assert value.kind == f"{CustomPythonError.__module__}.CustomPythonError"


def test_keyboard_interrupt_in_callback_propagates(apply):
    def callback():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        apply(callback)


class DeepError(RecursionError):
    pass


@pytest.mark.parametrize(
    "exc",
    [
        RecursionError("maximum recursion depth exceeded while calling a Python object"),
        ctypes.ArgumentError("argument 1: RecursionError: maximum recursion depth exceeded in __instancecheck__"),
        ctypes.ArgumentError("argument 2: RecursionError: ???"),  # ctypes could not even print it
    ],
    ids=["RecursionError", "ArgumentError", "ArgumentError-unprintable"],
)
def test_a_callback_out_of_python_stack_comes_back_as_the_one_recursion_error(apply, exc):
    """Out of stack, whichever call ran out (ctypes turns a RecursionError raised while it
    converts arguments into an ArgumentError that keeps only the text): the RecursionError
    that says a callback recursed too deep, not the exception of the call that happened to fail."""

    def callback():
        raise exc

    with pytest.raises(RecursionError) as info:
        apply(callback)
    assert type(info.value) is RecursionError
    assert str(info.value) == _errors.RECURSION_IN_CALLBACK[1].decode()


@pytest.mark.parametrize(
    "exc",
    [
        RecursionError("raised by the callback itself"),
        DeepError("maximum recursion depth exceeded"),  # a subclass (GraphTooDeepError is one) is no stack overflow
        ctypes.ArgumentError("argument 1: TypeError: wrong type"),
    ],
    ids=["own RecursionError", "RecursionError subclass", "other ArgumentError"],
)
def test_other_recursion_and_argument_errors_come_back_identical(apply, exc):
    def callback():
        raise exc

    with pytest.raises(type(exc)) as info:
        apply(callback)
    assert info.value is exc


# --------------------------------------------------------------------------------------------
# Bad calls: TypeError naming the function and the parameter position, never a crash
# --------------------------------------------------------------------------------------------
def test_wrong_argument_count_names_the_function(testing_lib):
    add_one = rt.get_global_func("testing.add_one")
    with pytest.raises(TypeError, match=r"testing\.add_one.*Expected 1 but got 0"):
        add_one()
    with pytest.raises(TypeError, match=r"testing\.add_one.*Expected 1 but got 2"):
        add_one(1, 2)


def test_wrong_argument_type_names_function_and_position(testing_lib):
    add_one = rt.get_global_func("testing.add_one")
    with pytest.raises(TypeError, match=r"argument #0.*testing\.add_one"):
        add_one("not an int")
    schema = rt.get_global_func("testing.schema_arr_map_opt")
    with pytest.raises(TypeError, match=r"argument #1"):
        schema([1], "not a map", None)


@pytest.mark.parametrize("bad", [object(), type, {1, 2}, complex(1, 2)], ids=lambda v: type(v).__name__)
def test_unconvertible_argument_names_function_and_position(testing_lib, bad):
    echo = rt.get_global_func("testing.echo")
    with pytest.raises(TypeError, match=rf"testing\.echo: argument 0 has type {type(bad).__name__}"):
        echo(bad)
    nop = rt.get_global_func("testing.nop")
    with pytest.raises(TypeError, match=rf"testing\.nop: argument 2 has type {type(bad).__name__}"):
        nop(1, "x", bad)


def test_unconvertible_value_nested_in_a_container(testing_lib):
    echo = rt.get_global_func("testing.echo")
    with pytest.raises(TypeError, match=r"testing\.echo: argument 1 has type list") as info:
        echo(1, [1, object()])
    assert "argument 1 has type object" in str(info.value)  # the inner position too


def test_unconvertible_argument_of_a_python_function():
    def my_callback(x):
        return x

    f = rt.Function.from_callable(my_callback)
    with pytest.raises(TypeError, match=r"my_callback: argument 0 has type object"):
        f(object())


def test_unconvertible_return_value_of_a_callback(apply):
    with pytest.raises(TypeError, match="object"):
        apply(lambda: object())
    assert apply(lambda: 5) == 5


def test_function_given_a_non_callable():
    with pytest.raises(TypeError):
        rt.Function.from_callable(42)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# KeyboardInterrupt from a signal while native code runs
# --------------------------------------------------------------------------------------------
SIGINT_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    import tvmffi_runtime as rt
    # a shell starts background jobs with SIGINT ignored, and Python keeps that: restore the
    # default handler so the test does not depend on how the suite was launched
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rt.load_library(sys.argv[1])
    run_check_signal = rt.get_global_func("testing.run_check_signal")

    def interrupt():
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGINT)

    for attempt in range(2):  # twice: the runtime stays usable after an interrupt
        threading.Thread(target=interrupt, daemon=True).start()
        start = time.monotonic()
        try:
            run_check_signal(10)
        except KeyboardInterrupt:
            print(f"INTERRUPTED {time.monotonic() - start:.2f}", flush=True)
        else:
            print("NOT INTERRUPTED", flush=True)
    run_check_signal(0)
    print("STILL USABLE", flush=True)
    """
)


def test_sigint_interrupts_native_code_with_keyboard_interrupt(tmp_path):
    script = tmp_path / "sigint.py"
    script.write_text(SIGINT_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "runtime"), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, str(script), str(TESTING_LIB)], capture_output=True, text=True, timeout=60, env=env
    )
    lines = proc.stdout.split()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("INTERRUPTED") == 2 and "NOT INTERRUPTED" not in proc.stdout, proc.stdout
    elapsed = [float(lines[i + 1]) for i, word in enumerate(lines) if word == "INTERRUPTED"]
    assert all(t < 3.0 for t in elapsed), elapsed  # well under the 10 s the function would run
    assert "STILL USABLE" in proc.stdout
    # the interrupt is raised cleanly, not printed as an exception ignored in a ctypes callback
    assert "Exception ignored" not in proc.stderr, proc.stderr


# --------------------------------------------------------------------------------------------
# Messages: each error raised on the path in use comes from its builder in ``_errors``
# --------------------------------------------------------------------------------------------
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
    "index": ("QQQ", 987654321, 987654321),
    "released": (_Sentinel(),),
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
    _lib.ObjectDecRef(h)
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
        lambda: _call._callback_function(BAD, CallbackMode.PLAIN),
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


def test_function_create_refuses_a_non_callable_with_the_same_message() -> None:
    """Both backends' ``function_create`` (here under ``function_in_mode``) word it as one."""
    with pytest.raises(TypeError) as info:
        _callback.function_in_mode(CallbackMode.PLAIN, BAD)
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
        structural_mutate(_call.get_global_func("ffi.Array")(T.TestIntPair(1, 2)), Moved())
    assert str(mutate.value) == str(_errors.moved_result_error())
