"""What the manifest records of each generated file: a key naming each member and a fingerprint
of its code.

A key names a statement of a module or class body the way the user would find it again
(``def NAME @DECORATORS``, ``class NAME``, ``assign NAME``, ``docstring``; a class member is
``ClassName::key``, a member of a class nested in it ``ClassName.Nested::key``, as a generated
class's field declarations are). A fingerprint (``key<TAB>fingerprint`` in the manifest) hashes the member's
*code*: its syntax tree and its comments' text, so a formatter (ruff format, black) changing layout,
quotes, trailing commas or parentheses is not an edit. Keys are read with ``ast`` (fast, for every
generated file) and, for files the user edited, from libcst nodes to the same result.
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import tokenize
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, cast

from .code_names import bound_names

if TYPE_CHECKING:
    import libcst as cst

__all__ = [
    "code_of",
    "cst_fingerprint",
    "describe",
    "fingerprint_matches",
    "generated_names",
    "member_keys",
    "normalised_expression",
    "recorded_fingerprints",
    "statement_key",
    "statement_keys",
    "text_hash",
]


def text_hash(text: str) -> str:
    """The hash of a whole file's text the manifest records (a file that still has it was not
    edited: nothing to merge)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def code_of(node: cst.CSTNode) -> str:
    """The source of one libcst node, without surrounding blank lines."""
    import libcst as cst  # only when merging user edits: importing libcst costs ~0.2 s

    return cst.Module(body=[]).code_for_node(node).strip()


def _norm(code: str, mode: str = "exec") -> str:
    """Source normalised through ``ast`` so keys do not depend on formatting."""
    return ast.unparse(ast.parse(code, mode=mode))


def normalised_expression(node: cst.CSTNode) -> str:
    """An expression's code, normalised through ``ast`` (a decorator, a base class)."""
    return _norm(code_of(node), "eval")


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


def statement_key(node: cst.CSTNode) -> str:
    """The same key for a libcst node (used only on files the user edited)."""
    import libcst as cst

    if isinstance(node, cst.ClassDef):
        return f"class {node.name.value}"
    if isinstance(node, cst.FunctionDef):
        decorators = ",".join(normalised_expression(d.decorator) for d in node.decorators)
        return f"def {node.name.value} @{decorators}"
    parsed = ast.parse(code_of(node)).body
    if len(parsed) == 1:
        return _ast_key(parsed[0])
    return f"stmt {_norm(code_of(node))}"


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


def statement_keys(body: Sequence[cst.CSTNode]) -> list[str]:
    """The keys of a libcst module or class body, in order."""
    return _with_attribute_docs([statement_key(n) for n in body])


def member_keys(text: str, tree: ast.Module | None = None) -> list[str]:
    """Keys of the members of a generated file: module statements and class members
    (``ClassName::key``), each with the fingerprint of its code after a tab, as recorded in the
    manifest (keys never hold a raw tab: they are identifiers or ``ast.unparse`` output).
    ``tree``: ``text`` parsed, when the caller has it (changed here: read it before)."""
    lines = text.splitlines()
    tree = tree if tree is not None else ast.parse(text)
    members = list(zip(_ast_keys(tree.body), tree.body, strict=True))
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            members += _class_members(stmt.name, stmt)
    _canonical(tree)  # only once every key is read: it rewrites strings the keys may show
    return [_entry(k, n, lines) for k, n in members]


def _class_members(scope: str, cls: ast.ClassDef) -> list[tuple[str, ast.stmt]]:
    """The keyed members of class ``cls`` (``scope``: its dotted name in the module), those of
    the classes nested in it too."""
    members = [(f"{scope}::{k}", n) for k, n in zip(_ast_keys(cls.body), cls.body, strict=True)]
    for stmt in cls.body:
        if isinstance(stmt, ast.ClassDef):
            members += _class_members(f"{scope}.{stmt.name}", stmt)
    return members


def _entry(key: str, node: ast.stmt, lines: list[str]) -> str:
    if isinstance(node, ast.ClassDef):
        return key  # a class is its members (fingerprinted one by one)
    return f"{key}\t{_code_fingerprint([node], _comments(_span(node, lines)))}"


def _span(node: ast.stmt, lines: list[str]) -> str:
    """The lines of a statement, from its first decorator to its last line."""
    decorators: list[ast.expr] | None = getattr(node, "decorator_list", None)
    first = decorators[0].lineno if decorators else node.lineno
    return "\n".join(lines[first - 1 : node.end_lineno])


#: The start of every fingerprint: what it hashes (the syntax tree, and comments).
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
            inner: object = getattr(stmt, part, None)
            if isinstance(inner, list):
                yield from _statements(cast("list[ast.stmt]", inner))
        for handler in getattr(stmt, "handlers", ()):
            yield from _statements(handler.body)
        for case in getattr(stmt, "cases", ()):
            yield from _statements(case.body)


def cst_fingerprint(node: cst.CSTNode) -> str:
    """The fingerprint of a libcst member, as ``member_keys`` records it."""
    import libcst as cst

    if isinstance(node, cst.ClassDef):
        return ""
    if isinstance(node, (cst.FunctionDef, cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        node = node.with_changes(leading_lines=[])
    code = cst.Module(body=[]).code_for_node(node)
    body = _canonical(ast.parse(code)).body
    end = max((s.end_lineno or s.lineno) for s in body) if body else 0
    return _code_fingerprint(body, _comments("\n".join(code.splitlines()[:end])))


def fingerprint_matches(node: cst.CSTNode, recorded: str) -> bool:
    """Whether a member's code is what the manifest recorded."""
    return cst_fingerprint(node) == recorded


def recorded_fingerprints(entries: list[str]) -> dict[str, str]:
    """Manifest entries -> {key: fingerprint} ("" for a class: its members carry them)."""
    out: dict[str, str] = {}
    for entry in entries:
        key, _, fp = entry.partition("\t")
        out[key] = fp
    return out


def describe(key: str) -> str:
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
        return "docstring of " + describe(key[len("docstring of ") :])
    code = rest if len(rest) <= 60 else rest[:57] + "..."
    return f"statement `{code}`"


def _key_names(key: str) -> list[str]:
    """The names a module-level member key of the manifest binds."""
    kind, _, rest = key.partition(" ")
    if kind in ("class", "assign"):
        return [rest]
    if kind == "def":
        return [rest.split(" @")[0]]
    if kind == "stmt":
        try:
            return bound_names(ast.parse(rest).body)
        except SyntaxError:
            return []
    return []


def generated_names(entries: list[str]) -> set[str]:
    """The module-level names that manifest entries of a file say the generator bound there."""
    return {n for e in entries if "::" not in e for n in _key_names(e.partition("\t")[0])}
