"""What a registry member becomes for a type checker: the one place that decides it, for a
generated package's ``.pyi`` face and for ``--stubs-for``'s stubs alike.

A field is a :class:`FieldDecl` (its read type, its write type or read-only, its docstring, and
the form that says both to every checker); a method, function or constructor is a list of
:class:`~tvmffi_gen.model.package.Param` (names, annotations, defaults, kinds) from
:func:`schema_params`, :func:`named_like_fields` or :func:`auto_init_params`. What really
differs between the two outputs comes in as explicit facts: how a registry type is spelled (an
``annotate`` function: the generated class, or the package's own class and its import), which
names are taken, whether a named parameter may be passed by keyword, whether a class below
declares a field's name again (a ``Final`` is never redeclared) or a base declares it as an
attribute (a property cannot override one). ``render/declarations.py`` writes them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence

from ..registry.facts import defaults_to_none
from ..registry.snapshot import FieldSnap
from ..text.layout import fits, item_doc
from .docparams import documented_param_names
from .naming import RESERVED_MODULE, Scope
from .package import CallableDecl, FieldDecl, FieldForm, Param, ParamKind
from .signatures import unnamed
from .typemap import (
    ANY,
    ANY_ANNOTATION,
    Annotation,
    FunctionSig,
    Position,
    SchemaError,
    TypeRef,
    function_sig,
    without_aliases,
)

__all__ = [
    "NATIVE_DEFAULT",
    "NOT_CONSTRUCTIBLE",
    "PACKAGE_TAKEN",
    "Annotate",
    "FieldDecl",
    "FieldForm",
    "CallableDecl",
    "auto_init_params",
    "callable_decl",
    "field_decl",
    "named_like_fields",
    "never_params",
    "schema_params",
    "schema_sig",
]

#: How a member's type is spelled where it is declared: a registry type to its annotation.
Annotate = Callable[[TypeRef, Position], Annotation]

#: The default of a parameter whose value only the native side knows (a factory, a value with
#: no literal): written ``...`` in a declaration.
NATIVE_DEFAULT = "_bind.NATIVE_DEFAULT"


#: The docstring of the constructor of a type that registers neither ``__ffi_init__`` nor an
#: auto-init: its run time refuses the call.
NOT_CONSTRUCTIBLE = "Not constructible from Python: the type registers no `__ffi_init__`."


def never_params(no_return: Annotation) -> list[Param]:
    """The parameters of the constructor of a type that cannot be built from Python: one no
    value has (``no_return``: ``NoReturn`` as the module spells it), so a checker flags every
    call, as the run time refuses it (``TypeError``)."""
    return [Param("_never", no_return, None, "posonly")]


def field_decl(
    name: str,
    ref: TypeRef,
    writable: bool,
    doc: str,
    annotate: Annotate,
    *,
    redeclared_below: bool = False,
    base_attribute: bool = False,
) -> FieldDecl:
    """The field ``name`` of type ``ref``. Read-only: ``Final[T]``, which every server shows as
    its type and as read-only (jedi labels a property ``property``, with no type), unless a class
    below declares the name again (``redeclared_below``; a checker refuses to redeclare a
    ``Final``): then a read-only property. Writable: an attribute where it reads and writes one
    type, else a property whose setter takes the wider type (an attribute of the read type would
    refuse ``node.items = [a, b]``, which the run time converts). An attribute whatever it is
    where a base declares the name as one (``base_attribute``): a property cannot override it."""
    read = annotate(ref, "return")
    write = annotate(ref, "param") if writable else None
    form: FieldForm
    if base_attribute:
        form = "attribute"
    elif write is None:
        form = "property" if redeclared_below else "final"
    else:
        form = "attribute" if write.text == read.text else "setter"
    if form == "setter" and write is not None:
        doc = item_doc(doc, _assignment_note(read, write))
    return FieldDecl(name, read, write, doc, form)


def _assignment_note(read: Annotation, write: Annotation) -> str:
    """What a field set from a wider type than it reads says of both types in its doc: a
    property's type is shown by pyright (the getter's alone) but not by jedi-language-server,
    which labels it ``property name`` and shows the docstring."""
    reads, takes = f"Reads as `{without_aliases(read.text)}`;", f"assigned from any `{without_aliases(write.text)}`."
    # on two lines (one paragraph in Markdown) where a property's docstring line would not fit
    return f"{reads} {takes}" if fits(f"{_PROPERTY_DOC_INDENT}{reads} {takes}") else f"{reads}\n{takes}"


#: A property's docstring in a class body.
_PROPERTY_DOC_INDENT = " " * 8


def schema_sig(schema: object, context: str, warn: Callable[[str], None]) -> FunctionSig:
    """The signature a function schema gives; a warning naming ``context`` and an untyped
    signature (``(*args: Any) -> Any``) when it is malformed."""
    try:
        return function_sig(schema)
    except SchemaError as exc:
        warn(f"{context}: malformed type schema ({exc}); typed as Any")
        return FunctionSig(None, ANY)


#: The names a parameter of a generated package's def cannot take: the module's (its import
#: aliases, ``annotations``, the builtins its annotations name) and ``self``.
PACKAGE_TAKEN = RESERVED_MODULE | {"self"}


def schema_params(
    sig: FunctionSig,
    annotate: Annotate,
    skip_self: bool,
    doc: str,
    *,
    keywords: bool,
    taken: frozenset[str] = PACKAGE_TAKEN,
) -> list[Param]:
    """The parameters of a registry signature (``sig.params`` known): named as the schema names
    them, else as the registry docstring documents them, else ``_0, _1, ...`` (positional-only);
    each name a Python name no other parameter has (``lambda`` is ``lambda_``). ``keywords``:
    whether a call may pass a named parameter by keyword (a generated package's function maps
    them; a ``tvm_ffi.Function`` takes positions only); ``taken``: names no parameter may take
    (Python's keywords never do)."""
    assert sig.params is not None
    types = list(sig.params)
    names = list(sig.param_names) if len(sig.param_names) == len(types) else [None] * len(types)
    if skip_self:
        types, names = types[1:], names[1:]
    scope = Scope(taken)
    named = bool(types) and all(names)
    documented = None if named else documented_param_names(doc, len(types))
    kind: ParamKind = "normal" if keywords and (named or documented is not None) else "posonly"
    out: list[Param] = []
    for i, (ref, name) in enumerate(zip(types, names, strict=True)):
        given = name if named else documented[i] if documented is not None else None
        pname = scope.claim(given) if given else scope.claim(f"_{i}")
        out.append(Param(pname, annotate(ref, "arg"), None, kind))
    return out


def callable_decl(
    name: str,
    sig: FunctionSig,
    annotate: Annotate,
    doc: str,
    *,
    method: bool,
    static: bool = False,
    keywords: bool,
    taken: frozenset[str] = PACKAGE_TAKEN,
) -> CallableDecl:
    """A registry function, or a type's method (``method``; ``static`` or taking the object
    first), with the signature ``sig``: untyped (``(*args: Any) -> Any``) where the schema gives
    no parameters, or a method that is not static gives none (not even the object); else its
    :func:`schema_params` and its result."""
    if sig.params is None or (method and not static and not sig.params):
        return CallableDecl(name, None, ANY_ANNOTATION, static, doc)
    params = schema_params(sig, annotate, method and not static, doc, keywords=keywords, taken=taken)
    return CallableDecl(name, params, annotate(sig.ret, "return"), static, doc)


def named_like_fields(
    params: list[Param], sig: FunctionSig, fields: Sequence[tuple[str | None, TypeRef]]
) -> list[Param]:
    """An ``__ffi_init__`` whose schema and doc name no parameter, taking the type's fields one
    to one (``fields``: its chain's, ancestors' first as declared, each its attribute name, None
    where it has none, and its type; the same types in the same order): its parameters are named
    after the fields. They stay positional-only: the native init takes no keywords, and nothing
    says the C++ constructor means them as the fields, only that they fit."""
    if not params or not all(unnamed(p) for p in params) or sig.params is None:
        return params
    if len(fields) != len(params) or len(sig.params) != len(params):
        return params
    names: list[str] = []
    for (name, ref), given in zip(fields, sig.params, strict=True):
        if name is None or name == "self" or name in names or ref != given:
            return params
        names.append(name)
    return [dataclasses.replace(p, name=name) for p, name in zip(params, names, strict=True)]


def auto_init_params(
    fields: Sequence[tuple[str, FieldSnap, Annotation]], taken: frozenset[str] = PACKAGE_TAKEN
) -> list[Param]:
    """The native auto-init's parameters, in its order (``fields``: each field's attribute name,
    snapshot and annotation as a call's parameter, in ``registry.facts.auto_init_order``): named
    like the fields, keyword-only where the field is, a literal default where the registry's is
    one (else ``...``), and ``| None`` where the native default is None; ``taken``: as for
    :func:`schema_params`."""
    scope = Scope(taken)
    out: list[Param] = []
    for name, f, annotation in fields:
        if defaults_to_none(f) and annotation.text != ANY_ANNOTATION.text and not annotation.text.endswith("| None"):
            annotation = annotation.or_none()
        out.append(Param(scope.claim(name), annotation, _default(f), "kwonly" if f.kw_only else "normal", f.name))
    return out


def _default(f: FieldSnap) -> str | None:
    """A field's default as Python source: its literal, else :data:`NATIVE_DEFAULT`."""
    if not f.has_default:
        return None
    literal = None if f.default_is_factory or f.default_repr else _literal(f.default)
    return literal if literal is not None else NATIVE_DEFAULT


def _literal(value: object) -> str | None:
    """Python source for a JSON default, or None when not a simple literal."""
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return None
