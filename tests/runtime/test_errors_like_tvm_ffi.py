"""A library's error is raised as ``tvm_ffi`` raises it: the same builtin class, the same
message, the same library frames in the traceback. Each kind is thrown once through ``tvm_ffi``
and once through our runtime in the same child interpreter, on both runtime paths (see
``with_tvm_ffi.py``).
"""

from __future__ import annotations

import builtins
import traceback
from typing import Any

import pytest

import tvmffi_runtime as rt

from with_tvm_ffi import IN_CHILD, child_only, run_cases_in_children

if IN_CHILD:
    import tvm_ffi
    import tvm_ffi.testing

#: tvm_ffi's own kinds, builtin kinds it raises as RuntimeError (some a RuntimeError already,
#: some not even an Exception), kinds no Python class has, and names that are no identifier.
KINDS = [
    *("RuntimeError", "ValueError", "TypeError", "AttributeError", "KeyError", "IndexError"),
    *("AssertionError", "MemoryError", "NotImplementedError", "RecursionError", "InternalError"),
    *("ZeroDivisionError", "OSError", "FileNotFoundError", "StopIteration", "KeyboardInterrupt"),
    *("SystemExit", "Exception", "BaseException", "UnicodeDecodeError", "ExceptionGroup"),
    *("UndefinedException", "my.dotted.Kind", "Some Kind With Spaces", ""),
]


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "ctypes"])
def test_cases_pass_in_children(pure: bool) -> None:
    run_cases_in_children(__file__, pure)


def _raised(fn: Any, kind: str) -> BaseException:
    try:
        fn(kind, f"a {kind} from C++")
    except BaseException as exc:  # noqa: BLE001 - every kind is compared, KeyboardInterrupt too
        return exc
    raise AssertionError(f"{kind}: nothing raised")


def _library_frames(exc: BaseException) -> list[tuple[str, int | None, str]]:
    """The frames of ``exc``'s traceback that are not Python's (the native ones woven in)."""
    summary = traceback.extract_tb(exc.__traceback__)
    return [(f.filename, f.lineno, f.name) for f in summary if not f.filename.endswith((".py", ".pxi"))]


@child_only
@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_is_an_instance_of_the_class_tvm_ffi_raises(kind: str, testing_lib: Any) -> None:
    theirs = _raised(tvm_ffi.get_global_func("testing.test_raise_error"), kind)
    ours = _raised(rt.get_global_func("testing.test_raise_error"), kind)
    assert isinstance(ours, type(theirs))
    assert str(ours) == str(theirs)
    assert getattr(ours, "kind", None) == kind
    own = getattr(builtins, kind, None)
    if isinstance(own, type) and issubclass(own, BaseException) and kind != "ExceptionGroup":
        assert isinstance(ours, own)  # the kind's own class too
    if type(ours).__module__ != "builtins":
        assert isinstance(ours, rt.Error)  # a class the runtime made for the kind


@child_only
@pytest.mark.parametrize("kind", ["ValueError", "UndefinedException"])
def test_traceback_holds_the_library_frames_tvm_ffi_shows(kind: str, testing_lib: Any) -> None:
    theirs = _raised(tvm_ffi.get_global_func("testing.test_raise_error"), kind)
    ours = _raised(rt.get_global_func("testing.test_raise_error"), kind)
    frames = _library_frames(ours)
    assert frames == _library_frames(theirs)
    assert [name for _, _, name in frames] == ["void tvm::ffi::TestRaiseError(String, String)"]
