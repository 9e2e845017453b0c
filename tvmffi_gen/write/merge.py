"""Keep user code across regeneration (libcst).

Convention (stated in docs/generated-packages.md): users may add their own members to generated classes and
modules — methods, operators, properties, helpers, imports, module-level code. Members the
generator wrote are replaced from the registry on every run; the user's members stay where they
were (after the same neighbour). The manifest records which members of each file the generator
wrote (their keys and fingerprints: ``manifest_entries``), so nothing needs markers in the code.

A conflict is reported, never resolved silently: a user member binding a name the generator now
writes in the same class or module (whatever the kinds: a method against a field, an assignment
against a function, an import against a class...), or user code inside a class whose type left the
library, or user code that uses a name the generator wrote last time and no longer writes (which
names code binds and uses: ``code_names``). Edits to generated members are found through the
fingerprint of each member's code recorded in the manifest, which a formatter changing only layout
leaves as it was. What happens to edits is the run's edit policy (``EDIT_POLICIES``): refuse (the
default: a conflict naming each edited member), ``overwrite`` or ``keep``, each edit listed in the
merge's result. ``__all__`` is the generator's: always the newly generated list, plus names the
user added that the merged module still binds.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..registry.runtime_files import fields_class
from .api_changes import NameUse, names_used
from .code_names import bound_names, listed_names, star_imported, used_names
from .manifest_entries import (
    code_of,
    cst_fingerprint,
    describe,
    fingerprint_matches,
    generated_names,
    normalised_expression,
    recorded_fingerprints,
    statement_key,
    statement_keys,
)

if TYPE_CHECKING:
    import libcst as cst

__all__ = ["EDIT_POLICIES", "Merged", "merge_source", "MergeConflict", "UserImport"]

#: What to do with generated members the user edited: "refuse" (a conflict), "overwrite" (the new
#: version replaces theirs) or "keep" (their version stays instead of the new one).
EDIT_POLICIES = ("refuse", "overwrite", "keep")


@dataclass(frozen=True)
class UserImport:
    """A ``from MODULE import NAMES`` in user code a merge kept: the writer checks that the
    package's module still provides the names (``who`` says whose code, as in a problem)."""

    who: str
    level: int
    module: str
    names: tuple[str, ...]


@dataclass
class Merged:
    """The result of a merge: the text, how many user members it kept, the generated
    members the user had edited (kept or overwritten, per the policy), the ``from`` imports
    in the user code it kept and the names that code uses (with their lines in ``text``)."""

    text: str
    kept: int
    edits: list[str]
    imports: list[UserImport] = field(default_factory=list)
    uses: list[NameUse] = field(default_factory=list)


class MergeConflict(RuntimeError):
    """User code that regeneration cannot keep without a decision from the user: ``problems``
    where it clashes with what the library now registers, ``edits`` where the user edited a
    member the generator wrote (refused unless the run chose an edit policy)."""

    def __init__(self, path: str, problems: list[str], edits: list[str] | None = None) -> None:
        self.path = path
        self.problems = problems
        self.edits = edits or []
        super().__init__(f"{path}: " + "; ".join([*problems, *self.edits]))


def _parsed(node: cst.CSTNode) -> ast.Module:
    """A libcst node's code read with ``ast``."""
    return ast.parse(code_of(node))


def _bound_names(node: cst.CSTNode) -> list[str]:
    """Names a libcst statement binds in its scope (``code_names.bound_names``)."""
    return bound_names(_parsed(node).body)


def _body(node: cst.Module | cst.ClassDef) -> list[cst.CSTNode]:
    import libcst as cst

    if isinstance(node, cst.Module):
        return list(node.body)
    inner = node.body
    return list(inner.body) if isinstance(inner, cst.IndentedBlock) else []


@dataclass
class _Merge:
    """One file's merge: what the generator wrote last time, and the problems, edits and kept user
    code found so far."""

    path: str
    #: member keys the generator wrote last time -> fingerprint ("" when not recorded)
    generated: dict[str, str]
    problems: list[str] = field(default_factory=list)
    #: generated members the user edited, refused under the "refuse" policy (said as problems)
    refused_edits: list[str] = field(default_factory=list)
    kept: int = 0
    policy: str = "refuse"
    edits: list[str] = field(default_factory=list)
    #: the module's ``__all__`` as the user's file has it (a list of names), if it has one
    user_all: list[str] | None = None
    user_all_node: cst.CSTNode | None = None
    #: user code in the output, to check for names it uses that are no longer generated:
    #: (where, key, node)
    kept_code: list[tuple[str, str, cst.CSTNode]] = field(default_factory=list)

    def members(self, scope: str, user: Sequence[cst.CSTNode], new: Sequence[cst.CSTNode]) -> list[cst.CSTNode]:
        """The merged body of a class (``scope``: its name) or of the module (``scope`` empty): the
        new generated members, with the user's own members kept after the same neighbour."""
        prefix = f"{scope}::" if scope else ""
        where = f"class {scope}" if scope else "the module"
        out = list(new)
        new_keys = statement_keys(new)
        out_keys = list(new_keys)
        new_names = _names_bound_by(new, new_keys)
        user_keys = statement_keys(user)
        for i, node in enumerate(user):
            key = user_keys[i]
            if not scope and key == "assign __all__" and key in self.generated:
                self.user_all, self.user_all_node = listed_names(_parsed(node)), node
                if self.user_all is not None:
                    continue  # the generator's, recomputed (``with_user_all``)
            if scope and key.startswith("class ") and prefix + key in self.generated:
                self._nested_class(scope, key, node, out, out_keys)
                continue  # a generated class nested in a generated one: merged member by member
            if prefix + key in self.generated and not self._edited(where, prefix, key, node, out, out_keys):
                _keep_layout(key, node, out, out_keys)
                continue  # the generator's own member: the new version replaces it (or it was kept)
            if key in new_keys and key.startswith("docstring of "):
                continue  # the string of a member that conflicts (reported for the member)
            if key in new_keys:
                name = key.split(" ", 1)[1].split(" @")[0]
                self.problems.append(
                    f"your {key.split(' ')[0]} {name!r} in {where} has the name of a member the"
                    " generator now writes; rename yours"
                )
                continue
            clash = [n for n in dict.fromkeys(_bound_names(node)) if n in new_names]
            if clash:
                theirs = ", ".join(f"{n!r} ({describe(new_names[n])})" for n in clash)
                self.problems.append(
                    f"your {describe(key)} in {where} binds {theirs}, which the generator now writes"
                    " there; rename yours"
                )
                continue
            # place it after the nearest preceding user-file member that is in the output
            anchor = -1
            for j in range(i - 1, -1, -1):
                if user_keys[j] in out_keys:
                    anchor = out_keys.index(user_keys[j])
                    break
            out.insert(anchor + 1, node)
            out_keys.insert(anchor + 1, key)
            self.kept += 1
            self.kept_code.append((where, key, node))
        return out

    def _nested_class(
        self, scope: str, key: str, node: cst.CSTNode, out: list[cst.CSTNode], out_keys: list[str]
    ) -> None:
        """Merge the user's copy ``node`` of a generated class nested in class ``scope`` (a
        class's field declarations) into its new version in ``out``, as a top-level class is."""
        import libcst as cst

        assert isinstance(node, cst.ClassDef)
        inner = f"{scope}.{node.name.value}"
        new = out[out_keys.index(key)] if key in out_keys else None
        if not isinstance(new, cst.ClassDef):
            self.edits_in_gone_class(inner, _body(node))
            return
        out[out_keys.index(key)] = self.merge_class(inner, node, new)

    def merge_class(self, scope: str, user_cls: cst.ClassDef, new_cls: cst.ClassDef) -> cst.ClassDef:
        """The new generated class ``new_cls`` (``scope``: its dotted name) with the user's
        members of ``user_cls`` kept, and the user's header where it is the same code."""
        import libcst as cst

        body = self.members(scope, _body(user_cls), _body(new_cls))
        assert isinstance(new_cls.body, cst.IndentedBlock)
        keep = _same_class_header(user_cls, new_cls) and isinstance(user_cls.body, cst.IndentedBlock)
        header = user_cls if keep else new_cls
        return header.with_changes(body=header.body.with_changes(body=body))

    def _edited(
        self, where: str, prefix: str, key: str, node: cst.CSTNode, out: list[cst.CSTNode], out_keys: list[str]
    ) -> bool:
        """Handle a generated member of last time that the user may have edited. True when it
        is to be kept as the user's own code (an edited member the library no longer has,
        under "keep"); the edited version replaces the new one in ``out`` under "keep"."""
        recorded = self.generated[prefix + key]
        if not recorded or fingerprint_matches(node, recorded):
            return False
        index = out_keys.index(key) if key in out_keys else -1
        if index >= 0 and cst_fingerprint(out[index]) == cst_fingerprint(node):
            return False  # the user's edit is what the generator writes now
        what = f"{describe(key)} in {where}"
        if self.policy == "refuse":
            if index < 0:
                library = "the library no longer has it"
            elif cst_fingerprint(out[index]) == recorded:
                library = "the library did not change it"
            else:
                library = "the library changed it too"
            self.refused_edits.append(f"you edited the generated {what} ({library})")
            return False
        self.edits.append(what)
        if self.policy == "keep":
            if index < 0:
                return True
            out[index] = node
            self.kept_code.append((where, key, node))
        return False

    def edits_in_gone_class(self, name: str, user_body: Sequence[cst.CSTNode]) -> None:
        """Generated members the user edited in class ``name``, whose type left the library: an
        edit refused (the default), listed as replaced (``overwrite``: they go with the class), or
        a problem (``keep``: a member cannot stay in a class that is gone)."""
        import libcst as cst

        for node, key in zip(user_body, statement_keys(user_body), strict=True):
            if isinstance(node, cst.ClassDef) and f"{name}::{key}" in self.generated:
                self.edits_in_gone_class(f"{name}.{node.name.value}", _body(node))
                continue
            recorded = self.generated.get(f"{name}::{key}")
            if not recorded or fingerprint_matches(node, recorded):
                continue
            what = f"{describe(key)} in class {name}"
            if self.policy == "refuse":
                self.refused_edits.append(f"you edited the generated {what} (the library no longer has it)")
            elif self.policy == "overwrite":
                self.edits.append(what)
            else:
                self.problems.append(
                    f"you edited the generated {what}, but its type left the library: move your version elsewhere"
                )

    def check_uses(self, module_body: Sequence[cst.CSTNode]) -> None:
        """A problem for each piece of user code kept that uses a module-level name the
        generator wrote last time and the merged module no longer binds (a type the library
        dropped): importing the module would raise NameError."""
        import builtins

        bound = {n for node in module_body for n in _bound_names(node)}
        gone = generated_names(list(self.generated)) - bound - set(dir(builtins))
        for where, key, node in self.kept_code:
            missing = sorted(used_names(_parsed(node)) & gone)
            if missing:
                self.problems.append(
                    f"your {describe(key)} in {where} uses {', '.join(map(repr, missing))}, which the"
                    " generated module defined last time and no longer does;"
                    " change or remove your code"
                )

    def with_user_all(self, module_body: list[cst.CSTNode]) -> list[cst.CSTNode]:
        """The module body with the generated ``__all__`` extended by the names the user added
        to it that the merged module binds (names of types the library dropped fall out)."""
        import libcst as cst

        if self.user_all is None or self.user_all_node is None:
            return module_body
        keys = statement_keys(module_body)
        if "assign __all__" not in keys:
            return module_body
        index = keys.index("assign __all__")
        generated = listed_names(_parsed(module_body[index])) or []
        bound = {n for node in module_body for n in _bound_names(node)}
        star = any(star_imported(_parsed(node)) for node in module_body)
        added = [n for n in self.user_all if n not in generated and (star or n in bound)]
        if [*generated, *added] == self.user_all:  # the same list: in the user's layout
            return [*module_body[:index], self.user_all_node, *module_body[index + 1 :]]
        if not added:
            return module_body
        names = ", ".join(f'"{n}"' for n in [*generated, *added])
        stmt = module_body[index]
        assert isinstance(stmt, cst.SimpleStatementLine)
        fresh = cst.parse_statement(f"__all__ = [{names}]\n")
        assert isinstance(fresh, cst.SimpleStatementLine)
        replaced = stmt.with_changes(body=fresh.body)
        return [*module_body[:index], replaced, *module_body[index + 1 :]]


def _user_members(scope: str, body: Sequence[cst.CSTNode], generated: dict[str, str]) -> list[cst.CSTNode]:
    """The members of class ``scope``'s ``body`` the generator did not write, those in the
    generated classes nested in it too."""
    import libcst as cst

    out: list[cst.CSTNode] = []
    for node, key in zip(body, statement_keys(body), strict=True):
        if f"{scope}::{key}" not in generated:
            out.append(node)
        elif isinstance(node, cst.ClassDef):
            out += _user_members(f"{scope}.{node.name.value}", _body(node), generated)
    return out


def _names_bound_by(body: Sequence[cst.CSTNode], keys: list[str]) -> dict[str, str]:
    """Each name the generated ``body`` binds -> the key of the member binding it; a field of a
    nested fields class (which ``register`` puts on the class) by its own member's key."""
    import libcst as cst

    out: dict[str, str] = {}
    for node, key in zip(body, keys, strict=True):
        if isinstance(node, cst.ClassDef) and node.name.value == fields_class():
            inner = _body(node)
            out.update((n, k) for n, k in _names_bound_by(inner, statement_keys(inner)).items() if n not in out)
        for name in _bound_names(node):
            out.setdefault(name, key)
    return out


def _keep_layout(key: str, node: cst.CSTNode, out: list[cst.CSTNode], out_keys: list[str]) -> None:
    """Put the user's copy of a generated member in the output in place of the new one when
    their code is the same: a formatted package stays formatted where the library did not
    change (classes are merged member by member, their headers by ``_same_class_header``)."""
    import libcst as cst

    if isinstance(node, cst.ClassDef) or key not in out_keys:
        return
    index = out_keys.index(key)
    if out[index] is not node and cst_fingerprint(out[index]) == cst_fingerprint(node):
        out[index] = node


def _same_class_header(a: cst.ClassDef, b: cst.ClassDef) -> bool:
    """Whether two classes have the same name, decorators, bases and keywords (as code)."""

    def header(c: cst.ClassDef) -> list[str]:
        parts = [normalised_expression(d.decorator) for d in c.decorators]
        parts += [
            f"{arg.keyword.value if arg.keyword else ''}={normalised_expression(arg.value)}"
            for arg in (*c.bases, *c.keywords)
        ]
        return [c.name.value, *parts]

    return header(a) == header(b)


def _user_imports(kept: list[tuple[str, str, cst.CSTNode]]) -> list[UserImport]:
    """The ``from`` imports anywhere in the kept user code."""
    out: list[UserImport] = []
    for where, key, node in kept:
        for stmt in ast.walk(_parsed(node)):
            if isinstance(stmt, ast.ImportFrom) and stmt.module != "__future__":
                names = tuple(a.name for a in stmt.names if a.name != "*")
                out.append(UserImport(f"your {describe(key)} in {where}", stmt.level, stmt.module or "", names))
    return out


def _names_used_by(module: cst.Module, kept: list[tuple[str, str, cst.CSTNode]]) -> list[NameUse]:
    """The names the kept user code uses, each with its line in the merged ``module`` (so a
    warning about one points at the line the user sees)."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    if not kept:
        return []
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    out: list[NameUse] = []
    for where, _key, node in kept:
        decorators: Sequence[cst.Decorator] = getattr(node, "decorators", ())
        first_line = positions[decorators[0] if decorators else node].start.line
        bare = node.with_changes(leading_lines=[]) if hasattr(node, "leading_lines") else node
        owner = where.removeprefix("class ") if where.startswith("class ") else ""
        out += names_used(ast.parse(cst.Module(body=[]).code_for_node(bare)), first_line, owner)
    return out


def merge_source(
    path: str, current: str, generated_keys: list[str], new_text: str, edit_policy: str = "refuse"
) -> Merged:
    """Merge the user's additions in ``current`` into freshly generated ``new_text``.

    ``generated_keys`` are the member keys the generator wrote last time (from the manifest);
    ``edit_policy`` (one of ``EDIT_POLICIES``) says what happens to generated members the user
    edited. Raises MergeConflict.
    """
    import libcst as cst

    try:
        user_mod = cst.parse_module(current)
    except cst.ParserSyntaxError as exc:
        raise MergeConflict(path, [f"cannot parse your edited file ({exc.message} at line {exc.raw_line})"]) from None
    try:
        ast.parse(current)  # members are read with ``ast`` too: libcst accepts newer syntax
    except SyntaxError as exc:
        python = ".".join(map(str, sys.version_info[:2]))
        raise MergeConflict(
            path, [f"cannot parse your edited file with this Python {python} ({exc.msg} at line {exc.lineno})"]
        ) from None
    new_mod = cst.parse_module(new_text)
    merge = _Merge(path, recorded_fingerprints(generated_keys), policy=edit_policy)
    new_classes = {s.name.value: s for s in new_mod.body if isinstance(s, cst.ClassDef)}
    user_classes = {s.name.value: s for s in user_mod.body if isinstance(s, cst.ClassDef)}

    # class bodies first: user members of generated classes
    merged_classes: dict[str, cst.ClassDef] = {}
    for name, user_cls in user_classes.items():
        if f"class {name}" not in merge.generated:
            continue  # the user's own class: kept whole at module level below
        user_body = _body(user_cls)
        user_members = _user_members(name, user_body, merge.generated)
        if name not in new_classes:
            if user_members:
                merge.problems.append(
                    f"class {name} is no longer generated (its type left the library) but holds"
                    f" your code ({', '.join(statement_key(m).split(' @')[0] for m in user_members)});"
                    " move it elsewhere"
                )
            merge.edits_in_gone_class(name, user_body)
            continue
        # the user's header (layout, a comment after the colon) when it is the same code
        merged_classes[name] = merge.merge_class(name, user_cls, new_classes[name])

    module_body = [merged_classes.get(s.name.value, s) if isinstance(s, cst.ClassDef) else s for s in new_mod.body]
    body = merge.with_user_all(merge.members("", list(user_mod.body), module_body))
    merge.check_uses(body)
    if merge.problems or merge.refused_edits:
        raise MergeConflict(path, merge.problems, merge.refused_edits)
    # the user's indentation and line ends for the whole file: what they keep is laid out so
    merged = new_mod.with_changes(
        body=body, default_indent=user_mod.default_indent, default_newline=user_mod.default_newline
    )
    uses = _names_used_by(merged, merge.kept_code)
    return Merged(merged.code, merge.kept, list(merge.edits), _user_imports(merge.kept_code), uses)
