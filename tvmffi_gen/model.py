"""Package model: every decision about the generated package, made from a snapshot.

Names, types, imports, ordering and docstrings are decided here, in plain objects; templates only
lay out the text. Nothing here touches the library.
"""

from __future__ import annotations

import json
import keyword
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from . import __version__
from .docparams import documented_param_names, documented_result_names
from .layout import fit, fits
from .naming import RESERVED_CLASS, RESERVED_ENUM, RESERVED_MODULE, RESERVED_ROOT, Scope, py_name, snake_case
from .snapshot import FieldSnap, FunctionSnap, MethodSnap, Snapshot, TypeSnap
from .typemap import ANY, Annotator, FunctionSig, SchemaError, TypeRef, function_sig, parse_schema
from .uses import UsedClass, UsedPackage

__all__ = [
    "PackageModel",
    "ModuleModel",
    "ClassModel",
    "FieldModel",
    "MethodModel",
    "FunctionModel",
    "Param",
    "build_model",
    "GenerationError",
]

Namespace = tuple[str, ...]

# Fields read straight from object memory by a runtime descriptor (``_gen.field``), by layout:
# POD fields by (static type index, size, schema); an ObjectRef is one pointer; String, Bytes
# and Any are laid out as a TVMFFIAny.
_POD_KINDS = {
    (1, 8, "int"): "i64",
    (1, 4, "int"): "i32",
    (3, 8, "float"): "f64",
    (3, 4, "float"): "f32",
    (2, 1, "bool"): "bool",
}
# written in memory by the runtime (others: through the registry); the runtime's
# tvmffi_runtime.gen.IN_PLACE_FIELD_KINDS, checked equal by tests/test_runtime_layers.py (the
# generator does not import the runtime, which would load libtvm_ffi)
_IN_PLACE_KINDS = ("i64", "f64", "bool")
_SETTER_IS_FUNCTION = 1 << 11
# Runtime base classes for core types a generated class may derive from.
_RUNTIME_BASES = {
    "ffi.Object": "_rt.Object",
    "ffi.Enum": "_rt.Enum",
    "ffi.IntEnum": "_rt.IntEnum",
    "ffi.StrEnum": "_rt.StrEnum",
}


class GenerationError(RuntimeError):
    """The snapshot cannot be turned into a package; the message names what is at fault."""


#: How a parameter is passed: ``posonly`` (before ``/``), ``normal`` (by position or keyword),
#: ``kwonly`` (after ``*``), or ``varargs``: the lone ``*args: Any`` of an ``__ffi_init__`` whose
#: schema is unreadable (rendered as ``*args``; its name and annotation are not used).
ParamKind = Literal["posonly", "normal", "kwonly", "varargs"]
#: How a class is built: ``method`` (the type's ``__ffi_init__``), ``auto`` (reflected auto-init)
#: or ``none`` (not constructible from Python).
InitKind = Literal["method", "auto", "none"]
#: How a writable field is written: in object memory, or through the registry's setter.
FieldWrite = Literal["in_place", "registry"]


@dataclass(frozen=True)
class KeyRef:
    """A registry type generated as a class, before it is spelled in a module: by this package,
    or (``used``) by a ``--use`` package. Spelling it records the import it needs."""

    type_key: str
    used: bool = False


#: What a type key resolves to: a generated class, or a runtime class expression (``_rt.Object``).
Target = KeyRef | str


@dataclass
class Param:
    name: str
    annotation: str
    default: str | None = None  # Python source of the default, if any
    kind: ParamKind = "posonly"
    reg_name: str = ""  # name passed to the native init (auto-init)

    def render(self) -> str:
        text = f"{self.name}: {self.annotation}"
        if self.default is not None:
            text += f" = {self.default}"
        return text


def render_params(params: list[Param], first: str | None = None) -> list[str]:
    """Parameter list items with ``/`` and ``*`` markers where the kinds change."""
    items: list[str] = [first] if first else []
    posonly = [p for p in params if p.kind == "posonly"]
    normal = [p for p in params if p.kind == "normal"]
    kwonly = [p for p in params if p.kind == "kwonly"]
    items += [p.render() for p in posonly]
    if posonly:
        items.append("/")
    items += [p.render() for p in normal]
    if kwonly:
        items.append("*")
        items += [p.render() for p in kwonly]
    return items


def signature_lines(prefix: str, items: list[str], ret: str, indent: str, comment: str = "") -> list[str]:
    """``def name(a, b) -> R:`` on one line when it fits, else one parameter per line."""
    return fit(f"{prefix}(", items, f") -> {ret}:", indent, comment=comment)


def _doc(text: str, registry_line: str) -> str:
    """The registry's documentation of an item followed by where it comes from: on one line
    when the documentation is one line and both fit (members are indented once), else as a
    paragraph of its own."""
    text = text.strip()
    if not text:
        return registry_line
    if "\n" not in text:
        sentence = text if text.endswith((".", "!", "?", ":")) else f"{text}."
        joined = f"{sentence} {registry_line}"
        if fits(f'    """{joined}"""'):
            return joined
    return f"{text}\n\n{registry_line}"


@dataclass
class FieldModel:
    name: str
    reg_name: str
    getter_type: str
    setter_type: str
    writable: bool
    doc: str
    kind: str | None  # layout read from memory by ``_gen.field`` (None: ``_gen.registry_field``)
    write: FieldWrite | None  # None: read-only
    offset: int
    accessor: str  # a module-level name unique to the field (its registry name may not be)
    override_ignore: bool = False
    ref: TypeRef = ANY  # the field's type, to annotate it again in a subclass's module
    owner: str = ""  # type key of the type that declares it (what its warnings name)


@dataclass
class MethodModel:
    name: str
    reg_name: str
    params: list[Param]
    ret: str
    is_static: bool
    doc: str
    typed: bool = True
    override_ignore: bool = False
    signature_key: str = ""


@dataclass
class InitModel:
    kind: InitKind
    params: list[Param]
    doc: str


@dataclass
class ReplaceModel:
    """The class's ``replace`` (and ``__replace__``): keyword-only, one parameter per field."""

    name: str  # "replace", or with ``_`` appended where the library has a member of that name
    params: list[Param]
    ret: str
    override_ignore: bool = False
    overrides: bool = False  # an ancestor's generated class has a ``replace`` of this name


@dataclass
class ClassModel:
    name: str
    type_key: str
    namespace: Namespace
    base: str  # the base class expression in the class's module (set with the class body)
    base_key: str | None
    doc: str
    fields: list[FieldModel] = field(default_factory=list)
    methods: list[MethodModel] = field(default_factory=list)
    init: InitModel | None = None
    enum_entries: list[tuple[str, str]] = field(default_factory=list)  # (py name, registry name)
    depth: int = 0
    snake: str = ""
    pod_offsets: dict[str, int] = field(default_factory=dict)
    # field names in the constructor's positional order; None: no ``__match_args__`` line
    match_args: list[str] | None = None
    replace: ReplaceModel | None = None


@dataclass
class ResultModel:
    """A named tuple for a function's ``Tuple`` result whose items its documentation names."""

    name: str  # the class name (claimed in the module after the functions)
    fields: list[tuple[str, str]]  # (item name, annotation)


@dataclass
class FunctionModel:
    name: str
    reg_name: str
    params: list[Param]
    ret: str
    doc: str
    typed: bool = True
    exported: bool = False
    result: ResultModel | None = None


@dataclass
class ModuleModel:
    namespace: Namespace
    py_module: str
    path: tuple[str, ...]  # python package segments below the root
    classes: list[ClassModel] = field(default_factory=list)
    functions: list[FunctionModel] = field(default_factory=list)
    subpackages: list[tuple[str, str]] = field(default_factory=list)  # (py name, namespace)
    runtime_imports: set[Namespace] = field(default_factory=set)
    type_imports: set[Namespace] = field(default_factory=set)
    scope: Scope = field(default_factory=Scope)
    used_imports: set[str] = field(default_factory=set)  # modules of --use packages

    @property
    def file(self) -> str:
        return "/".join([*self.path, "__init__.py"])

    @property
    def is_root(self) -> bool:
        return not self.namespace

    def exported_names(self) -> list[str]:
        names = [c.name for c in self.classes] + [f.name for f in self.functions]
        names += [f.result.name for f in self.functions if f.result]
        return sorted(names)


@dataclass
class PackageModel:
    name: str
    library: str
    library_path: str
    tvm_ffi_version: str
    modules: dict[Namespace, ModuleModel]
    classes: dict[str, ClassModel]
    warnings: list[str]
    version: str = __version__
    env_var: str = ""
    bundled: bool = False
    #: Also record the library's absolute path, for a package-relative library found from a
    #: moved copy of the package (off with --portable: nothing machine-specific in the output).
    record_absolute: bool = True
    used_packages: list[UsedPackage] = field(default_factory=list)

    @property
    def has_exports(self) -> bool:
        return any(f.exported for m in self.modules.values() for f in m.functions)

    def module_alias(self, ns: Namespace) -> str:
        return "_ffi_ns_" + ("__".join(self.modules[ns].path) if ns else "root_")

    def header(self) -> str:
        return (
            f"# Generated by tvmffi-gen {self.version} from {self.library}"
            f" (TVM FFI {self.tvm_ffi_version}).\n"
            "# Do not edit generated members by hand: regenerate with tvmffi-gen instead."
        )


def _ns_of(key: str) -> tuple[Namespace, str]:
    parts = key.split(".")
    return tuple(parts[:-1]), parts[-1]


def _literal(value: object) -> str | None:
    """Python source for a JSON default, or None when not a simple literal."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return None


class _Builder:
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
        self._bases: dict[str, Target] = {}  # type key -> its base, spelled with the class body
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

    def build(self) -> PackageModel:
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
            self._bases[key] = nearest
            cls = ClassModel(
                name=mod.scope.claim(short),
                type_key=key,
                namespace=ns,
                base="",
                base_key=base_key,
                doc=_doc(t.doc, f"Registry type: ``{key}``."),
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
                    fn.result.name = fn.ret = mod.scope.claim(fn.result.name)
        # class bodies, parents before children so overrides can be checked
        for key in sorted(self.types, key=lambda k: (len(self.types[k].ancestors), k)):
            self._class_body(self.types[key], self.classes[key])
        for mod in self.modules.values():
            mod.classes.sort(key=lambda c: (c.depth, c.name))
            mod.classes = _topological(mod.classes)
        self._snake_names()
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
        return "_rt.Object", None

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

    # -- annotations ------------------------------------------------------------------------
    def annotator(self, mod: ModuleModel, context: str, member_names: set[str] | None = None) -> Annotator:
        def resolve(key: str) -> str | None:
            target = self._resolve_key(key)
            if target is None:
                return None
            return self.spell(target, mod, runtime=False, member_names=member_names)

        return Annotator(resolve_object=resolve, warn=self.warn, context=context)

    def _resolve_key(self, key: str) -> Target | None:
        """The class of ``key`` (or of its nearest known ancestor), or None if unknown."""
        from .typemap import RUNTIME_CLASSES

        if key in self.types:
            return KeyRef(key)
        if key in self.used:
            return KeyRef(key, used=True)
        if key in RUNTIME_CLASSES:
            return RUNTIME_CLASSES[key]
        if key in _RUNTIME_BASES:
            return _RUNTIME_BASES[key]
        ancestors = self.external.get(key)
        if ancestors is None:
            return None
        for anc in reversed(ancestors):
            if anc in self.types:
                return KeyRef(anc)
            if anc in self.used:
                return KeyRef(anc, used=True)
            if anc in RUNTIME_CLASSES:
                return RUNTIME_CLASSES[anc]
            if anc in _RUNTIME_BASES:
                return _RUNTIME_BASES[anc]
        return "_rt.Object"

    def spell(self, target: Target, mod: ModuleModel, runtime: bool, member_names: set[str] | None = None) -> str:
        """``target`` as ``mod`` spells it, recording the import that needs."""
        if isinstance(target, str):
            return target
        if target.used:
            return self.used_ref(target.type_key, mod)
        return self.class_ref(target.type_key, mod, runtime, member_names)

    def class_ref(self, key: str, mod: ModuleModel, runtime: bool, member_names: set[str] | None = None) -> str:
        cls = self.classes[key]
        if cls.namespace == mod.namespace and not (member_names and cls.name in member_names):
            return cls.name
        if cls.namespace != mod.namespace:
            (mod.runtime_imports if runtime else mod.type_imports).add(cls.namespace)
        else:
            mod.type_imports.add(cls.namespace)
        return f"{self.module_alias(cls.namespace)}.{cls.name}"

    def module_alias(self, ns: Namespace) -> str:
        return "_ffi_ns_" + ("__".join(self.modules[ns].path) if ns else "root_")

    def used_ref(self, key: str, mod: ModuleModel) -> str:
        """The class of ``key`` in a ``--use`` package, imported by ``mod``."""
        ucls = self.used[key]
        mod.used_imports.add(ucls.module)
        return f"{ucls.alias}.{ucls.name}"

    def used_members(self, t: TypeSnap) -> set[str]:
        """Member names ``t``'s classes inherit from ``--use`` packages (its whole chain)."""
        names: set[str] = set()
        for anc in t.ancestors:
            ucls = self.used.get(anc)
            if ucls is not None:
                names |= ucls.members
        return names

    def _sig(self, schema: object, context: str) -> FunctionSig:
        try:
            return function_sig(schema)
        except SchemaError as exc:
            self.warn(f"{context}: malformed type schema ({exc}); typed as Any")
            return FunctionSig(None, ANY)

    def _type(self, schema: object, context: str) -> TypeRef:
        if schema is None:
            return ANY
        try:
            return parse_schema(schema)
        except SchemaError as exc:
            self.warn(f"{context}: malformed type schema ({exc}); typed as Any")
            return ANY

    # -- functions ---------------------------------------------------------------------------
    def _params(self, sig: FunctionSig, ann: Annotator, skip_self: bool, doc: str = "") -> list[Param]:
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
        for i, (p, n) in enumerate(zip(params, names)):
            if named and n:
                pname = scope.claim(n)
            elif documented is not None:
                pname = scope.claim(documented[i])
            else:
                pname = scope.claim(f"_{i}")
            keyword = named or documented is not None  # real names: callers may use them
            out.append(Param(pname, ann.annotate(p, "arg"), None, "normal" if keyword else "posonly"))
        return out

    def _function(self, f: FunctionSnap, mod: ModuleModel, name: str) -> FunctionModel:
        ann = self.annotator(mod, f"function {f.name}")
        sig = self._sig(f.schema, f"function {f.name}")
        doc = _doc(f.doc, f"Registry function: ``{f.name}``.")
        if f.exported:
            doc = _doc(f.doc, f"Exported function: ``{f.name}``\n(symbol ``__tvm_ffi_{f.name}``).")
            if sig.params is None and f.schema is None:
                self.warn(
                    f"exported function {f.name} has no type metadata, so it is generated untyped;"
                    " build the library with -DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1 to get types"
                )
        if sig.params is None:
            return FunctionModel(name, f.name, [], "_t.Any", doc, typed=False, exported=f.exported)
        params = self._params(sig, ann, skip_self=False, doc=f.doc)
        fn = FunctionModel(name, f.name, params, ann.annotate(sig.ret, "return"), doc, exported=f.exported)
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
        items = [(n, ann.annotate(t, "return")) for n, t in zip(names, ret.args)]
        words = {w for _, a in items for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", a)}
        if words & set(names):  # an item named like a type its class body refers to
            return None
        return ResultModel(f"{camel or 'Function'}Result", items)

    # -- classes -----------------------------------------------------------------------------
    def _inherited(self, cls: ClassModel) -> tuple[dict[str, FieldModel], dict[str, MethodModel]]:
        fields: dict[str, FieldModel] = {}
        methods: dict[str, MethodModel] = {}
        chain = []
        key = cls.base_key
        seen = {cls.type_key}
        while key is not None:
            if key in seen:
                raise GenerationError(f"type {cls.type_key}: its ancestors form a cycle through {key}")
            seen.add(key)
            chain.append(self.classes[key])
            key = self.classes[key].base_key
        for anc in reversed(chain):
            for fm in anc.fields:
                fields[fm.name] = fm
            for mm in anc.methods:
                methods[mm.name] = mm
        return fields, methods

    def _class_body(self, t: TypeSnap, cls: ClassModel) -> None:
        mod = self.modules[cls.namespace]
        cls.base = self.spell(self._bases[cls.type_key], mod, runtime=True)
        inherited_fields, inherited_methods = self._inherited(cls)
        from_used = self.used_members(t)
        reserved = RESERVED_CLASS | RESERVED_ENUM if "ffi.Enum" in t.ancestors else RESERVED_CLASS
        # the class's own name too: a member named like it would hide it in the class body
        inherited_entries: set[str] = set()
        key = cls.base_key
        while key is not None:  # enum entries of ancestors are class attributes too
            inherited_entries.update(n for n, _ in self.classes[key].enum_entries)
            key = self.classes[key].base_key
        scope = Scope(
            reserved,
            taken=set(inherited_fields) | set(inherited_methods) | inherited_entries | from_used | {cls.name},
        )
        member_names: set[str] = set()
        # Rule 3, class scope: fields, then methods, then enum entries.
        # A member named like an inherited member of the same kind overrides it (keeps the
        # name); only the first one does, the rest are claimed like any other name.
        field_names: list[tuple[FieldSnap, str]] = []
        for f in t.fields:
            name = py_name(f.name, reserved)
            if name in inherited_fields and name not in member_names:
                scope.taken.add(name)
            else:
                name = scope.claim(f.name)
            field_names.append((f, name))
            member_names.add(name)
        method_names: list[tuple[MethodSnap, str]] = []
        for m in t.methods:
            name = py_name(m.name, reserved)
            if name in inherited_methods and name not in member_names:
                scope.taken.add(name)
            else:
                name = scope.claim(m.name)
            method_names.append((m, name))
            member_names.add(name)
        entries = [(scope.claim(e), e) for e in (t.enum_entries or [])]
        member_names.update(n for n, _ in entries)
        cls.enum_entries = entries
        for f, name in field_names:
            cls.fields.append(self._field(t, cls, f, name, mod, member_names, inherited_fields))
        for m, name in method_names:
            cls.methods.append(self._method(t, cls, m, name, mod, member_names, inherited_methods))
        cls.init = self._init(t, cls, mod, member_names)
        cls.match_args = self._match_args(t, cls, inherited_fields)
        if "ffi.Enum" not in t.ancestors:  # enum entries are interned: never copied
            cls.replace = self._replace(t, cls, mod, member_names, inherited_fields, inherited_methods, from_used)
        members: list[FieldModel | MethodModel] = [*cls.fields, *cls.methods]
        for member in members:
            if member.name in from_used:  # overrides a member we cannot compare: let mypy be
                member.override_ignore = True
        cls.pod_offsets = {
            f.reg_name: f.offset for f in cls.fields if f.kind
        }

    def _field(
        self,
        t: TypeSnap,
        cls: ClassModel,
        f: FieldSnap,
        name: str,
        mod: ModuleModel,
        members: set[str],
        inherited: dict[str, FieldModel],
    ) -> FieldModel:
        context = f"field {t.type_key}.{f.name}"
        ann = self.annotator(mod, context, members)
        ref = self._type(f.schema, context)
        getter = ann.annotate(ref, "return")
        setter = ann.annotate(ref, "param")
        kind = _POD_KINDS.get((f.static_type_index, f.size, ref.key))
        if kind is None and f.size == 8 and f.static_type_index >= 64:
            kind = "object"  # an ObjectRef: one pointer, null for None
        elif kind is None and f.size == 16 and ref.key in ("ffi.String", "ffi.Bytes", "Any"):
            kind = "any"  # laid out as a TVMFFIAny
        write: FieldWrite | None = None
        if f.writable:
            # in place as the registry setter would, unless the setter is a function of its own
            in_place = kind in _IN_PLACE_KINDS and not f.flags & _SETTER_IS_FUNCTION
            write = "in_place" if in_place else "registry"
        doc = _doc(f.doc, f"Registry field: ``{t.type_key}.{f.name}``" + ("" if f.writable else " (read-only)") + ".")
        fm = FieldModel(
            name=name,
            reg_name=f.name,
            getter_type=getter,
            setter_type=setter,
            writable=f.writable,
            doc=doc,
            kind=kind,
            write=write,
            offset=f.offset,
            accessor=f"_ffi_field_{cls.name}_{name}",
            ref=ref,
            owner=t.type_key,
        )
        base = inherited.get(name)
        if base is not None and (base.getter_type != getter or base.writable != f.writable):
            fm.override_ignore = True
        return fm

    def _method(
        self,
        t: TypeSnap,
        cls: ClassModel,
        m: MethodSnap,
        name: str,
        mod: ModuleModel,
        members: set[str],
        inherited: dict[str, MethodModel],
    ) -> MethodModel:
        context = f"method {t.type_key}.{m.name}"
        ann = self.annotator(mod, context, members)
        sig = self._sig(m.schema, context)
        doc = _doc(m.doc, f"Registry method: ``{t.type_key}.{m.name}``" + (" (static)" if m.is_static else "") + ".")
        if sig.params is None or (not m.is_static and not sig.params):
            mm = MethodModel(name, m.name, [], "_t.Any", m.is_static, doc, typed=False)
        else:
            params = self._params(sig, ann, skip_self=not m.is_static, doc=m.doc)
            mm = MethodModel(name, m.name, params, ann.annotate(sig.ret, "return"), m.is_static, doc)
        mm.signature_key = repr((mm.is_static, [(p.annotation, p.kind) for p in mm.params], mm.typed))
        base = inherited.get(name)
        if base is not None:
            same_params = base.signature_key == mm.signature_key
            if not same_params or not self._return_compatible(base.ret, mm.ret, mod):
                mm.override_ignore = True
        return mm

    def _match_args(self, t: TypeSnap, cls: ClassModel, inherited: dict[str, FieldModel]) -> list[str] | None:
        """Field names in the order the constructor takes them positionally: auto-init's
        positional parameters, or the leading ``__ffi_init__`` parameters named like fields
        (up to the first that is not an attribute of the class, e.g. a field of a preloaded
        library's type). None (no line) where there is no order and no ancestor's to hide."""
        attrs = {f.reg_name: f.name for f in self._used_fields(t)}  # registry name -> attribute
        attrs.update({f.reg_name: f.name for f in [*inherited.values(), *cls.fields]})
        order: list[str] = []
        init = cls.init
        if init is not None and init.kind == "auto":
            for p in init.params:
                if p.kind != "normal" or p.reg_name not in attrs:
                    break
                order.append(attrs[p.reg_name])
        elif init is not None and init.kind == "method":
            for p in init.params:
                if p.kind != "normal" or p.name not in attrs.values():
                    break
                order.append(p.name)
        if order:
            return order
        key = cls.base_key
        while key is not None:
            if self.classes[key].match_args:
                return []  # a positional pattern must not match by the ancestor's order
            key = self.classes[key].base_key
        return None

    def _used_fields(self, t: TypeSnap) -> list[FieldModel]:
        """Fields ``t`` inherits from ancestors in ``--use`` packages (attributes of their
        generated classes, named by the same rule), ancestors first; only name, registry name
        and type are filled in."""
        out: list[FieldModel] = []
        for anc in t.ancestors:
            if anc in self.used and anc not in self.types:
                for fs in self.snap.external_fields.get(anc, []):
                    ref = self._type(fs.schema, f"field {anc}.{fs.name}")
                    out.append(FieldModel(py_name(fs.name, RESERVED_CLASS), fs.name, "", "", fs.writable, "",
                                          None, None, 0, "", ref=ref, owner=anc))
        return out

    def _replace(
        self,
        t: TypeSnap,
        cls: ClassModel,
        mod: ModuleModel,
        members: set[str],
        inherited_fields: dict[str, FieldModel],
        inherited_methods: dict[str, MethodModel],
        from_used: set[str],
    ) -> ReplaceModel | None:
        """``replace(self, *, field=KEEP, ...)``, fields of the whole chain, ancestors first.

        Named ``replace`` unless the library has a member of that name (a field or method of
        the type or an ancestor): then ``replace_`` (``_`` appended until free)."""
        chain = {**inherited_fields, **{f.name: f for f in cls.fields}}
        if "self" in chain:
            return None  # a field named self cannot be a parameter of a method
        library = set(chain) | set(inherited_methods) | {m.name for m in cls.methods}
        library |= {n for n, _ in cls.enum_entries}
        name = "replace"
        while name in library:
            name += "_"
        params: list[Param] = []
        ignore = bool(from_used)
        # fields of ancestors in ``--use`` packages first (their classes are generated too, named
        # by the same rule), then the package's own chain
        for uf in self._used_fields(t):
            if uf.name in chain or uf.name == "self" or any(p.name == uf.name for p in params):
                continue
            ann = self.annotator(mod, f"field {uf.owner}.{uf.reg_name}", members)  # warned once
            params.append(Param(uf.name, ann.annotate(uf.ref, "param"), "_gen.KEEP", "kwonly", uf.reg_name))
        for f in chain.values():
            ann = self.annotator(mod, f"field {f.owner}.{f.reg_name}", members)  # warned once
            params.append(Param(f.name, ann.annotate(f.ref, "param"), "_gen.KEEP", "kwonly", f.reg_name))
            ignore = ignore or f.override_ignore
        overrides = any(anc in self.used for anc in t.ancestors)  # its classes have one too
        key = cls.base_key
        while key is not None:
            base = self.classes[key].replace
            if base is not None:
                overrides = overrides or base.name == name
                ignore = ignore or base.name != name  # an ancestor's replace under another name
            key = self.classes[key].base_key
        return ReplaceModel(name, params, cls.name, ignore, overrides)

    def _return_compatible(self, base_ret: str, ret: str, mod: ModuleModel) -> bool:
        if base_ret == ret or base_ret == "_t.Any" or ret == "_t.Any":
            return True
        return False

    def _init(self, t: TypeSnap, cls: ClassModel, mod: ModuleModel, members: set[str]) -> InitModel:
        context = f"type {t.type_key} __ffi_init__"
        if t.init == "method":
            sig = self._sig(t.init_schema, context)
            if sig.params is None:
                return InitModel("method", [Param("args", "_t.Any", None, "varargs")], t.init_doc)
            ann = self.annotator(mod, context, members)
            return InitModel("method", self._params(sig, ann, skip_self=False, doc=t.init_doc), t.init_doc)
        if t.init == "auto":
            return InitModel("auto", self._auto_init_params(t, mod, members), "")
        return InitModel("none", [], "")

    def _field_py_name(self, owner: str, reg_name: str) -> str | None:
        cls = self.classes.get(owner)
        if cls is not None:
            for fm in cls.fields:
                if fm.reg_name == reg_name:
                    return fm.name
        return None

    def _auto_init_params(self, t: TypeSnap, mod: ModuleModel, members: set[str]) -> list[Param]:
        # Fields of the whole chain, ancestors first, as the native auto-init binds them; each
        # parameter is named like the field's property.
        chain: list[tuple[str, FieldSnap]] = []
        for anc in t.ancestors:
            snap = self.types.get(anc)
            if snap is not None:
                chain += [(anc, f) for f in snap.fields]
            else:  # a type of a preloaded library
                chain += [(anc, f) for f in self.snap.external_fields.get(anc, [])]
        chain += [(t.type_key, f) for f in t.fields]
        scope = Scope(RESERVED_MODULE | {"self"})
        required: list[Param] = []
        optional: list[Param] = []
        kwonly: list[Param] = []
        for owner, f in chain:
            if not f.init or (owner != t.type_key and f.name in t.init_excluded):
                continue  # not a parameter of the native init (see TypeSnap.init_excluded)
            ann = self.annotator(mod, f"field {owner}.{f.name}", members)
            annotation = ann.annotate(self._type(f.schema, f"field {owner}.{f.name}"), "arg")
            default = None
            if f.has_default:
                lit = None if f.default_is_factory or f.default_repr else _literal(f.default)
                default = lit if lit is not None else "_ffi_MISSING"
                if default == "None" and annotation != "_t.Any" and not annotation.endswith("| None"):
                    annotation += " | None"  # a nullable field whose schema does not say Optional
            p = Param(scope.claim(self._field_py_name(owner, f.name) or f.name), annotation, default,
                      "kwonly" if f.kw_only else "normal", f.name)
            if f.kw_only:
                kwonly.append(p)
            elif f.has_default:
                optional.append(p)
            else:
                required.append(p)
        return required + optional + kwonly

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


def default_package_name(out_dir: str) -> str:
    import os

    name = os.path.basename(os.path.normpath(out_dir))
    return name


def validate_package_name(name: str) -> None:
    for part in name.split("."):
        if not part.isidentifier() or keyword.iskeyword(part):
            raise GenerationError(f"package name {name!r} is not a valid Python module name")


def build_model(
    snap: Snapshot,
    name: str,
    prefixes: Iterable[str] = (),
    warn: Callable[[str], None] = lambda _m: None,
    used: Iterable[UsedPackage] = (),
) -> PackageModel:
    """Decide the whole package for ``snap``; ``used``: packages generated before for libraries
    this one extends (their classes become bases and annotations)."""
    validate_package_name(name)
    return _Builder(snap, name, list(prefixes), warn, used).build()
