"""How a registry type is named in a stub module. ``public_path`` picks the path a registered
class is annotated with (one its stub module exports, without private parts); ``StubContext``
resolves a registry type key to that path (through the type's ancestors when the type has no
Python class), collects the imports the module then needs, and writes a schema's ``TypeRef`` as
annotation text: ``typemap.Annotator``'s, with what the package's conversions accept or give
beyond the type itself (``conversions.py``) and the runtime classes spelled as ``tvm_ffi``
spells them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model.typemap import Annotation, Annotator, Position, TypeRef
from ..registry.facts import nearest_known
from .collected import Collection, RegisteredClass, ReturnSource
from .conversions import BUILTIN, Conversions

__all__ = ["public_path", "StubContext"]


# The runtime classes the typemap names ``_rt.X``, as tvm_ffi spells them.
_RT_NAMES = {
    "Array": "_tvm_ffi.Array", "List": "_tvm_ffi.List", "Map": "_tvm_ffi.Map", "Dict": "_tvm_ffi.Dict",
    "Function": "_tvm_ffi.Function", "Module": "_tvm_ffi.Module", "Object": "_tvm_ffi.Object",
    "Tensor": "_tvm_ffi.Tensor", "Shape": "_tvm_ffi.Shape", "Device": "_tvm_ffi.Device",
    "DataType": "_tvm_ffi.dtype", "DLPackExporter": "_t.Any", "Unchanged": "_t.Any",
}  # fmt: skip
_RT_REF = re.compile(r"\b_rt\.(\w+)")
#: Standard modules whose classes a stub imports by their own names where the name is free.
_BY_NAME = frozenset({"types", "typing", "collections.abc"})


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


@dataclass
class _StubAnnotator(Annotator):
    """``Annotator`` with what the package's ``Conversions`` add to an object type, at every depth
    (``Sequence[Expr | int | float]``, a callback's result)."""

    conversions: Conversions = BUILTIN

    def annotation(self, t: TypeRef, pos: Position) -> Annotation:
        ann = super().annotation(t, pos)
        text = ann.text
        c = self.conversions
        table = c.accepted if pos == "param" else c.returned if pos == "return" else {}
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
    conversions: Conversions = BUILTIN
    #: the names the module's stub binds at module level (builtins included) and in its class
    #: bodies, before the rewrite (``stubtext.module_bindings``, ``class_body_bindings``)
    module_names: frozenset[str] = frozenset()
    class_names: frozenset[str] = frozenset()
    #: names this rewrite imported by their own names: name -> module
    by_name: dict[str, str] = field(default_factory=dict)

    def import_by_name(self, module: str, name: str) -> str | None:
        """``name``, imported from ``module`` by its own name (a user reads ``NotImplementedType``,
        ``Final``, not ``_types.NotImplementedType``), when the module's stub leaves it free;
        None when it does not (the caller then spells it through a module alias)."""
        if self.by_name.get(name, module) != module or name in self.module_names | self.class_names:
            return None
        self.by_name[name] = module
        self.imports.add(f"from {module} import {name}")
        return name

    def own_class(self, info: RegisteredClass) -> str | None:
        """A class this module defines, by its own name, when that name reaches it everywhere in
        the module: no class body binds it (an annotation there would find the member)."""
        head = info.qualname.split(".")[0]
        if info.module != self.module or head not in self.module_names or head in self.class_names:
            return None
        return None if head in self.by_name else info.qualname

    def resolve(self, key: str) -> str | None:
        """How the stub names the class of type ``key`` (or of its nearest ancestor with one): by
        its own name where this module defines it, else by its public path through a module alias."""
        known = nearest_known(key, self.data.ancestors(key), lambda k: k if k in self.public else None)
        if known is None:
            return None
        info = self.data.classes.get(known)
        own = self.own_class(info) if info is not None else None
        if own is not None:
            return own
        mod, _, name = self.public[known].rpartition(".")
        alias = "_" + mod.replace(".", "_")
        self.imports.add(f"import {mod} as {alias}")
        return f"{alias}.{name}"

    def annotate(self, t: TypeRef, pos: Position, where: str) -> str:
        ann = _StubAnnotator(self.resolve, self.warnings.append, context=where, conversions=self.conversions)
        text = ann.annotate(t, pos)
        return _RT_REF.sub(lambda m: self._runtime_class(m.group(1), pos), text)

    def _runtime_class(self, name: str, pos: Position) -> str:
        """How the typemap's ``_rt.name`` is spelled: as ``tvm_ffi`` spells it, except in a result
        when the package registered a class of its own for that ``ffi.`` type key (tvm's
        ``tvm.runtime.Module`` for ``ffi.Module``): the FFI makes a returned object an instance of
        the class registered for its key."""
        info = self.data.classes.get(f"ffi.{name}") if pos == "return" else None
        if info is not None and info.module.split(".")[0] != "tvm_ffi":
            resolved = self.resolve(f"ffi.{name}")
            if resolved is not None:
                return resolved
        made = self.data.ffi_classes().get(name) if pos == "return" else None
        spelled = self.spell(made) if made is not None else None
        return spelled or _RT_NAMES.get(name, "_t.Any")

    def spell(self, source: ReturnSource) -> str | None:
        """How the stub names the class ``source`` describes (a registered class by its public
        path, another by its module's alias), adding the import it needs; None for a type key
        without any class."""
        if source.kind == "key":
            return self.resolve(source.target)
        module, qual = source.target.split(":")
        if module in (self.module, "builtins"):
            return qual
        if module in _BY_NAME and "." not in qual:
            own = self.import_by_name(module, qual)
            if own is not None:
                return own
        alias = "_" + module.replace(".", "_")
        self.imports.add(f"import {module} as {alias}")
        return f"{alias}.{qual}"
