"""Keep user code across regeneration (libcst).

Convention (stated in the README): users may add their own members to generated classes and
modules — methods, operators, properties, helpers, imports, module-level code. Members the
generator wrote are replaced from the registry on every run; the user's members stay where they
were (after the same neighbour). The manifest records which members of each file the generator
wrote, so nothing needs markers in the code.

A conflict is reported, never resolved silently: a user member named like a member the
generator now writes, or user code inside a class whose type left the library.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import libcst as cst

__all__ = ["member_keys", "merge_source", "MergeConflict", "text_hash"]



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
    (``ClassName::key``), as recorded in the manifest."""
    body = ast.parse(text).body
    keys = _ast_keys(body)
    for stmt in body:
        if isinstance(stmt, ast.ClassDef):
            keys += [f"{stmt.name}::{k}" for k in _ast_keys(stmt.body)]
    return keys


@dataclass
class _Merge:
    generated: set[str]
    problems: list[str] = field(default_factory=list)
    kept: int = 0

    def members(
        self, scope: str, user: Sequence[cst.CSTNode], new: Sequence[cst.CSTNode], classes_in_new: set[str]
    ) -> list[cst.CSTNode]:
        prefix = f"{scope}::" if scope else ""
        out = list(new)
        new_keys = _statement_keys(new)
        out_keys = list(new_keys)
        user_keys = _statement_keys(user)
        for i, node in enumerate(user):
            key = user_keys[i]
            if prefix + key in self.generated:
                continue  # the generator's own member: the new version replaces it
            if key in new_keys and key.startswith("docstring of "):
                continue  # the string of a member that conflicts (reported for the member)
            if key in new_keys:
                name = key.split(" ", 1)[1].split(" @")[0]
                where = f"class {scope}" if scope else "the module"
                self.problems.append(
                    f"your {key.split(' ')[0]} {name!r} in {where} has the name of a member the"
                    " generator now writes; rename yours"
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
        return out


def merge_source(path: str, current: str, generated_keys: list[str], new_text: str) -> tuple[str, int]:
    """Merge the user's additions in ``current`` into freshly generated ``new_text``.

    ``generated_keys`` are the member keys the generator wrote last time (from the manifest).
    Returns the merged text and the number of user members kept; raises MergeConflict.
    """
    import libcst as cst
    try:
        user_mod = cst.parse_module(current)
    except cst.ParserSyntaxError as exc:
        raise MergeConflict(path, [f"cannot parse your edited file ({exc.message} at line {exc.raw_line})"]) from None
    new_mod = cst.parse_module(new_text)
    merge = _Merge(set(generated_keys))
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
        merged_classes[name] = new_cls.with_changes(body=new_cls.body.with_changes(body=body))

    module_body = [merged_classes.get(s.name.value, s) if isinstance(s, cst.ClassDef) else s for s in new_mod.body]
    body = merge.members("", list(user_mod.body), module_body, set(new_classes))
    if merge.problems:
        raise MergeConflict(path, merge.problems)
    return new_mod.with_changes(body=body).code, merge.kept
