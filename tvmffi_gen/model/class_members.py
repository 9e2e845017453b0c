"""Class members of the package model: fields, methods, ``__match_args__`` and ``replace``, and
the Python names they take, each decided from explicit facts: the registry's member, what the
class inherits from its ancestors' classes (decided before it), and an annotator of the class's
module (:meth:`Builder.build_class <tvmffi_gen.model.builder.Builder.build_class>` gathers them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..registry.runtime_files import field_kinds
from ..registry.snapshot import FieldSnap, MethodSnap, TypeSnap
from ..text.layout import item_doc
from .declarations import callable_decl, field_decl
from .naming import RESERVED_CLASS, RESERVED_ENUM, Scope, py_name
from .package import ClassModel, FieldKind, FieldModel, FieldWrite, MethodModel, Param, ReplaceModel
from .typemap import Annotator, FunctionSig, TypeRef

__all__ = [
    "IN_PLACE_KINDS",
    "Inherited",
    "MemberNames",
    "POD_KINDS",
    "UsedField",
    "claim_member_names",
    "field_model",
    "match_args",
    "method_model",
    "replace_model",
]

# Fields read straight from object memory by a runtime descriptor (``_bind.field``), by layout,
# from the runtime's one table (``tvmffi_runtime._field_kinds``): POD fields by (static type
# index, size, schema); an ObjectRef is one pointer; String, Bytes and Any are laid out as a
# TVMFFIAny. IN_PLACE_KINDS are written in memory by the runtime (others: through the registry).
POD_KINDS: dict[tuple[int, int, str], FieldKind] = field_kinds().POD_LAYOUTS
IN_PLACE_KINDS: tuple[FieldKind, ...] = field_kinds().IN_PLACE_FIELD_KINDS
#: A field whose setter is a registry function object, not a native setter: written through it.
SETTER_IS_FUNCTION: int = field_kinds().FieldFlag.SETTER_IS_FUNCTION_OBJ


@dataclass
class Inherited:
    """What a class inherits from the classes of its ancestors in the package (the nearest
    ancestor's member wins a name)."""

    classes: list[ClassModel]  # the ancestors' classes, the root first
    fields: dict[str, FieldModel]
    methods: dict[str, MethodModel]
    entries: set[str]  # Python names of enum entries (class attributes too)

    @staticmethod
    def of(classes: list[ClassModel]) -> Inherited:
        """What ``classes`` (the ancestors' classes, the root first) hand down."""
        fields = {fm.name: fm for anc in classes for fm in anc.fields}
        methods = {mm.name: mm for anc in classes for mm in anc.methods}
        entries = {name for anc in classes for name, _ in anc.enum_entries}
        return Inherited(classes, fields, methods, entries)


@dataclass(frozen=True)
class UsedField:
    """A field a class inherits from an ancestor in a ``--use`` package: an attribute of that
    package's generated class, named by the same rule."""

    name: str
    reg_name: str
    ref: TypeRef
    owner: str  # the ancestor's type key


@dataclass
class MemberNames:
    """The Python names of one class's members, in registry order."""

    fields: list[str]
    methods: list[str]
    entries: list[tuple[str, str]]  # (Python name, registry name)
    all_names: set[str]  # all of them: an annotation in the class body cannot name a class so named


def claim_member_names(t: TypeSnap, class_name: str, inherited: Inherited, from_used: set[str]) -> MemberNames:
    """Rule 3, class scope: fields, then methods, then enum entries. A member named like an
    inherited member of the same kind overrides it (:func:`_claim`); no member takes a name the
    class inherits otherwise (from its ancestors here or in ``--use`` packages), nor the class's
    own name, which would hide the class in its body."""
    reserved = RESERVED_CLASS | RESERVED_ENUM if "ffi.Enum" in t.ancestors else RESERVED_CLASS
    taken = set(inherited.fields) | set(inherited.methods) | inherited.entries | from_used | {class_name}
    scope = Scope(reserved, taken=taken)
    names: set[str] = set()
    fields = _claim([f.name for f in t.fields], reserved, inherited.fields, scope, names, class_name)
    methods = _claim([m.name for m in t.methods], reserved, inherited.methods, scope, names, class_name)
    entries = [(scope.claim(e), e) for e in (t.enum_entries or [])]
    names.update(n for n, _ in entries)
    return MemberNames(fields, methods, entries, names)


def _claim(
    reg_names: list[str],
    reserved: frozenset[str],
    inherited: Mapping[str, object],
    scope: Scope,
    member_names: set[str],
    class_name: str,
) -> list[str]:
    """Python names for members of one kind (fields, or methods), in order: one named like an
    inherited member of the same kind overrides it (keeps the name); only the first one does,
    the rest are claimed like any other name. Each is added to ``member_names``. No member takes
    ``class_name``, not even as an override: in the class body it would hide the class, which
    annotations there (``replace``'s result) name."""
    names: list[str] = []
    for reg_name in reg_names:
        name = py_name(reg_name, reserved)
        if name in inherited and name not in member_names and name != class_name:
            scope.taken.add(name)
        else:
            name = scope.claim(reg_name)
        names.append(name)
        member_names.add(name)
    return names


def field_model(
    owner: str, f: FieldSnap, name: str, ref: TypeRef, ann: Annotator, base: FieldModel | None
) -> FieldModel:
    """The field ``f`` of the type ``owner``, of type ``ref``, named ``name``; ``base``: the
    inherited field it overrides, if any."""
    kind: FieldKind | None = POD_KINDS.get((f.static_type_index, f.size, ref.key))
    if kind is None and f.size == 8 and f.static_type_index >= 64:
        kind = "object"  # an ObjectRef: one pointer, null for None
    elif kind is None and f.size == 16 and ref.key in ("ffi.String", "ffi.Bytes", "Any"):
        kind = "any"  # laid out as a TVMFFIAny
    write: FieldWrite | None = None
    if f.writable:
        # in place as the registry setter would, unless the setter is a function of its own
        in_place = kind in IN_PLACE_KINDS and not f.flags & SETTER_IS_FUNCTION
        write = "in_place" if in_place else "registry"
    doc = item_doc(f.doc, " ".join(([] if f.writable else ["Read-only."]) + _registered_as(name, f.name)))
    # the face declares a read-only field Final in every class: an override's line says to ignore it
    decl = field_decl(name, ref, f.writable, doc, ann.annotation)
    getter = decl.read
    setter = decl.write if decl.write is not None else ann.annotation(ref, "param")
    fm = FieldModel(
        name=name,
        reg_name=f.name,
        getter=getter,
        setter=setter,
        writable=f.writable,
        doc=decl.doc,
        kind=kind,
        write=write,
        offset=f.offset,
        ref=ref,
        owner=owner,
        form=decl.form,
    )
    if base is not None and (base.getter != getter or base.writable != f.writable):
        fm.override_ignore = True
    return fm


def _registered_as(name: str, reg_name: str) -> list[str]:
    """What a member's docstring adds about its registry name: the name, where the naming rule
    changed it (``def_`` for ``def``); its type's is in the class's docstring."""
    return [] if name == reg_name else [f"Registered as `{reg_name}`."]


def method_model(
    owner: str, m: MethodSnap, name: str, sig: FunctionSig, ann: Annotator, base: MethodModel | None
) -> MethodModel:
    """The method ``m`` of the type ``owner`` with the signature ``sig``, named ``name``;
    ``base``: the inherited method it overrides, if any."""
    doc = item_doc(m.doc, " ".join(_registered_as(name, m.name)))
    decl = callable_decl(name, sig, ann.annotation, m.doc, method=True, static=m.is_static, keywords=True)
    if decl.params is None:
        mm = MethodModel(name, m.name, [], decl.ret, m.is_static, doc, typed=False)
    else:
        mm = MethodModel(name, m.name, decl.params, decl.ret, m.is_static, doc)
    mm.signature_key = repr((mm.is_static, [(p.annotation, p.kind) for p in mm.params], mm.typed))
    if base is not None:
        same_params = base.signature_key == mm.signature_key
        if not same_params or not _return_compatible(base.ret, mm.ret):
            mm.override_ignore = True
    return mm


def _return_compatible(base_ret: str, ret: str) -> bool:
    return base_ret == ret or base_ret == "_t.Any" or ret == "_t.Any"


def match_args(cls: ClassModel, inherited: Inherited, used_fields: list[UsedField]) -> list[str] | None:
    """Field names in the order the constructor takes them positionally: auto-init's
    positional parameters, or the leading ``__ffi_init__`` parameters named like fields
    (up to the first that is not an attribute of the class, e.g. a field of a preloaded
    library's type). None (no line) where there is no order and no ancestor's to hide.
    ``used_fields``: the fields the class inherits from ``--use`` packages."""
    attrs = {f.reg_name: f.name for f in used_fields}  # registry name -> attribute
    attrs.update({f.reg_name: f.name for f in [*inherited.fields.values(), *cls.fields]})
    order: list[str] = []
    init = cls.init
    if init is not None and init.kind == "auto":
        for p in init.params:
            if p.kind != "normal" or p.reg_name not in attrs:
                break
            order.append(attrs[p.reg_name])
    elif init is not None and init.kind == "method":
        for p in init.params:
            if p.kind != "normal" or p.name not in attrs.values():
                break
            order.append(p.name)
    if order:
        return order
    if any(anc.match_args for anc in inherited.classes):
        return []  # a positional pattern must not match by the ancestor's order
    return None


def replace_model(
    cls: ClassModel,
    inherited: Inherited,
    used_fields: list[UsedField],
    annotator: Callable[[str], Annotator],
    from_used: set[str],
    extends_used: bool,
) -> ReplaceModel | None:
    """``replace(self, *, field=KEEP, ...)``, fields of the whole chain, ancestors first: those
    of ancestors in ``--use`` packages (``used_fields``; their classes are generated too, named
    by the same rule), then the package's own. ``annotator(context)`` annotates in the class's
    module; ``from_used``: member names inherited from ``--use`` packages; ``extends_used``:
    an ancestor is in one (its class has a ``replace`` too).

    Named ``replace`` unless the library has a member of that name (a field or method of
    the type or an ancestor): then ``replace_`` (``_`` appended until free)."""
    chain = {**inherited.fields, **{f.name: f for f in cls.fields}}
    if "self" in chain:
        return None  # a field named self cannot be a parameter of a method
    library = set(chain) | set(inherited.methods) | {m.name for m in cls.methods}
    library |= {n for n, _ in cls.enum_entries}
    name = "replace"
    while name in library:
        name += "_"
    replace_params: list[Param] = []
    ignore = bool(from_used)
    for uf in used_fields:
        if uf.name in chain or uf.name == "self" or any(p.name == uf.name for p in replace_params):
            continue
        ann = annotator(f"field {uf.owner}.{uf.reg_name}")  # warned once
        replace_params.append(Param(uf.name, ann.annotation(uf.ref, "param"), "_bind.KEEP", "kwonly", uf.reg_name))
    for f in chain.values():
        ann = annotator(f"field {f.owner}.{f.reg_name}")  # warned once
        replace_params.append(Param(f.name, ann.annotation(f.ref, "param"), "_bind.KEEP", "kwonly", f.reg_name))
        ignore = ignore or f.override_ignore
    overrides = extends_used
    for anc in inherited.classes:
        if anc.replace is not None:
            overrides = overrides or anc.replace.name == name
            ignore = ignore or anc.replace.name != name  # an ancestor's replace under another name
    return ReplaceModel(name, replace_params, cls.name, ignore, overrides)
