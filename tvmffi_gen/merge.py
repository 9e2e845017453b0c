"""Keep user code across regeneration (libcst).

Convention (stated in docs/generated-packages.md): users may add their own members to generated classes and
modules — methods, operators, properties, helpers, imports, module-level code. Members the
generator wrote are replaced from the registry on every run; the user's members stay where they
were (after the same neighbour). The manifest records which members of each file the generator
wrote, so nothing needs markers in the code.

A conflict is reported, never resolved silently: a user member binding a name the generator now
writes in the same class or module (whatever the kinds: a method against a field, an assignment
against a function, an import against a class...), or user code inside a class whose type left the
library, or user code that uses a name the generator wrote last time and no longer writes. Edits
to generated members are found through a fingerprint of each member's *code* recorded in the
manifest (``key<TAB>fingerprint``): its syntax tree and its comments' text, so a formatter (ruff
format, black) changing layout, quotes, trailing commas or parentheses is not an edit. What happens
to edits is the run's edit policy (``EDIT_POLICIES``): refuse (the default: a conflict naming each
edited member), ``overwrite`` or ``keep``, each edit listed in the merge's result. ``__all__`` is
the generator's: always the newly generated list, plus names the user added that the merged module
still binds.
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import sys
import tokenize
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Sequence, cast

if TYPE_CHECKING:
    import libcst as cst

__all__ = ["EDIT_POLICIES", "Merged", "fingerprints_current", "generated_names", "member_keys", "merge_source",
           "MergeConflict", "module_names", "text_hash", "UserImport"]

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
    members the user had edited (kept or overwritten, per the policy) and the ``from`` imports
    in the user code it kept."""

    text: str
    kept: int
    edits: list[str]
    imports: list[UserImport] = field(default_factory=list)


class MergeConflict(RuntimeError):
    """User code that regeneration cannot keep without a decision from the user."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(f"{path}: " + "; ".join(problems))


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _code(node: cst.CSTNode) -> str:
    import libcst as cst  # only when merging user edits: importing libcst costs ~0.2 s

    return cst.Module(body=[]).code_for_node(node).strip()


def _norm(code: str, mode: str = "exec") -> str:
    """Source normalised through ``ast`` so keys do not depend on formatting."""
    return ast.unparse(ast.parse(code, mode=mode))


def _ast_key(node: ast.stmt) -> str:
    """A stable name for one statement of a module or class body (from ``ast``: fast)."""
    if isinstance(node, ast.ClassDef):
        return f"class {node.name}"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        decorators = ",".join(ast.unparse(d) for d in node.decorator_list)
        return f"def {node.name} @{decorators}"
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return f"assign {node.targets[0].id}"
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return f"assign {node.target.id}"
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
        return "docstring"
    return f"stmt {ast.unparse(node)}"


def _statement_key(node: cst.CSTNode) -> str:
    """The same key for a libcst node (used only on files the user edited)."""
    import libcst as cst
    if isinstance(node, cst.ClassDef):
        return f"class {node.name.value}"
    if isinstance(node, cst.FunctionDef):
        decorators = ",".join(_norm(_code(d.decorator), "eval") for d in node.decorators)
        return f"def {node.name.value} @{decorators}"
    parsed = ast.parse(_code(node)).body
    if len(parsed) == 1:
        return _ast_key(parsed[0])
    return f"stmt {_norm(_code(node))}"


def _with_attribute_docs(keys: list[str]) -> list[str]:
    """Keys of a body: only a first statement that is a string is *the* docstring; any other
    bare string is keyed by the statement before it (an attribute docstring belongs to its
    attribute, a note after a method to that method)."""
    out = list(keys)
    for i in range(1, len(out)):
        if keys[i] == "docstring":
            out[i] = f"docstring of {out[i - 1]}"
    return out


def _ast_keys(body: list[ast.stmt]) -> list[str]:
    return _with_attribute_docs([_ast_key(n) for n in body])


def _statement_keys(body: Sequence[cst.CSTNode]) -> list[str]:
    return _with_attribute_docs([_statement_key(n) for n in body])


def _body(node: cst.Module | cst.ClassDef) -> list[cst.CSTNode]:
    import libcst as cst
    if isinstance(node, cst.Module):
        return list(node.body)
    inner = node.body
    return list(inner.body) if isinstance(inner, cst.IndentedBlock) else []


def member_keys(text: str) -> list[str]:
    """Keys of the members of a generated file: module statements and class members
    (``ClassName::key``), each with the fingerprint of its code after a tab, as recorded in the
    manifest (keys never hold a raw tab: they are identifiers or ``ast.unparse`` output)."""
    lines = text.splitlines()
    tree = ast.parse(text)
    members = [(k, n) for k, n in zip(_ast_keys(tree.body), tree.body)]
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            members += [(f"{stmt.name}::{k}", n) for k, n in zip(_ast_keys(stmt.body), stmt.body)]
    _canonical(tree)  # only once every key is read: it rewrites strings the keys may show
    return [_entry(k, n, lines) for k, n in members]


def _entry(key: str, node: ast.stmt, lines: list[str]) -> str:
    if isinstance(node, ast.ClassDef):
        return key  # a class is its members (fingerprinted one by one)
    return f"{key}\t{_code_fingerprint([node], _comments(_span(node, lines)))}"


def _span(node: ast.stmt, lines: list[str]) -> str:
    """The lines of a statement, from its first decorator to its last line."""
    decorators = getattr(node, "decorator_list", None)
    first = decorators[0].lineno if decorators else node.lineno
    return "\n".join(lines[first - 1 : node.end_lineno])


#: Marks a fingerprint of code (tree and comments); a manifest's older text fingerprints have none.
_CODE_FP = "ast:"


def _code_fingerprint(canonical: list[ast.stmt], comments: list[str]) -> str:
    """A member's code, hashed: its syntax tree (so layout, quotes, trailing commas and
    parentheses do not count) and the text of its comments in order (a comment is code the user
    wrote: editing one is an edit, moving it within the member is not)."""
    tree = "\n".join(ast.dump(stmt) for stmt in canonical)
    digest = hashlib.blake2b("\n#".join([tree, *comments]).encode(), digest_size=8).hexdigest()
    return _CODE_FP + digest


def _comments(code: str) -> list[str]:
    """The text of each comment in ``code`` (without ``#`` and surrounding blanks, which
    formatters adjust)."""
    if "#" not in code:
        return []  # the common case, without tokenizing
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return [line.split("#", 1)[1].strip() for line in code.splitlines() if "#" in line]
    return [t.string[1:].strip() for t in tokens if t.type == tokenize.COMMENT]


_TRAILING_COMMA = re.compile(r",(?=[)\]}])")


def _clean_docstring(text: str) -> str:
    """A docstring without whitespace, quote style and trailing commas: formatters re-indent
    and strip docstrings, and rewrap the code examples in them (ruff's docstring-code-format);
    its words are what count."""
    return _TRAILING_COMMA.sub("", "".join(text.split())).replace("'", '"')


def _canonical(tree: ast.Module) -> ast.Module:
    """Undo, in place, what formatters change in a tree beyond layout: the whitespace of bare
    strings (docstrings) and parentheses around ``del`` targets
    (``del (a, b)`` becomes ``del a, b``)."""
    for node in _statements(tree.body):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            node.value.value = _clean_docstring(node.value.value)
        elif isinstance(node, ast.Delete):
            node.targets = [e for t in node.targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
    return tree


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement in ``body``, nested ones too (faster than ``ast.walk``, which also visits
    every expression)."""
    for stmt in body:
        yield stmt
        for part in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, part, None)
            if isinstance(inner, list):
                yield from _statements(cast("list[ast.stmt]", inner))
        for handler in getattr(stmt, "handlers", ()):
            yield from _statements(handler.body)
        for case in getattr(stmt, "cases", ()):
            yield from _statements(case.body)


_LINE_BREAKS = re.compile(r"\s*\n\s*")


def _text_fingerprint(code: str) -> str:
    """The fingerprint manifests recorded before fingerprints of code: the member's text without
    indentation and blank lines, hashed (read only to compare with such a manifest)."""
    return hashlib.blake2b(_LINE_BREAKS.sub("\n", code.strip()).encode(), digest_size=8).hexdigest()


def _cst_fingerprint(node: cst.CSTNode, legacy: bool = False) -> str:
    """The fingerprint of a libcst member, as ``member_keys`` records it (``legacy``: as
    manifests recorded it before fingerprints of code)."""
    import libcst as cst

    if isinstance(node, cst.ClassDef):
        return ""
    if isinstance(node, (cst.FunctionDef, cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        node = node.with_changes(leading_lines=[])
    code = cst.Module(body=[]).code_for_node(node)
    if legacy:
        return _text_fingerprint(code)
    body = _canonical(ast.parse(code)).body
    end = max((s.end_lineno or s.lineno) for s in body) if body else 0
    return _code_fingerprint(body, _comments("\n".join(code.splitlines()[:end])))


def fingerprints_current(entries: list[str]) -> bool:
    """Whether manifest entries carry fingerprints of code (not an older manifest's of text)."""
    fingerprinted = [e for e in entries if "\t" in e]
    return bool(fingerprinted) and all(_CODE_FP in e for e in fingerprinted)


def _split_recorded(entries: list[str]) -> dict[str, str]:
    """Manifest entries -> {key: fingerprint} ("" where a manifest predates fingerprints)."""
    out: dict[str, str] = {}
    for entry in entries:
        key, _, fp = entry.partition("\t")
        out[key] = fp
    return out


def _bound_names(node: cst.CSTNode) -> list[str]:
    """Names a statement binds in its scope: defs, classes, assignment and annotation targets,
    imports, also inside ``if``/``try``/``with``/``for`` blocks (augmented assignments extend a
    name rather than bind it, and ``from __future__`` binds nothing)."""
    return _ast_bound(ast.parse(_code(node)).body)


def _target_names(target: ast.expr) -> list[str]:
    """Names an assignment target binds (``a``, ``a, *b``; not ``a.x`` or ``a[0]``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in _target_names(t)]
    return []


def _ast_bound(body: list[ast.stmt]) -> list[str]:
    names: list[str] = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(stmt.name)
        elif isinstance(stmt, ast.Assign):
            names += [n for t in stmt.targets for n in _target_names(t)]
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.append(stmt.target.id)
        elif isinstance(stmt, ast.Import):
            names += [a.asname or a.name.split(".")[0] for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and stmt.module != "__future__":
            names += [a.asname or a.name for a in stmt.names if a.name != "*"]
        elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            if isinstance(stmt, ast.For):
                names += _target_names(stmt.target)
            for part in ("body", "orelse", "finalbody"):
                names += _ast_bound(getattr(stmt, part, []))
            for handler in getattr(stmt, "handlers", []):
                names += _ast_bound(handler.body)
    return names


def _describe(key: str) -> str:
    """A member key as the user would name the member."""
    kind, _, rest = key.partition(" ")
    if kind == "def":
        return f"def {rest.split(' @')[0]!r}"
    if kind == "assign":
        return f"assignment {rest!r}"
    if kind == "class":
        return f"class {rest!r}"
    if key == "docstring":
        return "docstring"
    if key.startswith("docstring of "):
        return "docstring of " + _describe(key[len("docstring of "):])
    code = rest if len(rest) <= 60 else rest[:57] + "..."
    return f"statement `{code}`"


@dataclass
class _Merge:
    path: str
    #: member keys the generator wrote last time -> fingerprint ("" when not recorded)
    generated: dict[str, str]
    problems: list[str] = field(default_factory=list)
    kept: int = 0
    policy: str = "refuse"
    edits: list[str] = field(default_factory=list)
    #: the module's ``__all__`` as the user's file has it (a list of names), if it has one
    user_all: list[str] | None = None
    user_all_node: cst.CSTNode | None = None
    #: user code in the output, to check for names it uses that are no longer generated:
    #: (where, key, node)
    kept_code: list[tuple[str, str, cst.CSTNode]] = field(default_factory=list)

    def members(
        self, scope: str, user: Sequence[cst.CSTNode], new: Sequence[cst.CSTNode], classes_in_new: set[str]
    ) -> list[cst.CSTNode]:
        prefix = f"{scope}::" if scope else ""
        where = f"class {scope}" if scope else "the module"
        out = list(new)
        new_keys = _statement_keys(new)
        out_keys = list(new_keys)
        new_names: dict[str, str] = {}
        for node, key in zip(new, new_keys):
            for name in _bound_names(node):
                new_names.setdefault(name, key)
        user_keys = _statement_keys(user)
        for i, node in enumerate(user):
            key = user_keys[i]
            if not scope and key == "assign __all__" and key in self.generated:
                self.user_all, self.user_all_node = _listed_names(node), node
                if self.user_all is not None:
                    continue  # the generator's, recomputed (``with_user_all``)
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
                theirs = ", ".join(f"{n!r} ({_describe(new_names[n])})" for n in clash)
                self.problems.append(
                    f"your {_describe(key)} in {where} binds {theirs}, which the generator now writes"
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

    def _edited(
        self, where: str, prefix: str, key: str, node: cst.CSTNode, out: list[cst.CSTNode], out_keys: list[str]
    ) -> bool:
        """Handle a generated member of last time that the user may have edited. True when it
        is to be kept as the user's own code (an edited member the library no longer has,
        under "keep"); the edited version replaces the new one in ``out`` under "keep"."""
        recorded = self.generated[prefix + key]
        if not recorded or _cst_fingerprint(node, legacy=not recorded.startswith(_CODE_FP)) == recorded:
            return False
        index = out_keys.index(key) if key in out_keys else -1
        if index >= 0 and _cst_fingerprint(out[index]) == _cst_fingerprint(node):
            return False  # the user's edit is what the generator writes now
        what = f"{_describe(key)} in {where}"
        if self.policy == "refuse":
            gone = "" if index >= 0 else " (no longer generated)"
            self.problems.append(
                f"you edited the generated {what}{gone}; regeneration would replace it: pass"
                " --keep-edits to keep your version or --overwrite-edits to replace it"
            )
            return False
        self.edits.append(what)
        if self.policy == "keep":
            if index < 0:
                return True
            out[index] = node
            self.kept_code.append((where, key, node))
        return False

    def check_uses(self, module_body: Sequence[cst.CSTNode]) -> None:
        """A problem for each piece of user code kept that uses a module-level name the
        generator wrote last time and the merged module no longer binds (a type the library
        dropped): importing the module would raise NameError."""
        import builtins

        bound = {n for node in module_body for n in _bound_names(node)}
        gone = generated_names(list(self.generated)) - bound - set(dir(builtins))
        for where, key, node in self.kept_code:
            missing = sorted(_used_names(node) & gone)
            if missing:
                self.problems.append(
                    f"your {_describe(key)} in {where} uses {', '.join(map(repr, missing))}, which the"
                    " generated module defined last time and no longer does;"
                    " change or remove your code"
                )

    def with_user_all(self, module_body: list[cst.CSTNode]) -> list[cst.CSTNode]:
        """The module body with the generated ``__all__`` extended by the names the user added
        to it that the merged module binds (names of types the library dropped fall out)."""
        import libcst as cst

        if self.user_all is None or self.user_all_node is None:
            return module_body
        keys = _statement_keys(module_body)
        if "assign __all__" not in keys:
            return module_body
        index = keys.index("assign __all__")
        generated = _listed_names(module_body[index]) or []
        bound = {n for node in module_body for n in _bound_names(node)}
        star = any(n == "*" for node in module_body for n in _star_imports(node))
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


def _keep_layout(key: str, node: cst.CSTNode, out: list[cst.CSTNode], out_keys: list[str]) -> None:
    """Put the user's copy of a generated member in the output in place of the new one when
    their code is the same: a formatted package stays formatted where the library did not
    change (classes are merged member by member, their headers by ``_same_class_header``)."""
    import libcst as cst

    if isinstance(node, cst.ClassDef) or key not in out_keys:
        return
    index = out_keys.index(key)
    if out[index] is not node and _cst_fingerprint(out[index]) == _cst_fingerprint(node):
        out[index] = node


def _same_class_header(a: cst.ClassDef, b: cst.ClassDef) -> bool:
    """Whether two classes have the same name, decorators, bases and keywords (as code)."""
    def header(c: cst.ClassDef) -> list[str]:
        parts = [_norm(_code(d.decorator), "eval") for d in c.decorators]
        parts += [f"{arg.keyword.value if arg.keyword else ''}={_norm(_code(arg.value), 'eval')}"
                  for arg in (*c.bases, *c.keywords)]
        return [c.name.value, *parts]

    return header(a) == header(b)


def _listed_names(node: cst.CSTNode) -> list[str] | None:
    """The names of ``__all__ = [...]`` (or a tuple) when it lists string literals, else None."""
    parsed = ast.parse(_code(node)).body
    if len(parsed) != 1 or not isinstance(parsed[0], (ast.Assign, ast.AnnAssign)):
        return None
    value = parsed[0].value
    if not isinstance(value, (ast.List, ast.Tuple)):
        return None
    names = [e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return names if len(names) == len(value.elts) else None


def _star_imports(node: cst.CSTNode) -> list[str]:
    return [a.name for s in ast.walk(ast.parse(_code(node))) if isinstance(s, ast.ImportFrom) for a in s.names]


def generated_names(entries: list[str]) -> set[str]:
    """The module-level names that manifest entries of a file say the generator bound there."""
    return {n for e in entries if "::" not in e for n in _key_names(e.partition("\t")[0])}


def module_names(text: str) -> set[str]:
    """The names a module's top level binds."""
    return set(_ast_bound(ast.parse(text).body))


def _user_imports(kept: list[tuple[str, str, cst.CSTNode]]) -> list[UserImport]:
    """The ``from`` imports anywhere in the kept user code."""
    out: list[UserImport] = []
    for where, key, node in kept:
        for stmt in ast.walk(ast.parse(_code(node))):
            if isinstance(stmt, ast.ImportFrom) and stmt.module != "__future__":
                names = tuple(a.name for a in stmt.names if a.name != "*")
                out.append(UserImport(f"your {_describe(key)} in {where}", stmt.level, stmt.module or "", names))
    return out


def _key_names(key: str) -> list[str]:
    """The names a module-level member key of the manifest binds."""
    kind, _, rest = key.partition(" ")
    if kind in ("class", "assign"):
        return [rest]
    if kind == "def":
        return [rest.split(" @")[0]]
    if kind == "stmt":
        try:
            return _ast_bound(ast.parse(rest).body)
        except SyntaxError:
            return []
    return []


def _used_names(node: cst.CSTNode) -> set[str]:
    """Names a piece of code reads that it does not bind itself (parameters, locals, imports,
    nested definitions): the names it needs from its module."""
    tree = ast.parse(_code(node))
    used: set[str] = set()
    local: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            (used if isinstance(n.ctx, ast.Load) else local).add(n.id)
        elif isinstance(n, ast.arg):
            local.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not tree.body[0]:
            local.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            local.update(a.asname or a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            local.add(n.name)
    return used - local


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
    merge = _Merge(path, _split_recorded(generated_keys), policy=edit_policy)
    new_classes = {s.name.value: s for s in new_mod.body if isinstance(s, cst.ClassDef)}
    user_classes = {s.name.value: s for s in user_mod.body if isinstance(s, cst.ClassDef)}

    # class bodies first: user members of generated classes
    merged_classes: dict[str, cst.ClassDef] = {}
    for name, user_cls in user_classes.items():
        if f"class {name}" not in merge.generated:
            continue  # the user's own class: kept whole at module level below
        user_body = _body(user_cls)
        user_members = [
            m for m, k in zip(user_body, _statement_keys(user_body)) if f"{name}::{k}" not in merge.generated
        ]
        if name not in new_classes:
            if user_members:
                merge.problems.append(
                    f"class {name} is no longer generated (its type left the library) but holds"
                    f" your code ({', '.join(_statement_key(m).split(' @')[0] for m in user_members)});"
                    " move it elsewhere"
                )
            continue
        new_cls = new_classes[name]
        body = merge.members(name, _body(user_cls), _body(new_cls), set())
        assert isinstance(new_cls.body, cst.IndentedBlock)
        # the user's header (layout, a comment after the colon) when it is the same code
        keep = _same_class_header(user_cls, new_cls) and isinstance(user_cls.body, cst.IndentedBlock)
        header = user_cls if keep else new_cls
        merged_classes[name] = header.with_changes(body=header.body.with_changes(body=body))

    module_body = [merged_classes.get(s.name.value, s) if isinstance(s, cst.ClassDef) else s for s in new_mod.body]
    body = merge.with_user_all(merge.members("", list(user_mod.body), module_body, set(new_classes)))
    merge.check_uses(body)
    if merge.problems:
        raise MergeConflict(path, merge.problems)
    # the user's indentation and line ends for the whole file: what they keep is laid out so
    merged = new_mod.with_changes(body=body, default_indent=user_mod.default_indent,
                                  default_newline=user_mod.default_newline)
    return Merged(merged.code, merge.kept, list(merge.edits), _user_imports(merge.kept_code))
