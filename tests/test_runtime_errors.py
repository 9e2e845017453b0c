"""Errors cross the boundary in both directions with their class, message and backtrace."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import tvmffi_runtime as rt
from conftest import ROOT, TESTING_LIB


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
        ("NotImplementedError", NotImplementedError),
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


@pytest.mark.parametrize("kind", ["CustomKind", "Some Kind With Spaces", "my.dotted.Kind"])
def test_unknown_kinds_become_error_subclasses(raise_error, kind):
    with pytest.raises(rt.Error) as info:
        raise_error(kind, "unusual")
    exc = info.value
    assert type(exc) is not rt.Error and issubclass(type(exc), rt.Error)
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


def test_native_backtrace_is_attached_as_a_note(raise_error):
    with pytest.raises(ValueError) as info:
        raise_error("ValueError", "with note")
    notes = getattr(info.value, "__notes__", [])
    assert any("TestRaiseError" in note for note in notes)


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
