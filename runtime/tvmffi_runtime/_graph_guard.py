"""Refuse object graphs that would crash a recursive native routine: reference cycles, and
chains deeper than the native stack holds.

libtvm_ffi's structural equal / hash, its JSON graph writer (so pickle) and its structural
engines (walk / visit / map / mutate) recurse once per nesting level on the C stack, with no
cycle check and no depth bound: a cycle or a deep enough chain ends the process with SIGSEGV.
Before handing a graph to one of them, :func:`check_graph` walks it iteratively (an explicit
stack, no recursion) through the same edges the routine follows: object-typed reflected
fields, Array / List items, Map / Dict keys and values. A cycle raises
:class:`ReferenceCycleError`, a graph deeper than :func:`max_graph_depth` raises
:class:`GraphTooDeepError`; both name the path, type and field, where it closes or gets too deep.

Field values are read from object memory where the layout is certain (an ObjectRef pointer at
its reflected offset, an Array's item cells) and through the registry getter otherwise.
"""

from __future__ import annotations

import ctypes
import json
import struct
from collections.abc import Iterator
from typing import Any, cast

from . import _lib, _object
from ._backend import backend
from ._call import printer_repr
from ._field_kinds import FieldFlag
from ._graph_layout import GETTER as _GETTER
from ._graph_layout import LEAVES as _LEAVES
from ._graph_layout import MAP_CELL as _MAP_CELL
from ._graph_layout import MAPS as _MAPS
from ._graph_layout import PAIR as _PAIR
from ._graph_layout import SEQ_CELL as _SEQ_CELL
from ._graph_layout import SEQS as _SEQS
from ._graph_layout import SMALL_MAP as _SMALL_MAP
from ._object import Object
from ._values import TypeIndex

__all__ = [
    "guarded_repr",
    "DEFAULT_MAX_DEPTH",
    "GraphTooDeepError",
    "ReferenceCycleError",
    "check_graph",
    "max_graph_depth",
    "set_max_graph_depth",
]

#: The default bound on nesting levels (objects and containers) a guarded routine may recurse
#: through. The deepest-recursing routine (the JSON graph writer behind pickle) uses about
#: 2.3 KB of C stack per level (it overflows an 8 MB main-thread stack near 3 500 levels of a
#: one-field chain), so 1 000 levels stay below ~2.5 MB: safe on the usual 8 MB main thread
#: and thread stacks, with room for the caller's own frames. It is also Python's own default
#: recursion limit, which a visit callback that recurses into children meets at a similar depth.
DEFAULT_MAX_DEPTH = 1000
_max_depth = DEFAULT_MAX_DEPTH


class ReferenceCycleError(ValueError):
    """An object graph holds a reference cycle a recursive native routine cannot handle.

    A ValueError, as ``json.dumps`` raises for a circular reference: the argument is at fault.
    ``path`` is the cycle as ``[(type_key, step), ...]`` from the object where it starts back to it.
    """

    def __init__(self, message: str, path: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.path = path


class GraphTooDeepError(RecursionError):
    """An object graph nests deeper than the native stack of a recursive routine allows.

    A RecursionError, as Python raises for a too deeply nested list in ``repr``, ``pickle`` or
    ``copy.deepcopy``. ``path`` is the chain from the root, ``limit`` the bound it passed.
    """

    def __init__(self, message: str, path: list[tuple[str, str]], limit: int) -> None:
        super().__init__(message)
        self.path = path
        self.limit = limit


def max_graph_depth() -> int:
    """The nesting bound guarded routines enforce (see :data:`DEFAULT_MAX_DEPTH`)."""
    return _max_depth


def set_max_graph_depth(limit: int) -> int:
    """Set the nesting bound; returns the previous one. Raise it only with a larger native
    stack (e.g. ``threading.stack_size`` for the thread that makes the call)."""
    global _max_depth
    if type(limit) is not int or limit < 1:
        raise ValueError(f"set_max_graph_depth: expected a positive int, got {limit!r}")
    previous, _max_depth = _max_depth, limit
    return previous


# =============================================================================================
# Edges: what a routine recurses into from one object
# =============================================================================================
#: Edge label: a field name (str), an item index (int), or a map entry ("key"/"value", key).
Label = Any
_SEQ_IGNORE = FieldFlag.SEQ_HASH_IGNORE
_EQ_UNSUPPORTED = 0  # kTVMFFISEqHashKindUnsupported: the engine refuses the type, never recurses
_HEADER = _lib.OBJECT_HEADER_SIZE
_ANY = _lib.ANY_INT  # (type index, zero padding / small length, payload)
_string_at = ctypes.string_at


class _Plan:
    """How to find the object children of one type: pointer fields read at their offsets in one
    unpack, other possibly-object fields read through their registry getters."""

    __slots__ = ("type_key", "names", "offsets", "start", "span", "unpack", "unpack_from", "getters", "anys", "leaf")

    def __init__(self, type_key: str, pointers: list[tuple[int, str]], getters: list[tuple[Any, str, int]],
                 anys: list[tuple[int, str]]) -> None:  # fmt: skip
        self.type_key = type_key
        pointers.sort()
        self.names = [name for _, name in pointers]
        self.start = pointers[0][0] if pointers else 0
        self.offsets = [off - self.start for off, _ in pointers]
        self.span = pointers[-1][0] + 8 - self.start if pointers else 0
        starts = [off for off, _ in pointers]
        ends = [self.start, *(off + 8 for off in starts)][:-1]  # where each gap starts: one per pointer
        layout = "".join(f"{off - prev}xQ" for off, prev in zip(starts, ends, strict=True))
        fields = struct.Struct("=" + layout)
        self.unpack, self.unpack_from = fields.unpack, fields.unpack_from
        self.getters = getters
        self.anys = anys
        self.leaf = not pointers and not getters and not anys


_PLANS: dict[tuple[int, bool], _Plan] = {}


def _type_fields(tindex: int) -> tuple[str, int, list[Any]]:
    """(type key, structural eq kind, reflected fields of the type and its ancestors)."""
    ptr = _lib.GetTypeInfo(tindex)
    if not ptr:
        return f"<type {tindex}>", _EQ_UNSUPPORTED, []
    ti = ptr.contents
    key = ctypes.string_at(ti.type_key.data, ti.type_key.size).decode()
    kind = int(ti.metadata.contents.structural_eq_hash_kind) if ti.metadata else _EQ_UNSUPPORTED
    infos = [ti] + [ti.type_ancestors[i].contents for i in range(ti.type_depth)]
    fields = [info.fields[i] for info in infos for i in range(info.num_fields)]
    return key, kind, fields


def _plan(tindex: int, structural: bool) -> _Plan:
    """The cached plan of ``tindex``; ``structural``: only what structural equal / hash follow."""
    plan = _PLANS.get((tindex, structural))
    if plan is None:
        plan = _PLANS[(tindex, structural)] = _make_plan(tindex, structural)
    return plan


def _make_plan(tindex: int, structural: bool) -> _Plan:
    key, kind, fields = _type_fields(tindex)
    pointers: list[tuple[int, str]] = []
    getters: list[tuple[Any, str, int]] = []
    if tindex in _LEAVES or (structural and kind == _EQ_UNSUPPORTED):
        return _Plan(key, pointers, getters, [])  # the engine refuses the type: no recursion
    anys: list[tuple[int, str]] = []
    for f in fields:
        if structural and f.flags & _SEQ_IGNORE:
            continue
        name = ctypes.string_at(f.name.data, f.name.size).decode()
        layout = _field_layout(int(f.field_static_type_index), int(f.size), _schema(f))
        if layout == "pointer":
            pointers.append((int(f.offset), name))
        elif layout == "any":
            anys.append((int(f.offset), name))
        elif layout == "getter" and f.getter:
            getters.append((_GETTER(f.getter), name, int(f.offset)))
    return _Plan(key, pointers, getters, anys)


def _plan_tuple(
    tindex: int, structural: bool
) -> tuple[bool, tuple[int, ...], tuple[int, ...], tuple[tuple[int, int], ...]]:
    """The plan as the compiled walk takes it: (leaf, pointer offsets in order, Any offsets,
    (getter address, offset) pairs) — the edge order of :func:`_field_edges`."""
    plan = _plan(tindex, structural)
    pointers = tuple(plan.start + off for off in plan.offsets)
    getters = tuple((ctypes.cast(g, ctypes.c_void_p).value or 0, off) for g, _, off in plan.getters)
    return plan.leaf, pointers, tuple(off for off, _ in plan.anys), getters


#: Field types (by schema) that never hold an object with contents.
_PLAIN_SCHEMAS = frozenset({"int", "float", "bool", "str", "bytes", "None", "ffi.String", "ffi.Bytes",
                            "DataType", "ffi.DataType", "Device", "ffi.Device", "ffi.Shape", "ffi.Tensor",
                            "ffi.Function", "void*"})  # fmt: skip


def _schema(f: Any) -> dict[str, Any] | None:
    """The field's type schema (``{"type": ..., "args": [...]}``) from its metadata, or None."""
    try:
        meta: Any = json.loads(ctypes.string_at(f.metadata.data, f.metadata.size)) if f.metadata.size else None
        schema: Any = _get(meta, "type_schema")
        if isinstance(schema, str):
            schema = json.loads(schema)  # stored as JSON text
    except ValueError:
        return None
    return cast("dict[str, Any]", schema) if isinstance(schema, dict) else None


def _get(mapping: Any, key: str) -> Any:
    """``mapping[key]`` when ``mapping`` is a dict holding it, else None (for parsed JSON)."""
    return cast("dict[str, Any]", mapping).get(key) if isinstance(mapping, dict) else None


def _field_layout(static: int, size: int, schema: dict[str, Any] | None) -> str:
    """How a field is read: "skip" (holds no object), "pointer" (an ObjectRef at its offset,
    null for None), "any" (a TVMFFIAny cell), or "getter" (the registry getter: layout unsure)."""
    if 0 <= static < _OBJECT or static in (TypeIndex.STR, TypeIndex.BYTES):
        return "skip"
    if static >= _OBJECT:
        return "pointer" if size == 8 else "getter"
    name = _get(schema, "type")
    if name in _PLAIN_SCHEMAS:
        return "skip"
    if name == "Optional" and size == 8:
        args: Any = _get(schema, "args") or [None]
        arg = _get(args[0], "type")
        index = _object.type_key_to_index(arg) if isinstance(arg, str) else None
        if index is not None and index >= _OBJECT:
            return "pointer"  # Optional<ObjectRef>: the ObjectRef itself, null for None
    if name in ("Any", "Variant") and size == 16:
        return "any"
    return "getter"


def _object_of_any(tindex: int, payload: int) -> int:
    """The object handle an Any cell holds (0 when it holds no object with contents)."""
    return payload if tindex >= TypeIndex.OBJECT and tindex not in _LEAVES and payload else 0


def _getter_child(getter: Any, addr: int) -> int:
    """The object a field read through its registry getter holds (0 for none)."""
    cell = ctypes.create_string_buffer(16)
    if getter(addr, ctypes.addressof(cell)) != 0:
        return 0  # the routine's own getter fails the same way, with its error
    tindex, _, payload = _ANY.unpack(cell.raw)
    if tindex >= TypeIndex.OBJECT:
        _lib.ObjectDecRef(payload)  # the getter's reference; the field keeps the object alive
    return _object_of_any(tindex, payload)


def _field_edges(h: int, plan: _Plan, labels: bool) -> list[Any]:
    """Pointer fields (in offset order), then Any fields, then fields read by their getters."""
    edges: list[Any] = []
    if plan.names:
        values = plan.unpack(_string_at(h + plan.start, plan.span))
        edges = [(v, n) for v, n in zip(values, plan.names, strict=True) if v] if labels else [v for v in values if v]
    for offset, name in plan.anys:
        tindex, _, payload = _ANY.unpack(_string_at(h + offset, 16))
        child = _object_of_any(tindex, payload)
        if child:
            edges.append((child, name) if labels else child)
    for getter, name, offset in plan.getters:
        child = _getter_child(getter, h + offset)
        if child:
            edges.append((child, name) if labels else child)
    return edges


def _seq_edges(h: int, labels: bool) -> list[Any]:
    """The object items of an Array / List, read from its TVMFFISeqCell."""
    data, size = _SEQ_CELL.unpack(_string_at(h + _HEADER, 16))
    if size <= 0:
        return []
    cells = _ANY.iter_unpack(_string_at(data, 16 * size))
    if labels:
        return [(p, i) for i, (t, _, p) in enumerate(cells) if _object_of_any(t, p)]
    return [p for t, _, p in cells if t >= _OBJECT and t not in _LEAVES]


def _map_edges(h: int, tindex: int, labels: bool) -> list[Any]:
    """The object keys and values of a Map / Dict: inline pairs of the small layout read from
    memory, the dense layout (and labels, which need the keys) through the runtime."""
    data, size, slots = _MAP_CELL.unpack(_string_at(h + _HEADER, 24))
    if size <= 0:
        return []
    if not slots & _SMALL_MAP or labels:
        return _map_edges_by_items(h, tindex, labels)  # the dense layout: through the runtime
    edges: list[Any] = []
    for kt, _, kp, vt, _, vp in _PAIR.iter_unpack(_string_at(data, 32 * size)):
        if kt >= _OBJECT and kt not in _LEAVES:
            edges.append(kp)
        if vt >= _OBJECT and vt not in _LEAVES:
            edges.append(vp)
    return edges


def _map_edges_by_items(h: int, tindex: int, labels: bool) -> list[Any]:
    """Keys then values of a Map / Dict read through its wrapper, in the order of the small
    layout's reader (key before value, entry by entry)."""
    _lib.ObjectIncRef(h)
    edges: list[Any] = []
    for k, v in _object._wrap(h, tindex).items():
        if isinstance(k, Object) and k._h and k._t not in _LEAVES:
            edges.append((k._h, ("key", k)) if labels else k._h)
        if isinstance(v, Object) and v._h and v._t not in _LEAVES:
            edges.append((v._h, ("value", k)) if labels else v._h)
    return edges


def _edges(h: int, tindex: int, structural: bool, labels: bool = False) -> list[Any]:
    """The object children of ``h`` (with their edge labels when ``labels``), in the routine's
    order; empty for a leaf."""
    if tindex in _SEQS:
        return _seq_edges(h, labels)
    if tindex in _MAPS:
        return _map_edges(h, tindex, labels)
    plan = _PLANS.get((tindex, structural)) or _plan(tindex, structural)
    return [] if plan.leaf else _field_edges(h, plan, labels)


def _map_edges_unlabelled(h: int, tindex: int) -> list[Any]:
    """The compiled walk's way into a Map / Dict of the dense layout."""
    return _map_edges_by_items(h, tindex, False)


_OBJECT = TypeIndex.OBJECT


# =============================================================================================
# The walk
# =============================================================================================
def check_graph(value: object, what: str, *, cycles: bool = True, structural: bool = False) -> None:
    """Raise if the graph under ``value`` has a reference cycle (when ``cycles``) or nests
    deeper than :func:`max_graph_depth`; ``what`` names the refusing API in the message.

    ``structural``: follow only the edges structural equal / hash follow (no field marked
    SEqHashIgnore, nothing inside a type without a structural equality kind).
    """
    if isinstance(value, Object):  # the usual argument: no Python containers to look into
        if value._h and value._t not in _LEAVES:
            _check_object(value._h, value._t, what, cycles, structural)
        return
    for h, tindex in _roots(value):
        _check_object(h, tindex, what, cycles, structural)


def _check_object(h: int, tindex: int, what: str, cycles: bool, structural: bool) -> None:
    """The graph under one object, by the backend's walk."""
    refusal = backend.graph_check(h, tindex, structural, cycles, _max_depth, _plan_tuple, _map_edges_unlabelled)
    if refusal is not None:
        kind, frames, at = refusal
        if kind == "cycle":
            raise _cycle_error(frames, at, structural, what)
        raise _depth_error(frames, at, structural, what, _max_depth)


def _roots(value: object) -> Iterator[tuple[int, int]]:
    """The objects under an argument: itself, or those in a Python list / tuple / dict that
    converts to a container (nested Python containers included)."""
    pending: list[Any] = [value]
    while pending:
        v = pending.pop()
        if isinstance(v, Object):
            if v._h and v._t not in _LEAVES:
                yield v._h, v._t
        elif isinstance(v, (list, tuple)):
            pending.extend(cast("list[Any]", v))
        elif isinstance(v, dict):
            pending.extend(_pairs(v))


def _pairs(mapping: Any) -> list[Any]:
    """The (key, value) pairs of a Python dict argument (each then read as a tuple)."""
    return list(mapping.items())


def guarded_repr(obj: Object) -> str:
    """The repr service: ``ffi.ReprPrint`` marks cycles itself (``...``) and keeps its own
    stack, but its time and memory grow with the square of the depth (a 100 000-deep chain
    exhausts memory), so a graph deeper than the bound is refused first; ``Object.__repr__``
    then shows its short ``<type at address>`` form."""
    check_graph(obj, "repr", cycles=False)
    return printer_repr(obj)


# =============================================================================================
# Messages
# =============================================================================================
def _type_key(tindex: int) -> str:
    if tindex in _SEQS or tindex in _MAPS:
        return {TypeIndex.ARRAY: "Array", TypeIndex.LIST: "List", TypeIndex.MAP: "Map",
                TypeIndex.DICT: "Dict"}[tindex]  # fmt: skip
    return _plan(tindex, False).type_key


def _step(tindex: int, label: Label) -> str:
    """One step of a path: ``cyc.Node.parent``, ``Array[1]``, ``Map['k']`` or ``Map key``."""
    owner = _type_key(tindex)
    if isinstance(label, str):
        return f"{owner}.{label}"
    if isinstance(label, int):
        return f"{owner}[{label}]"
    side, key = label
    return f"{owner}[{_short(key)}]" if side == "value" else f"{owner} key {_short(key)}"


def _short(value: object) -> str:
    text = repr(value) if not isinstance(value, Object) else f"<{value.type_key}>"
    return text if len(text) <= 40 else text[:37] + "..."


def _path(stack: list[list[Any]], start: int, structural: bool) -> tuple[list[tuple[str, str]], list[str]]:
    """(structured, formatted) steps along the open path from level ``start``: each level's
    last taken edge, labelled as the routine would name it."""
    steps: list[tuple[int, Label]] = []
    for frame in stack[start:]:  # [handle, type index, ..., positions taken]
        h, tindex, taken = frame[0], frame[1], frame[-1]
        steps.append((tindex, _edges(h, tindex, structural, labels=True)[taken - 1][1]))
    return [(_type_key(t), str(lab)) for t, lab in steps], [_step(t, lab) for t, lab in steps]


def _cycle_error(stack: list[list[Any]], start: int, structural: bool, what: str) -> ReferenceCycleError:
    path, steps = _path(stack, start, structural)
    closing = _type_key(stack[start][1])
    return ReferenceCycleError(
        f"{what}: the object graph has a reference cycle: {' → '.join(steps)} → {closing}"
        f" (the same object again); this routine recurses natively and cannot follow a cycle",
        path,
    )


def _depth_error(stack: list[list[Any]], tindex: int, structural: bool, what: str, limit: int) -> GraphTooDeepError:
    path, steps = _path(stack, 0, structural)
    shown = steps if len(steps) <= 6 else [*steps[:3], f"... ({len(steps) - 6} more)", *steps[-3:]]
    return GraphTooDeepError(
        f"{what}: the object graph nests deeper than {limit} levels (through {' → '.join(shown)}"
        f" → {_type_key(tindex)}); this routine recurses natively once per level and would overflow"
        f" the C stack (the bound is tvmffi_runtime.set_max_graph_depth)",
        path,
        limit,
    )
