"""What the graph walk reads of object memory: the library's container layouts and the types
with no object-typed contents.

Shared by both halves of the cycle / depth check: the backends' walks (``_pure/graph.py``, and
``_accel_parts/graph.h`` in C) and ``_graph_guard``, which plans each type and labels the edges
of its messages. A layer of its own below both, so the guard reads no backend's internals.
"""

from __future__ import annotations

import ctypes
import struct

from ._values import TypeIndex

__all__ = ["GETTER", "LEAVES", "MAPS", "MAP_CELL", "PAIR", "SEQS", "SEQ_CELL", "SMALL_MAP"]

#: Object types the routines never recurse into (no object-typed contents).
LEAVES = frozenset(
    {TypeIndex.STR, TypeIndex.BYTES, TypeIndex.ERROR, TypeIndex.FUNCTION, TypeIndex.SHAPE,
     TypeIndex.TENSOR, TypeIndex.MODULE, TypeIndex.OPAQUE_PY_OBJECT, TypeIndex.BIG_INT}
)  # fmt: skip
SEQS = frozenset({TypeIndex.ARRAY, TypeIndex.LIST})
MAPS = frozenset({TypeIndex.MAP, TypeIndex.DICT})
SEQ_CELL = struct.Struct("=Qq")  # TVMFFISeqCell: data pointer, size
MAP_CELL = struct.Struct("=QQQ")  # MapBaseObj after the header: data_, size_, slots_
SMALL_MAP = 1 << 63  # slots_ bit of the small (inline pairs) layout
PAIR = struct.Struct("=iIqiIq")  # a (key, value) pair of Any cells in the small layout
#: A reflected field's getter (``TVMFFIFieldGetter``): (field address, result Any) -> status.
GETTER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
