"""Errors crossing the boundary: native Error objects as Python exceptions, and back.

Lowest layer above the ABI mirror (``_lib``): every other layer checks return codes with
:func:`_check` / :func:`_fetch_error`. A Python exception raised into native code is kept by its
error handle, so the same exception object comes back if the error returns unchanged.

Also the one definition of the messages both backends raise (field reads and writes, callables,
released objects): the compiled path calls the builders at the end of this module.
"""

from __future__ import annotations

import builtins
import ctypes
import re
import threading
from collections.abc import Callable
from traceback import walk_tb
from types import TracebackType
from typing import Any, TypeVar

from . import _lib
from ._lib import OBJECT_HEADER_SIZE
from ._native_traceback import library_part, native_traceback

__all__ = [
    "BACKEND_ERRORS",
    "CONVERSION_FAILED",
    "RECURSION_IN_CALLBACK",
    "FIELD_ACCEPTS",
    "Error",
    "ReleasedObjectError",
    "TVM_FFI_KINDS",
    "arity_error",
    "conversion_failed",
    "field_delete_error",
    "field_in_place_error",
    "field_kind_error",
    "field_not_an_object_error",
    "field_overflow_error",
    "field_read_only_error",
    "field_released_error",
    "field_value_error",
    "index_error",
    "init_result_error",
    "int64_overflow_error",
    "moved_result_error",
    "naming_field",
    "no_keywords_error",
    "not_callable_error",
    "register_error",
    "value_type_error",
    "walk_result_error",
    "_python_error_set_in_native",
    "_raise_into_native",
    "_released_object_error",
]

_c_void_p = ctypes.c_void_p
_byref = ctypes.byref
_DecRef = _lib.ObjectDecRef


class Error(RuntimeError):
    """A native error of a kind Python has no class for, or one created to raise into native code.

    ``Error(kind, message, backtrace)``. A native error is raised as an instance of the class
    ``tvm_ffi`` raises it as, so code written against either binding catches the same errors:
    the builtin class of its name for the kinds ``tvm_ffi`` knows (``TVM_FFI_KINDS``), else a
    ``RuntimeError``. This class is that ``RuntimeError``; each other kind gets a subclass named
    after it (which also derives from the builtin class of that name, if there is one, as the
    kind's own class), unless a class was registered for it (:func:`register_error`). Every
    native error has ``kind`` and ``backtrace`` attributes, and the library's frames of the
    backtrace in its traceback.
    """

    kind: str
    message: str
    backtrace: str

    def __init__(self, kind: str, message: str = "", backtrace: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.backtrace = backtrace

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"Error({self.kind!r}, {self.message!r})"


#: The kinds ``tvm_ffi`` raises as the builtin class of the same name (its ``error.py`` registers
#: these); it raises every other kind as a ``RuntimeError``.
TVM_FFI_KINDS = (
    "RuntimeError", "ValueError", "TypeError", "AttributeError", "KeyError", "IndexError",
    "AssertionError", "MemoryError",
)  # fmt: skip

_ERROR_KINDS: dict[str, type[BaseException]] = {}
_ERROR_SUBCLASSES: dict[str, type[BaseException]] = {}


def register_error(kind: str, cls: type[BaseException]) -> None:
    """Raise native errors of ``kind`` as ``cls`` (and send ``cls`` back as ``kind``)."""
    _ERROR_KINDS[kind] = cls


for _name in TVM_FFI_KINDS:
    register_error(_name, getattr(builtins, _name))


def _error_kind_of_class(cls: type[BaseException]) -> str:
    """The native kind a Python exception class crosses as: the bare name of a builtin class
    (``ValueError``), else the qualified name (``package.module.QualName``), so that classes of
    the same name in different modules stay apart."""
    if cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


def _kind_class(kind: str) -> type[BaseException]:
    """The class of a kind nothing registered: a builtin ``RuntimeError`` of that name itself
    (``NotImplementedError``, ``RecursionError``), else an ``Error`` subclass named after the kind,
    deriving from the builtin exception class of that name too if there is one."""
    builtin: object = getattr(builtins, kind, None)
    bases: tuple[type[BaseException], ...] = (Error,)
    if isinstance(builtin, type) and issubclass(builtin, BaseException):
        if issubclass(builtin, RuntimeError):
            return builtin
        bases = (Error, builtin)
    name = kind if kind.isidentifier() else "NativeError"
    return type(name, bases, {"__module__": "tvmffi_runtime"})


def _error_class(kind: str) -> type[BaseException]:
    cls = _ERROR_KINDS.get(kind) or _ERROR_SUBCLASSES.get(kind)
    if cls is None:
        cls = _ERROR_SUBCLASSES[kind] = _kind_class(kind)
    return cls


def _make_exception(kind: str, message: str, backtrace: str) -> BaseException:
    """The Python exception for a native error, its library frames woven into its traceback."""
    backtrace, frames = library_part(backtrace)
    cls = _error_class(kind)
    exc: BaseException
    try:
        exc = cls(kind, message, backtrace) if issubclass(cls, Error) else cls(message)
    except Exception:  # noqa: BLE001 - a class may refuse the message (ExceptionGroup): fall back to Error
        exc = Error(kind, message, backtrace)
    try:
        exc.kind = kind  # type: ignore[attr-defined]
        exc.backtrace = backtrace  # type: ignore[attr-defined]
    except AttributeError:
        pass
    return exc.with_traceback(native_traceback(frames))


# Python exceptions raised into native code, kept by error handle so the same exception object
# comes back out if the error returns to Python unchanged. We keep one reference to each handle.
_PY_ERRORS: dict[int, BaseException] = {}
_PY_ERRORS_LIMIT = 256
_py_errors_lock = threading.Lock()


def _error_cell(handle: int) -> tuple[str, str, str]:
    cell = _lib.TVMFFIErrorCell.from_address(handle + OBJECT_HEADER_SIZE)
    return _decode_byte_array(cell.kind), _decode_byte_array(cell.message), _decode_byte_array(cell.backtrace)


def _decode_byte_array(ba: _lib.TVMFFIByteArray) -> str:
    return _lib.read_byte_array(ba).decode("utf-8", "replace")


def _exception_from_error_handle(handle: int, raised: bool) -> BaseException:
    """Turn an owned Error handle into a Python exception (releases the handle)."""
    with _py_errors_lock:
        original = _PY_ERRORS.pop(handle, None)
    if original is not None:
        _DecRef(handle)  # the reference _PY_ERRORS kept
        _DecRef(handle)
        return original
    kind, message, backtrace = _error_cell(handle)
    _DecRef(handle)
    if raised and kind == "EnvErrorAlreadySet":
        # Normally unwrapped by _python_error_set_in_native; this is the fallback.
        return KeyboardInterrupt()
    return _make_exception(kind, message, backtrace)


def _python_error_set_in_native(exc: SystemError) -> BaseException:
    """The Python exception native code left set on this thread (the signal hook's).

    ``PyErr_CheckSignals`` runs the SIGINT handler inside the native call and leaves
    ``KeyboardInterrupt`` set; ctypes then returns a result with an exception set, which
    CPython reports as a SystemError whose ``__cause__`` is that exception. The native side has
    raised ``EnvErrorAlreadySet``: clear it and hand back the original exception.
    """
    cause = exc.__cause__
    if cause is None:
        return exc
    out = _c_void_p()
    _lib.ErrorMoveFromRaised(_byref(out))
    if out.value:
        _DecRef(out.value)
    return cause


def _fetch_error() -> BaseException:
    try:
        out = _c_void_p()
        _lib.ErrorMoveFromRaised(_byref(out))
        if not out.value:
            return RuntimeError("TVM FFI call failed without raising an error")
        return _exception_from_error_handle(out.value, raised=True)
    except ctypes.ArgumentError as failure:
        raise _as_recursion_error(failure) from None


def _check(rc: int) -> None:
    if rc != 0:
        raise _fetch_error()


def _backtrace_text(tb: TracebackType | None) -> str:
    """A Python traceback as native backtrace text: one ``File`` line a frame, the innermost
    first, as libtvm_ffi writes its own frames (so they are woven back in Python's order)."""
    lines = [f'  File "{f.f_code.co_filename}", line {line}, in {f.f_code.co_name}\n' for f, line in walk_tb(tb)]
    return "".join(reversed(lines))


def _new_error_handle(exc: BaseException) -> int:
    """Create a native Error object (owned handle) describing a Python exception."""
    if isinstance(exc, Error):
        kind, message, bt = exc.kind, exc.message, exc.backtrace
    else:
        cls = type(exc)
        own_kind = _error_kind_of_class(cls)
        registered = _ERROR_KINDS.get(own_kind)
        # Register the class under its own kind; replace only a class of the same qualified name
        # (a module reloaded, a class defined anew), never one registered under it explicitly.
        # Not a builtin class: a builtin kind keeps the class ``_kind_class`` gives it, so what a
        # library's error of that kind is raised as does not depend on what crossed before.
        learn = cls.__module__ != "builtins" and registered is not cls
        if learn and (registered is None or _error_kind_of_class(registered) == own_kind):
            register_error(own_kind, cls)
        given = getattr(exc, "kind", None)  # set on exceptions that came from native code
        kind = given if isinstance(given, str) and given else own_kind
        if isinstance(exc, KeyError) and len(exc.args) == 1:
            message = str(exc.args[0])
        else:
            message = str(exc)
        bt = ""
    if exc.__traceback__ is not None:
        bt = _backtrace_text(exc.__traceback__) + bt
    parts = [s.encode("utf-8", "replace") for s in (kind, message, bt)]
    out = _c_void_p()
    arrays = [_lib.byte_array(p) for p in parts]
    _check(_lib.ErrorCreate(_byref(arrays[0]), _byref(arrays[1]), _byref(arrays[2]), _byref(out)))
    assert out.value
    return out.value


def _raise_into_native(exc: BaseException) -> None:
    """Set ``exc`` as the raised error of this thread (inside a callback about to return -1).

    A callback that ran out of Python stack crosses as ``RECURSION_IN_CALLBACK`` whatever call
    it ran out in, so what comes out of a deep traversal does not depend on where the limit hit.
    """
    if _ran_out_of_stack(exc):
        _lib.LIB.TVMFFIErrorSetRaisedFromCStr(*RECURSION_IN_CALLBACK)
        return
    try:
        handle = _new_error_handle(exc)
    except ctypes.ArgumentError as failure:
        raise _as_recursion_error(failure) from None
    _lib.ErrorSetRaised(handle)  # takes its own reference
    with _py_errors_lock:
        _PY_ERRORS[handle] = exc  # keeps our reference
        if len(_PY_ERRORS) > _PY_ERRORS_LIMIT:
            oldest = next(iter(_PY_ERRORS))
            _PY_ERRORS.pop(oldest)
            _DecRef(oldest)


class ReleasedObjectError(ValueError):
    """An ``Object`` wrapper that no longer holds a reference (it was moved with ``move``, or
    released) was given where a value is sent to native code."""


# =============================================================================================
# The messages both backends raise, defined once
# =============================================================================================
# The ctypes path raises these where it fails; the compiled path (``_accel.c``) gets the
# builders at init (``_wiring.BACKEND_HELPERS['errors']``: ``BACKEND_ERRORS``) and calls them on its error
# paths, so neither words a message of its own.
_E = TypeVar("_E", bound=BaseException)


def _released_object_error(v: Any) -> ReleasedObjectError:
    """A wrapper that holds no reference, given where a value is sent to native code."""
    return ReleasedObjectError(f"the {type(v).__name__} object was moved or released (its wrapper holds no reference)")


def not_callable_error(fn: object) -> TypeError:
    """A callable was expected (to make a native Function of)."""
    return TypeError(f"{fn!r} is not callable")


#: What a field written in place (kinds ``IN_PLACE_FIELD_KINDS``) takes, as its errors word it.
#: A bool field takes what a bool argument takes (the native conversion): a bool or an int.
FIELD_ACCEPTS = {"i64": "int", "f64": "float", "bool": "bool or int"}


def value_type_error(kind: str, value: object) -> TypeError:
    """``value`` cannot be stored in a field of layout ``kind`` (see ``FIELD_ACCEPTS``)."""
    return TypeError(f"expected {FIELD_ACCEPTS[kind]}, got {type(value).__name__}")


def int64_overflow_error(value: int) -> OverflowError:
    """``value`` (an int) does not fit an int64 field."""
    return OverflowError(f"{value} does not fit the int64 field")


def naming_field(qualname: str, exc: _E) -> _E:
    """``exc`` of a write to field ``qualname``, reworded to name the field."""
    return type(exc)(f"field {qualname}: {exc}")


def field_value_error(qualname: str, kind: str, value: object) -> TypeError:
    """A write of ``value`` to the in-place field ``qualname`` of layout ``kind``."""
    return naming_field(qualname, value_type_error(kind, value))


def field_overflow_error(qualname: str, value: int) -> OverflowError:
    """A write of an int that does not fit the int64 field ``qualname``."""
    return naming_field(qualname, int64_overflow_error(value))


def field_not_an_object_error(qualname: str, obj: object) -> TypeError:
    """Field ``qualname`` read or written on something that is not an Object."""
    return naming_field(qualname, TypeError(f"{obj!r} is not a TVM FFI object"))


def field_released_error(qualname: str, obj: object) -> ReleasedObjectError:
    """Field ``qualname`` read or written on a wrapper that holds no reference."""
    return ReleasedObjectError(f"cannot access field {qualname}: the {type(obj).__name__} object was moved or released")


def field_read_only_error(qualname: str) -> AttributeError:
    return AttributeError(f"field {qualname} is read-only")


def field_delete_error(qualname: str) -> AttributeError:
    return AttributeError(f"field {qualname} cannot be deleted")


def field_kind_error(qualname: str, kind: str) -> ValueError:
    """A field descriptor made with a layout that is not one of ``FIELD_KINDS``."""
    return ValueError(f"Field {qualname}: unknown kind {kind}")


def field_in_place_error(qualname: str, kind: str) -> ValueError:
    """A field descriptor asked to write a layout in place that only the registry setter writes."""
    return ValueError(f"Field {qualname}: kind {kind} cannot be written in place")


def moved_result_error() -> ValueError:
    """A structural map or mutate callback returned a wrapper that holds no reference."""
    return ValueError("a callback returned an object that has been moved from")


def walk_result_error(result: object) -> TypeError:
    """A structural walk handler returned something other than a walk result."""
    return TypeError(
        "a structural walk handler must return WalkResult.ADVANCE, WalkResult.SKIP, "
        f"WalkResult.interrupt_with(...) or None, not {result!r}"
    )


#: Kind and message of the native error a callback raises when even turning its Python
#: exception into a native one failed (the compiled path keeps these bytes from init, as it
#: cannot call Python then).
CONVERSION_FAILED = (b"RuntimeError", b"error while converting a Python exception")
#: The same when the conversion failed for want of Python stack (it raised RecursionError): the
#: callback ran at the recursion limit, as callbacks that recurse through a native traversal do
#: on a deep graph. Native code passes it up as a RecursionError.
RECURSION_IN_CALLBACK = (
    b"RecursionError",
    b"maximum recursion depth exceeded in a Python callback called from native code: the"
    b" callbacks recurse (through the traversal) deeper than sys.getrecursionlimit() allows",
)


def conversion_failed(failure: BaseException) -> tuple[bytes, bytes]:
    """The (kind, message) raised natively when converting a callback's exception raised
    ``failure``."""
    return RECURSION_IN_CALLBACK if isinstance(failure, RecursionError) else CONVERSION_FAILED


#: How ctypes words a RecursionError raised while it converted a call's arguments: it replaces
#: the exception with an ``ArgumentError`` that keeps only this text (no ``__cause__``).
_CTYPES_RECURSION = re.compile(r"argument \d+: RecursionError: ")
#: How the interpreter's own RecursionErrors begin (one raised by hand says something else).
_INTERPRETER_RECURSION = "maximum recursion depth exceeded"


def _ran_out_of_stack(exc: BaseException) -> bool:
    """Whether ``exc`` says Python's stack ran out: the interpreter's RecursionError (not one
    that came from native code, which has a ``kind``, nor a subclass such as GraphTooDeepError),
    or ctypes' ArgumentError for such a RecursionError raised while converting an argument."""
    if type(exc) is RecursionError:
        return getattr(exc, "kind", None) is None and str(exc).startswith(_INTERPRETER_RECURSION)
    return isinstance(exc, ctypes.ArgumentError) and _CTYPES_RECURSION.match(str(exc)) is not None


def _as_recursion_error(failure: ctypes.ArgumentError) -> BaseException:
    """What a ctypes call on an error path raised: a RecursionError again if the call ran out of
    Python stack converting its arguments (ctypes hides it in an ArgumentError), else itself."""
    if _ran_out_of_stack(failure):
        return RecursionError(f"{_INTERPRETER_RECURSION} while an error crossed the native boundary")
    return failure


#: The builders the compiled path calls, by the names ``_accel.c`` asks ``init`` for (each one
#: must be given; tests/runtime/test_runtime_errors.py checks the two lists are the same).
def arity_error(name: str, arity: int, given: int) -> TypeError:
    """A native function called with the wrong number of arguments, in Python's words."""
    plural = "" if arity == 1 else "s"
    return TypeError(
        f"{name}() takes {arity} positional argument{plural} but {given} {'was' if given == 1 else 'were'} given"
    )


def no_keywords_error(name: str) -> TypeError:
    """Keywords given to a native function whose parameters are positional-only."""
    return TypeError(f"{name}() takes no keyword arguments")


def not_constructible_error(class_name: str, type_key: str) -> TypeError:
    """Construction of a type that registers no ``__ffi_init__``."""
    return TypeError(f"{class_name} ({type_key}) cannot be constructed from Python: the type registers no __ffi_init__")


def no_init_in_library_error(type_key: str) -> TypeError:
    """A generated class's type has no ``__ffi_init__`` in the library loaded now."""
    return TypeError(f"{type_key} has no __ffi_init__ in the loaded library: it cannot be constructed")


def function_not_constructible_error() -> TypeError:
    """``Function()``: functions come from the library or from Python callables."""
    return TypeError(
        "Function cannot be constructed directly; use Function.get_global, Function.from_typed or Function.from_packed"
    )


def index_error(owner: str, index: int, length: int) -> IndexError:
    """``index`` names no item of a sequence of ``length`` items (``owner``: its class name)."""
    return IndexError(f"{owner} index {index} out of range for length {length}")


def init_result_error(type_key: str, value: object) -> TypeError:
    """A type's ``__ffi_init__`` returned something other than an object."""
    return TypeError(f"{type_key}.__ffi_init__ returned {type(value).__name__}, not an object")


BACKEND_ERRORS: dict[str, Callable[..., BaseException]] = {
    "not_callable": not_callable_error,
    "field_value": field_value_error,
    "field_overflow": field_overflow_error,
    "field_not_an_object": field_not_an_object_error,
    "field_released": field_released_error,
    "field_read_only": field_read_only_error,
    "field_delete": field_delete_error,
    "field_kind": field_kind_error,
    "field_in_place": field_in_place_error,
    "arity": arity_error,
    "no_keywords": no_keywords_error,
    "init_result": init_result_error,
    "index": index_error,
    "released": _released_object_error,
}
