"""Markers and enums of the structural engines: ``UNCHANGED``, ``VisitInterrupt``, ``move``,
the walk/region/in-place enums, and how the markers pack as arguments (``UNCHANGED`` is defined
with the plain values, in ``_values``, and packed by ``_convert``); plus ``_call``, how every
structural layer calls the engine's global functions.
"""

from __future__ import annotations

import ctypes
import functools
from enum import IntEnum
from typing import Any

from .. import _convert, _lib, _object
from .._call import ffi_call, global_handle
from .._object import Object, _adopt
from .._values import UNCHANGED, TypeIndex, Unchanged

__all__ = [
    "pack_moved",
    "DefRegionKind",
    "InplaceMode",
    "UNCHANGED",
    "Unchanged",
    "VisitInterrupt",
    "WalkOrder",
    "WalkResult",
    "move",
    "_KINDS",
    "_MODES",
    "_call",
    "_unmove",
]


# =============================================================================================
# Markers and enums
# =============================================================================================
class WalkOrder(IntEnum):
    """Whether a callback runs before (``PRE_ORDER``) or after (``POST_ORDER``) the children."""

    PRE_ORDER = 0
    POST_ORDER = 1


class DefRegionKind(IntEnum):
    """Definition region active while a value is visited (``TVMFFIDefRegionKind``).

    ``NONE``: an ordinary use. ``PATTERN``: inside a field flagged ``SEqHashDefPattern``.
    ``SIMPLE``: inside a field flagged ``SEqHashDefSimple`` (for example the variable a ``Let``
    binds).
    """

    NONE = 0
    PATTERN = 1
    SIMPLE = 2
    DEF_PATTERN = 1  # alias, tvm_ffi spelling
    DEF_SIMPLE = 2  # alias, tvm_ffi spelling


class InplaceMode(IntEnum):
    """Permission to mutate the current value in place (it is uniquely owned on its whole path)."""

    DISALLOW = 0
    ALLOW = 1


class WalkResult(IntEnum):
    """What a walk handler tells the engine: advance into children, or skip them.

    ``WalkResult.interrupt_with(payload)`` (a :class:`VisitInterrupt`) stops the whole walk;
    a handler returning ``None`` advances.
    """

    ADVANCE = 0
    SKIP = 1

    @staticmethod
    def interrupt_with(payload: object = None) -> VisitInterrupt:
        """An interrupt that stops the walk; ``structural_walk`` returns it (``.value`` = payload)."""
        return VisitInterrupt(payload)

    @staticmethod
    def interrupt() -> VisitInterrupt:
        """An interrupt without payload."""
        return VisitInterrupt(None)


# The enums by the numbers the engine passes (dicts: indexing by an untyped int stays typed).
_KINDS: dict[int, DefRegionKind] = dict(enumerate((DefRegionKind.NONE, DefRegionKind.PATTERN, DefRegionKind.SIMPLE)))
_MODES: dict[int, InplaceMode] = dict(enumerate((InplaceMode.DISALLOW, InplaceMode.ALLOW)))


# =============================================================================================
# Engine entry points (global functions, resolved once)
# =============================================================================================
def _call(name: str, *args: Any) -> Any:
    return ffi_call(global_handle(name), args, name)


@_object.register_object_if_present("ffi.VisitInterrupt")
class VisitInterrupt(Object):
    """Stops a structural walk or visit; ``.value`` is the payload given to the caller."""

    __slots__ = ()

    def __init__(self, value: object = None) -> None:
        made = _call("ffi.VisitInterrupt", value)
        _adopt(self, made)

    @property
    def value(self) -> Any:
        """The payload carried by the interrupt (None when there is none)."""
        return _interrupt_value_field().get(self)

    def __repr__(self) -> str:
        return f"VisitInterrupt({self.value!r})"


@functools.cache
def _interrupt_value_field() -> Any:
    from ..reflection import FieldAccessor

    return FieldAccessor("ffi.VisitInterrupt", "value")


# =============================================================================================
# move(): give up the caller's reference so the engine may reuse uniquely owned storage
# =============================================================================================
class Moved:
    """An object whose wrapper gives up its reference when passed (see :func:`move`)."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        if not isinstance(obj, Object):
            raise TypeError(f"move() takes a runtime Object, got {type(obj).__name__}")
        if not obj._h:
            raise ValueError("move(): the object has already been moved from")
        self.obj = obj

    def __repr__(self) -> str:
        return f"move({self.obj!r})"


def move(obj: Object) -> Moved:
    """Pass ``obj`` to ``structural_map`` / ``structural_mutate`` giving up this reference.

    The wrapper's handle is stolen when the call packs its arguments (the wrapper is empty
    afterwards and must not be used). If no other reference exists, the engine sees a uniquely
    owned root and may reuse built-in containers (Array, List, Map, Dict) in place along uniquely
    owned paths; without ``move`` the source is preserved by copy-on-write.
    """
    return Moved(obj)


class _StolenRef:
    """Holds a stolen handle in a cell the callee may take (``kTVMFFIObjectRValueRef``)."""

    __slots__ = ("cell",)

    def __init__(self, handle: int) -> None:
        self.cell = ctypes.c_void_p(handle)

    def __del__(self) -> None:
        h = self.cell.value
        if h:
            self.cell.value = None
            try:  # noqa: SIM105 - a plain try in __del__: no module lookup at shutdown
                _lib.ObjectDecRef(h)
            except Exception:  # noqa: BLE001 - interpreter shutdown
                pass


def pack_moved(buf: Any, off: int, v: Moved, temps: list[Any]) -> None:
    obj = v.obj
    h = obj._h
    if not h:
        raise ValueError("move(): the object has already been moved from")
    obj._h = 0
    ref = _StolenRef(h)
    temps.append(ref)  # dropped after the call: releases the handle if the callee did not take it
    _convert._pack_uint(buf, off, TypeIndex.OBJECT_RVALUE_REF, 0, ctypes.addressof(ref.cell))


def _unmove(root: Any) -> Any:
    return root.obj if isinstance(root, Moved) else root
