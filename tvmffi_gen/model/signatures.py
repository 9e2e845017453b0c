"""Named results of the package model, decided from a registry signature, and the parameters
nothing names (``_0, _1, ...``; ``declarations.schema_params`` decides every parameter)."""

from __future__ import annotations

import re

from .docparams import documented_result_names
from .naming import py_name
from .package import Param, ResultModel
from .typemap import Annotator, TypeRef

__all__ = ["named_result", "unnamed", "unnamed_note"]

#: The name of a parameter nothing names: ``_0, _1, ...``.
_UNNAMED = re.compile(r"_\d+")


def unnamed(p: Param) -> bool:
    """Whether ``p`` is a positional-only ``_N``: neither the schema nor a doc names it."""
    return p.kind == "posonly" and _UNNAMED.fullmatch(p.name) is not None


def unnamed_note(signatures: list[list[Param]]) -> str | None:
    """One line for a run: how many parameters of ``signatures`` (functions, methods,
    constructors) nothing names, and how their author names them; None when there are none."""
    counts = [sum(unnamed(p) for p in params) for params in signatures]
    total, items = sum(counts), sum(1 for n in counts if n)
    if not total:
        return None
    return (
        f"{total} parameters of {items} functions, methods and constructors have no name in the"
        " registry, so they are positional-only `_0, _1, ...`: a numpydoc `Parameters` section in"
        " each one's registry doc names them (see the README's C++ example)"
    )


def named_result(ret: TypeRef, doc: str, fn_name: str, ann: Annotator) -> ResultModel | None:
    """A named tuple for a ``Tuple`` result whose items the documentation names (numpydoc
    ``Returns``: ``quotient : int``), named ``<FunctionName>Result``; else None."""
    if ret.key != "Tuple" or not ret.args:
        return None
    names = documented_result_names(doc, len(ret.args))
    # a name Python would change, or one a tuple already defines, names no field
    if names is None or any(py_name(n) != n or n in ("count", "index") for n in names):
        return None
    camel = "".join(part[:1].upper() + part[1:] for part in fn_name.split("_") if part)
    items = [(n, ann.annotation(t, "return")) for n, t in zip(names, ret.args, strict=True)]
    words = {w for _, a in items for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", a.text)}
    if words & set(names):  # an item named like a type its class body refers to
        return None
    return ResultModel(f"{camel or 'Function'}Result", items)
