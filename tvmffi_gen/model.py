"""Package model: every decision about the generated package, made from a snapshot.

Names, types, imports, ordering and docstrings are decided in plain objects (these classes; built
by ``build.build_model``); ``layout.py`` and the templates only lay out the text.
Nothing here touches the library.
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from . import __version__
from .naming import Scope
from .runtime_files import field_kinds
from .typemap import ANY, Annotation, TypeRef
from .uses import UsedPackage

__all__ = [
    "PackageModel",
    "ModuleModel",
    "ClassModel",
    "FieldModel",
    "MethodModel",
    "FunctionModel",
    "Param",
    "ParamKind",
    "InitKind",
    "FieldKind",
    "FieldWrite",
    "KeyRef",
    "Target",
    "GenerationError",
]

Namespace = tuple[str, ...]


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
#: How ``_bind.field`` reads a field from object memory: the runtime's one table of field
#: layouts (``tvmffi_runtime._field_kinds``), loaded without the runtime.
if TYPE_CHECKING:
    from tvmffi_runtime._field_kinds import FieldKind
else:
    FieldKind = field_kinds().FieldKind


@dataclass(frozen=True)
class KeyRef:
    """A registry type generated as a class, before it is spelled in a module: by this package,
    or (``used``) by a ``--use`` package. Spelling it records the import it needs."""

    type_key: str
    used: bool = False


#: What a type key resolves to: a generated class, or a runtime class (``_rt.Object``).
Target = KeyRef | Annotation


@dataclass
class Param:
    name: str
    hint: Annotation  # its annotation (with the standard aliases it names)
    default: str | None = None  # Python source of the default, if any
    kind: ParamKind = "posonly"
    reg_name: str = ""  # name passed to the native init (auto-init)

    @property
    def annotation(self) -> str:
        return self.hint.text

    def render(self) -> str:
        text = f"{self.name}: {self.annotation}"
        if self.default is not None:
            text += f" = {self.default}"
        return text


@dataclass
class FieldModel:
    name: str
    reg_name: str
    getter: Annotation  # what reading it gives
    setter: Annotation  # what writing it takes (in the annotation only where it is writable)
    writable: bool
    doc: str
    kind: FieldKind | None  # read from memory by ``_bind.field`` (None: ``_bind.registry_field``)
    write: FieldWrite | None  # None: read-only
    offset: int
    accessor: str  # a module-level name unique to the field (its registry name may not be)
    override_ignore: bool = False
    ref: TypeRef = ANY  # the field's type, to annotate it again in a subclass's module
    owner: str = ""  # type key of the type that declares it (what its warnings name)

    @property
    def getter_type(self) -> str:
        return self.getter.text

    @property
    def setter_type(self) -> str:
        return self.setter.text


@dataclass
class MethodModel:
    name: str
    reg_name: str
    params: list[Param]
    returns: Annotation
    is_static: bool
    doc: str
    typed: bool = True
    override_ignore: bool = False
    signature_key: str = ""

    @property
    def ret(self) -> str:
        return self.returns.text


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
    ret: str  # the class's name (no standard alias)
    override_ignore: bool = False
    overrides: bool = False  # an ancestor's generated class has a ``replace`` of this name


@dataclass
class ClassModel:
    name: str
    type_key: str
    namespace: Namespace
    base: Annotation  # the base class expression in the class's module (set with the class body)
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
    items: list[tuple[str, Annotation]]  # (item name, annotation)

    @property
    def fields(self) -> list[tuple[str, str]]:
        """(item name, annotation text)."""
        return [(name, annotation.text) for name, annotation in self.items]


@dataclass
class FunctionModel:
    name: str
    reg_name: str
    params: list[Param]
    returns: Annotation
    doc: str
    typed: bool = True
    exported: bool = False
    result: ResultModel | None = None

    @property
    def ret(self) -> str:
        return self.returns.text


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


def default_package_name(out_dir: str) -> str:
    import os

    name = os.path.basename(os.path.normpath(out_dir))
    return name


def validate_package_name(name: str) -> None:
    for part in name.split("."):
        if not part.isidentifier() or keyword.iskeyword(part):
            raise GenerationError(f"package name {name!r} is not a valid Python module name")
