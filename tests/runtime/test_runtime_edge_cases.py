"""Edge cases of the runtime where a slip gives a wrong value or kills the process.

Checks that could crash the interpreter run in a child process, so a failure fails one test
instead of killing pytest.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import textwrap
import traceback
import types
from pathlib import Path
from typing import Any

import pytest

import tvmffi_runtime as rt
from tvmffi_runtime import _convert, _errors, _lib
from tvmffi_runtime._library_check import library_problem

from conftest import ROOT, TESTING_LIB

RUNTIME = ROOT / "runtime"


def _child(code: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports the source tree's runtime."""
    prelude = f"import sys\nsys.path.insert(0, {str(RUNTIME)!r})\nimport tvmffi_runtime as rt\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code), *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _result_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, (
        f"the child process died (exit status {proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}"
    )
    return [line[len("RESULT ") :] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]


# --------------------------------------------------------------------------------------------
# a. A truncated ELF whose program headers survive but whose loadable segments do not: the
#    loader maps the segments and dies of SIGBUS touching the missing pages.
# --------------------------------------------------------------------------------------------
@pytest.fixture()
def truncated_lib(tmp_path: Path) -> Path:
    data = TESTING_LIB.read_bytes()[:8192]
    # the program headers are inside the first 8192 bytes; the segments end far past them
    phoff = struct.unpack_from("<Q", data, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    assert phoff + phentsize * phnum <= len(data)
    path = tmp_path / "truncated_segments.so"
    path.write_bytes(data)
    return path


_LOADERS = {
    "library_problem": (
        "from tvmffi_runtime._library_check import library_problem\nprint('RESULT', library_problem(sys.argv[1]))"
    ),
    "load_library": """
        try:
            rt.load_library(sys.argv[1])
        except rt.LibraryLoadError as exc:
            print("RESULT", exc)
        else:
            print("RESULT loaded")
    """,
    "Module.load_from_file": """
        try:
            rt.Module.load_from_file(sys.argv[1])
        except rt.LibraryLoadError as exc:
            print("RESULT", exc)
        else:
            print("RESULT loaded")
    """,
}


@pytest.mark.parametrize("loader", list(_LOADERS))
def test_truncated_segments_give_a_clear_load_error(truncated_lib: Path, loader: str) -> None:
    (result,) = _result_lines(_child(_LOADERS[loader], str(truncated_lib)))
    assert "truncated ELF file" in result and "loadable segment" in result, result
    if loader != "library_problem":
        assert result.startswith("cannot load") and str(truncated_lib) in result, result


def _elf_header(is64: bool, phnum: int, phoff: int | None = None) -> bytearray:
    """A little-endian ELF header for this machine with ``phnum`` program headers."""
    machine = struct.unpack_from("<H", TESTING_LIB.read_bytes()[:20], 18)[0]
    head = bytearray(64 if is64 else 52)
    head[:6] = b"\x7fELF" + bytes([2 if is64 else 1, 1])
    head[6] = 1  # EV_CURRENT
    struct.pack_into("<HH", head, 16, 3, machine)  # ET_DYN
    if is64:
        struct.pack_into("<Q", head, 32, len(head) if phoff is None else phoff)
        struct.pack_into("<HH", head, 54, 56, phnum)
    else:
        struct.pack_into("<I", head, 28, len(head) if phoff is None else phoff)
        struct.pack_into("<HH", head, 42, 32, phnum)
    return head


def _phdr(is64: bool, p_type: int, offset: int, filesz: int) -> bytes:
    if is64:  # type, flags, offset, vaddr, paddr, filesz, memsz, align
        return struct.pack("<IIQQQQQQ", p_type, 4, offset, offset, offset, filesz, filesz, 0x1000)
    # type, offset, vaddr, paddr, filesz, memsz, flags, align
    return struct.pack("<IIIIIIII", p_type, offset, offset, offset, filesz, filesz, 4, 0x1000)


@pytest.mark.parametrize("is64", [True, False], ids=["elf64", "elf32"])
def test_elf_problem_checks_every_loadable_segment(tmp_path: Path, is64: bool) -> None:
    head = _elf_header(is64, phnum=2)
    table_end = len(head) + 2 * (56 if is64 else 32)
    size = table_end + 100
    note = _phdr(is64, 4, 0, 16)  # PT_NOTE past the end would not matter to the loader
    fits = tmp_path / "fits.so"
    fits.write_bytes(bytes(head) + note + _phdr(is64, 1, 0, size) + b"\0" * 100)
    assert library_problem(str(fits)) is None
    cut = tmp_path / "cut.so"
    cut.write_bytes(bytes(head) + note + _phdr(is64, 1, 0, size + 1) + b"\0" * 100)
    problem = library_problem(str(cut))
    assert problem is not None and "truncated ELF file" in problem and str(size + 1) in problem


def test_elf_problem_program_headers_past_the_end(tmp_path: Path) -> None:
    f = tmp_path / "short.so"
    f.write_bytes(bytes(_elf_header(True, phnum=9)) + b"\0" * 40)
    problem = library_problem(str(f))
    assert problem is not None and "program headers" in problem


def test_elf_problem_accepts_real_libraries() -> None:
    assert library_problem(str(TESTING_LIB)) is None
    assert library_problem(rt.LIB_PATH) is None


# --------------------------------------------------------------------------------------------
# b. An Object wrapper that gave its reference away (move, or released) packed as a null object.
# --------------------------------------------------------------------------------------------
_RELEASED_PRELUDE = f"""
rt.load_library({str(TESTING_LIB)!r})
nop = rt.get_global_func("testing.nop")
apply = rt.get_global_func("testing.apply")

def attempt(what, fn):
    try:
        fn()
    except (TypeError, ValueError) as exc:
        print("RESULT", what, "|", type(exc).__name__, "|", exc)
    else:
        print("RESULT", what, "| no error")
    sys.stdout.flush()


def release(obj):
    # what the wrapper's death does, while the wrapper itself stays reachable
    h, obj._h = obj._h, 0
    rt._lib.ObjectDecRef(h)
"""


def _released_results(code: str) -> dict[str, tuple[str, str]]:
    proc = _child(_RELEASED_PRELUDE + textwrap.dedent(code))
    out = {}
    for line in _result_lines(proc):
        what, cls, message = ([part.strip() for part in line.split("|", 2)] + ["", ""])[:3]
        out[what] = (cls, message)
    return out


def test_released_object_argument_is_refused_naming_its_position() -> None:
    results = _released_results(
        """
        a = rt.Array([1, 2])
        release(a)
        attempt("first", lambda: nop(a))
        attempt("third", lambda: nop(1, "x", a))
        b = rt.Array([3])
        nop(rt.move(b))  # b's reference goes to the callee (released after the call)
        attempt("moved", lambda: nop(b))
        """
    )
    for what, position in [("first", 0), ("third", 2), ("moved", 0)]:
        cls, message = results[what]
        assert cls == "ReleasedObjectError", results[what]
        assert f"testing.nop: argument {position}: the Array object was moved or released" in message


def test_released_object_inside_a_container_argument() -> None:
    results = _released_results(
        """
        a = rt.Array([1, 2])
        release(a)
        attempt("nested", lambda: nop(1, [0, a]))
        """
    )
    cls, message = results["nested"]
    assert cls == "ReleasedObjectError"
    assert "testing.nop: argument 1:" in message and "argument 1: the Array object was moved or released" in message


def test_released_object_returned_from_a_callback() -> None:
    results = _released_results(
        """
        a = rt.Array([1, 2])
        release(a)
        attempt("returned", lambda: apply(lambda: a))
        """
    )
    cls, message = results["returned"]
    assert cls == "ReleasedObjectError" and "the Array object was moved or released" in message


def test_released_object_error_is_a_value_error() -> None:
    assert issubclass(_errors.ReleasedObjectError, ValueError)
    a = rt.Array([1])
    h, a._h = a._h, 0
    _lib.ObjectDecRef(h)
    buf = (__import__("ctypes").c_char * 16)()
    with pytest.raises(ValueError, match="moved or released"):
        _convert.pack_value(buf, 0, a, [])


# --------------------------------------------------------------------------------------------
# c. Python exception classes cross as their qualified name, so two classes of the same name
#    in different modules stay apart even when the original exception object is gone.
# --------------------------------------------------------------------------------------------
def _error_class_in_module(module: str) -> type[Exception]:
    mod = types.ModuleType(module)
    exec("class MyError(Exception):\n    pass\n", mod.__dict__)
    cls: type[Exception] = mod.MyError
    assert cls.__module__ == module and cls.__name__ == "MyError"
    return cls


@pytest.fixture()
def two_my_errors() -> tuple[type[Exception], type[Exception]]:
    return _error_class_in_module("tvmffi_fix_pkg_a.errors"), _error_class_in_module("tvmffi_fix_pkg_b.errors")


@pytest.fixture()
def apply(testing_lib: Any) -> Any:
    return rt.get_global_func("testing.apply")


class _ForgetfulErrors(dict):  # type: ignore[type-arg]
    """Stands in for ``_errors._PY_ERRORS``: drops the reference handed over and keeps nothing, so
    an exception coming back is rebuilt from its native kind."""

    def __setitem__(self, handle: int, exc: BaseException) -> None:
        _lib.ObjectDecRef(handle)


def test_same_named_classes_returned_as_values(apply: Any, two_my_errors: Any) -> None:
    a_cls, b_cls = two_my_errors
    for cls in (a_cls, b_cls, a_cls):
        value = apply(lambda: cls("as a value"))  # noqa: B023 - called within this iteration
        assert type(value) is cls
        assert str(value) == "as a value"
        assert value.kind == f"{cls.__module__}.MyError"


def test_same_named_classes_raised_without_the_original(
    apply: Any, two_my_errors: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_cls, b_cls = two_my_errors
    monkeypatch.setattr(_errors, "_PY_ERRORS", _ForgetfulErrors())
    for cls in (a_cls, b_cls, a_cls):
        original = cls("raised")

        def callback() -> None:
            raise original  # noqa: B023 - called within this iteration

        with pytest.raises(cls) as info:
            apply(callback)
        assert info.value is not original  # rebuilt from the native error
        assert str(info.value) == "raised"
        assert info.value.kind == f"{cls.__module__}.MyError"  # type: ignore[attr-defined]


def test_exception_rebuilt_from_its_native_error_keeps_its_frames_in_order(
    apply: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Python exception that comes back rebuilt (not the same object) has its Python frames,
    which crossed as native backtrace text, woven back in Python's order: the raising one last."""
    monkeypatch.setattr(_errors, "_PY_ERRORS", _ForgetfulErrors())

    def inner() -> None:
        raise LookupError("rebuilt")

    def outer() -> None:
        inner()

    with pytest.raises(RuntimeError) as info:  # LookupError is a kind tvm_ffi raises as RuntimeError
        apply(outer)
    names = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert isinstance(info.value, LookupError)
    assert names[-2:] == ["outer", "inner"]


def test_qualified_kind_raised_natively_maps_back(apply: Any, two_my_errors: Any, testing_lib: Any) -> None:
    a_cls, b_cls = two_my_errors
    raise_error = rt.get_global_func("testing.test_raise_error")
    for cls in (a_cls, b_cls):
        apply(lambda: cls("teach the runtime this class"))  # noqa: B023 - called within this iteration
    with pytest.raises(b_cls, match="from C\\+\\+"):
        raise_error("tvmffi_fix_pkg_b.errors.MyError", "from C++")
    with pytest.raises(a_cls, match="from C\\+\\+"):
        raise_error("tvmffi_fix_pkg_a.errors.MyError", "from C++")
    # the bare name is a kind of its own, not either Python class
    with pytest.raises(rt.Error) as info:
        raise_error("MyError", "bare")
    assert type(info.value) not in (a_cls, b_cls)


def test_redefined_class_replaces_the_stale_one(apply: Any) -> None:
    old = _error_class_in_module("tvmffi_fix_pkg_c.errors")
    assert type(apply(lambda: old("x"))) is old
    new = _error_class_in_module("tvmffi_fix_pkg_c.errors")  # a reload defines it anew
    assert type(apply(lambda: new("x"))) is new


def test_builtin_classes_keep_their_bare_name(apply: Any) -> None:
    for exc in (ValueError("v"), ConnectionError("c"), KeyError("k")):
        value = apply(lambda: exc)  # noqa: B023 - called within this iteration
        assert isinstance(value, type(exc))  # ConnectionError: also a RuntimeError, as tvm_ffi's
        assert value.kind == type(exc).__name__


def test_explicit_registration_is_not_overridden(apply: Any, testing_lib: Any) -> None:
    class SpecialValueError(ValueError):
        pass

    rt.register_error("ValueError", SpecialValueError)
    try:
        apply(lambda: ValueError("plain"))  # must not take "ValueError" back
        raise_error = rt.get_global_func("testing.test_raise_error")
        with pytest.raises(SpecialValueError):
            raise_error("ValueError", "native")
    finally:
        rt.register_error("ValueError", ValueError)
