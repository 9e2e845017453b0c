"""The face of a generated module: the ``.pyi`` beside its ``__init__.py``, which type checkers and
IDEs read in its place (as they read mypy-protobuf's and nanobind's stubs).

The ``.py`` holds what runs: each field a runtime descriptor, each native function a decorated
def, every name spelled through a private import alias so that no registry name can meet an
import. The face says the same API as a reader wants to see it, from the same model: a field is
its value type (``a: Final[int]`` where it is read-only, ``v: int`` where it reads and writes one
type, a property and its setter where it writes a wider type than it reads), a signature names
``Mapping[str, int]`` and ``SupportsIndex``, not ``_abc.Mapping``; a name is imported by its
own name wherever no name of the module (a class, function, subpackage, or a member of one of
its classes) takes it, else through the ``.py``'s alias.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import jinja2

from ..model.declarations import never_params
from ..model.package import (
    CallableDecl,
    ClassModel,
    FieldModel,
    FunctionModel,
    MethodModel,
    ModuleModel,
    PackageModel,
    Param,
)
from ..model.typemap import Annotation
from ..model.uses import used_module_alias
from ..text.layout import broken, fits
from .declarations import Style, callable_lines, field_text, with_doc
from .import_lines import STANDARD_IMPORTS
from .parts import init_doc, match_args_line, module_header, replace_doc, result_doc
from .suppressions import (
    line_ignore,
    line_rules_written,
    modules_on_import_cycles,
    mypy_disabled_codes,
    pyright_disabled_rules,
    pyright_header,
)

__all__ = ["FaceNames", "face_names", "render_face"]

#: A name spelled through an import alias: ``_t.Any``, ``_rt.Array``, ``_ffi_ns_ir.Expr``.
_QUALIFIED = re.compile(r"(?<![\w.])(_[A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)")

#: What the ``.py``'s standard aliases import (``import_lines.STANDARD_IMPORTS``), as modules.
_STANDARD_MODULES = {
    "_os": "os",
    "_ctypes": "ctypes",
    "_t": "typing",
    "_abc": "collections.abc",
    "_rt": "tvmffi_runtime",
}

#: A constructor's result.
_NONE = Annotation("None")

#: Names of ``typing`` the face's own lines use, beyond those its annotations name.
_FINAL, _CLASS_VAR, _NO_RETURN, _ANY, _NAMED_TUPLE = (
    "_t.Final",
    "_t.ClassVar",
    "_t.NoReturn",
    "_t.Any",
    "_t.NamedTuple",
)


@dataclass
class FaceNames:
    """How one module's face spells each name its ``.py`` spells through an alias."""

    plain: dict[str, str]  # "alias.Name" -> "Name", for each name imported by its own name
    imports: dict[str, list[str]]  # module -> the names imported from it, sorted
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> module, for the names that are not

    def text(self, annotation: str) -> str:
        """``annotation`` as the face writes it."""

        def one(m: re.Match[str]) -> str:
            return self.plain.get(m.group(0), m.group(0))

        return _QUALIFIED.sub(one, annotation)


def _module_names(mod: ModuleModel) -> set[str]:
    """Every name the module or one of its class bodies binds: an import by the same name would
    be hidden by it (in a class body, annotations look in the class first)."""
    names = {c.name for c in mod.classes} | {f.name for f in mod.functions} | {sub for sub, _ in mod.subpackages}
    names |= {f.result.name for f in mod.functions if f.result is not None}
    for cls in mod.classes:
        names |= {f.name for f in cls.fields} | {m.name for m in cls.methods} | {py for py, _ in cls.enum_entries}
        if cls.replace is not None:
            names.add(cls.replace.name)
    return names


def face_texts(mod: ModuleModel) -> list[str]:
    """Every text of ``mod``'s face that may name an aliased name: its annotations and the
    ``typing`` names the face's lines add."""
    bases, others = mod.annotations()
    texts = [a.text for a in bases + others]
    untyped = [not f.typed for f in mod.functions] + [not m.typed for c in mod.classes for m in c.methods]
    untyped += [bool(c.init and c.init.params and c.init.params[0].kind == "varargs") for c in mod.classes]
    if any(untyped):  # (*args: Any) -> Any
        texts.append(_ANY)
    if any(f.write is None for c in mod.classes for f in c.fields):
        texts.append(_FINAL)
    if any(c.enum_entries for c in mod.classes):
        texts.append(_CLASS_VAR)
    if any(c.init is not None and c.init.kind == "none" for c in mod.classes):
        texts.append(_NO_RETURN)
    if any(f.result is not None for f in mod.functions):
        texts.append(_NAMED_TUPLE)
    return texts


def face_names(pkg: PackageModel, mod: ModuleModel) -> FaceNames:
    """Spell each aliased name ``mod``'s face uses by its own name, imported from its module,
    unless a name of the module takes it or two modules offer it; those keep the ``.py``'s alias."""
    modules = {m.alias: m.py_module for m in pkg.modules.values()}
    modules.update({used_module_alias(u): u for u in mod.used_imports})
    modules.update(_STANDARD_MODULES)
    wanted: dict[str, set[str]] = {}
    for text in face_texts(mod):
        for m in _QUALIFIED.finditer(text):
            if m.group(1) in modules:
                wanted.setdefault(m.group(2), set()).add(m.group(1))
    taken = _module_names(mod)
    plain: dict[str, str] = {}
    imports: dict[str, list[str]] = {}
    aliases: dict[str, str] = {}
    for name, sources in sorted(wanted.items()):
        if len(sources) == 1 and name not in taken:
            (alias,) = sources
            plain[f"{alias}.{name}"] = name
            imports.setdefault(modules[alias], []).append(name)
        else:
            aliases.update({alias: modules[alias] for alias in sources})
    return FaceNames(plain, {k: sorted(v) for k, v in sorted(imports.items())}, dict(sorted(aliases.items())))


def _import_lines(names: FaceNames) -> list[list[str]]:
    """The face's imports in groups: the standard library, then the runtime, then the package's
    own and ``--use`` packages' modules (a group without lines left out)."""
    standard = {module for group in STANDARD_IMPORTS[:1] for module in (_STANDARD_MODULES[a] for a in group)}
    groups: list[list[str]] = [[], [], []]

    def group_of(module: str) -> int:
        return 0 if module in standard else 1 if module == "tvmffi_runtime" else 2

    for alias, module in names.aliases.items():
        groups[group_of(module)].append(f"import {module} as {alias}")
    for module, imported in names.imports.items():
        one = f"from {module} import {', '.join(imported)}"
        groups[group_of(module)] += [one] if fits(one) else broken(f"from {module} import (", imported, ")", "")
    return [g for g in groups if g]


class _Face:
    """The helpers ``module.pyi.jinja`` calls for one module, in the module's face names."""

    def __init__(self, names: FaceNames) -> None:
        self.names = names
        self.style: Style = Style(final=names.text(_FINAL), spell=names.text, mark=_any_ignored, setter_doc=True)

    def t(self, text: str) -> str:
        """An annotation's text in the face's names."""
        return self.names.text(text)

    def defn(self, lines: list[str], doc: str, indent: str) -> str:
        """A def's lines, then its docstring, or ``...`` after its colon where it has none."""
        return with_doc(lines, doc, indent)

    def class_line(self, cls: ClassModel) -> str:
        return f"class {cls.name}({self.t(cls.base.text)}):"

    def field_text(self, f: FieldModel) -> str:
        """A field as its value, with its docstring (``render.declarations.field_text``)."""
        return field_text(f.decl, self.style, "    ", f.override_ignore)

    def entry_line(self, cls: ClassModel, name: str) -> str:
        return f"    {name}: {self.t(_CLASS_VAR)}[{cls.name}]"

    def match_args_line(self, cls: ClassModel) -> str:
        return match_args_line(cls)

    def init_lines(self, cls: ClassModel) -> list[str]:
        assert cls.init is not None
        params: list[Param] | None = cls.init.params
        if cls.init.kind == "none":
            params = never_params(Annotation(_NO_RETURN))
        elif params and params[0].kind == "varargs":
            params = None  # an unreadable schema: (*args: Any)
        return callable_lines(CallableDecl("__init__", params, _NONE), self.style, "    ", "self")

    def method_lines(self, m: MethodModel) -> list[str]:
        head = ["    @staticmethod"] if m.is_static else []
        ignore = "  # type: ignore[override, misc]" if m.override_ignore else ""
        return head + callable_lines(m.decl, self.style, "    ", None if m.is_static else "self", ignore)

    def replace_lines(self, cls: ClassModel) -> list[str]:
        assert cls.replace is not None
        r = cls.replace
        ignore = "  # type: ignore[override, misc]" if r.override_ignore else ""
        return callable_lines(CallableDecl(r.name, r.params, Annotation(r.ret)), self.style, "    ", "self", ignore)

    def function_lines(self, fn: FunctionModel) -> list[str]:
        return callable_lines(fn.decl, self.style, "", None)


#: ``Any`` as a name in a line of code (an annotation).
_ANY_NAME = re.compile(r"(?<![\w.])Any\b")
#: A parameter annotated ``Any`` itself, which basedpyright reports in a stub too.
_ANY_PARAMETER = re.compile(r"\w: Any(?=[,)]| =)")


def _any_ignored(lines: list[str]) -> list[str]:
    """Lines of code (a declaration laid out; no docstring) with basedpyright's
    ``reportExplicitAny`` turned off on each that names ``Any`` (``reportAny`` too where a
    parameter is ``Any`` itself), after a ``# type: ignore`` already there (which mypy reads
    only at the start of a comment)."""
    out: list[str] = []
    for line in lines:
        rules: set[str] = set()
        code = line.partition("  #")[0]
        if _ANY_NAME.search(code):
            rules.add("reportExplicitAny")
        if _ANY_PARAMETER.search(code):
            rules.add("reportAny")
        out.append(line + line_ignore(rules))
    return out


def render_face(
    env: jinja2.Environment, pkg: PackageModel, mod: ModuleModel, header: str, module_doc: str, all_lines: str
) -> str:
    """The ``.pyi`` of ``mod``."""
    names = face_names(pkg, mod)
    face = _Face(names)
    with line_rules_written() as line_rules:
        body = env.get_template("module.pyi.jinja").render(
            pkg=pkg,
            mod=mod,
            face=face,
            module_doc=module_doc,
            all_lines=all_lines,
            result_doc=result_doc,
            init_doc=init_doc,
            replace_doc=replace_doc,
            line_ignore=line_ignore,
            import_groups=_import_lines(names),
        )
    # a stub has no __init__ body; a field written wider than read is a property with a setter
    cyclic = modules_on_import_cycles(pkg)
    rules = [r for r in pyright_disabled_rules(pkg, mod, cyclic, fields_in_body=True) if r != "reportMissingSuperCall"]
    if any(f.write is not None and f.getter_type != f.setter_type for c in mod.classes for f in c.fields):
        rules.append("reportPropertyTypeMismatch")
    mypy_codes = [c for c in mypy_disabled_codes(mod, fields_in_body=True) if c != "empty-body"]
    return module_header(header, mypy_codes, pyright_header(rules, line_rules=line_rules)) + body
