"""The one writer of what checkers and IDEs read of a registry member: a field as its value
(``model.declarations.FieldDecl``), a def from its parameters, with its docstring. A generated
package's ``.pyi`` face (``face.py``) and ``--stubs-for``'s stubs (``stubs/registry_text.py``)
both write through it; a :class:`Style` holds what they write differently (how an annotation is
spelled in the module, the comments a line gets, whether a long def is laid out over lines)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..model.declarations import NATIVE_DEFAULT
from ..model.package import CallableDecl, FieldDecl, Param
from ..model.typemap import ANY_ANNOTATION, Annotation
from ..text.layout import docstring_lines, fit
from .parts import render_params

__all__ = ["Style", "callable_lines", "def_lines", "doc_lines", "field_text", "param_items", "with_doc"]


def _same(lines: list[str]) -> list[str]:
    return lines


def _identity(text: str) -> str:
    return text


@dataclass(frozen=True)
class Style:
    """How one output writes declarations."""

    final: str  # how the module names ``typing.Final``
    spell: Callable[[str], str] = _identity  # an annotation's text as the module writes it
    mark: Callable[[list[str]], list[str]] = _same  # per-line comments on code lines
    #: a def too long for a line laid out over lines, and a one-line docstring too long for one
    #: with its closing quotes below (else both on one line)
    wrap: bool = True
    #: a property's setter repeats the docstring: jedi documents a property by its last
    #: definition, the setter, where no ``.py`` beside the stub binds the name (a generated
    #: package's face)
    setter_doc: bool = False


def param_items(params: list[Param], first: str | None, style: Style) -> list[str]:
    """A parameter list's items: each annotation as the module spells it, a default that is a
    runtime marker (:data:`~tvmffi_gen.model.declarations.NATIVE_DEFAULT`, ``_bind.KEEP``) as
    ``...``, ``/`` and ``*`` where the kinds change."""
    shown = [Param(p.name, p.hint, _shown_default(p.default), p.kind, p.reg_name) for p in params]
    return render_params([_spelled(p, style) for p in shown], first)


def _shown_default(default: str | None) -> str | None:
    marker = default is not None and default.startswith(NATIVE_DEFAULT.partition(".")[0] + ".")
    return "..." if marker else default


def _spelled(p: Param, style: Style) -> Param:
    return Param(p.name, Annotation(style.spell(p.annotation)), p.default, p.kind, p.reg_name)


def def_lines(head: str, items: list[str], ret: str, style: Style, indent: str, ignore: str = "") -> list[str]:
    """``{head}({items}) -> {ret}:`` (``head``: ``def name``), ``ret`` spelled as the module
    spells it, ``ignore`` (a ``# type: ignore``) ending its first line."""
    tail = f") -> {style.spell(ret)}:"
    if style.wrap:
        return style.mark(fit(f"{head}(", items, tail, indent, comment=ignore))
    return style.mark([f"{indent}{head}({', '.join(items)}{tail}{ignore}"])


def doc_lines(doc: str, indent: str, style: Style) -> list[str]:
    """A docstring's lines (``docstring_lines``), a one-line one on one line where the style
    does not wrap."""
    lines = docstring_lines(doc, indent)
    if not style.wrap and len(lines) == 2 and lines[1] == f'{indent}"""':
        return [lines[0] + '"""']
    return lines


def callable_lines(decl: CallableDecl, style: Style, indent: str, first: str | None, ignore: str = "") -> list[str]:
    """``def name(...) -> ret:`` for ``decl`` (its decorator is the caller's): ``first`` (``self``)
    before its parameters, ``(*args: Any)`` where it is untyped; ``ignore`` (a ``# type:
    ignore``) on its first line."""
    head = f"def {decl.name}"
    if decl.params is None:
        items = [*([first] if first else []), f"*args: {style.spell(ANY_ANNOTATION.text)}"]
        lines = def_lines(head, items, decl.ret.text, style, indent)
        lines[0] += ignore  # after the line's own comments: mypy reads it anywhere in an untyped def's line
        return lines
    return def_lines(head, param_items(decl.params, first, style), decl.ret.text, style, indent, ignore)


def with_doc(lines: list[str], doc: str, indent: str, style: Style | None = None) -> str:
    """A def's lines, then its docstring (``indent``: the body's), or ``...`` after its colon
    where it has none."""
    if doc.strip():
        return "\n".join([*lines, *(doc_lines(doc, indent, style) if style else docstring_lines(doc, indent))])
    code, sep, comment = lines[-1].partition("  #")
    return "\n".join([*lines[:-1], f"{code} ...{sep}{comment}"])


def field_text(decl: FieldDecl, style: Style, indent: str = "    ", override_ignore: bool = False) -> str:
    """A field as its form says (``FieldForm``), with its docstring; ``override_ignore``: it
    overrides an inherited member incompatibly (a ``# type: ignore`` on what mypy reports)."""
    read = style.spell(decl.read.text)
    doc = doc_lines(decl.doc, indent, style) if decl.doc.strip() else []
    if decl.form in ("final", "attribute"):
        ignore = "  # type: ignore[assignment, override, misc]" if override_ignore else ""
        value = f"{style.final}[{read}]" if decl.form == "final" else read
        return "\n".join([*style.mark([f"{indent}{decl.name}: {value}{ignore}"]), *doc])
    # mypy reports an incompatible property on its decorator, and its setter's on the setter's
    property_ignore = "  # type: ignore[override, misc]" if override_ignore else ""
    getter_lines = def_lines(f"def {decl.name}", ["self"], decl.read.text, style, indent)
    getter = with_doc(getter_lines, decl.doc, indent + "    ", style)
    lines = [f"{indent}@property{property_ignore}", getter]
    if decl.form == "setter":
        assert decl.write is not None
        setter_ignore = "  # type: ignore[override]" if override_ignore else ""
        value = f"value: {style.spell(decl.write.text)}"
        setter_lines = def_lines(f"def {decl.name}", ["self", value], "None", style, indent)
        setter = with_doc(setter_lines, decl.doc if style.setter_doc else "", indent + "    ", style)
        lines += [f"{indent}@{decl.name}.setter{setter_ignore}", setter]
    return "\n".join(lines)
