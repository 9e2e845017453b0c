"""Line layout of generated source: the one place that decides what fits on a line.

Everything the generator writes is laid out the way black would at ``LINE_LENGTH``: a bracketed
list on one line when it fits, else broken out (:func:`fit`); docstrings likewise
(:func:`docstring_lines`). The model and the templates never measure lines themselves.
"""

from __future__ import annotations

__all__ = [
    "LINE_LENGTH",
    "fits",
    "fit",
    "fit_value",
    "fit_annotated_call",
    "fit_call_with_tuple",
    "broken",
    "filled",
    "docstring_lines",
    "item_doc",
    "tuple_text",
]

LINE_LENGTH = 99


def fits(line: str) -> bool:
    """Whether ``line`` (with its indentation) is within ``LINE_LENGTH``."""
    return len(line) <= LINE_LENGTH


def broken(head: str, items: list[str], tail: str, indent: str, *, inner_line: bool = False) -> list[str]:
    """``head`` (ending in an opening bracket) on a line of its own, then the items indented once
    more, one per line with a trailing comma (with ``inner_line``: all on one line, no trailing
    comma, when that fits), then ``tail`` (starting with the closing bracket). An item may span
    lines (a broken-out item, its first line unindented)."""
    inner = f"{indent}    {', '.join(items)}"
    if inner_line and fits(inner):
        body = [inner]
    else:
        body = [f"{indent}    {item}," for item in items]
    return [f"{indent}{head}", *body, f"{indent}{tail}"]


def fit(
    head: str,
    items: list[str],
    tail: str,
    indent: str,
    *,
    inner_line: bool = False,
    comment: str = "",
    one_tuple: bool = False,
) -> list[str]:
    """``{indent}{head}{items}{tail}`` on one line when it fits, else :func:`broken`.

    ``comment`` (a trailing ``  # type: ignore[...]``) goes at the end of the first line and does
    not count towards its length; with ``one_tuple`` a lone item is written ``(x,)``."""
    joined = ", ".join(items) + ("," if one_tuple and len(items) == 1 else "")
    one = f"{indent}{head}{joined}{tail}"
    lines = [one] if fits(one) else broken(head, items, tail, indent, inner_line=inner_line)
    lines[0] += comment
    return lines


def fit_value(head: str, value: str, tail: str, indent: str) -> list[str]:
    """``{indent}{head}{value}{tail}`` on one line when it fits, else ``value`` in parentheses on a
    line of its own (as black splits the right-hand side of an assignment or a dict entry; no
    trailing comma inside: that would make a tuple)."""
    one = f"{indent}{head}{value}{tail}"
    if fits(one):
        return [one]
    return [f"{indent}{head}(", f"{indent}    {value}", f"{indent}){tail}"]


def fit_annotated_call(
    target: str,
    ann: tuple[str, list[str], str],
    call: str,
    args: list[str],
    indent: str,
    comment: str = "",
) -> list[str]:
    """``{target}: {annotation} = {call}{args})``, where the annotation is ``ann`` (head ending in
    ``[``, parameters, tail starting with ``]``), laid out as black would: on one line when it
    fits; else the call's arguments broken out, when the line up to them fits; else the
    annotation's parameters broken out first. ``comment`` ends the first line (not counted)."""
    ann_head, ann_items, ann_tail = ann
    head = f"{target}: {ann_head}{', '.join(ann_items)}{ann_tail} = {call}"
    if fits(f"{indent}{head}"):
        return fit(head, args, ")", indent, inner_line=True, comment=comment)
    lines = broken(f"{target}: {ann_head}", ann_items, f"{ann_tail} = {call}", indent, inner_line=True)
    lines[0] += comment
    *lines, assign = lines
    return [*lines, *fit(assign.strip(), args, ")", indent, inner_line=True)]


def tuple_text(items: list[str]) -> str:
    """A tuple display of ``items`` on one line (``(x,)`` for one)."""
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def fit_call_with_tuple(head: str, args: list[str], elements: list[str], tail: str, indent: str) -> list[str]:
    """``{head}{args}, ({elements}){tail}``, a call whose last argument is a tuple, on one line
    when it fits; else broken out, the tuple too (one element a line)."""
    one = f"{indent}{head}{', '.join([*args, tuple_text(elements)])}{tail}"
    if fits(one):
        return [one]
    tuple_lines = "\n".join(broken("(", elements, ")", indent + "    ")).strip()
    return broken(head, [*args, tuple_lines], tail, indent)


def filled(head: str, items: list[str], tail: str) -> list[str]:
    """``head`` + items + ``tail`` on one line when it fits, else the items filled into rows
    indented by four (each with a trailing comma), between ``head`` and ``tail`` lines."""
    one = f"{head}{', '.join(items)}{tail}"
    if fits(one):
        return [one]
    out = [head]
    row = "   "
    for item in items:
        if len(row) + len(item) + 2 > LINE_LENGTH:
            out.append(row)
            row = "   "
        row += f" {item},"
    return [*out, row, tail]


def docstring_lines(text: str, indent: str) -> list[str]:
    """A docstring as source lines (escaped, trailing spaces stripped): on one line when it is
    one line and fits, else opening and closing quotes on lines of their own."""
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip("\n")
    raw = [line.rstrip() for line in body.splitlines()] or [""]
    while raw and not raw[-1]:
        raw.pop()
    if len(raw) == 1 and fits(f'{indent}"""{raw[0]}"""'):
        return [f'{indent}"""{raw[0]}"""']
    out = [f'{indent}"""{raw[0]}']
    out += [f"{indent}{line}" if line else "" for line in raw[1:]]
    out.append(f'{indent}"""')
    return out


def item_doc(text: str, registry_line: str) -> str:
    """The registry's documentation of an item followed by what the generator adds (``""``:
    nothing): on one line when the documentation is one line and both fit (members are indented
    once), else as a paragraph of its own. Both are Markdown, which every IDE renders."""
    text = text.strip()
    if not text or not registry_line:
        return text or registry_line
    if "\n" not in text:
        sentence = text if text.endswith((".", "!", "?", ":")) else f"{text}."
        joined = f"{sentence} {registry_line}"
        if fits(f'    """{joined}"""'):
            return joined
    return f"{text}\n\n{registry_line}"
