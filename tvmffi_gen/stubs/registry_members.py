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

from ..docparams import documented_param_names
from ..typemap import SchemaError, TypeRef, function_sig, parse_schema
from .resolve import StubContext

__all__ = [
    "class_members",
    "def_text",
    "params_from_schema",
    "is_keyword",
    "own_fields",
    "all_init_fields",
    "inherited_names",
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


def own_fields(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The fields a class for ``key`` declares: its own and those of ancestors with no Python
    class (which no other stub class carries)."""
    types = data["types"]
    out = list(types[key]["fields"])
    for anc in reversed(types[key]["ancestors"]):
        if anc in data["classes"]:
            break
        out = list(types.get(anc, {}).get("fields", [])) + out
    return out


def all_init_fields(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    types = data["types"]
    out: list[dict[str, Any]] = []
    for k in [*types[key]["ancestors"], key]:
        out += [f for f in types.get(k, {}).get("fields", []) if f.get("init", True)]
    return out


def inherited_names(data: dict[str, Any], key: str, stub_members: dict[str, set[str]]) -> set[str]:
    """Names the Python classes of ``key``'s ancestors define in their stubs (a reflected method
    is attached only when the class does not already have one by that name)."""
    out: set[str] = set(data["classes"][key].get("inherited", []))
    for anc in data["types"][key]["ancestors"]:
        out |= stub_members.get(anc, set())
    return out


def class_members(ctx: StubContext, key: str, existing: set[str], inherited: set[str]) -> str:
    """Stub text for what the registry (and late attachment) adds to the class of ``key``."""
    data = ctx.data
    facts = data["types"][key]
    info = data["classes"][key]
    ind = "    "
    parts: list[str] = []
    taken = set(existing)
    for f in own_fields(data, key):
        name = f["name"]
        if name in taken or name in inherited or not name.isidentifier() or is_keyword(name):
            continue  # what the package declares for it (here or in a Python base) wins
        taken.add(name)
        where = f"{key}.{name}"
        try:
            ref = parse_schema(f["schema"]) if f["schema"] is not None else TypeRef("Any")
        except SchemaError:
            ref = TypeRef("Any")
        base_attrs: set[str] = set[str]().union(
            *(ctx.attribute_names.get(b, set()) - ctx.frozen.get(b, set()) for b in info.get("bases", []))
        )
        if f["writable"] or name in base_attrs:  # a property cannot override a base's attribute
            ann = ctx.annotate(ref, "return", where)
            parts.append(f"{ind}{name}: {ann}\n" + (_doc(f["doc"], ind) if f["doc"] else ""))
        else:
            ann = ctx.annotate(ref, "return", where)
            parts.append(def_text(name, "self", ann, f["doc"], ind, "@property"))
    for m in facts["methods"]:
        name = m["name"]
        if name in taken or name in inherited or not name.isidentifier() or is_keyword(name):
            continue
        taken.add(name)
        where = f"{key}.{name}"
        params, ret = params_from_schema(ctx, m["schema"], m["doc"], where, skip_self=not m["is_static"])
        parts.append(def_text(name, params, ret, m["doc"], ind, "" if not m["is_static"] else "@staticmethod"))
    init = facts["init"]
    if init is not None and not info["python_init"] and "__init__" not in taken:
        taken.add("__init__")
        if init["kind"] == "method":
            params, _ = params_from_schema(ctx, init["schema"], init.get("doc", ""), f"{key}.__init__", False)
            params = "self" + (", " + params if params else "")
        else:
            pos: list[str] = []
            kw: list[str] = []
            defaulted = False
            for f in all_init_fields(data, key):
                if not f["name"].isidentifier() or is_keyword(f["name"]):
                    continue
                try:
                    ref = parse_schema(f["schema"]) if f["schema"] is not None else TypeRef("Any")
                except SchemaError:
                    ref = TypeRef("Any")
                text = f"{f['name']}: {ctx.annotate(ref, 'param', key + '.' + f['name'])}"
                text += " = ..." if f["has_default"] else ""
                if f["kw_only"] or (defaulted and not f["has_default"]):
                    kw.append(text)
                else:
                    defaulted = defaulted or f["has_default"]
                    pos.append(text)
            params = ", ".join(["self", *pos, *(["*", *kw] if kw else [])])
        parts.append(def_text("__init__", params, "None", init.get("doc", "") if init["kind"] == "method" else "", ind))
    if ("__eq__" in existing or info.get("python_eq")) and "__hash__" not in existing and info.get("hashable"):
        # a class body defining __eq__ alone is unhashable to a checker; at run time it is hashable
        parts.append(def_text("__hash__", "self", "int", "", ind))
    for name, late in sorted(info["late"].items()):
        if name in taken or name in inherited:
            continue
        taken.add(name)
        sig = late["sig"][1:-1]
        params = ", ".join(_incomplete_param(p, i, late["kind"]) for i, p in enumerate(sig.split(", ")) if p)
        if late["kind"] == "property":
            parts.append(def_text(name, params, "Incomplete", "", ind, "@property"))
        else:
            deco = {"static": "@staticmethod", "class": "@classmethod"}.get(late["kind"], "")
            parts.append(def_text(name, params, "Incomplete", "", ind, deco))
    return "".join(parts)


def _incomplete_param(p: str, i: int, kind: str) -> str:
    if p in ("/", "*") or (i == 0 and kind in ("method", "class", "property") and not p.startswith("*")):
        return p
    name, eq, _ = p.partition("=")
    return f"{name}: Incomplete" + (" = ..." if eq else "")
