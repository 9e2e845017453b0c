"""Class bodies of the package model: fields, methods, constructors, ``__match_args__`` and
``replace``, decided for one class at a time, parents before children (overrides are checked
against what the ancestors' classes got)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from .builder import Builder
from .layout import item_doc
from .model import (
    ClassModel,
    FieldKind,
    FieldModel,
    FieldWrite,
    GenerationError,
    InitModel,
    MethodModel,
    ModuleModel,
    Param,
    ReplaceModel,
)
from .naming import RESERVED_CLASS, RESERVED_ENUM, RESERVED_MODULE, Scope, py_name
from .runtime_files import field_kinds
from .snapshot import FieldSnap, MethodSnap, TypeSnap
from .typemap import ANY_ANNOTATION, Annotation

__all__ = ["ClassBodies", "POD_KINDS", "IN_PLACE_KINDS"]

# Fields read straight from object memory by a runtime descriptor (``_bind.field``), by layout,
# from the runtime's one table (``tvmffi_runtime._field_kinds``): POD fields by (static type
# index, size, schema); an ObjectRef is one pointer; String, Bytes and Any are laid out as a
# TVMFFIAny. IN_PLACE_KINDS are written in memory by the runtime (others: through the registry).
POD_KINDS: dict[tuple[int, int, str], FieldKind] = field_kinds().POD_LAYOUTS
IN_PLACE_KINDS: tuple[FieldKind, ...] = field_kinds().IN_PLACE_FIELD_KINDS
SETTER_IS_FUNCTION = 1 << 11


def _literal(value: object) -> str | None:
    """Python source for a JSON default, or None when not a simple literal."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return None


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


class ClassBodies:
    """Fills in the members of the classes a :class:`~tvmffi_gen.builder.Builder` has named."""

    def __init__(self, builder: Builder) -> None:
        self.b = builder

    def _inherited(self, cls: ClassModel) -> tuple[dict[str, FieldModel], dict[str, MethodModel]]:
        fields: dict[str, FieldModel] = {}
        methods: dict[str, MethodModel] = {}
        chain: list[ClassModel] = []
        key = cls.base_key
        seen = {cls.type_key}
        while key is not None:
            if key in seen:
                raise GenerationError(f"type {cls.type_key}: its ancestors form a cycle through {key}")
            seen.add(key)
            chain.append(self.b.classes[key])
            key = self.b.classes[key].base_key
        for anc in reversed(chain):
            for fm in anc.fields:
                fields[fm.name] = fm
            for mm in anc.methods:
                methods[mm.name] = mm
        return fields, methods

    def build(self, t: TypeSnap, cls: ClassModel) -> None:
        mod = self.b.modules[cls.namespace]
        cls.base = self.b.spell(self.b.bases[cls.type_key], mod, runtime=True)
        inherited_fields, inherited_methods = self._inherited(cls)
        from_used = self.b.used_members(t)
        reserved = RESERVED_CLASS | RESERVED_ENUM if "ffi.Enum" in t.ancestors else RESERVED_CLASS
        # the class's own name too: a member named like it would hide it in the class body
        inherited_entries: set[str] = set()
        key = cls.base_key
        while key is not None:  # enum entries of ancestors are class attributes too
            inherited_entries.update(n for n, _ in self.b.classes[key].enum_entries)
            key = self.b.classes[key].base_key
        scope = Scope(
            reserved,
            taken=set(inherited_fields) | set(inherited_methods) | inherited_entries | from_used | {cls.name},
        )
        member_names: set[str] = set()
        # Rule 3, class scope: fields, then methods, then enum entries.
        # A member named like an inherited member of the same kind overrides it (_claim).
        field_py = _claim([f.name for f in t.fields], reserved, inherited_fields, scope, member_names, cls.name)
        method_py = _claim([m.name for m in t.methods], reserved, inherited_methods, scope, member_names, cls.name)
        entries = [(scope.claim(e), e) for e in (t.enum_entries or [])]
        member_names.update(n for n, _ in entries)
        cls.enum_entries = entries
        for f, name in zip(t.fields, field_py, strict=True):
            cls.fields.append(self._field(t, cls, f, name, mod, member_names, inherited_fields))
        for m, name in zip(t.methods, method_py, strict=True):
            cls.methods.append(self._method(t, cls, m, name, mod, member_names, inherited_methods))
        cls.init = self._init(t, cls, mod, member_names)
        cls.match_args = self._match_args(t, cls, inherited_fields)
        if "ffi.Enum" not in t.ancestors:  # enum entries are interned: never copied
            cls.replace = self._replace(t, cls, mod, member_names, inherited_fields, inherited_methods, from_used)
        members: list[FieldModel | MethodModel] = [*cls.fields, *cls.methods]
        for member in members:
            if member.name in from_used:  # overrides a member we cannot compare: let mypy be
                member.override_ignore = True
        cls.pod_offsets = {f.reg_name: f.offset for f in cls.fields if f.kind}

    def _field(
        self,
        t: TypeSnap,
        cls: ClassModel,
        f: FieldSnap,
        name: str,
        mod: ModuleModel,
        members: set[str],
        inherited: dict[str, FieldModel],
    ) -> FieldModel:
        context = f"field {t.type_key}.{f.name}"
        ann = self.b.annotator(mod, context, members)
        ref = self.b.schema_type(f.schema, context)
        getter = ann.annotation(ref, "return")
        setter = ann.annotation(ref, "param")
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
        doc = item_doc(
            f.doc, f"Registry field: ``{t.type_key}.{f.name}``" + ("" if f.writable else " (read-only)") + "."
        )
        fm = FieldModel(
            name=name,
            reg_name=f.name,
            getter=getter,
            setter=setter,
            writable=f.writable,
            doc=doc,
            kind=kind,
            write=write,
            offset=f.offset,
            accessor=f"_ffi_field_{cls.name}_{name}",
            ref=ref,
            owner=t.type_key,
        )
        base = inherited.get(name)
        if base is not None and (base.getter != getter or base.writable != f.writable):
            fm.override_ignore = True
        return fm

    def _method(
        self,
        t: TypeSnap,
        cls: ClassModel,
        m: MethodSnap,
        name: str,
        mod: ModuleModel,
        members: set[str],
        inherited: dict[str, MethodModel],
    ) -> MethodModel:
        context = f"method {t.type_key}.{m.name}"
        ann = self.b.annotator(mod, context, members)
        sig = self.b.schema_sig(m.schema, context)
        doc = item_doc(
            m.doc, f"Registry method: ``{t.type_key}.{m.name}``" + (" (static)" if m.is_static else "") + "."
        )
        if sig.params is None or (not m.is_static and not sig.params):
            mm = MethodModel(name, m.name, [], ANY_ANNOTATION, m.is_static, doc, typed=False)
        else:
            params = self.b.params(sig, ann, skip_self=not m.is_static, doc=m.doc)
            mm = MethodModel(name, m.name, params, ann.annotation(sig.ret, "return"), m.is_static, doc)
        mm.signature_key = repr((mm.is_static, [(p.annotation, p.kind) for p in mm.params], mm.typed))
        base = inherited.get(name)
        if base is not None:
            same_params = base.signature_key == mm.signature_key
            if not same_params or not self._return_compatible(base.ret, mm.ret):
                mm.override_ignore = True
        return mm

    def _match_args(self, t: TypeSnap, cls: ClassModel, inherited: dict[str, FieldModel]) -> list[str] | None:
        """Field names in the order the constructor takes them positionally: auto-init's
        positional parameters, or the leading ``__ffi_init__`` parameters named like fields
        (up to the first that is not an attribute of the class, e.g. a field of a preloaded
        library's type). None (no line) where there is no order and no ancestor's to hide."""
        attrs = {f.reg_name: f.name for f in self._used_fields(t)}  # registry name -> attribute
        attrs.update({f.reg_name: f.name for f in [*inherited.values(), *cls.fields]})
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
        key = cls.base_key
        while key is not None:
            if self.b.classes[key].match_args:
                return []  # a positional pattern must not match by the ancestor's order
            key = self.b.classes[key].base_key
        return None

    def _used_fields(self, t: TypeSnap) -> list[FieldModel]:
        """Fields ``t`` inherits from ancestors in ``--use`` packages (attributes of their
        generated classes, named by the same rule), ancestors first; only name, registry name
        and type are filled in."""
        out: list[FieldModel] = []
        for anc in t.ancestors:
            if anc in self.b.used and anc not in self.b.types:
                for fs in self.b.snap.external_fields.get(anc, []):
                    ref = self.b.schema_type(fs.schema, f"field {anc}.{fs.name}")
                    out.append(
                        FieldModel(
                            py_name(fs.name, RESERVED_CLASS),
                            fs.name,
                            Annotation(""),
                            Annotation(""),
                            fs.writable,
                            "",
                            None,
                            None,
                            0,
                            "",
                            ref=ref,
                            owner=anc,
                        )
                    )
        return out

    def _replace(
        self,
        t: TypeSnap,
        cls: ClassModel,
        mod: ModuleModel,
        members: set[str],
        inherited_fields: dict[str, FieldModel],
        inherited_methods: dict[str, MethodModel],
        from_used: set[str],
    ) -> ReplaceModel | None:
        """``replace(self, *, field=KEEP, ...)``, fields of the whole chain, ancestors first.

        Named ``replace`` unless the library has a member of that name (a field or method of
        the type or an ancestor): then ``replace_`` (``_`` appended until free)."""
        chain = {**inherited_fields, **{f.name: f for f in cls.fields}}
        if "self" in chain:
            return None  # a field named self cannot be a parameter of a method
        library = set(chain) | set(inherited_methods) | {m.name for m in cls.methods}
        library |= {n for n, _ in cls.enum_entries}
        name = "replace"
        while name in library:
            name += "_"
        params: list[Param] = []
        ignore = bool(from_used)
        # fields of ancestors in ``--use`` packages first (their classes are generated too, named
        # by the same rule), then the package's own chain
        for uf in self._used_fields(t):
            if uf.name in chain or uf.name == "self" or any(p.name == uf.name for p in params):
                continue
            ann = self.b.annotator(mod, f"field {uf.owner}.{uf.reg_name}", members)  # warned once
            params.append(Param(uf.name, ann.annotation(uf.ref, "param"), "_bind.KEEP", "kwonly", uf.reg_name))
        for f in chain.values():
            ann = self.b.annotator(mod, f"field {f.owner}.{f.reg_name}", members)  # warned once
            params.append(Param(f.name, ann.annotation(f.ref, "param"), "_bind.KEEP", "kwonly", f.reg_name))
            ignore = ignore or f.override_ignore
        overrides = any(anc in self.b.used for anc in t.ancestors)  # its classes have one too
        key = cls.base_key
        while key is not None:
            base = self.b.classes[key].replace
            if base is not None:
                overrides = overrides or base.name == name
                ignore = ignore or base.name != name  # an ancestor's replace under another name
            key = self.b.classes[key].base_key
        return ReplaceModel(name, params, cls.name, ignore, overrides)

    def _return_compatible(self, base_ret: str, ret: str) -> bool:
        return base_ret == ret or base_ret == "_t.Any" or ret == "_t.Any"

    def _init(self, t: TypeSnap, cls: ClassModel, mod: ModuleModel, members: set[str]) -> InitModel:
        context = f"type {t.type_key} __ffi_init__"
        if t.init == "method":
            sig = self.b.schema_sig(t.init_schema, context)
            if sig.params is None:
                return InitModel("method", [Param("args", ANY_ANNOTATION, None, "varargs")], t.init_doc)
            ann = self.b.annotator(mod, context, members)
            return InitModel("method", self.b.params(sig, ann, skip_self=False, doc=t.init_doc), t.init_doc)
        if t.init == "auto":
            return InitModel("auto", self._auto_init_params(t, mod, members), "")
        return InitModel("none", [], "")

    def _field_py_name(self, owner: str, reg_name: str) -> str | None:
        cls = self.b.classes.get(owner)
        if cls is not None:
            for fm in cls.fields:
                if fm.reg_name == reg_name:
                    return fm.name
        return None

    def _auto_init_params(self, t: TypeSnap, mod: ModuleModel, members: set[str]) -> list[Param]:
        # Fields of the whole chain, ancestors first, as the native auto-init binds them; each
        # parameter is named like the field's property.
        chain: list[tuple[str, FieldSnap]] = []
        for anc in t.ancestors:
            snap = self.b.types.get(anc)
            if snap is not None:
                chain += [(anc, f) for f in snap.fields]
            else:  # a type of a preloaded library
                chain += [(anc, f) for f in self.b.snap.external_fields.get(anc, [])]
        chain += [(t.type_key, f) for f in t.fields]
        scope = Scope(RESERVED_MODULE | {"self"})
        required: list[Param] = []
        optional: list[Param] = []
        kwonly: list[Param] = []
        for owner, f in chain:
            if not f.init or (owner != t.type_key and f.name in t.init_excluded):
                continue  # not a parameter of the native init (see TypeSnap.init_excluded)
            ann = self.b.annotator(mod, f"field {owner}.{f.name}", members)
            annotation = ann.annotation(self.b.schema_type(f.schema, f"field {owner}.{f.name}"), "arg")
            default = None
            if f.has_default:
                lit = None if f.default_is_factory or f.default_repr else _literal(f.default)
                default = lit if lit is not None else "_ffi_MISSING"
                if (
                    default == "None"
                    and annotation.text != ANY_ANNOTATION.text
                    and not annotation.text.endswith("| None")
                ):
                    annotation = annotation.or_none()  # a nullable field whose schema does not say Optional
            p = Param(
                scope.claim(self._field_py_name(owner, f.name) or f.name),
                annotation,
                default,
                "kwonly" if f.kw_only else "normal",
                f.name,
            )
            if f.kw_only:
                kwonly.append(p)
            elif f.has_default:
                optional.append(p)
            else:
                required.append(p)
        return required + optional + kwonly
