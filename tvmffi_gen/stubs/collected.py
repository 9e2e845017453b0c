"""What the importing child (``child.py``) found out about a running package, as typed data.

``Collection`` is what crosses the process boundary (as JSON: ``to_json`` / ``from_json``) and
what every later step of ``--stubs-for`` reads: the registry's types as the package generator's
own ``snapshot.TypeSnap`` (fields, methods, constructor), the Python class registered for each
type key (``RegisteredClass``), what each imported module holds at run time beyond what its
source says (``ModuleFacts``) and the ``_ffi_api`` functions (``ApiFunction``). Its JSON is also
part of the cache keys of the steps after the import (``cache.py``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, cast

from ..registry.snapshot import TypeSnap, type_snap_from_dict

__all__ = [
    "Forwarding",
    "LateMember",
    "RegisteredClass",
    "ReturnSource",
    "ModuleFacts",
    "ApiFunction",
    "Collection",
]


@dataclass(frozen=True)
class Forwarding:
    """A hand-written ``__init__`` that only forwards its parameters to a registry function
    (``forwarders.forwarding``): the function's registry name and schema, how many arguments
    the call passes, which parameter goes to which position, and per parameter the type keys
    of the registered classes its annotation names."""

    global_name: str
    schema: Any
    count: int
    params: dict[str, int]
    via: str
    named: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class LateMember:
    """A plain Python function attached to a registered class (its body or later): ``kind`` is
    ``method``, ``static``, ``class`` or ``property``; ``sig`` its parameters, names and kinds
    only (``(self, a, b=...)``)."""

    kind: str
    sig: str


@dataclass(frozen=True)
class RegisteredClass:
    """The Python class registered for a type key, as the running package has it."""

    module: str
    qualname: str
    #: every ``module.attr`` path it is reachable by (where it is defined included)
    paths: list[str] = field(default_factory=list)
    #: it has a hand-written ``__init__`` (not the one ``tvm_ffi`` makes)
    python_init: bool = False
    #: ``tvm_ffi``'s ``register_object`` gave it an ``__init__`` of its own (from ``__ffi_init__``,
    #: or, for a type that registers none, one that raises ``TypeError``)
    made_init: bool = False
    forwards: Forwarding | None = None
    late: dict[str, LateMember] = field(default_factory=dict)
    #: its MRO after itself, as ``module.qualname``
    bases: list[str] = field(default_factory=list)
    hashable: bool = True
    #: a Python class of its MRO (not ``tvm_ffi``'s) defines ``__eq__``
    python_eq: bool = False
    #: names its bases define in Python (not registry fields): those declarations win
    inherited: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"{self.module}.{self.qualname}"


@dataclass(frozen=True)
class ReturnSource:
    """What an unannotated function returns, as its source and the running module say
    (``source_facts.inferred_returns``): ``kind`` ``global`` (a registry function's result:
    ``target`` its name, ``schema`` its schema), ``key`` (a registered class: ``target`` its type
    key) or ``class`` (another class: ``target`` ``module:qualname``)."""

    kind: str
    target: str
    schema: Any = None


@dataclass(frozen=True)
class ModuleFacts:
    """One imported module: its file, and what it holds at run time that its source may not say."""

    path: str
    #: (a package) the submodules bound on it right after its own import
    bound_submodules: list[str] = field(default_factory=list)
    #: the public names it made itself (its ``__all__``, else what it defines)
    runtime_names: list[str] = field(default_factory=list)
    #: public names bound to a class imported under another name: name -> ``module:qualname``
    renamed_imports: dict[str, str] = field(default_factory=dict)
    #: its ``__all__`` at run time, when it is a list or tuple of strings
    runtime_all: list[str] | None = None
    #: names bound to a ``tvm_ffi.Function``
    packed: list[str] = field(default_factory=list)
    #: classes it defines whose metaclass is a private class of ``tvm_ffi``
    private_metaclass: list[str] = field(default_factory=list)
    #: names bound to a class a class decorator made (another name, made in a function)
    replaced_classes: list[str] = field(default_factory=list)
    #: names bound to None
    none_names: list[str] = field(default_factory=list)
    #: (a package) names of its submodules bound to something else at run time (a star import
    #: after the submodule's import rebound them): name -> ``module:qualname`` of that class or function
    shadowed_submodules: dict[str, str] = field(default_factory=dict)
    #: classes a class decorator replaced by a class made in a function: name -> the type keys of
    #: the registered classes that class derives from (nearest first)
    replaced_bases: dict[str, list[str]] = field(default_factory=dict)
    #: type aliases its source writes with string forward references: name -> the alias for a stub
    string_aliases: dict[str, str] = field(default_factory=dict)
    #: unannotated functions (``name``, ``Class.name``) whose result the source determines
    returns: dict[str, ReturnSource] = field(default_factory=dict)
    #: functions annotated with a registered class whose every return is a registry call whose
    #: schema returns a strict subclass of it: name -> that call
    narrowed_returns: dict[str, ReturnSource] = field(default_factory=dict)
    #: functions its source defines that a decorator replaced by an instance of another class
    #: (``@T.prim_func``): name -> that class
    replaced_functions: dict[str, ReturnSource] = field(default_factory=dict)
    #: public names bound to a module of the package: name -> the module's name
    module_names: dict[str, str] = field(default_factory=dict)
    #: the explicit re-exports its source writes (``from m import a as a``, PEP 484's form) of
    #: names it binds at run time, with the module absolute: ``a`` -> ``m``
    reexports: dict[str, str] = field(default_factory=dict)
    #: module metadata its source assigns and that is a string at run time (``__version__``)
    dunder_strings: list[str] = field(default_factory=list)
    #: the classes it defines that ``tvm_ffi`` makes its values of in place of its own
    #: (``source_facts.ffi_classes``): the typemap's runtime name (``Device``) -> that class
    ffi_classes: dict[str, ReturnSource] = field(default_factory=dict)

    @property
    def is_package(self) -> bool:
        return self.path.endswith("__init__.py")


@dataclass(frozen=True)
class ApiFunction:
    """A function ``tvm_ffi.init_ffi_api`` put into an ``_ffi_api`` module."""

    name: str
    global_name: str
    doc: str = ""
    schema: Any = None


@dataclass(frozen=True)
class Collection:
    """Everything the child found: see the module's docstring."""

    package: str
    distribution: str = ""
    version: str = ""
    #: the modules that imported, by dotted name
    modules: dict[str, ModuleFacts] = field(default_factory=dict)
    #: the modules that did not, with why
    failed: dict[str, str] = field(default_factory=dict)
    #: every registered type key (once everything imported)
    types: dict[str, TypeSnap] = field(default_factory=dict)
    #: the type keys a Python class is registered for
    classes: dict[str, RegisteredClass] = field(default_factory=dict)
    #: the type keys importing the package added to the registry (its libraries' types), sorted
    types_added: list[str] = field(default_factory=list)
    #: per ``_ffi_api`` module, its functions
    ffi_api: dict[str, list[ApiFunction]] = field(default_factory=dict)
    #: ``--exclude`` globs that match no module
    exclude_unmatched: list[str] = field(default_factory=list)
    #: every class of every module loaded once everything imported, by ``module.qualname`` of
    #: its definition (as pyright names a class): how a stub names it (``pyright_types.py``)
    world_classes: dict[str, ReturnSource] = field(default_factory=dict)

    def module(self, name: str) -> ModuleFacts:
        """The facts of module ``name`` (empty ones for a module that did not import)."""
        return self.modules.get(name) or ModuleFacts("")

    def ffi_classes(self) -> dict[str, ReturnSource]:
        """The classes the package has ``tvm_ffi`` make its values of in place of its own
        (``ModuleFacts.ffi_classes`` of every module): runtime name -> that class."""
        return {name: source for facts in self.modules.values() for name, source in facts.ffi_classes.items()}

    def ancestors(self, key: str) -> list[str]:
        """The ancestors of type ``key``, root first (none for a key the registry lacks)."""
        t = self.types.get(key)
        return list(t.ancestors) if t is not None else []

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Collection:
        return Collection.from_dict(cast("dict[str, Any]", json.loads(text)))

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Collection:
        """A collection from its ``asdict`` form (keys left out take their defaults)."""
        return Collection(
            package=d["package"],
            distribution=d.get("distribution", ""),
            version=d.get("version", ""),
            modules={m: _module_facts(f) for m, f in d.get("modules", {}).items()},
            failed=dict(d.get("failed", {})),
            types={k: type_snap_from_dict({"type_key": k, **t}) for k, t in d.get("types", {}).items()},
            classes={k: _registered_class(c) for k, c in d.get("classes", {}).items()},
            types_added=list(d.get("types_added", [])),
            ffi_api={m: [ApiFunction(**f) for f in fs] for m, fs in d.get("ffi_api", {}).items()},
            exclude_unmatched=list(d.get("exclude_unmatched", [])),
            world_classes={n: ReturnSource(**r) for n, r in d.get("world_classes", {}).items()},
        )


def _module_facts(d: dict[str, Any]) -> ModuleFacts:
    def sources(name: str) -> dict[str, ReturnSource]:
        return {n: ReturnSource(**r) for n, r in d.get(name, {}).items()}

    return replace(
        ModuleFacts(**d),
        returns=sources("returns"),
        narrowed_returns=sources("narrowed_returns"),
        replaced_functions=sources("replaced_functions"),
        ffi_classes=sources("ffi_classes"),
    )


def _registered_class(d: dict[str, Any]) -> RegisteredClass:
    forwards = d.get("forwards")
    late = {n: LateMember(**m) for n, m in d.get("late", {}).items()}
    return replace(RegisteredClass(**d), forwards=Forwarding(**forwards) if forwards else None, late=late)
