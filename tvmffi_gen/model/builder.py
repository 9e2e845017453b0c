"""Building the package model from a snapshot: modules, names, class bodies, functions.

:func:`build_model` is the entry: a snapshot to the :class:`~tvmffi_gen.model.package.PackageModel`.
:class:`Builder` holds what the decisions depend on (the snapshot, the classes decided so far,
the ``--use`` packages) and walks the snapshot in the order the naming rules need:
:meth:`Builder.declare` (subpackages, classes, functions, named results), then
:meth:`Builder.build_classes` (class bodies, parents before children so overrides can be
checked), then :meth:`Builder.finish`. The decisions themselves are functions of explicit facts:
class members in :mod:`.class_members`, parameters in :mod:`.signatures`, imports in
:mod:`.module_imports`, hook names in :mod:`.visitor_hooks`; every reference to a class is
spelled by :class:`.spelling.Spelling`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..registry.facts import auto_init_order, chain_fields
from ..registry.snapshot import FieldSnap, FunctionSnap, Snapshot, TypeSnap
from ..text.layout import item_doc
from .class_members import (
    Inherited,
    UsedField,
    claim_member_names,
    field_model,
    match_args,
    method_model,
    replace_model,
)
from .declarations import auto_init_params, callable_decl, named_like_fields, schema_params, schema_sig
from .module_imports import check_import_cycles, derive_imports
from .naming import RESERVED_CLASS, RESERVED_MODULE, RESERVED_ROOT, Scope, py_name
from .package import (
    ClassModel,
    FieldModel,
    FunctionModel,
    GenerationError,
    InitModel,
    KeyRef,
    MethodModel,
    ModuleModel,
    Namespace,
    PackageModel,
    Param,
    Target,
    validate_package_name,
)
from .prefixes import kept_by_prefixes
from .signatures import named_result, unnamed_note
from .spelling import RUNTIME_BASES, Spelling
from .typemap import (
    ANY,
    ANY_ANNOTATION,
    Annotation,
    Annotator,
    FunctionSig,
    SchemaError,
    TypeRef,
    parse_schema,
)
from .uses import UsedClass, UsedPackage
from .visitor_hooks import visitor_hooks

__all__ = ["Builder", "build_model"]


def _ns_of(key: str) -> tuple[Namespace, str]:
    parts = key.split(".")
    return tuple(parts[:-1]), parts[-1]


class Builder:
    """Decides the package for a snapshot: modules, names, class bodies, functions, and the
    references between them."""

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
        # ``--prefix`` selects registry namespaces; the library's exported functions have none
        self.functions = [f for f in snap.functions if f.exported or self._keep(f.name)]
        self.modules: dict[Namespace, ModuleModel] = {}
        self.classes: dict[str, ClassModel] = {}
        self.bases: dict[str, Target] = {}  # type key -> its base, spelled with the class body
        external = dict(snap.external_types)
        for t in snap.types:
            if t.type_key not in self.types:
                external[t.type_key] = list(t.ancestors)
        self.spelling = Spelling(self.types.keys(), self.classes, self.modules, self.used, external, self.warn)

    def warn(self, message: str) -> None:
        # once per item: a field's schema is read again for every subclass's auto-init
        if message in self._warned:
            return
        self._warned.add(message)
        self.warnings.append(message)
        self.warn_cb(message)

    def _keep(self, key: str) -> bool:
        return kept_by_prefixes(key, self.prefixes)

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
        naming rules claim names; class bodies come next (:meth:`build_classes`)."""
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
                doc=item_doc(t.doc, f"Registered as `{key}`."),
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

    def _base_of(self, t: TypeSnap) -> tuple[Target, str | None]:
        """Base class (and its key, if in the package): the nearest ancestor in the package or
        a ``--use`` one, else a runtime class."""
        for anc in reversed(t.ancestors):
            if anc in self.types:
                return KeyRef(anc), anc
            if anc in self.used:
                return KeyRef(anc, used=True), None
            if anc in RUNTIME_BASES:
                return RUNTIME_BASES[anc], None
        return RUNTIME_BASES["ffi.Object"], None

    # -- class bodies ------------------------------------------------------------------------
    def build_classes(self) -> None:
        """Every class body, parents before children (overrides are checked against what the
        ancestors' classes got)."""
        types = self.types
        for key in sorted(types, key=lambda k: (len(types[k].ancestors), k)):
            self.build_class(types[key], self.classes[key])

    def build_class(self, t: TypeSnap, cls: ClassModel) -> None:
        """Decide the members of ``cls``, once its ancestors' classes have theirs."""
        mod = self.modules[cls.namespace]
        cls.base = self.spelling.spell(self.bases[cls.type_key], mod)
        inherited = Inherited.of(self._ancestor_classes(cls))
        from_used = self._used_members(t)
        names = claim_member_names(t, cls.name, inherited, from_used)
        cls.enum_entries = names.entries

        def annotator(context: str) -> Annotator:
            return self.spelling.annotator(mod, context, names.all_names)

        for f, name in zip(t.fields, names.fields, strict=True):
            context = f"field {t.type_key}.{f.name}"
            ann = annotator(context)
            ref = self.schema_type(f.schema, context)
            cls.fields.append(field_model(t.type_key, f, name, ref, ann, inherited.fields.get(name)))
        for m, name in zip(t.methods, names.methods, strict=True):
            context = f"method {t.type_key}.{m.name}"
            ann = annotator(context)
            sig = self.schema_sig(m.schema, context)
            cls.methods.append(method_model(t.type_key, m, name, sig, ann, inherited.methods.get(name)))
        cls.init = self._init(t, mod, names.all_names)
        used_fields = self._used_fields(t)
        cls.match_args = match_args(cls, inherited, used_fields)
        if "ffi.Enum" not in t.ancestors:  # enum entries are interned: never copied
            extends_used = any(anc in self.used for anc in t.ancestors)
            cls.replace = replace_model(cls, inherited, used_fields, annotator, from_used, extends_used)
        members: list[FieldModel | MethodModel] = [*cls.fields, *cls.methods]
        for member in members:
            if member.name in from_used:  # overrides a member we cannot compare: let mypy be
                member.override_ignore = True

    def _ancestor_classes(self, cls: ClassModel) -> list[ClassModel]:
        """The classes of ``cls``'s ancestors in the package, the root first."""
        chain: list[ClassModel] = []
        key = cls.base_key
        seen = {cls.type_key}
        while key is not None:
            if key in seen:
                raise GenerationError(f"type {cls.type_key}: its ancestors form a cycle through {key}")
            seen.add(key)
            chain.append(self.classes[key])
            key = self.classes[key].base_key
        return chain[::-1]

    def _init(self, t: TypeSnap, mod: ModuleModel, members: set[str]) -> InitModel:
        """How ``t`` is constructed: by its ``__ffi_init__`` method (parameters from its schema),
        by the reflected auto-init (parameters from the fields), or not from Python."""
        context = f"type {t.type_key} __ffi_init__"
        if t.init == "method":
            sig = self.schema_sig(t.init_schema, context)
            if sig.params is None:
                return InitModel("method", [Param("args", ANY_ANNOTATION, None, "varargs")], t.init_doc)
            ann = self.spelling.annotator(mod, context, members)
            init_params = schema_params(sig, ann.annotation, False, t.init_doc, keywords=True)
            return InitModel("method", named_like_fields(init_params, sig, self._init_fields(t)), t.init_doc)
        if t.init == "auto":
            return InitModel("auto", self._auto_init_params(t, mod, members), "")
        return InitModel("none", [], "")

    def _init_fields(self, t: TypeSnap) -> list[tuple[str | None, TypeRef]]:
        """The fields of ``t``'s chain, ancestors' first as declared: each one's attribute name
        (None where this package generates none) and type."""
        chain = chain_fields(t.type_key, self._fields_of(t), t.ancestors)
        return [(self._field_py_name(o, f.name), self.schema_type(f.schema, f"field {o}.{f.name}")) for o, f in chain]

    def _fields_of(self, t: TypeSnap) -> Callable[[str], list[FieldSnap]]:
        """The registered fields of ``t`` or of one of its ancestors, by type key (an ancestor
        of a preloaded library's too)."""

        def fields_of(k: str) -> list[FieldSnap]:
            snap = self.types.get(k)
            return t.fields if k == t.type_key else snap.fields if snap else self.snap.external_fields.get(k, [])

        return fields_of

    def _field_py_name(self, owner: str, reg_name: str) -> str | None:
        """The attribute name of the field ``reg_name`` in the class of ``owner``, if generated here."""
        cls = self.classes.get(owner)
        if cls is not None:
            for fm in cls.fields:
                if fm.reg_name == reg_name:
                    return fm.name
        return None

    def _auto_init_params(self, t: TypeSnap, mod: ModuleModel, members: set[str]) -> list[Param]:
        """The native auto-init's parameters (``declarations.auto_init_params``), each named like
        the field's attribute and annotated in ``mod``."""
        chain = chain_fields(t.type_key, self._fields_of(t), t.ancestors)
        fields: list[tuple[str, FieldSnap, Annotation]] = []
        for owner, f in auto_init_order(t, chain):
            context = f"field {owner}.{f.name}"
            ann = self.spelling.annotator(mod, context, members)
            annotation = ann.annotation(self.schema_type(f.schema, context), "arg")
            fields.append((self._field_py_name(owner, f.name) or f.name, f, annotation))
        return auto_init_params(fields)

    def _used_fields(self, t: TypeSnap) -> list[UsedField]:
        """Fields ``t`` inherits from ancestors in ``--use`` packages, ancestors first."""
        out: list[UsedField] = []
        for anc in t.ancestors:
            if anc in self.used and anc not in self.types:
                for fs in self.snap.external_fields.get(anc, []):
                    ref = self.schema_type(fs.schema, f"field {anc}.{fs.name}")
                    out.append(UsedField(py_name(fs.name, RESERVED_CLASS), fs.name, ref, anc))
        return out

    def _used_members(self, t: TypeSnap) -> set[str]:
        """Member names ``t``'s classes inherit from ``--use`` packages (its whole chain)."""
        names: set[str] = set()
        for anc in t.ancestors:
            ucls = self.used.get(anc)
            if ucls is not None:
                names |= ucls.members
        return names

    def schema_sig(self, schema: object, context: str) -> FunctionSig:
        """The signature a function schema gives; a warning naming ``context`` and an untyped
        signature when it is malformed."""
        return schema_sig(schema, context, self.warn)

    def schema_type(self, schema: object, context: str) -> TypeRef:
        """The type a schema gives (Any without one); a warning naming ``context`` and Any when
        it is malformed."""
        if schema is None:
            return ANY
        try:
            return parse_schema(schema)
        except SchemaError as exc:
            self.warn(f"{context}: malformed type schema ({exc}); typed as Any")
            return ANY

    # -- functions ---------------------------------------------------------------------------
    def _function(self, f: FunctionSnap, mod: ModuleModel, name: str) -> FunctionModel:
        """The global or exported function ``f``, named ``name`` in ``mod``; its named result
        gets its final name once every function has claimed one (:meth:`declare`)."""
        ann = self.spelling.annotator(mod, f"function {f.name}")
        sig = self.schema_sig(f.schema, f"function {f.name}")
        doc = item_doc(f.doc, f"Registered as `{f.name}`.")
        if f.exported:
            doc = item_doc(f.doc, f"Exported by the library as `{f.name}`\n(symbol `__tvm_ffi_{f.name}`).")
            if sig.params is None and f.schema is None:
                self.warn(
                    f"exported function {f.name} has no type metadata, so it is generated untyped;"
                    " build the library with -DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1 to get types"
                )
        decl = callable_decl(name, sig, ann.annotation, f.doc, method=False, keywords=True)
        if decl.params is None:
            return FunctionModel(name, f.name, [], decl.ret, doc, typed=False, exported=f.exported)
        fn = FunctionModel(name, f.name, decl.params, decl.ret, doc, exported=f.exported)
        fn.result = named_result(sig.ret, f.doc, name, ann)
        return fn

    def finish(self, *, bundled: bool = False, record_absolute: bool = True) -> PackageModel:
        """The package, once every class body is built: classes ordered, imports derived from
        the annotations, import cycles checked, visitor hooks named."""
        for mod in self.modules.values():
            mod.classes.sort(key=lambda c: (c.depth, c.name))
            mod.classes = _topological(mod.classes)
        derive_imports(self.modules, self.used)
        check_import_cycles(self.modules)
        signatures = [f.params for m in self.modules.values() for f in m.functions]
        signatures += [m.params for c in self.classes.values() for m in c.methods]
        signatures += [c.init.params for c in self.classes.values() if c.init is not None]
        note = unnamed_note(signatures)
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
            visitors=visitor_hooks(self.classes, self.modules, self.used_packages),
            notes=[note] if note else [],
            bundled=bundled,
            record_absolute=record_absolute,
        )


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


def build_model(
    snap: Snapshot,
    name: str,
    prefixes: Iterable[str] = (),
    warn: Callable[[str], None] = lambda _m: None,
    used: Iterable[UsedPackage] = (),
    *,
    bundled: bool = False,
    record_absolute: bool = True,
) -> PackageModel:
    """Decide the whole package for ``snap``; ``used``: packages generated before for libraries
    this one extends (their classes become bases and annotations); ``bundled``: the library is
    copied into the package (``--bundle``); ``record_absolute``: the package also records the
    library's absolute path (off with ``--portable``)."""
    validate_package_name(name)
    builder = Builder(snap, name, list(prefixes), warn, used)
    builder.declare()
    builder.build_classes()
    return builder.finish(bundled=bundled, record_absolute=record_absolute)
