"""Building the package model: modules, names, references between them, and functions.

:class:`Builder` walks a snapshot in the order the naming rules need (subpackages, classes,
functions, named results: :meth:`Builder.declare`; then class bodies, through
:class:`~tvmffi_gen.members.ClassBodies`; then :meth:`Builder.finish`);
every reference to another class goes through :meth:`Builder.spell`, whose annotation names the
alias of the class's module; each module's imports are derived from those aliases at the end.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from .docparams import documented_param_names, documented_result_names
from .layout import item_doc
from .model import (
    ClassModel,
    FunctionModel,
    GenerationError,
    KeyRef,
    ModuleModel,
    Namespace,
    PackageModel,
    Param,
    ResultModel,
    Target,
    VisitorHook,
    VisitorsModel,
)
from .naming import RESERVED_MODULE, RESERVED_ROOT, Scope, py_name, snake_case
from .snapshot import FunctionSnap, Snapshot, TypeSnap
from .typemap import (
    ANY,
    ANY_ANNOTATION,
    RUNTIME_CLASSES,
    Annotation,
    Annotator,
    FunctionSig,
    SchemaError,
    TypeRef,
    function_sig,
    parse_schema,
    runtime_class,
)
from .uses import UsedClass, UsedPackage

__all__ = ["Builder"]

# Runtime base classes for core types a generated class may derive from.
_RUNTIME_BASES = {
    "ffi.Object": runtime_class("Object"),
    "ffi.Enum": runtime_class("Enum"),
    "ffi.IntEnum": runtime_class("IntEnum"),
    "ffi.StrEnum": runtime_class("StrEnum"),
}


#: Builtins the visitor bases have hooks for, named by the builtin.
_BUILTIN_HOOKS = ["bool", "int", "float", "str", "bytes"]


def _ns_of(key: str) -> tuple[Namespace, str]:
    parts = key.split(".")
    return tuple(parts[:-1]), parts[-1]


class Builder:
    """Decides the package for a snapshot: modules, names, references between them and functions;
    class bodies are decided by :class:`~tvmffi_gen.members.ClassBodies`."""

    def __init__(
        self,
        snap: Snapshot,
        name: str,
        prefixes: list[str],
        warn: Callable[[str], None],
        used: Iterable[UsedPackage] = (),
    ) -> None:
        self.snap = snap
        self.used_packages = list(used)
        # classes of packages generated before for the libraries this one extends (--use)
        self.used: dict[str, UsedClass] = {}
        for package in self.used_packages:
            for key, ucls in package.classes.items():
                self.used.setdefault(key, ucls)
        self.name = name
        self.warn_cb = warn
        self.warnings: list[str] = []
        self._warned: set[str] = set()
        self.prefixes = prefixes
        kept = [t for t in snap.types if self._keep(t.type_key)]
        self.types = {t.type_key: t for t in kept}
        if len(self.types) != len(kept):
            keys = [t.type_key for t in kept]
            dup = sorted(k for k in self.types if keys.count(k) > 1)
            raise GenerationError(f"snapshot lists type {dup[0]} more than once")
        for t in self.types.values():
            if t.type_key in t.ancestors:
                raise GenerationError(f"type {t.type_key}: lists itself among its ancestors")
        self.functions = [f for f in snap.functions if self._keep(f.name)]
        self.modules: dict[Namespace, ModuleModel] = {}
        self.classes: dict[str, ClassModel] = {}
        self.bases: dict[str, Target] = {}  # type key -> its base, spelled with the class body
        self.external = dict(snap.external_types)
        for t in snap.types:
            if t.type_key not in self.types:
                self.external[t.type_key] = list(t.ancestors)

    def warn(self, message: str) -> None:
        # once per item: a field's schema is read again for every subclass's auto-init
        if message in self._warned:
            return
        self._warned.add(message)
        self.warnings.append(message)
        self.warn_cb(message)

    def _keep(self, key: str) -> bool:
        if not self.prefixes:
            return True
        return any(key == p or key.startswith(p.rstrip(".") + ".") for p in self.prefixes)

    # -- modules and names ----------------------------------------------------------------
    def module(self, ns: Namespace) -> ModuleModel:
        mod = self.modules.get(ns)
        if mod is None:
            if ns:
                parent = self.module(ns[:-1])
                seg = parent.scope.claim(ns[-1])
                parent.subpackages.append((seg, ".".join(ns)))
                path = (*parent.path, seg)
            else:
                path = ()
            reserved = RESERVED_MODULE if ns else RESERVED_ROOT
            mod = ModuleModel(ns, ".".join([self.name, *path]), path, scope=Scope(reserved))
            self.modules[ns] = mod
        return mod

    def declare(self) -> None:
        """Modules, classes (named, bases chosen), functions and named results, in the order the
        naming rules claim names; class bodies come next (:class:`~tvmffi_gen.members.ClassBodies`)."""
        namespaces = {_ns_of(k)[0] for k in self.types} | {_ns_of(f.name)[0] for f in self.functions}
        # Rule 3, module scope: subpackages first (creating modules in sorted order claims them).
        for ns in sorted(namespaces):
            self.module(ns)
        self.module(())
        # then classes, in sorted type-key order
        for key in sorted(self.types):
            ns, short = _ns_of(key)
            mod = self.modules[ns]
            t = self.types[key]
            nearest, base_key = self._base_of(t)
            self.bases[key] = nearest
            cls = ClassModel(
                name=mod.scope.claim(short),
                type_key=key,
                namespace=ns,
                base=Annotation(""),
                base_key=base_key,
                doc=item_doc(t.doc, f"Registry type: ``{key}``."),
                depth=len(t.ancestors),
            )
            self.classes[key] = cls
            mod.classes.append(cls)
        # then functions
        for f in sorted(self.functions, key=lambda f: (f.name, f.exported)):
            ns, short = _ns_of(f.name)
            mod = self.modules[ns]
            fn = self._function(f, mod, mod.scope.claim(short))
            mod.functions.append(fn)
        # then the named tuples of results, after every function (in the same order)
        for mod in self.modules.values():
            for fn in mod.functions:
                if fn.result is not None:
                    fn.result.name = mod.scope.claim(fn.result.name)
                    fn.returns = Annotation(fn.result.name)

    def finish(self) -> PackageModel:
        """The package, once every class body is built: classes ordered, import cycles checked."""
        for mod in self.modules.values():
            mod.classes.sort(key=lambda c: (c.depth, c.name))
            mod.classes = _topological(mod.classes)
        self._snake_names()
        self._derive_imports()
        self._check_import_cycles()
        return PackageModel(
            name=self.name,
            library=self.snap.library,
            library_path=self.snap.library_path,
            tvm_ffi_version=".".join(str(x) for x in self.snap.tvm_ffi_version),
            modules=dict(sorted(self.modules.items())),
            classes=self.classes,
            warnings=self.warnings,
            env_var=self.name.upper().replace(".", "_") + "_LIBRARY",
            used_packages=self.used_packages,
            visitors=self._visitors(),
        )

    def _base_of(self, t: TypeSnap) -> tuple[Target, str | None]:
        """Base class (and its key, if in the package): the nearest ancestor in the package or
        a ``--use`` one, else a runtime class."""
        for anc in reversed(t.ancestors):
            if anc in self.types:
                return KeyRef(anc), anc
            if anc in self.used:
                return KeyRef(anc, used=True), None
            if anc in _RUNTIME_BASES:
                return _RUNTIME_BASES[anc], None
        return _RUNTIME_BASES["ffi.Object"], None

    def _snake_names(self) -> None:
        by_snake: dict[str, list[ClassModel]] = {}
        for cls in self.classes.values():
            by_snake.setdefault(snake_case(cls.name), []).append(cls)
        for snake, group in by_snake.items():
            if len(group) == 1:
                group[0].snake = snake
            else:
                for cls in group:
                    cls.snake = snake_case("_".join([*cls.namespace, cls.name]))

    def _visitors(self) -> VisitorsModel:
        """The hooks of ``visitors.py``: builtins first, then one per class (named by its snake
        name, claimed in order of it), then any object and any value; a hook a ``--use``
        package's bases define keeps its meaning, so a class's hook never takes its name."""
        scope = Scope()
        for builtin in [*_BUILTIN_HOOKS, "object", "any"]:
            scope.claim(builtin)
        hooks = [VisitorHook(tp, tp, tp) for tp in _BUILTIN_HOOKS]
        used = [u for u in self.used_packages if u.has_visitors]
        for u in used:
            scope.taken.update(u.hook_suffixes)
        namespaces: set[Namespace] = set()
        for cls in sorted(self.classes.values(), key=lambda c: (c.snake, c.type_key)):
            ref = f"{self.modules[cls.namespace].alias}.{cls.name}"
            namespaces.add(cls.namespace)
            hooks.append(VisitorHook(scope.claim(cls.snake), ref, ref))
        hooks.append(VisitorHook("object", "_rt.Object", "_rt.Object"))
        hooks.append(VisitorHook("any", "object", "_t.Any"))
        return VisitorsModel(hooks, sorted(namespaces), sorted(f"{u.name}.visitors" for u in used))

    # -- annotations ------------------------------------------------------------------------
    def annotator(self, mod: ModuleModel, context: str, member_names: set[str] | None = None) -> Annotator:
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
        if key in self.types:
            return KeyRef(key)
        if key in self.used:
            return KeyRef(key, used=True)
        if key in RUNTIME_CLASSES:
            return RUNTIME_CLASSES[key]
        return _RUNTIME_BASES.get(key)

    def spell(self, target: Target, mod: ModuleModel, member_names: set[str] | None = None) -> Annotation:
        """``target`` as ``mod`` spells it: a class of ``mod`` by its name (unless a member named
        like it hides it in the class body), any other by the alias of its module, which the
        annotation names so that ``mod`` imports it (:meth:`_derive_imports`)."""
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

    def used_members(self, t: TypeSnap) -> set[str]:
        """Member names ``t``'s classes inherit from ``--use`` packages (its whole chain)."""
        names: set[str] = set()
        for anc in t.ancestors:
            ucls = self.used.get(anc)
            if ucls is not None:
                names |= ucls.members
        return names

    def schema_sig(self, schema: object, context: str) -> FunctionSig:
        try:
            return function_sig(schema)
        except SchemaError as exc:
            self.warn(f"{context}: malformed type schema ({exc}); typed as Any")
            return FunctionSig(None, ANY)

    def schema_type(self, schema: object, context: str) -> TypeRef:
        if schema is None:
            return ANY
        try:
            return parse_schema(schema)
        except SchemaError as exc:
            self.warn(f"{context}: malformed type schema ({exc}); typed as Any")
            return ANY

    # -- functions ---------------------------------------------------------------------------
    def params(self, sig: FunctionSig, ann: Annotator, skip_self: bool, doc: str = "") -> list[Param]:
        """Parameters named as the schema names them (keyword-capable), else as the registry
        docstring documents them (still positional-only), else ``_0, _1, ...``."""
        assert sig.params is not None
        params = list(sig.params)
        names = list(sig.param_names) if sig.param_names else [None] * len(params)
        if skip_self:
            params, names = params[1:], names[1:]
        out: list[Param] = []
        scope = Scope(RESERVED_MODULE | {"self"})
        named = all(n for n in names) and params
        documented = None if named else documented_param_names(doc, len(params))
        for i, (p, n) in enumerate(zip(params, names, strict=True)):
            if named and n:
                pname = scope.claim(n)
            elif documented is not None:
                pname = scope.claim(documented[i])
            else:
                pname = scope.claim(f"_{i}")
            keyword = named or documented is not None  # real names: callers may use them
            out.append(Param(pname, ann.annotation(p, "arg"), None, "normal" if keyword else "posonly"))
        return out

    def _function(self, f: FunctionSnap, mod: ModuleModel, name: str) -> FunctionModel:
        ann = self.annotator(mod, f"function {f.name}")
        sig = self.schema_sig(f.schema, f"function {f.name}")
        doc = item_doc(f.doc, f"Registry function: ``{f.name}``.")
        if f.exported:
            doc = item_doc(f.doc, f"Exported function: ``{f.name}``\n(symbol ``__tvm_ffi_{f.name}``).")
            if sig.params is None and f.schema is None:
                self.warn(
                    f"exported function {f.name} has no type metadata, so it is generated untyped;"
                    " build the library with -DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1 to get types"
                )
        if sig.params is None:
            return FunctionModel(name, f.name, [], ANY_ANNOTATION, doc, typed=False, exported=f.exported)
        params = self.params(sig, ann, skip_self=False, doc=f.doc)
        fn = FunctionModel(name, f.name, params, ann.annotation(sig.ret, "return"), doc, exported=f.exported)
        fn.result = self._named_result(sig.ret, f.doc, name, ann)
        return fn

    def _named_result(self, ret: TypeRef, doc: str, fn_name: str, ann: Annotator) -> ResultModel | None:
        """A named tuple for a ``Tuple`` result whose items the documentation names (numpydoc
        ``Returns``: ``quotient : int``), named ``<FunctionName>Result``; else None."""
        if ret.key != "Tuple" or not ret.args:
            return None
        names = documented_result_names(doc, len(ret.args))
        # a name Python would change, or one a tuple already defines, names no field
        if names is None or any(py_name(n) != n or n in ("count", "index") for n in names):
            return None
        camel = "".join(part[:1].upper() + part[1:] for part in fn_name.split("_") if part)
        items = [(n, ann.annotation(t, "return")) for n, t in zip(names, ret.args, strict=True)]
        words = {w for _, a in items for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", a.text)}
        if words & set(names):  # an item named like a type its class body refers to
            return None
        return ResultModel(f"{camel or 'Function'}Result", items)

    # -- imports ---------------------------------------------------------------------------
    def _derive_imports(self) -> None:
        """Each module's imports of generated modules, from the aliases its annotations name: a
        module whose class a base names is imported when the module runs, one only annotations
        name under ``TYPE_CHECKING``; a ``--use`` package's module always when it runs."""
        namespaces = {mod.alias: ns for ns, mod in self.modules.items()}
        used_modules = {ucls.alias: ucls.module for ucls in self.used.values()}
        for mod in self.modules.values():
            bases, others = mod.annotations()
            for held, imports in ((bases, mod.runtime_imports), (others, mod.type_imports)):
                for alias in frozenset[str]().union(*(a.aliases for a in held)):
                    if alias in used_modules:
                        mod.used_imports.add(used_modules[alias])
                    elif alias in namespaces:
                        imports.add(namespaces[alias])

    def _check_import_cycles(self) -> None:
        graph = {ns: {d for d in m.runtime_imports if d != ns} for ns, m in self.modules.items()}
        visiting: set[Namespace] = set()
        done: set[Namespace] = set()

        def visit(ns: Namespace, path: list[Namespace]) -> None:
            if ns in done:
                return
            if ns in visiting:
                cycle = " -> ".join(".".join(n) or "<root>" for n in [*path, ns])
                raise GenerationError(f"namespaces inherit from each other in a cycle: {cycle}")
            visiting.add(ns)
            for dep in sorted(graph[ns]):
                visit(dep, [*path, ns])
            visiting.discard(ns)
            done.add(ns)

        for ns in sorted(graph):
            visit(ns, [])


def _topological(classes: list[ClassModel]) -> list[ClassModel]:
    """Order classes so every base defined in the same module comes first (stable otherwise)."""
    by_key = {c.type_key: c for c in classes}
    out: list[ClassModel] = []
    placed: set[str] = set()

    def place(c: ClassModel) -> None:
        if c.type_key in placed:
            return
        if c.base_key in by_key:
            place(by_key[c.base_key])
        placed.add(c.type_key)
        out.append(c)

    for c in classes:
        place(c)
    return out
