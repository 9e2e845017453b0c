"""What generated modules turn off for type checkers, and why: the mypy error codes of a module's
first-line comment, the basedpyright default-mode rules its header turns off (each after the
reason it states), and the basedpyright-only rules single lines turn off (the header states
why), decided from the package model."""

from __future__ import annotations

import contextlib
import contextvars
import re
import textwrap
from collections.abc import Generator, Iterable

from ..model.naming import OBJECT_MEMBERS
from ..model.package import ClassModel, ModuleModel, PackageModel
from ..text.layout import LINE_LENGTH

__all__ = [
    "LINE_RULES",
    "PYRIGHT_RULES_OFF",
    "VISITORS_RULES_OFF",
    "base_member_names",
    "line_ignore",
    "line_rules_written",
    "lines_ignoring",
    "parameter_rules",
    "modules_on_import_cycles",
    "mypy_disabled_codes",
    "pyright_disabled_rules",
    "pyright_header",
]


def mypy_disabled_codes(mod: ModuleModel, *, fields_in_body: bool) -> list[str]:
    """The mypy error codes a generated module turns off, for its first-line comment;
    ``fields_in_body``: its classes declare their fields in their bodies (the face), where a
    field can override a base class's (the ``.py`` declares them in a nested class)."""
    codes: list[str] = []
    # a native function's def is a stub (docstring and ...) that its decorator replaces: mypy
    # reports such bodies as empty outside stub files
    if mod.functions or any(c.methods or c.replace for c in mod.classes):
        codes.append("empty-body")
    # mypy reports some incompatible overrides on the decorator line and some on the def line,
    # and accepts some overrides our check cannot prove compatible: the ignores we emit may be
    # unused, which --strict would otherwise report
    if (
        (fields_in_body and any(f.override_ignore for c in mod.classes for f in c.fields))
        or any(m.override_ignore for c in mod.classes for m in c.methods)
        or any(c.replace.override_ignore for c in mod.classes if c.replace)
    ):
        codes.append("unused-ignore")
    return codes


#: Rules of basedpyright's default ("recommended") mode that cannot apply to generated code, with
#: the reason a module that turns one off states for it. Only rules pyright itself has: a file's
#: ``# pyright: rule=false`` naming a rule only basedpyright knows (``reportAny``,
#: ``reportUnusedParameter``, ``reportUnannotatedClassAttribute``) is an error in pyright and
#: Pylance, in every mode, so the lines they apply to turn those off (``LINE_RULES``).
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
    "reportPropertyTypeMismatch": "A field's setter takes what the runtime converts (a sequence"
    " for an Array, a str for a DataType), more than a read of it gives",
}

#: The reasons ``visitors.py`` gives (its hooks, not native functions).
VISITORS_RULES_OFF = {
    "reportImplicitOverride": "The hooks override those of the used packages' bases",
}


#: Rules only basedpyright has, which a generated line turns off with ``# pyright:
#: ignore[rule]`` where it applies, and why (the module header states it once). A file-level
#: ``# pyright: rule=false`` naming one of them is an error in pyright and Pylance, in every mode;
#: a line's ignore comment naming a rule pyright does not know is not.
LINE_RULES = {
    "reportUnusedParameter": "The def of a native function or method declares its signature; its"
    " decorator puts the native call in its place, so the def's body reads no parameter",
    "reportAny": "Where the registry types a value as any value (ffi Any), its annotation is Any",
    "reportUnannotatedClassAttribute": "__match_args__ and __replace__ take their types from"
    " their values: the literal field names a class pattern reads, and the replace method",
    "reportExplicitAny": "Where the registry types a value as any value (ffi Any), a stub's annotation says Any",
}


def pyright_header(
    rules: list[str], reasons: dict[str, str] = PYRIGHT_RULES_OFF, line_rules: Iterable[str] = ()
) -> list[str]:
    """Comment lines turning ``rules`` (keys of ``reasons``) off, each after its reason, then the
    reasons for the ``line_rules`` (keys of ``LINE_RULES``) lines of the module turn off."""
    lines: list[str] = []
    if rules:
        lines.append("# basedpyright's default mode: rules that cannot apply to generated code, and why.")
    for rule in rules:
        lines += textwrap.wrap(reasons[rule] + ":", LINE_LENGTH, initial_indent="# ", subsequent_indent="# ")
        lines.append(f"# pyright: {rule}=false")
    used = sorted(set(line_rules))
    if used:
        lines.append("# Rules only basedpyright has, which single lines turn off (a pyright ignore comment), and why:")
    for rule in used:
        lines += textwrap.wrap(
            f"{rule}: {LINE_RULES[rule]}.", LINE_LENGTH, initial_indent="# ", subsequent_indent="#   "
        )
    return lines


#: The rules the ignore comments written so far turn off, while ``line_rules_written`` records.
_WRITTEN: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("_WRITTEN", default=None)


@contextlib.contextmanager
def line_rules_written() -> Generator[set[str], None, None]:
    """Record the rules each ``line_ignore`` comment turns off while the block runs (a module's
    body is rendered in it), so its header can state the reasons for them."""
    written: set[str] = set()
    token = _WRITTEN.set(written)
    try:
        yield written
    finally:
        _WRITTEN.reset(token)


def line_ignore(rules: Iterable[str]) -> str:
    """The trailing comment turning ``rules`` (keys of ``LINE_RULES``) off on one line, or ""."""
    names = sorted(set(rules))
    written = _WRITTEN.get()
    if written is not None:
        written.update(names)
    return f"  # pyright: ignore[{', '.join(names)}]" if names else ""


def parameter_rules(name: str, annotation: str, *, reads_parameters: bool) -> set[str]:
    """What basedpyright's default mode reports on a parameter of a generated def: an ``Any``
    annotation, and (where the def is a stub whose parameters nothing reads: not a dunder, not an
    override) a name that does not start with an underscore."""
    rules: set[str] = {"reportAny"} if annotation == "_t.Any" else set()
    if not reads_parameters and not name.startswith("_") and name not in ("self", "cls"):
        rules.add("reportUnusedParameter")
    return rules


def lines_ignoring(lines: list[str], marks: list[tuple[str, set[str]]], first: Iterable[str] = ()) -> list[str]:
    """``lines`` (a laid-out statement) with the ignore comment each needs: ``marks`` pairs an
    item's text (a parameter as written) with the rules reported on it, in the order the items
    are written; the rules of an item go to the line that holds it, ``first`` to the first line
    (where a def's name is)."""
    rules_by_line: list[set[str]] = [set() for _ in lines]
    rules_by_line[0] |= set(first)
    start = 0
    for text, rules in marks:
        pattern = re.compile(r"(?<![\w.])" + re.escape(text) + r"(?=[,)]|$)")
        for i in range(start, len(lines)):
            if pattern.search(lines[i].split("  #", 1)[0]):
                rules_by_line[i] |= rules
                start = i
                break
        else:
            raise ValueError(f"lines_ignoring: {text!r} is not in {lines!r}")
    return [line + line_ignore(rules) for line, rules in zip(lines, rules_by_line, strict=True)]


def base_member_names(pkg: PackageModel, cls: ClassModel) -> set[str]:
    """The member names a generated class's bases define (its ancestors' in the package, and the
    runtime's ``Object``): basedpyright does not report unread parameters of a method that
    overrides one of them."""
    names = set(OBJECT_MEMBERS)
    key = cls.base_key
    while key is not None and key in pkg.classes:
        base = pkg.classes[key]
        names.update(f.name for f in base.fields)
        names.update(m.name for m in base.methods)
        names.update(py for py, _ in base.enum_entries)
        if base.replace is not None:
            names.add(base.replace.name)
        key = base.base_key
    return names


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


def pyright_disabled_rules(
    pkg: PackageModel, mod: ModuleModel, cyclic: set[tuple[str, ...]], *, fields_in_body: bool
) -> list[str]:
    """The keys of ``PYRIGHT_RULES_OFF`` that apply to ``mod``, in that table's order;
    ``fields_in_body`` as for :func:`mypy_disabled_codes`."""
    methods = [m for c in mod.classes for m in c.methods]
    rules = {
        "reportImplicitOverride": any(_overrides(pkg, c) for c in mod.classes),
        "reportIncompatibleMethodOverride": any(m.override_ignore for m in methods)
        or any(c.replace.override_ignore for c in mod.classes if c.replace),
        "reportIncompatibleVariableOverride": fields_in_body
        and any(f.override_ignore for c in mod.classes for f in c.fields),
        "reportImportCycles": mod.namespace in cyclic,
        "reportMissingSuperCall": bool(mod.classes),
        "reportPropertyTypeMismatch": False,  # the .py declares descriptors; its face, properties
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
