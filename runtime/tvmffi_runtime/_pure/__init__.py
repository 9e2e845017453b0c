"""The pure-ctypes backend: the names of the compiled ``_accel`` with the same meaning, one
for one (``_accel.pyi`` states them; a test holds both modules to it). Its parts mirror
``_accel_parts/``: ``objects`` (the wrappers' base), ``calls`` (calls, construction),
``callbacks``, ``dlpack`` (tensors in and out), ``lazy_function``, ``fields``, ``graph`` (the
cycle / depth check), ``containers`` (the read side of Array, List, Map, Dict and Shape).

It sits as low as ``_accel`` (it imports only ``_lib``, ``_errors`` and ``_values``): what it
needs from the layers above (the packers, the unpack table, wrapping, callback results) it
is handed in :func:`init` by ``tvmffi_runtime._wiring``, as the compiled backend is.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from . import callbacks as _callbacks
from . import calls as _calls
from . import containers as _containers
from . import dlpack as _dlpack
from . import fields as _fields
from .callbacks import callback_function, function_create, live_callbacks
from .calls import call, construct, set_gil_auto
from .containers import MapBase, SeqBase, ShapeBase
from .dlpack import (
    live_tensor_views,
    set_dlpack_fallback,
    tensor_dlpack,
    tensor_dlpack_device,
    tensor_from_dlpack,
    tensor_of_dlpack,
    view_dltensor,
)
from .fields import Field
from .graph import graph_check
from .lazy_function import LazyFunction
from .objects import ObjectBase, set_unchanged

__all__ = [
    "Field",
    "LazyFunction",
    "MapBase",
    "ObjectBase",
    "SeqBase",
    "ShapeBase",
    "call",
    "callback_function",
    "construct",
    "function_create",
    "graph_check",
    "init",
    "live_callbacks",
    "live_tensor_views",
    "set_dlpack_fallback",
    "set_gil_auto",
    "set_unchanged",
    "tensor_dlpack",
    "tensor_dlpack_device",
    "tensor_from_dlpack",
    "tensor_of_dlpack",
    "view_dltensor",
]


def init(addresses: dict[str, int], helpers: dict[str, Any]) -> None:
    """Connect to the Python runtime: each part takes the helpers it calls from ``helpers``
    (``_wiring.BACKEND_HELPERS``, as ``_accel.c`` does). ``addresses`` (the library's entry
    points the compiled backend calls) are the ctypes prototypes' own here."""
    hooks = SimpleNamespace(**helpers)
    for part in (_calls, _callbacks, _fields, _dlpack, _containers):
        part.connect(hooks)
