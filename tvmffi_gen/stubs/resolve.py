"""How a registry type is named in a stub module. ``public_path`` picks the path a registered
class is annotated with (one its stub module exports, without private parts); ``StubContext``
resolves a registry type key to that path (through the type's ancestors when the type has no
Python class), collects the imports the module then needs, and writes a schema's ``TypeRef`` as
annotation text: ``typemap.Annotator``'s, with what Apache TVM's conversions accept or give
beyond the type itself (``_ALSO_ACCEPTED``, ``_ALSO_RETURNED``) and the runtime classes spelled
as ``tvm_ffi`` spells them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..registry_facts import nearest_known
from ..typemap import Annotation, Annotator, Position, TypeRef
from .collected import Collection, RegisteredClass

__all__ = ["public_path", "StubContext"]


# The runtime classes the typemap names ``_rt.X``, as tvm_ffi spells them.
_RT_NAMES = {
    "Array": "_tvm_ffi.Array", "List": "_tvm_ffi.List", "Map": "_tvm_ffi.Map", "Dict": "_tvm_ffi.Dict",
    "Function": "_tvm_ffi.Function", "Module": "_tvm_ffi.Module", "Object": "_tvm_ffi.Object",
    "Tensor": "_tvm_ffi.Tensor", "Shape": "_tvm_ffi.Shape", "Device": "_tvm_ffi.Device",
    "DataType": "_tvm_ffi.dtype", "DLPackExporter": "_t.Any", "Unchanged": "_t.Any",
}  # fmt: skip
_RT_REF = re.compile(r"\b_rt\.(\w+)")


def public_path(info: RegisteredClass, exports: dict[str, set[str]]) -> str:
    """The path to annotate a registered class with: among the paths it is reachable by whose
    stub module exports it under its own name, one without private parts, shortest first; else
    where it is defined."""
    qual = info.qualname
    candidates: list[tuple[int, int, str]] = []
    for path in info.paths:
        mod, _, attr = path.rpartition(".")
        if attr != qual or any(p.startswith("_") for p in path.split(".")):
            continue
        if attr in exports.get(mod, set()):
            candidates.append((path.count("."), len(path), path))
    return min(candidates)[2] if candidates else info.path


#: What a parameter of these Apache TVM types accepts beyond the type itself, by conversions
#: tvm's C++ defines and the registry's schemas do not describe (checked at run time with
#: apache-tvm 0.27): a Python number becomes an ``IntImm`` / ``FloatImm`` where an ``ir.Expr`` is
#: expected (``prim._cast("float32", 1, None)``, an Array's elements alike), a dtype string or a
#: ``tvm_ffi.dtype`` a ``PrimType``, and a ``Span`` is a nullable reference (None: no source
#: location, what tvm's own wrappers pass). Other object types refuse what is not one of them
#: (``ir.Type``, ``ir.Var``, ``target.Target`` given a string).
_ALSO_ACCEPTED: dict[str, tuple[str, ...]] = {
    "ir.Expr": ("int", "float"),
    "ir.PrimType": ("str", "_tvm_ffi.dtype"),
    "ir.Span": ("None",),
}
#: What reading a value of these types can give besides one: a null ``Span`` (every node built
#: without one) reads as None.
_ALSO_RETURNED: dict[str, tuple[str, ...]] = {"ir.Span": ("None",)}


class _StubAnnotator(Annotator):
    """``Annotator`` with what ``_ALSO_ACCEPTED`` and ``_ALSO_RETURNED`` add to an object type,
    at every depth (``Sequence[Expr | int | float]``, a callback's result)."""

    def annotation(self, t: TypeRef, pos: Position) -> Annotation:
        ann = super().annotation(t, pos)
        text = ann.text
        table = _ALSO_ACCEPTED if pos == "param" else _ALSO_RETURNED if pos == "return" else {}
        extra = table.get(t.key, ())
        if not extra or text == "_t.Any":
            return ann
        parts = [text, *(e for e in extra if e not in (text, "None"))]
        return Annotation(" | ".join(parts + (["None"] if "None" in extra else [])), ann.aliases)


@dataclass
class StubContext:
    """Naming and imports for one stub module."""

    data: Collection
    public: dict[str, str]  # type key -> public path of its class
    module: str
    imports: set[str] = field(default_factory=set)
    #: per class ("module.qualname"), the names its stub declares as plain attributes
    attribute_names: dict[str, set[str]] = field(default_factory=dict)
    #: per class ("module.qualname"), the declared attributes that become read-only properties
    frozen: dict[str, set[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def resolve(self, key: str) -> str | None:
        path = nearest_known(key, self.data.ancestors(key), self.public.get)
        if path is None:
            return None
        mod, _, name = path.rpartition(".")
        alias = "_" + mod.replace(".", "_")
        self.imports.add(f"import {mod} as {alias}")
        return f"{alias}.{name}"

    def annotate(self, t: TypeRef, pos: Position, where: str) -> str:
        ann = _StubAnnotator(self.resolve, self.warnings.append, context=where)
        text = ann.annotate(t, pos)
        return _RT_REF.sub(lambda m: _RT_NAMES.get(m.group(1), "_t.Any"), text)
