"""Step 3 of ``--stubs-for``: ``augment``, the libcst rewrite of stubgen's stubs into the final
ones. Per module (on every core, ``parallel.shared``) it adds what the registry knows and the
sources do not say (``registry_members``, typed through ``resolve``), follows what the running
package says beyond its sources (names made at run time, classes imported under another name,
the run-time ``__all__`` and the submodules it lists, an explicit metaclass, functions bound
to None or packed, read-only fields: ``transforms``, ``frozen``), fills what is unannotated
(``fill_annotations``) and writes the module's header and imports; then it repairs imports of
names no stub defines (``missing_imports``).
"""

from __future__ import annotations

import re
from typing import Any

import libcst as cst

from .fill_annotations import FillAnnotations, stdlib_generic_names
from .forwarders import widen_forwarded
from .frozen import frozen_attributes
from .missing_imports import drop_missing_imports
from .parallel import shared
from .registry_members import class_members, def_text, inherited_names, is_keyword, params_from_schema
from .resolve import StubContext, public_path
from .stubtext import STUB_HEADER, binds, class_attributes, defines, exported_names, star_exports
from .transforms import AddMembers, DeclaredMetaclass, NoneDefs, PositionalOnly, SetAll, body_names, class_index

__all__ = ["augment"]


def augment(data: dict[str, Any], stubs: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The final stub text per module, and the warnings (schemas typed as Any)."""
    exports = {m: exported_names(t) for m, t in stubs.items()}
    public = {key: public_path(info, exports) for key, info in data["classes"].items()}
    by_module: dict[str, list[str]] = {}
    for key, info in data["classes"].items():
        by_module.setdefault(info["module"], []).append(key)
    parsed: dict[str, cst.Module] = {}
    stub_members: dict[str, set[str]] = {}
    for mod, keys in by_module.items():
        if mod not in stubs:
            continue
        parsed[mod] = cst.parse_module(stubs[mod])
        index = class_index(parsed[mod])
        for key in keys:
            c = index.get(data["classes"][key]["qualname"])
            if c is not None:
                stub_members[key] = body_names(c)
    out: dict[str, str] = {}
    warnings: list[str] = []
    attribute_names = {f"{m}.{q}": names for m, t in stubs.items() for q, names in class_attributes(t).items()}
    frozen_all = frozen_attributes(data, stubs)
    for mod in shared(sorted(stubs), out, warnings):  # the body runs on every core (parallel.py)
        ctx = StubContext(data, public, mod, attribute_names=attribute_names, frozen=frozen_all)
        module = parsed.get(mod) or cst.parse_module(stubs[mod])
        index = class_index(module)
        additions: dict[str, str] = {}
        for key in sorted(by_module.get(mod, [])):
            q = data["classes"][key]["qualname"]
            if q not in index:
                continue
            inherited = inherited_names(data, key, stub_members)
            text = class_members(ctx, key, stub_members.get(key, set()), inherited)
            if text:
                additions[q] = text
        read_only = {q: frozen_all[f"{mod}.{q}"] for q in index if f"{mod}.{q}" in frozen_all}
        if additions or read_only:
            module = module.visit(AddMembers(additions, read_only))
        module, widened = widen_forwarded(ctx, module, by_module.get(mod, []))
        funcs = data["ffi_api"].get(mod, [])
        if funcs:
            defined = exports[mod]
            extra: list[str] = []
            for f in funcs:
                name = f["name"]
                if name in defined or not name.isidentifier() or is_keyword(name):
                    continue
                params, ret = params_from_schema(ctx, f["schema"], f["doc"], f["global"], False)
                extra.append(
                    def_text(name, params, ret, f["doc"] or f"The registry's global function ``{f['global']}``.", "")
                )
            module = module.with_changes(body=[*module.body, *cst.parse_module("".join(extra)).body])
        have = exports[mod] | {f["name"] for f in funcs}
        made = [
            n
            for n in data.get("runtime_names", {}).get(mod, [])
            if n not in have and n.isidentifier() and not is_keyword(n) and not defines(stubs[mod], n)
        ]
        star_import = re.search(r"^from \S+ import \*", stubs[mod], re.M) is not None
        if star_import:
            made = []  # what a star import brings is not known here
        renamed = data.get("aliases", {}).get(mod, {})
        imports: list[str] = []
        for n, path in sorted(renamed.items()):
            where, qual = path.split(":")
            if n in have or n in made or defines(stubs[mod], n) or star_import:
                continue
            if where.split(".")[0] in (data["package"].split(".")[0], "tvm_ffi"):  # modules with types
                # an alias assignment, which a stub exports (an import under another name is private)
                imports.append(f"from {where} import {qual} as _{n}_alias\n{n} = _{n}_alias")
        if imports:  # a class the module imports under another name
            module = module.with_changes(body=[*cst.parse_module("\n".join(imports) + "\n").body, *module.body])
        if made:  # made at run time (a loop, a factory, setattr): known to exist, type unknown
            extra_names = "".join(f"{n}: Incomplete  # made at run time\n" for n in made)
            module = module.with_changes(body=[*module.body, *cst.parse_module(extra_names).body])
            filler_needs_incomplete = True
        else:
            filler_needs_incomplete = False
        subs = [m for m in data.get("submodules", {}).get(mod, []) if f"{mod}.{m}" in stubs and m not in exports[mod]]
        runtime_all = data.get("all_names", {}).get(mod)
        if runtime_all is not None:  # the stub's __all__ is the module's at run time
            is_pkg = data["modules"][mod].endswith("__init__.py")
            starred = star_exports(mod, stubs, is_pkg, data.get("all_names", {}))
            # a submodule it lists is bound on it (``from pkg import *`` gets it; a lazy package's
            # module __getattr__ imports it)
            subs += [m for m in runtime_all if f"{mod}.{m}" in stubs and m not in subs and not binds(stubs[mod], m)]
            unbound = [
                n
                for n in dict.fromkeys(runtime_all)
                if n.isidentifier()
                and not is_keyword(n)
                and f"{mod}.{n}" not in stubs
                and n not in made
                and n not in starred
                and not binds(stubs[mod], n)
            ]
            if unbound:  # listed, made at run time (a loop, a module __getattr__): type unknown
                module = module.with_changes(
                    body=[
                        *module.body,
                        *cst.parse_module(
                            "".join(f"{n}: Incomplete  # in __all__, made at run time\n" for n in unbound)
                        ).body,
                    ]
                )
                filler_needs_incomplete = True
            module = module.visit(SetAll(list(dict.fromkeys(runtime_all))))
        if subs:  # what ``import pkg`` binds on it: submodules its own import imported
            line = "from . import " + ", ".join(f"{m} as {m}" for m in subs)
            module = module.with_changes(body=[cst.parse_statement(line), *module.body])
        metaclass = DeclaredMetaclass(set(data.get("private_metaclass", {}).get(mod, [])))
        if metaclass.names:
            module = module.visit(metaclass)
        nones = set(data.get("none_names", {}).get(mod, []))
        if nones:
            module = module.visit(NoneDefs(nones))
        packed = set(data.get("packed", {}).get(mod, [])) - {f["name"] for f in funcs}
        if packed:
            module = module.visit(PositionalOnly(packed))
        filler = FillAnnotations(stdlib_generic_names(stubs[mod]))
        module = module.visit(filler)
        head = [STUB_HEADER]
        head += (
            [
                "import typing as _t\n",
                "import collections.abc as _abc\n",
                "import ctypes as _ctypes\n",
                "import tvm_ffi as _tvm_ffi\n",
            ]
            if (additions or funcs or widened)
            else []
        )
        head += [line + "\n" for line in sorted(ctx.imports)]
        code = module.code
        if (filler.used or filler_needs_incomplete) and "from _typeshed import Incomplete" not in code:
            head.append("from _typeshed import Incomplete\n")
        out[mod] = "".join(head) + ("\n" if len(head) > 1 else "") + code
        warnings += ctx.warnings
    drop_missing_imports(out, {m for m, p in data["modules"].items() if p.endswith("__init__.py")})
    return out, sorted(set(warnings))
