"""Type schemas (the registry's JSON form) → Python annotations.

A schema is ``{"type": KEY, "args": [...]}`` or, for functions, either ``args`` with the return
type first or ``named_args`` with ``params`` and ``return``. The same schema maps differently by
position: parameters accept what the runtime converts (a sequence for an Array, a mapping for a
Map, any DLPack exporter for a Tensor, a string for a DataType); fields and return values are the
runtime's own classes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

__all__ = [
    "TypeRef",
    "parse_schema",
    "SchemaError",
    "FunctionSig",
    "function_sig",
    "Annotator",
    "Annotation",
    "ANY_ANNOTATION",
    "standard",
    "compose",
    "runtime_class",
    "without_aliases",
]

#: "arg": a function's, method's or constructor's own parameter (what one call packs); "param":
#: a value sent inside one (a container's element, a field written); "return": a value received
Position = Literal["arg", "param", "return"]


class SchemaError(ValueError):
    """A type schema this generator cannot read."""


@dataclass(frozen=True)
class TypeRef:
    """One parsed type: its registry key and its type arguments."""

    key: str
    args: tuple[TypeRef, ...] = ()
    params: tuple[TypeRef, ...] | None = None  # functions with a signature
    ret: TypeRef | None = None
    param_names: tuple[str | None, ...] | None = None


ANY = TypeRef("Any")


def _json_object(value: object) -> dict[str, object] | None:
    """``value`` as a JSON object (its keys are strings), or None when it is not one."""
    return cast("dict[str, object]", value) if isinstance(value, dict) else None


def _json_list(value: object, what: str) -> list[object]:
    """``value`` as a JSON list; SchemaError naming ``what`` when it is not one."""
    if not isinstance(value, list):
        raise SchemaError(f"{what} must be a list")
    return cast("list[object]", value)


def parse_schema(schema: object) -> TypeRef:
    """Parse one schema (dict or JSON text); SchemaError if it is malformed."""
    if isinstance(schema, str):
        try:
            schema = cast(object, json.loads(schema))
        except ValueError as exc:
            raise SchemaError(f"not JSON: {exc}") from None
    obj = _json_object(schema)
    key = obj.get("type") if obj is not None else None
    if obj is None or not isinstance(key, str):
        raise SchemaError(f"expected an object with a 'type' string, got {schema!r:.80}")
    if key in ("ffi.Function", "std::function"):
        key = "ffi.Function"
        if "named_args" in obj:
            na = _json_object(obj["named_args"])
            if na is None:
                raise SchemaError("named_args must be an object")
            params_raw = _json_list(na.get("params", []), "named_args params")
            ret_raw = _json_list(na.get("return", []), "named_args return")
            params = tuple(parse_schema(p) for p in params_raw)
            names = tuple(_param_name(p) for p in params_raw)
            ret = parse_schema(ret_raw[0]) if ret_raw else TypeRef("None")
            return TypeRef(key, (), params, ret, names)
        if "args" in obj:
            raw = _json_list(obj["args"], "args")
            if raw:
                parsed = tuple(parse_schema(a) for a in raw)
                return TypeRef(key, (), parsed[1:], parsed[0], (None,) * (len(parsed) - 1))
        return TypeRef(key)
    raw_args = _json_list(obj.get("args", []), "args")
    # a bare number is a template value, not a type (the length N of std::array<T, N>)
    types = [a for a in raw_args if not (isinstance(a, int) and not isinstance(a, bool))]
    return TypeRef(key, tuple(parse_schema(a) for a in types))


def _param_name(param: object) -> str | None:
    """The name a ``named_args`` parameter schema gives, if any."""
    obj = _json_object(param)
    name = obj.get("name") if obj is not None else None
    return name if isinstance(name, str) else None


@dataclass(frozen=True)
class FunctionSig:
    params: tuple[TypeRef, ...] | None  # None: unknown signature (packed)
    ret: TypeRef
    param_names: tuple[str | None, ...] = ()


def function_sig(schema: Any) -> FunctionSig:
    """Signature of a function schema; unknown (packed) when absent."""
    if schema is None:
        return FunctionSig(None, ANY)
    ref = parse_schema(schema)
    if ref.key != "ffi.Function":
        raise SchemaError(f"function schema has type {ref.key!r}, expected 'ffi.Function'")
    if ref.params is None:
        return FunctionSig(None, ANY)
    return FunctionSig(ref.params, ref.ret or ANY, ref.param_names or (None,) * len(ref.params))


# Spellings the FFI's schema emitter (``TypeTraits<T>::TypeSchema()`` in tvm/ffi/*.h and
# tvm/ffi/extra/stl.h) uses for C++ types that cross the ABI as one of the core types: each is
# annotated like the core type it converts to.
SCHEMA_ALIASES = {
    "std::string": "ffi.String",
    "std::vector": "ffi.Array",
    "std::array": "ffi.Array",  # its length argument is dropped by parse_schema
    "std::optional": "Optional",
    "std::variant": "Variant",
    "std::map": "ffi.Map",
    "std::unordered_map": "ffi.Map",
    "std::tuple": "Tuple",
    "Expected": "Variant",  # Expected<T>: the value, or the ffi.Error returned in its place
}


@dataclass(frozen=True)
class Annotation:
    """An annotation's text and the standard import aliases it names (``_t``, ``_rt``, ``_abc``,
    ``_ctypes``: keys of ``render.STANDARD_IMPORTS``), recorded where the text is made: a
    generated module imports what its annotations use without reading their text again."""

    text: str
    aliases: frozenset[str] = frozenset()

    def or_none(self) -> Annotation:
        """``T | None``."""
        return Annotation(f"{self.text} | None", self.aliases)


#: A generated module's private import alias before a name (``_rt.``, ``_abc.``, ``_t.``,
#: ``_ffi_ns_ir.``).
_ALIAS = re.compile(r"\b_\w+\.")


def without_aliases(code: str) -> str:
    """``code`` (an annotation, a parameter list) as a reader is shown it in prose: each name
    without the private import alias the generated module spells it through."""
    return _ALIAS.sub("", code)


def standard(alias: str, name: str) -> Annotation:
    """``alias.name``: a name from the standard import ``alias`` (``standard("_t", "Any")``)."""
    return Annotation(f"{alias}.{name}", frozenset({alias}))


def compose(template: str, *parts: Annotation) -> Annotation:
    """``template`` (``{}`` placeholders, naming no alias itself) filled with ``parts``; it names
    the aliases they name."""
    return Annotation(template.format(*(p.text for p in parts)), frozenset[str]().union(*(p.aliases for p in parts)))


def runtime_class(name: str) -> Annotation:
    """``_rt.name``: a class of ``tvmffi_runtime``."""
    return standard("_rt", name)


ANY_ANNOTATION = standard("_t", "Any")
_NONE = Annotation("None")

#: What an argument of these types accepts beyond the type itself: the runtime packs any object
#: with ``__index__`` as an int (numpy integers) and any with ``__float__`` as a float. Only at
#: the top of a parameter's annotation: ``Mapping[int, ...]`` taking ``Mapping[SupportsIndex,
#: ...]`` would refuse a ``dict[int, ...]`` (keys are invariant), and in-place field writes are
#: stricter than calls.
ARG_PROTOCOLS = {"int": standard("_t", "SupportsIndex"), "float": standard("_t", "SupportsFloat")}

# Runtime classes for the FFI core's object types.
RUNTIME_CLASSES = {
    "ffi.Object": runtime_class("Object"),
    "ffi.Function": runtime_class("Function"),
    "ffi.Module": runtime_class("Module"),
    "ffi.Tensor": runtime_class("Tensor"),
    "ffi.Shape": runtime_class("Shape"),
    "ffi.Array": runtime_class("Array"),
    "ffi.List": runtime_class("List"),
    "ffi.Map": runtime_class("Map"),
    "ffi.Dict": runtime_class("Dict"),
}

_STR, _BYTES, _INT = Annotation("str"), Annotation("bytes"), Annotation("int")
_SIMPLE = {
    "int": _INT, "float": Annotation("float"), "bool": Annotation("bool"), "None": _NONE, "void": _NONE,
    "Any": ANY_ANNOTATION, "ffi.String": _STR, "str": _STR, "ffi.SmallStr": _STR, "const char*": _STR,
    "ffi.Bytes": _BYTES, "bytes": _BYTES, "ffi.SmallBytes": _BYTES, "TVMFFIByteArray*": _BYTES,
    "ffi.BigInt": _INT, "Device": runtime_class("Device"),
    "void*": standard("_ctypes", "c_void_p").or_none(), "ffi.Error": Annotation("BaseException"),
}  # fmt: skip
_SEQUENCE, _MAPPING, _CALLABLE = standard("_abc", "Sequence"), standard("_abc", "Mapping"), standard("_abc", "Callable")
_DATA_TYPE, _TENSOR, _UNCHANGED = runtime_class("DataType"), runtime_class("Tensor"), runtime_class("Unchanged")


@dataclass
class Annotator:
    """Turns TypeRefs into annotations (:meth:`annotation`: text and the aliases it names;
    :meth:`annotate`: the text); ``resolve_object`` names object types (and records the import it
    needs; a plain string names no standard alias); ``warn`` reports schemas it had to treat as
    Any."""

    resolve_object: Callable[[str], Annotation | str | None]
    warn: Callable[[str], None]
    context: str = ""
    seen_unknown: set[str] = field(default_factory=set)

    def annotate(self, t: TypeRef, pos: Position) -> str:
        """The annotation's text."""
        return self.annotation(t, pos).text

    def annotation(self, t: TypeRef, pos: Position) -> Annotation:
        k = SCHEMA_ALIASES.get(t.key, t.key)
        a = t.args
        if pos == "arg":
            if k in ARG_PROTOCOLS:
                return ARG_PROTOCOLS[k]
            if k not in ("Optional", "Variant"):  # a union's members are arguments themselves
                pos = "param"
        if k in _SIMPLE:
            return _SIMPLE[k]
        if k == "DataType":
            return _union([_DATA_TYPE, _STR]) if pos == "param" else _DATA_TYPE
        if k in ("ffi.Tensor", "DLTensor*"):
            return _union([_TENSOR, runtime_class("DLPackExporter")]) if pos == "param" else _TENSOR
        if k == "Optional":
            inner = self.annotation(a[0], pos) if a else ANY_ANNOTATION
            return inner if _is_any(inner) else _union([inner, _NONE])
        if k == "Variant":
            if not a:
                return ANY_ANNOTATION
            parts = [self.annotation(x, pos) for x in a]
            return ANY_ANNOTATION if any(_is_any(p) for p in parts) else _union(parts)
        if k == "Tuple":  # held in an ffi.Array: a sequence of its element types
            elem = _union([self.annotation(x, pos) for x in a]) if a else ANY_ANNOTATION
            if ANY_ANNOTATION.text in _split_union(elem.text):
                elem = ANY_ANNOTATION
            return compose("{}[{}]", _SEQUENCE if pos == "param" else RUNTIME_CLASSES["ffi.Array"], elem)
        if k == "ObjectRValueRef":  # RValueRef<T>: a T whose reference the callee may take
            return self.annotation(a[0], pos) if a else RUNTIME_CLASSES["ffi.Object"]
        if k == "UnchangedOr":  # a structural-mutate result: a T, or UNCHANGED
            inner = self.annotation(a[0], pos) if a else ANY_ANNOTATION
            return inner if _is_any(inner) else _union([inner, _UNCHANGED])
        if k == "NestedMsg":  # Apache TVM's relax NestedMsg<T>: a T, None, or an Array of them
            inner = self.annotation(a[0], pos) if a else ANY_ANNOTATION
            array_of_any = compose("{}[{}]", RUNTIME_CLASSES["ffi.Array"], ANY_ANNOTATION)
            return ANY_ANNOTATION if _is_any(inner) else _union([inner, array_of_any, _NONE])
        if k == "ffi.Unchanged":
            return _UNCHANGED
        if k in ("ffi.Array", "ffi.List"):
            elem = self.annotation(a[0], pos) if a else ANY_ANNOTATION
            if pos == "param" and k == "ffi.Array":
                return compose("{}[{}]", _SEQUENCE, elem)
            return compose("{}[{}]", RUNTIME_CLASSES[k], elem)
        if k in ("ffi.Map", "ffi.Dict"):
            key = self.annotation(a[0], pos) if len(a) > 0 else ANY_ANNOTATION
            val = self.annotation(a[1], pos) if len(a) > 1 else ANY_ANNOTATION
            if pos == "param" and k == "ffi.Map":
                return compose("{}[{}, {}]", _MAPPING, key, val)
            return compose("{}[{}, {}]", RUNTIME_CLASSES[k], key, val)
        if k == "ffi.Shape":
            return compose("{}[{}]", _SEQUENCE, _INT) if pos == "param" else RUNTIME_CLASSES[k]
        if k == "ffi.Function":
            if pos == "return" or t.params is None:
                return compose("{}[..., {}]", _CALLABLE, ANY_ANNOTATION) if pos == "param" else RUNTIME_CLASSES[k]
            # A callable we pass in is called by native code: its parameters are values we
            # receive (return position) and its result is a value we send (param position).
            params = [self.annotation(p, "return") for p in t.params]
            r = self.annotation(t.ret or ANY, "param")
            return compose("{}[[" + ", ".join("{}" for _ in params) + "], {}]", _CALLABLE, *params, r)
        if k in RUNTIME_CLASSES:
            return RUNTIME_CLASSES[k]
        resolved = self.resolve_object(k)
        if isinstance(resolved, str):
            return Annotation(resolved)
        if resolved is not None:
            return resolved
        if k not in self.seen_unknown:
            self.seen_unknown.add(k)
            self.warn(f"{self.context}: unknown type {k!r} in a type schema; typed as Any")
        return ANY_ANNOTATION


def _is_any(a: Annotation) -> bool:
    return a.text == ANY_ANNOTATION.text


def _union(parts: list[Annotation]) -> Annotation:
    """``A | B``, each member once, None last; it names every alias its parts name (a member
    left out repeats another's text, and so its aliases)."""
    out: list[str] = []
    for p in parts:
        for piece in _split_union(p.text):
            if piece not in out:
                out.append(piece)
    if "None" in out:  # keep None last, as people write it
        out.remove("None")
        out.append("None")
    return Annotation(" | ".join(out), frozenset[str]().union(*(p.aliases for p in parts)))


def _split_union(text: str) -> list[str]:
    depth = 0
    parts: list[str] = []
    cur = ""
    i = 0
    while i < len(text):
        c = text[i]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        if depth == 0 and text.startswith(" | ", i):
            parts.append(cur)
            cur = ""
            i += 3
            continue
        cur += c
        i += 1
    parts.append(cur)
    return parts
