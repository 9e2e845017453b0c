"""Registry snapshot: what a library registered, as plain JSON-serialisable data.

``snapshot_process.take_snapshot`` reads it in a child process. After the snapshot nothing
touches the library: the model and the renderer work from this data alone.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, cast

__all__ = [
    "FieldSnap",
    "MethodSnap",
    "TypeSnap",
    "FunctionSnap",
    "Snapshot",
    "SnapshotError",
    "SNAPSHOT_FORMAT",
    "type_snap_from_dict",
]

SNAPSHOT_FORMAT = 1


class SnapshotError(RuntimeError):
    """The library could not be loaded or read; the message names the library and the reason.

    ``detail`` is everything the loading process printed (shown with ``-v``)."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


@dataclass
class FieldSnap:
    name: str
    doc: str = ""
    schema: Any = None
    writable: bool = False
    has_default: bool = False
    default: Any = None  # JSON value when representable, else None with default_repr set
    default_repr: str | None = None
    default_is_factory: bool = False
    init: bool = True
    kw_only: bool = False
    offset: int = 0
    size: int = 0
    static_type_index: int = -1
    flags: int = 0


@dataclass
class MethodSnap:
    name: str
    doc: str = ""
    schema: Any = None
    is_static: bool = False


@dataclass
class TypeSnap:
    type_key: str
    ancestors: list[str]
    doc: str = ""
    fields: list[FieldSnap] = field(default_factory=list)
    methods: list[MethodSnap] = field(default_factory=list)
    #: "method" (explicit ``refl::init``: positional, from the method's schema), "auto" (reflected
    #: auto-init from fields), or None (not constructible from Python)
    init: str | None = None
    init_schema: Any = None
    init_doc: str = ""
    #: inherited fields (init flag on) that the native auto-init does not take: it was built
    #: when the type registered, before those fields of its ancestors were (static
    #: initialisation order across translation units, as in Apache TVM's ``ir.PrimType``)
    init_excluded: list[str] = field(default_factory=list)
    enum_entries: list[str] | None = None
    final: bool = False


@dataclass
class FunctionSnap:
    name: str
    doc: str = ""
    schema: Any = None
    exported: bool = False  # an exported symbol of the library (module function), not a global


@dataclass
class Snapshot:
    library: str
    library_path: str
    tvm_ffi_version: list[int]
    types: list[TypeSnap] = field(default_factory=list)
    functions: list[FunctionSnap] = field(default_factory=list)
    #: type keys registered before the library loaded (core and preloads), with their ancestors
    external_types: dict[str, list[str]] = field(default_factory=dict)
    #: fields of those external types that are ancestors of the library's types (what their
    #: auto-init binds along with the library's own fields)
    external_fields: dict[str, list[FieldSnap]] = field(default_factory=dict)
    format: int = SNAPSHOT_FORMAT

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @staticmethod
    def from_json(text: str, source: str = "<snapshot>") -> Snapshot:
        try:
            parsed: object = json.loads(text)
        except ValueError as exc:
            raise SnapshotError(f"{source}: not a JSON snapshot ({exc})") from None
        data = cast("dict[str, Any]", parsed) if isinstance(parsed, dict) else {}
        if data.get("format") != SNAPSHOT_FORMAT:
            raise SnapshotError(f"{source}: not a tvmffi-gen snapshot of format {SNAPSHOT_FORMAT}")
        try:
            types = [type_snap_from_dict(t) for t in data.get("types", [])]
            functions = [FunctionSnap(**f) for f in data.get("functions", [])]
            return Snapshot(
                library=data["library"],
                library_path=data["library_path"],
                tvm_ffi_version=list(data.get("tvm_ffi_version", [])),
                types=types,
                functions=functions,
                external_types={k: list(v) for k, v in data.get("external_types", {}).items()},
                external_fields={k: [FieldSnap(**f) for f in v] for k, v in data.get("external_fields", {}).items()},
            )
        except (TypeError, KeyError) as exc:
            raise SnapshotError(f"{source}: malformed snapshot ({exc})") from None


def type_snap_from_dict(t: dict[str, Any]) -> TypeSnap:
    """A ``TypeSnap`` from its ``asdict`` form, its fields and methods read back as FieldSnap
    and MethodSnap."""
    fields = [FieldSnap(**f) for f in t.get("fields", [])]
    methods = [MethodSnap(**m) for m in t.get("methods", [])]
    rest: dict[str, Any] = {k: v for k, v in t.items() if k not in ("fields", "methods")}
    return TypeSnap(**rest, fields=fields, methods=methods)
