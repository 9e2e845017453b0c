"""What a generated package offers, and what changed between two generations.

The API is read from the generated text (``module_api``), so it is what a user's code can name:
the registered types (classes under ``@_bind.register``), their fields and methods (constructors
included), and the module's public functions, each with its annotation or signature as code. The
manifest records it per file, so the next run compares (``api_changes``) and says what changed;
``stale_uses`` finds the places in the user's own code in the package that name something removed
(``self.radius`` after the library dropped ``radius``, ``from .geom import Circle`` after it
dropped ``Circle``), which would fail only when that code runs or is imported. The manifest keeps
the removals such code still names (``removals_to_record``), so every later run warns again
(``still_removed``) until the code no longer names them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..model.registration import class_statements, registered_key
from ..model.typemap import without_aliases

__all__ = [
    "ApiChange",
    "NameUse",
    "StaleUse",
    "api_changes",
    "change_summary",
    "module_api",
    "names_used",
    "removals_to_record",
    "stale_uses",
    "still_removed",
]

#: What each kind of member is called in a summary, in the order a summary counts them.
_KINDS = ("type", "field", "constructor", "method", "function")


def _module_path(rel: str) -> str:
    """The dotted module a package file holds, inside the package (``""`` for its ``__init__``)."""
    parts = rel.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _code(node: ast.AST) -> str:
    """An annotation or parameter list as a user reads it: code, without the private aliases."""
    return without_aliases(ast.unparse(node))


def _signature(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """A function's parameters and return annotation, as code (layout does not count)."""
    returns = f" -> {_code(fn.returns)}" if fn.returns is not None else ""
    return f"({_code(fn.args)}){returns}"


def _field_type(annotation: ast.expr) -> str:
    """A field's value type from its descriptor's annotation: ``int (read-only)`` from
    ``Final[ReadOnlyField[int]]``, the type read from ``Field[READ, WRITE]``."""
    node = annotation
    if isinstance(node, ast.Subscript) and _code(node.value) == "Final":
        node = node.slice
    if isinstance(node, ast.Subscript):
        holder = _code(node.value)
        if holder == "ReadOnlyField":
            return f"{_code(node.slice)} (read-only)"
        if holder == "Field" and isinstance(node.slice, ast.Tuple) and node.slice.elts:
            return _code(node.slice.elts[0])
    return _code(node)


def _derived(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A method the generator derives from the fields (``replace``): its changes are the fields'."""
    return any(isinstance(d, ast.Attribute) and d.attr == "replace_method" for d in fn.decorator_list)


def _class_api(cls: ast.ClassDef, qual: str) -> dict[str, str]:
    out = {qual: "type"}
    for stmt in class_statements(cls):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if not stmt.target.id.startswith("_"):
                out[f"{qual}.{stmt.target.id}"] = f"field {_field_type(stmt.annotation)}"
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _derived(stmt):
            if stmt.name == "__init__":
                out[f"{qual}.__init__"] = f"constructor {_signature(stmt)}"
            elif not stmt.name.startswith("_"):
                out[f"{qual}.{stmt.name}"] = f"method {_signature(stmt)}"
    return out


def module_api(rel: str, text: str, tree: ast.Module | None = None) -> dict[str, str]:
    """The API of the generated file ``rel`` (its path in the package): dotted name inside the
    package -> ``"KIND SIGNATURE"`` (``"field int"``, ``"method (self) -> int"``, ``"type"``).
    ``tree``: ``text`` parsed, when the caller has it (only read here)."""
    module = _module_path(rel)
    if any(part.startswith("_") for part in module.split(".") if part):
        return {}  # a private module (``_lib``): nothing a user names
    tree = tree if tree is not None else ast.parse(text)
    out: dict[str, str] = {}
    for stmt in tree.body:
        if not isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        qual = f"{module}.{stmt.name}" if module else stmt.name
        if isinstance(stmt, ast.ClassDef):
            if registered_key(stmt) is not None:
                out.update(_class_api(stmt, qual))
        elif not stmt.name.startswith("_"):
            out[qual] = f"function {_signature(stmt)}"
    return out


@dataclass(frozen=True)
class ApiChange:
    """One member added, removed or changed: ``name`` is dotted inside the package
    (``regen.Point.z``); ``before`` / ``after`` its annotation or signature ("" when absent)."""

    kind: str
    name: str
    change: str  # "added", "removed", "changed"
    before: str = ""
    after: str = ""

    @property
    def short_name(self) -> str:
        """The member's own name (``radius`` of ``geom.Circle.radius``)."""
        return self.name.rsplit(".", 1)[-1]

    def describe(self) -> str:
        """One line of the summary."""
        if self.change == "changed":
            what = "type" if self.kind == "field" else "signature"
            return f"changed {self.kind} {self.name}: {what} {self.after}, was {self.before}"
        shown = self.after or self.before
        return f"{self.change} {self.kind} {self.name}" + (
            f": {shown}" if self.kind == "field" else shown if shown else ""
        )


def _split(entry: str) -> tuple[str, str]:
    kind, _, signature = entry.partition(" ")
    return kind, signature


def api_changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[ApiChange]:
    """What changed from ``before`` to ``after`` (both as ``module_api`` gives them, merged over
    the package's files). A removed type is one change, not one per member; so is an added one."""
    out: list[ApiChange] = []
    gone_types = {n for n, e in before.items() if e == "type" and n not in after}
    new_types = {n for n, e in after.items() if e == "type" and n not in before}
    for name in sorted(before.keys() | after.keys()):
        owner = name.rsplit(".", 1)[0]
        if owner in gone_types or owner in new_types:
            continue
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if old is None:
            kind, sig = _split(new or "")
            out.append(ApiChange(kind, name, "added", after=sig))
        elif new is None:
            kind, sig = _split(old)
            out.append(ApiChange(kind, name, "removed", before=sig))
        else:
            (kind, old_sig), (_, new_sig) = _split(old), _split(new)
            out.append(ApiChange(kind, name, "changed", old_sig, new_sig))
    return out


def change_summary(changes: list[ApiChange], limit: int | None = 20) -> list[str]:
    """The summary a regeneration prints: a count line, then one line per change (at most
    ``limit``, then how many more)."""
    if not changes:
        return ["API unchanged since the last generation"]
    counts: list[str] = []
    for change in ("removed", "changed", "added"):
        for kind in _KINDS:
            n = sum(1 for c in changes if c.kind == kind and c.change == change)
            if n:
                plural = "types" if kind == "type" else f"{kind}s"
                counts.append(f"{n} {kind if n == 1 else plural} {change}")
    lines = ["API changes since the last generation: " + ", ".join(counts)]
    shown = changes if limit is None else changes[:limit]
    lines += [f"  {c.describe()}" for c in shown]
    if len(shown) < len(changes):
        lines.append(f"  ... and {len(changes) - len(shown)} more (-v lists them all)")
    return lines


@dataclass(frozen=True)
class NameUse:
    """A name in code: a plain name (``Old``) or an attribute (``.radius``), and its line;
    ``owner``: for ``self.NAME`` in the body of a class, that class's name in its module."""

    name: str
    line: int
    attribute: bool
    owner: str = ""


def names_used(tree: ast.AST, first_line: int = 1, owner: str = "") -> list[NameUse]:
    """The names and attribute names ``tree`` reads, calls or imports (``from .m import Old``
    names ``Old``; line numbers as if the tree's code started at ``first_line``); ``owner``:
    the class whose body the code is in."""
    out: list[NameUse] = []
    for node in ast.walk(tree):
        line = node.lineno + first_line - 1 if isinstance(node, (ast.Attribute, ast.Name, ast.ImportFrom)) else 0
        if isinstance(node, ast.Attribute):
            on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
            out.append(NameUse(node.attr, line, True, owner if on_self else ""))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            out.append(NameUse(node.id, line, False))
        elif isinstance(node, ast.ImportFrom):
            out += [NameUse(alias.name, line, False) for alias in node.names if alias.name != "*"]
    return out


@dataclass(frozen=True)
class StaleUse:
    """User code at ``path:line`` naming ``name``, which the change removed from the package."""

    path: str
    line: int
    name: str
    removed: ApiChange

    def describe(self, shown_path: str) -> str:
        """The warning, naming the file as ``shown_path`` (the package's folder and ``path``)."""
        return (
            f"{shown_path}:{self.line}: your code uses {self.name!r}, but the library no longer has"
            f" {self.removed.kind} {self.removed.name}"
        )


def still_removed(recorded: Mapping[str, str], api: Mapping[str, str]) -> list[ApiChange]:
    """The removals an earlier run recorded (``recorded``: dotted name -> ``"KIND SIGNATURE"``,
    as ``removals_to_record`` gives them) that the package (``api``: as it is now) still lacks:
    user code naming one is warned about on every run until it no longer does."""
    out: list[ApiChange] = []
    for name, entry in sorted(recorded.items()):
        if name not in api:
            kind, signature = _split(entry)
            out.append(ApiChange(kind, name, "removed", before=signature))
    return out


def removals_to_record(uses: Iterable[StaleUse]) -> dict[str, str]:
    """What the manifest keeps of the removals user code still names (read back by
    ``still_removed``): dotted name -> ``"KIND SIGNATURE"``; empty once no code names one."""
    return {
        use.removed.name: f"{use.removed.kind} {use.removed.before}".rstrip()
        for use in sorted(uses, key=lambda u: u.removed.name)
    }


def stale_uses(path: str, uses: Iterable[NameUse], changes: list[ApiChange], api: Mapping[str, str]) -> list[StaleUse]:
    """The uses in the user code of the package file ``path`` of a member ``changes`` removed:
    ``self.NAME`` in a class that lost ``NAME``; otherwise any use of a removed name the package
    (``api``: as it is now) no longer has anywhere (a name still there may be the one meant)."""
    removed = {c.name: c for c in changes if c.change == "removed"}
    if not removed:
        return []
    by_short: dict[str, ApiChange] = {}
    for gone in removed.values():
        by_short.setdefault(gone.short_name, gone)
    still = {name.rsplit(".", 1)[-1] for name in api}
    module = _module_path(path)
    out: set[StaleUse] = set()
    for use in uses:
        owner = f"{module}.{use.owner}" if module and use.owner else use.owner
        change = removed.get(f"{owner}.{use.name}") if owner else None
        if change is None and use.name not in still:
            change = by_short.get(use.name)
            if change is not None and not use.attribute and change.kind not in ("type", "function"):
                continue  # a plain name cannot mean a field or a method
        if change is not None:
            out.add(StaleUse(path, use.line, use.name, change))
    return sorted(out, key=lambda s: (s.path, s.line, s.name))
