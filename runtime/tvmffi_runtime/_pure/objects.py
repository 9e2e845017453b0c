"""_pure/objects.py: the wrappers' base class and the ``UNCHANGED`` marker (the twin of
``_accel_parts/objects.h``)."""

from __future__ import annotations

from typing import Any

from .. import _lib

__all__ = ["ObjectBase", "set_unchanged"]

_DecRef = _lib.ObjectDecRef


class ObjectBase:
    """Holds the handle (``_h``) and type index (``_t``) and releases the reference on death
    (the compiled ``ObjectBase`` does the same in C, with no Python-level ``__del__``)."""

    __slots__ = ("_h", "_t")
    _h: int
    _t: int

    def __del__(self) -> None:
        h = getattr(self, "_h", 0)
        if h:
            self._h = 0
            try:  # noqa: SIM105 - a plain try in __del__: no module lookup at shutdown, and cheaper
                _DecRef(h)
            except Exception:  # noqa: BLE001 - interpreter shutdown: the library may already be gone
                pass


def set_unchanged(obj: Any) -> None:
    """What stands for ``kTVMFFIUnchanged``: this backend unpacks every value with ``_convert``'s
    table, which ``_convert`` fills itself, so there is nothing more to hold."""
