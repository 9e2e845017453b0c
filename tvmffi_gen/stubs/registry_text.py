"""The stub text of what the registry knows and the sources do not say, as ``def`` and attribute
lines: a registered class's fields, reflected methods, ``__ffi_init__`` constructor, ``__hash__``
and the members attached to it after its body (``class_members``), and a registry function's
signature from its schema (``params_from_schema``, ``def_text``), which the rewrite uses for the
``_ffi_api`` functions. Also which of a type's fields its class declares (``own_fields``) and its
constructor takes (``all_init_fields``), which the stubtest allowlist asks too. Text only:
``rewrite.augment`` puts it into the stubs.
"""

from __future__ import annotations

import keyword
from typing import Any

from ..model.docparams import documented_param_names
from ..model.typemap import SchemaError, TypeRef, function_sig, parse_schema
from ..registry.facts import auto_init_order, chain_fields, defaults_to_none
from ..registry.snapshot import FieldSnap
from .collected import Collection
from .resolve import StubContext

__all__ = [
    "class_members",
    "def_text",
    "params_from_schema",
    "is_keyword",
    "own_fields",
    "auto_init_fields",
    "inherited_names",
    "chain_of",
    "names_below",
]


def _doc(text: str, indent: str) -> str:
    if not text.strip():
        return ""
    body = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = body.splitlines()
    return (
        f'{indent}"""'
        + ("\n".join([lines[0]] + [indent + ln if ln.strip() else "" for ln in lines[1:]]))
        + (f'\n{indent}"""' if len(lines) > 1 else '"""')
        + "\n"
    )


def def_text(name: str, params: str, ret: str, doc: str, indent: str, decorator: str = "") -> str:
    head = f"{indent}{decorator}\n" if decorator else ""
    if doc:
        return f"{head}{indent}def {name}({params}) -> {ret}:\n{_doc(doc, indent + '    ')}"
    return f"{head}{indent}def {name}({params}) -> {ret}: ...\n"


def params_from_schema(ctx: StubContext, schema: Any, doc: str, where: str, skip_self: bool) -> tuple[str, str]:
    """``(p0: T, ..., /)`` text and the return annotation of a registry function schema."""
    try:
        sig = function_sig(schema)
    except SchemaError as exc:
        ctx.warnings.append(f"{where}: {exc}; typed as (*args: Any) -> Any")
        sig = function_sig(None)
    if sig.params is None:
        return ("self, *args: _t.Any" if skip_self else "*args: _t.Any"), "_t.Any"
    params = list(sig.params)
    names = list(sig.param_names)
    if skip_self and params:
        params, names = params[1:], names[1:]
    if not all(names) and params:
        documented = documented_param_names(doc, len(params))
        names = list(documented) if documented else [None] * len(params)
    out = ["self"] if skip_self else []
    seen: set[str] = set(out)
    # the schema's names come from the library: not trusted to match the parameters in number
    for i, (p, n) in enumerate(zip(params, names, strict=False)):
        pname = n if n and n.isidentifier() and not is_keyword(n) and n not in seen else f"_{i}"
        seen.add(pname)
        out.append(f"{pname}: {ctx.annotate(p, 'param', where)}")
    if len(out) > (1 if skip_self else 0):
        out.append("/")
    return ", ".join(out), ctx.annotate(sig.ret, "return", where)


def is_keyword(name: str) -> bool:
    return keyword.iskeyword(name) or name in ("self",)


def chain_of(data: Collection, key: str) -> list[tuple[str, FieldSnap]]:
    """The fields of ``key`` and its ancestors, root first, as (owner, field)."""

    def fields_of(k: str) -> list[FieldSnap]:
        t = data.types.get(k)
        return t.fields if t is not None else []

    return chain_fields(key, fields_of, data.ancestors(key))


def own_fields(data: Collection, key: str) -> list[FieldSnap]:
    """The fields a class for ``key`` declares: its own and those of ancestors with no Python
    class (which no other stub class carries)."""
    ancestors = data.ancestors(key)
    first = next((i + 1 for i in reversed(range(len(ancestors))) if ancestors[i] in data.classes), 0)
    return [f for owner, f in chain_of(data, key) if owner not in ancestors[:first]]


def auto_init_fields(data: Collection, key: str) -> list[FieldSnap]:
    """The fields the native auto-init of ``key`` takes, in its parameters' order."""
    return [f for _, f in auto_init_order(data.types[key], chain_of(data, key))]


def inherited_names(data: Collection, key: str, stub_members: dict[str, set[str]]) -> set[str]:
    """Names the Python classes of ``key``'s ancestors define in their stubs (a reflected method
    is attached only when the class does not already have one by that name)."""
    out: set[str] = set(data.classes[key].inherited)
    for anc in data.ancestors(key):
        out |= stub_members.get(anc, set())
    return out


def names_below(
    data: Collection, stub_members: dict[str, set[str]], declarations: dict[str, tuple[list[str], set[str]]]
) -> dict[str, set[str]]:
    """Per type key, the names the classes deriving from its class declare: the registered ones
    (in their stubs' bodies, attached late, or from the registry) and every class of the stubs
    (``declarations``: per class path, its bases' paths and its body's names, from
    ``stubtext.class_declarations``), registered or not. A read-only field none of them declares
    again can be ``Final`` (a checker refuses any redeclaration of a ``Final`` name)."""
    below: dict[str, set[str]] = {}
    for key, info in data.classes.items():
        facts = data.types.get(key)
        names = stub_members.get(key, set()) | set(info.late) | {f.name for f in own_fields(data, key)}
        names |= {m.name for m in facts.methods} if facts is not None else set()
        for ancestor in data.ancestors(key):
            below.setdefault(ancestor, set()).update(names)
    by_path = _names_below_classes(data, declarations)
    for key, info in data.classes.items():
        below.setdefault(key, set()).update(by_path.get(info.path, set()))
    return below


def _names_below_classes(data: Collection, declarations: dict[str, tuple[list[str], set[str]]]) -> dict[str, set[str]]:
    """Per class path, the names the stubs' classes deriving from it (at any depth) declare; a
    registered class's other paths (``tvm.tirx.Expr`` for ``tvm.ir.expr.Expr``) are read as its
    own."""
    canonical = {path: info.path for info in data.classes.values() for path in info.paths}
    parents = {canonical.get(c, c): [canonical.get(b, b) for b in bases] for c, (bases, _) in declarations.items()}
    below: dict[str, set[str]] = {}
    for cls, (_, names) in declarations.items():
        seen: set[str] = set()
        todo = list(parents.get(canonical.get(cls, cls), []))
        while todo:
            base = todo.pop()
            if base in seen:
                continue
            seen.add(base)
            below.setdefault(base, set()).update(names)
            todo += parents.get(base, [])
    return below


def class_members(
    ctx: StubContext, key: str, existing: set[str], inherited: set[str], below: frozenset[str] | set[str] = frozenset()
) -> str:
    """Stub text for what the registry (and late attachment) adds to the class of ``key``;
    ``below`` holds the names the classes deriving from it declare (``names_below``)."""
    facts, info = ctx.data.types[key], ctx.data.classes[key]
    taken = set(existing)
    parts = _field_lines(ctx, key, taken, inherited, below) + _method_lines(ctx, key, taken, inherited)
    if facts.init is not None and not info.python_init and "__init__" not in taken:
        taken.add("__init__")
        parts.append(_init_text(ctx, key))
    if (
        ("__eq__" in existing or info.python_eq) and "__hash__" not in existing and info.hashable
    ):  # a class body defining __eq__ alone is unhashable to a checker; at run time it is hashable
        parts.append(def_text("__hash__", "self", "int", "", _IND))
    for name, late in sorted(info.late.items()):
        if name in taken or name in inherited:
            continue
        taken.add(name)
        sig = late.sig[1:-1]
        params = ", ".join(_incomplete_param(p, i, late.kind) for i, p in enumerate(sig.split(", ")) if p)
        deco = {"static": "@staticmethod", "class": "@classmethod", "property": "@property"}.get(late.kind, "")
        parts.append(def_text(name, params, "Incomplete", "", _IND, deco))
    return "".join(parts)


_IND = "    "


def _declarable(name: str, taken: set[str], inherited: set[str]) -> bool:
    """Whether a registry member ``name`` gets a declaration: a name the package declares for it
    (here or in a Python base) wins, and a name no stub can declare is left out."""
    return name not in taken and name not in inherited and name.isidentifier() and not is_keyword(name)


def _field_ref(ctx: StubContext, f: FieldSnap, where: str) -> TypeRef:
    """The type a field's schema gives; a warning naming ``where`` and Any when it is malformed,
    as the package generator does."""
    try:
        return parse_schema(f.schema) if f.schema is not None else TypeRef("Any")
    except SchemaError as exc:
        warning = f"field {where}: malformed type schema ({exc}); typed as Any"
        if warning not in ctx.warnings:  # the constructor reads the field's schema again
            ctx.warnings.append(warning)
        return TypeRef("Any")


def _field_lines(
    ctx: StubContext, key: str, taken: set[str], inherited: set[str], below: frozenset[str] | set[str]
) -> list[str]:
    """A field as an attribute (writable, or a base declares it as one: a property cannot
    override a base's attribute); a read-only one as ``Final[T]`` (what every server shows as its
    type and as read-only: jedi labels a property ``property name``, with no type; ``Final`` by
    its own name, which jedi prints as written), or as a read-only property where a class
    deriving from it declares the name again or the module binds ``Final`` itself."""
    info = ctx.data.classes[key]
    base_attrs: set[str] = set[str]().union(
        *(ctx.attribute_names.get(b, set()) - ctx.frozen.get(b, set()) for b in info.bases)
    )
    parts: list[str] = []
    for f in own_fields(ctx.data, key):
        if not _declarable(f.name, taken, inherited):
            continue
        taken.add(f.name)
        ann = ctx.annotate(_field_ref(ctx, f, f"{key}.{f.name}"), "return", f"{key}.{f.name}")
        if f.writable or f.name in base_attrs:
            parts.append(f"{_IND}{f.name}: {ann}\n" + (_doc(f.doc, _IND) if f.doc else ""))
        elif f.name not in below and (final := ctx.import_by_name("typing", "Final")) is not None:
            parts.append(f"{_IND}{f.name}: {final}[{ann}]\n" + (_doc(f.doc, _IND) if f.doc else ""))
        else:
            parts.append(def_text(f.name, "self", ann, f.doc, _IND, "@property"))
    return parts


def _method_lines(ctx: StubContext, key: str, taken: set[str], inherited: set[str]) -> list[str]:
    parts: list[str] = []
    for m in ctx.data.types[key].methods:
        if not _declarable(m.name, taken, inherited):
            continue
        taken.add(m.name)
        params, ret = params_from_schema(ctx, m.schema, m.doc, f"{key}.{m.name}", skip_self=not m.is_static)
        parts.append(def_text(m.name, params, ret, m.doc, _IND, "@staticmethod" if m.is_static else ""))
    return parts


def _init_text(ctx: StubContext, key: str) -> str:
    """The ``__init__`` of a class without a Python one: the ``__ffi_init__`` method's schema,
    or the native auto-init's parameters from the fields."""
    t = ctx.data.types[key]
    if t.init == "method":
        params, _ = params_from_schema(ctx, t.init_schema, t.init_doc, f"{key}.__init__", False)
        return def_text("__init__", "self" + (", " + params if params else ""), "None", t.init_doc, _IND)
    pos: list[str] = []
    kw: list[str] = []
    for f in auto_init_fields(ctx.data, key):
        if not f.name.isidentifier() or is_keyword(f.name):
            continue
        where = f"{key}.{f.name}"
        ann = ctx.annotate(_field_ref(ctx, f, where), "param", where)
        if defaults_to_none(f) and ann != "_t.Any" and not ann.endswith("| None"):
            ann += " | None"  # the rule the package's constructors follow
        (kw if f.kw_only else pos).append(f"{f.name}: {ann}" + (" = ..." if f.has_default else ""))
    return def_text("__init__", ", ".join(["self", *pos, *(["*", *kw] if kw else [])]), "None", "", _IND)


def _incomplete_param(p: str, i: int, kind: str) -> str:
    if p in ("/", "*") or (i == 0 and kind in ("method", "class", "property") and not p.startswith("*")):
        return p
    name, eq, _ = p.partition("=")
    return f"{name}: Incomplete" + (" = ..." if eq else "")
