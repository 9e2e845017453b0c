"""The library functions a Map or Dict answers lookups, membership and iteration with.

One table for both backends: ``_wiring`` hands it to them at init (``map_functions``); the
compiled one (``_accel_parts/containers.h``) and the pure one (``_pure/containers.py``) look
each function up once, by these names, on first use.
"""

from __future__ import annotations

from ._values import TypeIndex

__all__ = ["MAP_FUNCTIONS"]

#: Type index -> (value or the missing marker, count of a key, forward iterator) function names.
MAP_FUNCTIONS: dict[int, tuple[str, str, str]] = {
    TypeIndex.MAP: ("ffi.MapGetItemOrMissing", "ffi.MapCount", "ffi.MapForwardIterFunctor"),
    TypeIndex.DICT: ("ffi.DictGetItemOrMissing", "ffi.DictCount", "ffi.DictForwardIterFunctor"),
}
