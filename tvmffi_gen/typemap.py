"""Type schemas (the registry's JSON form) → Python annotations.

A schema is ``{"type": KEY, "args": [...]}`` or, for functions, either ``args`` with the return
type first or ``named_args`` with ``params`` and ``return``. The same schema maps differently by
position: parameters accept what the runtime converts (a sequence for an Array, a mapping for a
Map, any DLPack exporter for a Tensor, a string for a DataType); fields and return values are the
runtime's own classes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

__all__ = ["TypeRef", "parse_schema", "SchemaError", "FunctionSig", "function_sig", "Annotator"]

#: "arg": a function's, method's or constructor's own parameter (what one call packs); "param":
#: a value sent inside one (a container's element, a field written); "return": a value received
Position = Literal["arg", "param", "return"]

#: What an argument of these types accepts beyond the type itself: the runtime packs any object
#: with ``__index__`` as an int (numpy integers) and any with ``__float__`` as a float. Only at
#: the top of a parameter's annotation: ``Mapping[int, ...]`` taking ``Mapping[SupportsIndex,
#: ...]`` would refuse a ``dict[int, ...]`` (keys are invariant), and in-place field writes are
#: stricter than calls.
ARG_PROTOCOLS = {"int": "_t.SupportsIndex", "float": "_t.SupportsFloat"}


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

# Runtime classes for the FFI core's object types.
RUNTIME_CLASSES = {
    "ffi.Object": "_rt.Object",
    "ffi.Function": "_rt.Function",
    "ffi.Module": "_rt.Module",
    "ffi.Tensor": "_rt.Tensor",
    "ffi.Shape": "_rt.Shape",
    "ffi.Array": "_rt.Array",
    "ffi.List": "_rt.List",
    "ffi.Map": "_rt.Map",
    "ffi.Dict": "_rt.Dict",
}


@dataclass
class Annotator:
    """Turns TypeRefs into annotation text; ``resolve_object`` names object types (and records the
    import it needs); ``warn`` reports schemas it had to treat as Any."""

    resolve_object: Callable[[str], str | None]
    warn: Callable[[str], None]
    context: str = ""
    seen_unknown: set[str] = field(default_factory=set)

    def annotate(self, t: TypeRef, pos: Position) -> str:
        k = SCHEMA_ALIASES.get(t.key, t.key)
        a = t.args
        if pos == "arg":
            if k in ARG_PROTOCOLS:
                return ARG_PROTOCOLS[k]
            if k not in ("Optional", "Variant"):  # a union's members are arguments themselves
                pos = "param"
        simple = {
            "int": "int", "float": "float", "bool": "bool", "None": "None", "void": "None",
            "Any": "_t.Any", "ffi.String": "str", "str": "str", "ffi.SmallStr": "str",
            "const char*": "str", "ffi.Bytes": "bytes", "bytes": "bytes", "ffi.SmallBytes": "bytes",
            "TVMFFIByteArray*": "bytes", "ffi.BigInt": "int", "Device": "_rt.Device",
            "void*": "_ctypes.c_void_p | None", "ffi.Error": "BaseException",
        }  # fmt: skip
        if k in simple:
            return simple[k]
        if k == "DataType":
            return "_rt.DataType | str" if pos == "param" else "_rt.DataType"
        if k in ("ffi.Tensor", "DLTensor*"):
            return "_rt.Tensor | _rt.DLPackExporter" if pos == "param" else "_rt.Tensor"
        if k == "Optional":
            inner = self.annotate(a[0], pos) if a else "_t.Any"
            return inner if inner == "_t.Any" else _union([inner, "None"])
        if k == "Variant":
            if not a:
                return "_t.Any"
            parts = [self.annotate(x, pos) for x in a]
            return "_t.Any" if "_t.Any" in parts else _union(parts)
        if k == "Tuple":  # held in an ffi.Array: a sequence of its element types
            elem = _union([self.annotate(x, pos) for x in a]) if a else "_t.Any"
            if "_t.Any" in _split_union(elem):
                elem = "_t.Any"
            return f"_abc.Sequence[{elem}]" if pos == "param" else f"_rt.Array[{elem}]"
        if k == "ObjectRValueRef":  # RValueRef<T>: a T whose reference the callee may take
            return self.annotate(a[0], pos) if a else "_rt.Object"
        if k == "UnchangedOr":  # a structural-mutate result: a T, or UNCHANGED
            inner = self.annotate(a[0], pos) if a else "_t.Any"
            return inner if inner == "_t.Any" else _union([inner, "_rt.Unchanged"])
        if k == "NestedMsg":  # Apache TVM's relax NestedMsg<T>: a T, None, or an Array of them
            inner = self.annotate(a[0], pos) if a else "_t.Any"
            return "_t.Any" if inner == "_t.Any" else _union([inner, "_rt.Array[_t.Any]", "None"])
        if k == "ffi.Unchanged":
            return "_rt.Unchanged"
        if k in ("ffi.Array", "ffi.List"):
            elem = self.annotate(a[0], pos) if a else "_t.Any"
            if pos == "param":
                return f"_abc.Sequence[{elem}]" if k == "ffi.Array" else f"_rt.List[{elem}]"
            return f"{RUNTIME_CLASSES[k]}[{elem}]"
        if k in ("ffi.Map", "ffi.Dict"):
            key = self.annotate(a[0], pos) if len(a) > 0 else "_t.Any"
            val = self.annotate(a[1], pos) if len(a) > 1 else "_t.Any"
            if pos == "param":
                return f"_abc.Mapping[{key}, {val}]" if k == "ffi.Map" else f"_rt.Dict[{key}, {val}]"
            return f"{RUNTIME_CLASSES[k]}[{key}, {val}]"
        if k == "ffi.Shape":
            return "_abc.Sequence[int]" if pos == "param" else "_rt.Shape"
        if k == "ffi.Function":
            if pos == "return" or t.params is None:
                return "_abc.Callable[..., _t.Any]" if pos == "param" else "_rt.Function"
            # A callable we pass in is called by native code: its parameters are values we
            # receive (return position) and its result is a value we send (param position).
            ps = ", ".join(self.annotate(p, "return") for p in t.params)
            r = self.annotate(t.ret or ANY, "param")
            return f"_abc.Callable[[{ps}], {r}]"
        if k in RUNTIME_CLASSES:
            return RUNTIME_CLASSES[k]
        resolved = self.resolve_object(k)
        if resolved is not None:
            return resolved
        if k not in self.seen_unknown:
            self.seen_unknown.add(k)
            self.warn(f"{self.context}: unknown type {k!r} in a type schema; typed as Any")
        return "_t.Any"


def _union(parts: list[str]) -> str:
    out: list[str] = []
    for p in parts:
        for piece in _split_union(p):
            if piece not in out:
                out.append(piece)
    if "None" in out:  # keep None last, as people write it
        out.remove("None")
        out.append("None")
    return " | ".join(out)


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
