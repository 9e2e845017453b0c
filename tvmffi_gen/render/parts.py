"""What a generated module and its ``.pyi`` face write alike: parameter lists, ``__match_args__``,
the constructor's and ``replace``'s docs, a string literal of a registry name."""

from __future__ import annotations

import json

from ..model.declarations import NOT_CONSTRUCTIBLE
from ..model.package import ClassModel, FunctionModel, Param
from ..text.layout import fit
from .suppressions import line_ignore

__all__ = ["init_doc", "match_args_line", "module_header", "q", "render_params", "replace_doc", "result_doc"]


def q(text: str) -> str:
    """A registry name as a Python string literal (escaped: names may hold any character)."""
    return json.dumps(text, ensure_ascii=False)


def module_header(first_line: str, mypy_codes: list[str], pyright_lines: list[str]) -> str:
    """The comment lines above a module's docstring: the generator's first line, the mypy error
    codes the module turns off, then its pyright header (``suppressions.pyright_header``)."""
    lines = [first_line]
    if mypy_codes:
        lines.append(f'# mypy: disable-error-code="{", ".join(mypy_codes)}"')
    return "".join(line + "\n" for line in lines + pyright_lines)


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


def match_args_line(cls: ClassModel) -> str:
    """``__match_args__ = ("a", "b")``: a tuple of literal strings, which both checkers read to
    narrow what ``case C(x, y)`` captures to the fields' types."""
    assert cls.match_args is not None
    comment = line_ignore(["reportUnannotatedClassAttribute"])
    lines = fit("__match_args__ = (", [q(n) for n in cls.match_args], ")", "    ", one_tuple=True, comment=comment)
    return "\n".join(lines).strip()


def replace_doc(cls: ClassModel) -> str:
    assert cls.replace is not None
    return "A new object with the given fields changed; also `__replace__` (`copy.replace`)."


def init_doc(cls: ClassModel) -> str:
    """The registry's doc of the constructor; for a type without one, why it cannot be built
    (empty otherwise: signature help then shows the class's doc, the registry's)."""
    assert cls.init is not None
    if cls.init.kind == "none":
        return NOT_CONSTRUCTIBLE
    return cls.init.doc.strip()


def result_doc(fn: FunctionModel) -> str:
    return f"The result of `{fn.name}`: its items, as its documentation names them."
