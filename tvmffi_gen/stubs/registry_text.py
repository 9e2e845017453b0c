"""The stubs' adapter to the model's declarations: what the registry adds to a registered class
(fields, reflected methods, the ``__ffi_init__`` or auto-init constructor, ``__hash__``, members
attached after its body) and a registry function's ``def`` (``function_text``, which the
rewrite uses for the ``_ffi_api`` functions), as text.

What a member becomes is decided in ``model/declarations.py`` and written by
``render/declarations.py``, as for a generated package's face; this module supplies what the
stubs know differently: how a registry type is spelled (``StubContext``), which names the
sources already declare, whether a class below declares a field's name again or a base declares
it as an attribute, and that a ``tvm_ffi.Function`` takes no keywords. Also which of a type's
fields its class declares (``own_fields``) and its constructor takes (``auto_init_fields``),
which the stubtest allowlist asks too. ``rewrite.augment`` puts the text into the stubs.
"""

from __future__ import annotations

import keyword

from ..model.declarations import (
    NOT_CONSTRUCTIBLE,
    Annotate,
    auto_init_params,
    callable_decl,
    field_decl,
    named_like_fields,
    never_params,
    schema_params,
    schema_sig,
)
from ..model.package import CallableDecl
from ..model.typemap import Annotation, Position, SchemaError, TypeRef, parse_schema
from ..registry.facts import auto_init_order, chain_fields
from ..registry.snapshot import FieldSnap
from ..render.declarations import Style, callable_lines, def_lines, field_text, with_doc
from .collected import Collection
from .resolve import StubContext

__all__ = [
    "class_members",
    "def_text",
    "function_text",
    "is_keyword",
    "refuses_construction",
    "own_fields",
    "auto_init_fields",
    "inherited_names",
    "chain_of",
    "names_below",
]


#: The names a parameter of a stub's def cannot take (Python's keywords never do): a stub binds
#: no names of its own a parameter could hide.
_TAKEN = frozenset({"self"})

#: A constructor's result.
_NONE = Annotation("None")

#: How the stubs write a declaration: annotations as ``StubContext`` spells them, one line each.
_STYLE = Style(final="Final", wrap=False)


def def_text(name: str, params: str, ret: str, doc: str, indent: str, decorator: str = "") -> str:
    """``def name(params) -> ret`` with its docstring (``render.declarations``), ``decorator``
    on the line above."""
    head = f"{indent}{decorator}\n" if decorator else ""
    lines = def_lines(f"def {name}", [params] if params else [], ret, _STYLE, indent)
    return head + with_doc(lines, doc.strip(), indent + "    ", _STYLE) + "\n"


def _annotate(ctx: StubContext, where: str) -> Annotate:
    """The model's annotator for the stubs: a registry type as ``ctx`` spells it. A call's own
    parameter takes what the package's conversions accept (``conversions.py``), as a value sent
    inside one does: ``tvm_ffi`` converts both alike."""

    def annotate(ref: TypeRef, pos: Position) -> Annotation:
        return Annotation(ctx.annotate(ref, "param" if pos == "arg" else pos, where))

    return annotate


def function_text(ctx: StubContext, name: str, schema: object, doc: str, where: str, context: str) -> str:
    """A registry function (``_ffi_api``'s) as a stub's ``def``, from its schema
    (``declarations.callable_decl``: positional-only, since a ``tvm_ffi.Function`` takes no
    keywords); ``where`` names it in a warning on a type, ``context`` on a malformed schema."""
    sig = schema_sig(schema, context, ctx.warnings.append)
    decl = callable_decl(name, sig, _annotate(ctx, where), doc, method=False, keywords=False, taken=_TAKEN)
    return _callable_text(decl, "", None)


def _callable_text(decl: CallableDecl, indent: str, first: str | None, decorator: str = "") -> str:
    """``decl`` written by ``render.declarations``, ``decorator`` on the line above."""
    head = f"{indent}{decorator}\n" if decorator else ""
    lines = callable_lines(decl, _STYLE, indent, first)
    return head + with_doc(lines, decl.doc.strip(), indent + "    ", _STYLE) + "\n"


def refuses_construction(data: Collection, key: str) -> bool:
    """Whether the class of ``key`` refuses every constructor call: its type registers no
    ``__ffi_init__`` and ``tvm_ffi`` gave the class its ``TypeError`` guard (a class outside
    ``register_object``'s guard, as ``tvm.runtime.Tensor`` over ``tvm_ffi.core.Tensor``, keeps
    the constructor it inherits)."""
    return data.types[key].init is None and data.classes[key].made_init


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
    if (
        (facts.init is not None or refuses_construction(ctx.data, key))
        and not info.python_init
        and "__init__" not in taken
    ):
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
    """Each field the class declares, as ``declarations.field_decl`` decides: the facts of the
    stubs are whether a base declares the name as an attribute (a property cannot override one),
    and whether a class deriving from it declares the name again or the module binds ``Final``
    itself (then no ``Final``)."""
    info = ctx.data.classes[key]
    base_attrs: set[str] = set[str]().union(
        *(ctx.attribute_names.get(b, set()) - ctx.frozen.get(b, set()) for b in info.bases)
    )
    parts: list[str] = []
    for f in own_fields(ctx.data, key):
        if not _declarable(f.name, taken, inherited):
            continue
        taken.add(f.name)
        where = f"{key}.{f.name}"
        base_attribute = f.name in base_attrs
        final_ok = not (f.writable or base_attribute or f.name in below)
        final = ctx.import_by_name("typing", "Final") if final_ok else None
        decl = field_decl(
            f.name,
            _field_ref(ctx, f, where),
            f.writable,
            f.doc.strip(),
            _annotate(ctx, where),
            redeclared_below=final is None,
            base_attribute=base_attribute,
        )
        parts.append(field_text(decl, Style(final=final or "Final", wrap=False), _IND) + "\n")
    return parts


def _method_lines(ctx: StubContext, key: str, taken: set[str], inherited: set[str]) -> list[str]:
    parts: list[str] = []
    for m in ctx.data.types[key].methods:
        if not _declarable(m.name, taken, inherited):
            continue
        taken.add(m.name)
        where = f"{key}.{m.name}"
        sig = schema_sig(m.schema, f"method {where}", ctx.warnings.append)
        annotate = _annotate(ctx, where)
        decl = callable_decl(
            m.name, sig, annotate, m.doc, method=True, static=m.is_static, keywords=False, taken=_TAKEN
        )
        first, decorator = (None, "@staticmethod") if m.is_static else ("self", "")
        parts.append(_callable_text(decl, _IND, first, decorator))
    return parts


def _init_text(ctx: StubContext, key: str) -> str:
    """The ``__init__`` of a class without a Python one: the ``__ffi_init__`` method's schema
    (parameters named after the fields where they match them one to one), the native
    auto-init's parameters from the fields, or none at all (``declarations``)."""
    return _callable_text(_init_decl(ctx, key), _IND, "self")


def _init_decl(ctx: StubContext, key: str) -> CallableDecl:
    t = ctx.data.types[key]
    if t.init is None:
        no_return = Annotation(ctx.import_by_name("typing", "NoReturn") or "_t.NoReturn")
        return CallableDecl("__init__", never_params(no_return), _NONE, doc=NOT_CONSTRUCTIBLE)
    if t.init == "method":
        sig = schema_sig(t.init_schema, f"type {key} __ffi_init__", ctx.warnings.append)
        if sig.params is None:
            return CallableDecl("__init__", None, _NONE, doc=t.init_doc)
        annotate = _annotate(ctx, f"{key}.__init__")
        params = schema_params(sig, annotate, False, t.init_doc, keywords=False, taken=_TAKEN)
        return CallableDecl("__init__", named_like_fields(params, sig, _init_fields(ctx, key)), _NONE, doc=t.init_doc)
    fields: list[tuple[str, FieldSnap, Annotation]] = []
    for f in auto_init_fields(ctx.data, key):
        where = f"{key}.{f.name}"
        fields.append((f.name, f, _annotate(ctx, where)(_field_ref(ctx, f, where), "arg")))
    return CallableDecl("__init__", auto_init_params(fields, _TAKEN), _NONE)


def _init_fields(ctx: StubContext, key: str) -> list[tuple[str | None, TypeRef]]:
    """The fields of ``key``'s chain, ancestors' first as declared: each one's attribute name
    (None where no Python name can be one) and type."""
    out: list[tuple[str | None, TypeRef]] = []
    for owner, f in chain_of(ctx.data, key):
        name = f.name if f.name.isidentifier() and not is_keyword(f.name) else None
        out.append((name, _field_ref(ctx, f, f"{owner}.{f.name}")))
    return out


def _incomplete_param(p: str, i: int, kind: str) -> str:
    if p in ("/", "*") or (i == 0 and kind in ("method", "class", "property") and not p.startswith("*")):
        return p
    name, eq, _ = p.partition("=")
    return f"{name}: Incomplete" + (" = ..." if eq else "")
