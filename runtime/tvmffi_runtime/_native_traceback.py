"""A native error's backtrace as frames of its Python traceback, the library's frames only.

libtvm_ffi records where a native error was thrown as text, one ``File "f", line N, in fn`` line
a frame, innermost first, down to where the call came in from Python. The frames below the
library's are the binding's: the compiled backend's C (``tvmffi_runtime/_accel*``) or, on the
pure backend, libffi and ctypes, then CPython's own. They say nothing about the library and
differ by path, so the backtrace is cut at the first of them. The frames that remain go into the
exception's traceback, where Python users and their tools look: each is a frame named after the
native function, at its file and line (a debugger or ``traceback`` shows the source line when the
file is on this machine).

A frame object can only be had from running or created code, and one made by running code keeps
its caller's frames alive through ``f_back``. The frames here are those of generators that are
created and never started: they belong to no call stack (``f_back`` is None), hold nothing but
an empty namespace, and are made once per distinct native frame and shared.
"""

from __future__ import annotations

import functools
import re
import sys
import types
from collections.abc import Iterator
from typing import NamedTuple

__all__ = ["NativeFrame", "library_part", "native_traceback"]


class NativeFrame(NamedTuple):
    """One line of a native backtrace."""

    filename: str
    line: int
    function: str


_FRAME_LINE = re.compile(r' *File "([^"]*)", line (\d+), in (.*)')

#: Functions of libffi and CPython's ctypes, through which the pure backend calls the library.
_CTYPES_CALL = frozenset({"ffi_call", "_call_function_pointer", "_ctypes_callproc", "PyCFuncPtr_call"})


def _is_binding_frame(frame: NativeFrame) -> bool:
    """Whether ``frame`` is the binding's own: the compiled backend's C or ctypes' call path."""
    path = frame.filename.replace("\\", "/")
    return "tvmffi_runtime/_accel" in path or "/_ctypes/" in path or frame.function in _CTYPES_CALL


@functools.lru_cache(maxsize=1024)  # a library raises from few places: most backtraces recur
def library_part(backtrace: str) -> tuple[str, tuple[NativeFrame, ...]]:
    """``backtrace`` up to the first of the binding's frames, as text (other lines kept as they
    are) and as the frames it lists (innermost first)."""
    frames: list[NativeFrame] = []
    lines = backtrace.splitlines(keepends=True)
    for i, text in enumerate(lines):
        match = _FRAME_LINE.fullmatch(text.rstrip("\r\n"))
        if match is None:
            continue
        frame = NativeFrame(match[1], int(match[2]), match[3])
        if _is_binding_frame(frame):
            return "".join(lines[:i]), tuple(frames)
        frames.append(frame)
    return backtrace, tuple(frames)


def _never_started() -> Iterator[None]:
    """The code each native frame's code is a renamed copy of (a generator, never started)."""
    yield


_FRAMES: dict[NativeFrame, types.FrameType] = {}
_FRAMES_LIMIT = 4096


def _frame_object(frame: NativeFrame) -> types.FrameType:
    made = _FRAMES.get(frame)
    if made is None:
        code = _never_started.__code__.replace(
            co_filename=frame.filename, co_firstlineno=max(frame.line, 1), co_name=frame.function
        )
        if sys.version_info >= (3, 11):
            code = code.replace(co_qualname=frame.function)
        generator = types.FunctionType(code, {})()
        made = generator.gi_frame
        assert made is not None
        if len(_FRAMES) >= _FRAMES_LIMIT:
            _FRAMES.clear()
        _FRAMES[frame] = made
    return made


def native_traceback(frames: tuple[NativeFrame, ...]) -> types.TracebackType | None:
    """A traceback through ``frames`` (innermost first), the outermost first as Python orders it;
    raising an exception that carries it puts the Python frames above."""
    tb: types.TracebackType | None = None
    for frame in frames:
        tb = types.TracebackType(tb, _frame_object(frame), -1, frame.line)
    return tb
