"""Parameter names a function's registry documentation states, for signatures without names.

A native function registered without argument names gets ``_0, _1, ...``. When its docstring
documents the parameters in a numpydoc ``Parameters`` section (``x : Tensor``) or a Google-style
``Args:`` section (``x: ...`` / ``x (int): ...``), those names are used instead, but only where
that is reliable: the section names exactly as many parameters as the signature has, each a
plain identifier, all distinct. Otherwise the positional names stay.

The items of a tuple result are named the same way, from a numpydoc ``Returns`` section whose
entries are ``name : type`` (then the function returns a named tuple).
"""

from __future__ import annotations

import keyword
import re

__all__ = ["documented_param_names", "documented_result_names"]

_NUMPY_ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::.*)?$")
_GOOGLE_ENTRY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:")


def documented_param_names(doc: str, count: int) -> list[str] | None:
    """The ``count`` parameter names ``doc`` documents, in order, or None when it does not
    document exactly that many (or names them ambiguously)."""
    if count == 0 or not doc:
        return None
    names = _numpy_section(doc.splitlines())
    if names is None:
        names = _google_section(doc.splitlines())
    return _reliable(names, count)


def documented_result_names(doc: str, count: int) -> list[str] | None:
    """The names of the ``count`` items of a tuple result, as a numpydoc ``Returns`` section
    lists them (``quotient : int``), or None unless it names exactly that many, reliably."""
    if count == 0 or not doc:
        return None
    return _reliable(_numpy_section(doc.splitlines(), "Returns", named=True), count)


def _reliable(names: list[str] | None, count: int) -> list[str] | None:
    if names is None or len(names) != count or len(set(names)) != count:
        return None
    if any(keyword.iskeyword(n) or keyword.issoftkeyword(n) or n.startswith("_") for n in names):
        return None
    return names


def _numpy_section(lines: list[str], title: str = "Parameters", named: bool = False) -> list[str] | None:
    """The entry names of a numpydoc section; ``named``: every entry must be ``name : type`` (a
    ``Returns`` entry may be a bare type, which names nothing: then None)."""
    for i, line in enumerate(lines[:-1]):
        if line.strip() == title and set(lines[i + 1].strip()) == {"-"}:
            indent = _indent(line)
            names: list[str] = []
            rest = lines[i + 2 :]
            for j, entry in enumerate(rest):
                if not entry.strip():
                    continue
                if _indent(entry) < indent:
                    break
                if j + 1 < len(rest) and rest[j + 1].strip() and set(rest[j + 1].strip()) == {"-"}:
                    break  # the next section's title
                if _indent(entry) == indent:
                    match = _NUMPY_ENTRY.match(entry.strip())
                    if match is None:
                        break  # the next section (or text that is not an entry): the list ends
                    if named and ":" not in entry:
                        return None
                    names.append(match.group(1))
            return names or None
    return None


def _google_section(lines: list[str]) -> list[str] | None:
    for i, line in enumerate(lines):
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            names: list[str] = []
            entry_indent: int | None = None
            for entry in lines[i + 1 :]:
                if not entry.strip():
                    continue
                if _indent(entry) <= _indent(line):
                    break
                if entry_indent is None:
                    entry_indent = _indent(entry)
                if _indent(entry) == entry_indent:
                    match = _GOOGLE_ENTRY.match(entry.strip())
                    if match is None:
                        return None
                    names.append(match.group(1))
            return names or None
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
