"""tvmffi_runtime: a small ctypes runtime over ``libtvm_ffi.so``, used by tvmffi-gen packages.

Public names: ``Object``, ``Function``, ``Module``, ``Tensor``, ``Array``, ``List``, ``Map``,
``Dict``, ``Shape``, ``Error``, ``DataType`` (alias ``dtype``), ``Device``, ``load_library``,
``register_object``, structural equality (``structural_equal``, ``structural_hash``,
``get_first_structural_mismatch``, ``StructuralKey``) and the reflection helpers in
``tvmffi_runtime.reflection``. Objects cross to the ``tvm_ffi`` package as its own objects
(``tvmffi_runtime.interop``) and copy and pickle through the library (``tvmffi_runtime.copying``).
"""

from __future__ import annotations

# The package's one ordering need: ``_env`` registers the signal-check and GIL hooks, and
# ``_wiring`` imports every layer and hands each lower layer, once, what it calls in the higher
# ones (the backend first, ``backend.init``); importing both first here, before anything else,
# connects the runtime before any native call. Conventions of the core: an argument is packed as a
# borrowed view into a reusable buffer of TVMFFIAny slots (a temporary owned object it needs goes
# on a ``temps`` list released after the call); a result is an owned Any whose wrapper takes over
# the reference; every Object wrapper owns exactly one reference, released once (or handed over by
# ``_object._release_into`` / ``_adopt``).
from . import _env as _env  # registers the env hooks
from . import _lib
from . import _wiring as _wiring  # connects the backend and every layer's helpers
from . import copying as copying
from . import interop as interop
from ._call import Function, get_global_func, keep_gil, set_release_gil
from ._errors import Error, ReleasedObjectError, register_error
from ._features import FeatureUnavailableError
from ._graph_guard import GraphTooDeepError, ReferenceCycleError, max_graph_depth, set_max_graph_depth
from ._lib import LIB_PATH, LibraryLoadError, load_library
from ._object import Object, class_for_index, register_object, type_key_to_index
from ._values import DataType, Device, TypeIndex
from .containers import Array, Dict, List, Map, Shape
from .enums import Enum, IntEnum, StrEnum
from .module import Module
from .tensor import DLPackExporter, Tensor

dtype = DataType

__version__ = "0.1.0"

__all__ = [
    "Array",
    "DataType",
    "Device",
    "Dict",
    "DLPackExporter",
    "Enum",
    "IntEnum",
    "StrEnum",
    "Error",
    "FeatureUnavailableError",
    "ReleasedObjectError",
    "Function",
    "GraphTooDeepError",
    "LIB_PATH",
    "LibraryLoadError",
    "List",
    "Map",
    "Module",
    "Object",
    "ReferenceCycleError",
    "Shape",
    "Tensor",
    "TypeIndex",
    "class_for_index",
    "dtype",
    "get_global_func",
    "keep_gil",
    "load_library",
    "max_graph_depth",
    "register_error",
    "register_object",
    "set_max_graph_depth",
    "set_release_gil",
    "type_key_to_index",
    "libtvm_ffi_version",
    "bind",
]


def libtvm_ffi_version() -> tuple[int, int, int]:
    """(major, minor, patch) of the loaded ``libtvm_ffi.so``."""
    v = _lib.TVMFFIVersion()
    _lib.GetVersion(v)
    return (v.major, v.minor, v.patch)


from . import bind  # noqa: E402  (what generated packages declare their classes and functions with)
from .records import FieldDescription, fields, replace  # noqa: E402
from .structural import (  # noqa: E402
    UNCHANGED,
    DefRegionKind,
    InplaceMode,
    MapperBase,
    MutatorBase,
    Unchanged,
    VisitCallbacks,
    VisitInterrupt,
    VisitorBase,
    WalkerBase,
    WalkOrder,
    WalkResult,
    move,
    structural_map,
    structural_mutate,
    structural_visit,
    structural_walk,
)

__all__ += ["FieldDescription", "fields", "replace"]
__all__ += [
    "UNCHANGED",
    "DefRegionKind",
    "InplaceMode",
    "MapperBase",
    "MutatorBase",
    "Unchanged",
    "VisitCallbacks",
    "VisitInterrupt",
    "VisitorBase",
    "WalkerBase",
    "WalkOrder",
    "WalkResult",
    "move",
    "structural_map",
    "structural_mutate",
    "structural_visit",
    "structural_walk",
]

from .structural.equality import (  # noqa: E402
    AccessKind,
    AccessPath,
    AccessStep,
    StructuralKey,
    get_first_structural_mismatch,
    structural_equal,
    structural_hash,
)

# spelled out (not ``+= equality.__all__``): mypy follows only literal lists of names
__all__ += [
    "AccessKind",
    "AccessPath",
    "AccessStep",
    "StructuralKey",
    "get_first_structural_mismatch",
    "structural_equal",
    "structural_hash",
]
