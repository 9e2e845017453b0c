"""How code in a module of the package spells the class of a registry type: the class generated
for it (here, or by a ``--use`` package) or for its nearest ancestor with one, else a runtime
class. A class of another module is spelled through that module's alias, which the annotation
names: :func:`~tvmffi_gen.model.module_imports.derive_imports` turns those aliases into imports.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from .package import ClassModel, KeyRef, ModuleModel, Namespace, Target
from .typemap import RUNTIME_CLASSES, Annotation, Annotator, runtime_class
from .uses import UsedClass

__all__ = ["RUNTIME_BASES", "Spelling"]

#: Runtime base classes for core types a generated class may derive from.
RUNTIME_BASES = {
    "ffi.Object": runtime_class("Object"),
    "ffi.Enum": runtime_class("Enum"),
    "ffi.IntEnum": runtime_class("IntEnum"),
    "ffi.StrEnum": runtime_class("StrEnum"),
}


class Spelling:
    """Spells classes for the package a :class:`~tvmffi_gen.model.builder.Builder` builds, from its
    tables as it fills them: ``classes`` and ``modules`` (the builder's, by reference)."""

    def __init__(
        self,
        generated: Collection[str],
        classes: Mapping[str, ClassModel],
        modules: Mapping[Namespace, ModuleModel],
        used: Mapping[str, UsedClass],
        external: Mapping[str, list[str]],
        warn: Callable[[str], None],
    ) -> None:
        self.generated = generated  # type keys this package generates classes for
        self.classes = classes
        self.modules = modules
        self.used = used  # classes of --use packages, by type key
        self.external = external  # type keys of other libraries -> their ancestors
        self.warn = warn

    def annotator(self, mod: ModuleModel, context: str, member_names: set[str] | None = None) -> Annotator:
        """Annotations for code in ``mod``, classes spelled by :meth:`spell` (``member_names``:
        those of the class body the code is in); ``context`` names the item in warnings."""

        def resolve(key: str) -> Annotation | None:
            target = self._resolve_key(key)
            if target is None:
                return None
            return self.spell(target, mod, member_names)

        return Annotator(resolve_object=resolve, warn=self.warn, context=context)

    def _resolve_key(self, key: str) -> Target | None:
        """The class of ``key`` (or of its nearest known ancestor), or None if unknown."""
        known = self._known(key)
        if known is not None:
            return known
        ancestors = self.external.get(key)
        if ancestors is None:
            return None
        for anc in reversed(ancestors):
            known = self._known(anc)
            if known is not None:
                return known
        return RUNTIME_CLASSES["ffi.Object"]

    def _known(self, key: str) -> Target | None:
        """The class of ``key`` if it has one: generated here or by a ``--use`` package, or a
        runtime class."""
        if key in self.generated:
            return KeyRef(key)
        if key in self.used:
            return KeyRef(key, used=True)
        if key in RUNTIME_CLASSES:
            return RUNTIME_CLASSES[key]
        return RUNTIME_BASES.get(key)

    def spell(self, target: Target, mod: ModuleModel, member_names: set[str] | None = None) -> Annotation:
        """``target`` as ``mod`` spells it: a class of ``mod`` by its name (unless a member named
        like it hides it in the class body), any other by the alias of its module, which the
        annotation names so that ``mod`` imports it (:func:`~tvmffi_gen.model.module_imports.derive_imports`)."""
        if isinstance(target, Annotation):
            return target
        if target.used:
            ucls = self.used[target.type_key]
            return Annotation(f"{ucls.alias}.{ucls.name}", frozenset({ucls.alias}))
        cls = self.classes[target.type_key]
        if cls.namespace == mod.namespace and not (member_names and cls.name in member_names):
            return Annotation(cls.name)
        alias = self.modules[cls.namespace].alias
        return Annotation(f"{alias}.{cls.name}", frozenset({alias}))
