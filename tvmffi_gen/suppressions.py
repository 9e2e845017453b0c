"""What generated modules turn off for type checkers, and why: the mypy error codes of a module's
first-line comment, and the basedpyright default-mode rules its header turns off (each after the
reason it states), decided from the package model."""

from __future__ import annotations

import textwrap

from .layout import LINE_LENGTH
from .model import ClassModel, ModuleModel, PackageModel

__all__ = [
    "PYRIGHT_RULES_OFF",
    "VISITORS_RULES_OFF",
    "modules_on_import_cycles",
    "mypy_disabled_codes",
    "pyright_disabled_rules",
    "pyright_header",
]


def mypy_disabled_codes(mod: ModuleModel) -> list[str]:
    """The mypy error codes a generated module turns off, for its first-line comment."""
    codes: list[str] = []
    # a native function's def is a stub (docstring and ...) that its decorator replaces: mypy
    # reports such bodies as empty outside stub files
    if mod.functions or any(c.methods or c.replace for c in mod.classes):
        codes.append("empty-body")
    # mypy reports some incompatible overrides on the decorator line and some on the def line,
    # and accepts some overrides our check cannot prove compatible: the ignores we emit may be
    # unused, which --strict would otherwise report
    if (
        any(f.override_ignore for c in mod.classes for f in c.fields)
        or any(m.override_ignore for c in mod.classes for m in c.methods)
        or any(c.replace.override_ignore for c in mod.classes if c.replace)
    ):
        codes.append("unused-ignore")
    return codes


#: Rules of basedpyright's default ("recommended") mode that cannot apply to generated code, with
#: the reason a module that turns one off states for it. Only rules pyright itself has: a file's
#: ``# pyright: rule=false`` naming a rule only basedpyright knows (``reportAny``,
#: ``reportUnusedParameter``, ``reportUnannotatedClassAttribute``) is an error in pyright and
#: Pylance, in every mode, so those stay on (warnings in basedpyright's default mode, see
#: ``verify.BASEDPYRIGHT_ONLY_RULES``).
PYRIGHT_RULES_OFF = {
    "reportImplicitOverride": "Members override where the library's types do (typing.override needs Python 3.12)",
    "reportIncompatibleMethodOverride": "Methods override as the library's types do, also where"
    " the signatures differ (the lines mypy reports carry ``# type: ignore``, unread here)",
    "reportIncompatibleVariableOverride": "Fields override as the library's types do, also where"
    " their types differ (the lines mypy reports carry ``# type: ignore``, unread here)",
    "reportImportCycles": "Namespaces name each other's types as the library's types do; the"
    " imports for type checking close cycles the run-time imports do not have",
    "reportMissingSuperCall": "Each __init__ builds its object with the type's native"
    " __ffi_init__, not with the base class's __init__",
}

#: The reasons ``visitors.py`` gives (its hooks, not native functions).
VISITORS_RULES_OFF = {
    "reportImplicitOverride": "The hooks override those of the used packages' bases",
}


def pyright_header(rules: list[str], reasons: dict[str, str] = PYRIGHT_RULES_OFF) -> list[str]:
    """Comment lines turning ``rules`` (keys of ``reasons``) off, each after its reason."""
    if not rules:
        return []
    lines = ["# basedpyright's default mode: rules that cannot apply to generated code, and why."]
    for rule in rules:
        lines += textwrap.wrap(reasons[rule] + ":", LINE_LENGTH, initial_indent="# ", subsequent_indent="# ")
        lines.append(f"# pyright: {rule}=false")
    return lines


def modules_on_import_cycles(pkg: PackageModel) -> set[tuple[str, ...]]:
    """Namespaces whose modules import each other in a cycle, counting the imports made only for
    type checking (a parent's of its subpackages too), as pyright's import-cycle check does."""
    graph = {
        ns: (mod.runtime_imports | mod.type_imports | {tuple(sub.split(".")) for _, sub in mod.subpackages}) - {ns}
        for ns, mod in pkg.modules.items()
    }
    reach: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    for start in graph:
        seen: set[tuple[str, ...]] = set()
        todo = list(graph[start])
        while todo:
            ns = todo.pop()
            if ns in seen or ns not in graph:
                continue
            seen.add(ns)
            todo.extend(graph[ns])
        reach[start] = seen
    return {ns for ns in graph if ns in reach[ns]}


def pyright_disabled_rules(pkg: PackageModel, mod: ModuleModel, cyclic: set[tuple[str, ...]]) -> list[str]:
    """The keys of ``PYRIGHT_RULES_OFF`` that apply to ``mod``, in that table's order."""
    methods = [m for c in mod.classes for m in c.methods]
    rules = {
        "reportImplicitOverride": any(_overrides(pkg, c) for c in mod.classes),
        "reportIncompatibleMethodOverride": any(m.override_ignore for m in methods)
        or any(c.replace.override_ignore for c in mod.classes if c.replace),
        "reportIncompatibleVariableOverride": any(f.override_ignore for c in mod.classes for f in c.fields),
        "reportImportCycles": mod.namespace in cyclic,
        "reportMissingSuperCall": bool(mod.classes),
    }
    return [rule for rule in PYRIGHT_RULES_OFF if rules[rule]]


def _overrides(pkg: PackageModel, cls: ClassModel) -> bool:
    """Whether a method of ``cls`` overrides one of a base class (in the package or a --use one)."""
    if any(m.override_ignore for m in cls.methods) or (cls.replace is not None and cls.replace.overrides):
        return True
    inherited: set[str] = set()
    key = cls.base_key
    while key is not None and key in pkg.classes:
        inherited.update(m.name for m in pkg.classes[key].methods)
        key = pkg.classes[key].base_key
    return any(m.name in inherited for m in cls.methods)
