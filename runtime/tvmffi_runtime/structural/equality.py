"""Structural equality and hashing over the FFI engine (``ffi.StructuralEqual``,
``ffi.StructuralHash``, ``ffi.GetFirstStructuralMismatch``, ``ffi.StructuralKey``).

Structural equality compares values by content (fields, items, keys) rather than by identity;
types opt in through their registered equality kind, and the engine refuses the others with a
``TypeError`` naming the type. Values are passed as arguments, so Python lists, dicts, numbers
and strings are compared as the containers and values they convert to.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, cast

from .._call import Function, get_global_func
from .._graph_guard import GraphTooDeepError, ReferenceCycleError, check_graph
from .._object import Object, _adopt, register_object_if_present
from ..reflection import get_field

__all__ = [
    "AccessKind",
    "AccessPath",
    "AccessStep",
    "StructuralKey",
    "get_first_structural_mismatch",
    "structural_equal",
    "structural_hash",
]

_U64 = (1 << 64) - 1
_ENGINE: dict[str, Function] = {}


def _engine(name: str) -> Function:
    """The engine's global function ``name`` (cached); TypeError if this library lacks it."""
    f = _ENGINE.get(name)
    if f is None:
        found = get_global_func(name, allow_missing=True)
        if found is None:
            raise TypeError(f"{name} is not registered in this libtvm_ffi (built without its extra API?)")
        f = _ENGINE[name] = found
    return f


def structural_equal(lhs: object, rhs: object, map_free_vars: bool = False, skip_tensor_content: bool = False) -> bool:
    """Whether ``lhs`` and ``rhs`` are equal by content.

    ``map_free_vars``: free variables (without a definition site) may map to each other;
    ``skip_tensor_content``: tensors compare by shape and type only, not by data.
    """
    _check_both(lhs, rhs, "structural_equal")
    return bool(_engine("ffi.StructuralEqual")(lhs, rhs, map_free_vars, skip_tensor_content))


def structural_hash(value: object, map_free_vars: bool = False, skip_tensor_content: bool = False) -> int:
    """Hash consistent with :func:`structural_equal` under the same options, as an unsigned
    64-bit int (the engine returns it as a signed one)."""
    check_graph(value, "structural_hash", structural=True)
    return int(_engine("ffi.StructuralHash")(value, map_free_vars, skip_tensor_content)) & _U64


def get_first_structural_mismatch(
    lhs: object, rhs: object, map_free_vars: bool = False, skip_tensor_content: bool = False
) -> tuple[AccessPath, AccessPath] | None:
    """None when ``lhs`` and ``rhs`` are structurally equal; otherwise the access paths (from
    each root) of the first difference found."""
    _check_both(lhs, rhs, "get_first_structural_mismatch")
    found = _engine("ffi.GetFirstStructuralMismatch")(lhs, rhs, map_free_vars, skip_tensor_content)
    if found is None:
        return None
    left, right = found
    return left, right


def _check_both(lhs: object, rhs: object, what: str) -> None:
    """Refuse a pair the engine could not compare without overflowing the native stack.

    The comparison descends both sides in step, so its depth is bounded by the shallower one:
    one side free of cycles and within the depth bound is enough (and costs one check). The
    error names the left side's cycle or depth.
    """
    try:
        check_graph(lhs, what, structural=True)
    except (ReferenceCycleError, GraphTooDeepError):
        if rhs is lhs or not _passes(rhs, what):
            raise


def _passes(value: object, what: str) -> bool:
    try:
        check_graph(value, what, structural=True)
    except (ReferenceCycleError, GraphTooDeepError):
        return False
    return True


class AccessKind(IntEnum):
    """What one step of an access path does (``ffi.reflection.AccessKind``)."""

    ATTR = 0
    ARRAY_ITEM = 1
    MAP_ITEM = 2
    ATTR_MISSING = 3
    ARRAY_ITEM_MISSING = 4
    MAP_ITEM_MISSING = 5


@register_object_if_present("ffi.reflection.AccessStep")
class AccessStep(Object):
    """One step of an :class:`AccessPath`: an attribute, an array index or a map key."""

    __slots__ = ()

    @property
    def kind(self) -> AccessKind:
        """Which kind of step this is."""
        return AccessKind(get_field(self, "kind"))

    @property
    def key(self) -> object:
        """The attribute name (str), array index (int) or map key (any value)."""
        return get_field(self, "key")


@register_object_if_present("ffi.reflection.AccessPath")
class AccessPath(Object):
    """A path from a root value to a nested one (printed as ``<root>.a[2]["k"]``)."""

    __slots__ = ()

    @property
    def parent(self) -> AccessPath | None:
        """The path one step shorter (None at the root)."""
        return get_field(self, "parent")  # type: ignore[no-any-return]

    @property
    def depth(self) -> int:
        """Number of steps from the root."""
        return int(get_field(self, "depth"))

    @property
    def steps(self) -> list[AccessStep]:
        """The steps from the root, in order."""
        out: list[AccessStep] = []
        path: AccessPath | None = self
        while path is not None and path.depth > 0:
            out.append(get_field(path, "step"))
            path = path.parent
        out.reverse()
        return out

    def __str__(self) -> str:
        return repr(self)


@register_object_if_present("ffi.StructuralKey")
class StructuralKey(Object):
    """A value wrapped to compare and hash structurally: usable as a ``dict`` key (and a Map
    key) where equal content should find the same entry. The hash is computed once."""

    __slots__ = ()

    def __init__(self, key: object) -> None:
        check_graph(key, "StructuralKey", structural=True)
        made = _engine("ffi.StructuralKey")(key)
        _adopt(self, made)

    @property
    def key(self) -> Any:
        """The wrapped value."""
        return get_field(self, "key")

    def __hash__(self) -> int:
        return int(get_field(self, "hash_i64")) & _U64

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StructuralKey):
            return False
        # the keys may have been changed into cycles since they were wrapped
        _check_both(self.key, get_field(cast(Object, other), "key"), "StructuralKey ==")
        return bool(_engine("ffi.StructuralKeyEqual")(self, other))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)
