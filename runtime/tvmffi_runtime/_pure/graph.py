"""_pure/graph.py: the cycle / depth check before natively recursing routines (the twin of
``_accel_parts/graph.h``): an iterative depth-first search reading object memory through one
``memoryview``, with the compiled walk's edge order and result."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from typing import Any

from .. import _lib
from .._graph_layout import GETTER, LEAVES, MAP_CELL, MAPS, PAIR, SEQ_CELL, SEQS, SMALL_MAP
from .._values import TypeIndex

__all__ = ["graph_check"]

_HEADER = _lib.OBJECT_HEADER_SIZE
_ANY = _lib.ANY_INT  # (type index, zero padding / small length, payload)
_I32 = struct.Struct("=i")
_Any16 = ctypes.c_char * 16
_OBJECT = TypeIndex.OBJECT
#: The process's memory as one byte view: ``struct.unpack_from(_MEMORY, address)`` reads object
#: memory with no foreign call (a ctypes read costs 3-5 times more). Only addresses of live
#: objects and their item cells are read.
_MEMORY = memoryview((ctypes.c_char * ((1 << 63) - 1)).from_address(0)).cast("B")

#: A type's plan as this walk reads it: (leaf, unpack of the pointer fields or None, where they
#: start, Any field offsets, (getter, offset) pairs), made once from ``plan_for``'s tuple
_Plan = tuple[bool, Any, int, tuple[int, ...], tuple[tuple[Any, int], ...]]
_PLANS: dict[tuple[int, bool], _Plan] = {}


def _plan(plan_for: Callable[[int, bool], Any], tindex: int, structural: bool) -> _Plan:
    leaf, pointers, anys, getters = plan_for(tindex, structural)
    start = pointers[0] if pointers else 0
    layout = "".join(
        f"{off - prev}xQ" for off, prev in zip(pointers, [start, *(p + 8 for p in pointers)][:-1], strict=True)
    )
    unpack = struct.Struct("=" + layout).unpack_from if pointers else None
    plan = _PLANS[(tindex, structural)] = (leaf, unpack, start, anys, tuple((GETTER(g), off) for g, off in getters))
    return plan


def graph_check(
    root: int, type_index: int, structural: bool, cycles: bool, limit: int, plan_for: Any, map_edges: Any
) -> tuple[str, list[list[int]], int] | None:
    """None, or ``("cycle", frames, level where it closes)`` / ``("deep", frames, type index of
    the child too deep)``; each frame is ``[handle, type index, ..., positions taken]``.

    ``plan_for(type_index, structural)`` gives a type's (leaf, pointer field offsets, Any field
    offsets, (getter address, offset) pairs); ``map_edges(handle, type_index)`` the object keys
    and values of a Map / Dict of the dense layout. A node's children are read inline, with
    C-level calls only: no Python function call per node (it would cost more than the native
    routine it guards). The search starts from a frame above the root (level -1), so the root's
    children are read by the same loop; ``type_index`` is the root's, as memory says it.
    """
    stack: list[list[Any]] = [[0, -1, [root], 0]]
    open_at: dict[int, int] = {}
    done: set[int] = set()
    plans, leaves, seqs, maps, obj, mem = _PLANS, LEAVES, SEQS, MAPS, _OBJECT, _MEMORY
    any_at, i32_at, cell16, decref = _ANY.unpack_from, _I32.unpack_from, _Any16, _lib.ObjectDecRef
    addressof = ctypes.addressof
    while stack:
        frame = stack[-1]
        kids, i, n = frame[2], frame[3], len(frame[2])
        while i < n:
            child = kids[i]
            i += 1
            if child in done:
                continue
            if child in open_at:
                if cycles:
                    frame[3] = i
                    return "cycle", stack[1:], open_at[child] - 1
                continue
            tindex = i32_at(mem, child + 8)[0]
            grand: list[int] = []
            if tindex in seqs:
                data, size = SEQ_CELL.unpack_from(mem, child + _HEADER)
                if size > 0:
                    for t, _, p in _ANY.iter_unpack(mem[data : data + 16 * size]):
                        if t >= obj and t not in leaves:
                            grand.append(p)
            elif tindex in maps:
                data, size, slots = MAP_CELL.unpack_from(mem, child + _HEADER)
                if size > 0 and slots & SMALL_MAP:
                    for kt, _, kp, vt, _, vp in PAIR.iter_unpack(mem[data : data + 32 * size]):
                        if kt >= obj and kt not in leaves:
                            grand.append(kp)
                        if vt >= obj and vt not in leaves:
                            grand.append(vp)
                elif size > 0:
                    grand = map_edges(child, tindex)
            else:
                leaf, unpack, start, anys, getters = plans.get((tindex, structural)) or _plan(
                    plan_for, tindex, structural
                )
                if not leaf:
                    if unpack is not None:
                        for v in unpack(mem, child + start):
                            if v:
                                grand.append(v)
                    for offset in anys:
                        t, _, p = any_at(mem, child + offset)
                        if t >= obj and t not in leaves and p:
                            grand.append(p)
                    for getter, offset in getters:
                        cell = cell16()
                        if getter(child + offset, addressof(cell)) == 0:
                            t, _, p = any_at(cell)
                            if t >= obj:
                                decref(p)  # the getter's reference; the field keeps it alive
                                if t not in leaves and p:
                                    grand.append(p)
            if not grand:
                continue  # a leaf: nothing to remember (it closes no cycle)
            frame[3] = i
            if len(stack) > limit:
                return "deep", stack[1:], tindex
            open_at[child] = len(stack)
            stack.append([child, tindex, grand, 0])
            break
        else:
            stack.pop()
            if frame[1] >= 0:
                del open_at[frame[0]]
                done.add(frame[0])
    return None
