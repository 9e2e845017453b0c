"""The stubtest allowlist ``--stubs-for`` writes beside the stubs (``stubtest_allowlist``): what
the stubs declare differently from the running package on purpose (``_ffi_api`` and packed
functions, cached functions, constructors made from registry fields or that raise, classes a
decorator replaced, attributes a Python base only annotates, members no stub can name, modules
not covered), per group a comment with its reason and then regexes naming exactly the objects it
covers.
"""

from __future__ import annotations

import ast
import re

from .collected import Collection, RegisteredClass
from .registry_text import chain_of, is_keyword, own_fields
from .stubtext import STUB_HEADER, class_attributes, exported_names, stub_tree

__all__ = ["stubtest_allowlist"]


def _names_regex(prefix: str, names: list[str], suffix: str = "") -> str:
    """``prefix.(a|b)suffix`` as an allowlist regex matching exactly those names."""
    alts = [re.escape(n) for n in sorted(set(names))]
    body = alts[0] if len(alts) == 1 else "(" + "|".join(alts) + ")"
    return f"{re.escape(prefix)}\\.{body}{suffix}\n"


_CACHE_DECORATORS = {"cache", "lru_cache", "functools.cache", "functools.lru_cache"}


def _cached_functions(text: str) -> list[str]:
    """Module-level functions of a stub decorated with ``functools.cache`` or ``lru_cache``."""
    out: list[str] = []
    for node in stub_tree(text).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                if ast.unparse(d.func if isinstance(d, ast.Call) else d) in _CACHE_DECORATORS:
                    out.append(node.name)
                    break
    return out


def stubtest_allowlist(data: Collection, stubs: dict[str, str], frozen: dict[str, set[str]] | None = None) -> str:
    """The stubtest allowlist of what the stubs declare differently from the running package on
    purpose: per group, a comment with its reason, then one regex per module naming exactly the
    objects it covers (one regex for every ``_ffi_api`` module when that states the rule exactly).
    ``frozen`` is ``frozen_attributes`` of the stubs before ``augment``."""
    out = [STUB_HEADER]
    for group in (
        _packed_functions(data, stubs),
        _cached(stubs),
        _field_constructors(data, stubs),
        _guarded_constructors(data, stubs),
        _replaced_classes(data, stubs),
        _annotated_in_bases(data, stubs, frozen or {}),
        _unnamed_members(data, stubs),
        _not_covered(data),
    ):
        out += group
    return "".join(out)


def _stub_classes(data: Collection, stubs: dict[str, str]) -> list[tuple[str, RegisteredClass]]:
    """The registered classes (type key, class) a stub module declares, by type key."""
    return [
        (key, info)
        for key, info in sorted(data.classes.items())
        if info.module in stubs and info.qualname in class_attributes(stubs[info.module])
    ]


def _packed_functions(data: Collection, stubs: dict[str, str]) -> list[str]:
    top = data.package.split(".")[0]
    targets = sorted(m for m in data.ffi_api if m in stubs)
    api_named = [m for m in targets if m.rsplit(".", 1)[-1] == "_ffi_api"]
    all_named = [m for m in stubs if m.rsplit(".", 1)[-1] == "_ffi_api"]
    packed = [
        _names_regex(m, [n for n in data.module(m).packed if n in defs])
        for m in sorted(stubs)
        if m not in data.ffi_api
        for defs in [
            {n.name for n in stub_tree(stubs[m]).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        ]
        if set(data.module(m).packed) & defs
    ]
    if not targets and not packed:
        return []
    out = [
        "\n# The functions of the _ffi_api modules (filled by tvm_ffi.init_ffi_api from the registry:\n"
        "# which exist depends on the libraries loaded) and the module-level functions a decorator\n"
        "# replaced by a packed function (tvm_ffi.Function): the stubs declare them as functions to\n"
        "# give their signatures, which stubtest cannot compare with a packed function.\n"
    ]
    empty = {m for m in all_named if m not in targets and not exported_names(stubs[m])}
    if api_named and sorted(api_named) == sorted(set(all_named) - empty):  # (an empty one has nothing to hide)
        out.append(f"{re.escape(top)}(\\.\\w+)*\\._ffi_api\\.\\w+\n")
        out += [f"{re.escape(m)}\\.\\w+\n" for m in targets if m not in api_named]
    else:
        out += [f"{re.escape(m)}\\.\\w+\n" for m in targets]
    return out + packed


def _cached(stubs: dict[str, str]) -> list[str]:
    cached = [_names_regex(m, fs) for m in sorted(stubs) if (fs := _cached_functions(stubs[m]))]
    if not cached:
        return []
    return [
        "\n# Functions decorated with functools.cache or lru_cache: typeshed declares the cache\n"
        "# wrapper's __call__ as (*args, **kwargs), which stubtest compares with the function's own\n"
        "# parameters; the stubs keep the decorator as the source writes it.\n",
        *cached,
    ]


def _field_constructors(data: Collection, stubs: dict[str, str]) -> list[str]:
    inits: dict[str, list[str]] = {}
    for key, info in _stub_classes(data, stubs):
        t = data.types[key]
        # tvm_ffi's signature lists every init field of the chain, defaulted ones with MISSING
        if t.init == "auto" and not info.python_init and any(f.has_default for _, f in chain_of(data, key) if f.init):
            inits.setdefault(info.module, []).append(info.qualname)
    if not inits:
        return []
    return [
        "\n# Constructors made from registry fields: a defaulted field's run-time default is tvm_ffi's\n"
        "# MISSING sentinel (the C++ default applies), which stubtest compares with the field's type;\n"
        "# tvm_ffi's signature also lists inherited fields the native init refuses, which the stubs leave out.\n",
        *(_names_regex(m, qs, "\\.__init__") for m, qs in sorted(inits.items())),
    ]


def _guarded_constructors(data: Collection, stubs: dict[str, str]) -> list[str]:
    guarded: dict[str, list[str]] = {}
    for key, info in _stub_classes(data, stubs):
        if data.types[key].init is None and not info.python_init:
            guarded.setdefault(info.module, []).append(info.qualname)
    if not guarded:
        return []
    return [
        "\n# Registered classes with no constructor (no __ffi_init__, no Python __init__): tvm_ffi gives\n"
        "# them an __init__(*args, **kwargs) that raises TypeError, which the stubs declare as\n"
        "# __init__(self, _never: NoReturn, /) (a class outside that guard keeps its bases' one).\n",
        *(_names_regex(m, qs, "\\.__init__") for m, qs in sorted(guarded.items())),
    ]


def _replaced_classes(data: Collection, stubs: dict[str, str]) -> list[str]:
    replaced = [
        _names_regex(m, qs, "\\..+")
        for m in sorted(stubs)
        for qs in [[q for q in data.module(m).replaced_classes if q in class_attributes(stubs[m])]]
        if qs
    ]
    if not replaced:
        return []
    return [
        "\n# Members of classes a class decorator replaced by a wrapper class: the stubs declare the\n"
        "# class as its source writes it.\n",
        *replaced,
    ]


def _annotated_in_bases(data: Collection, stubs: dict[str, str], frozen: dict[str, set[str]]) -> list[str]:
    registered = {i.path for i in data.classes.values()}
    bases: dict[str, list[str]] = {}
    for path, names in sorted(frozen.items()):
        if path in registered:
            continue
        mod = next(
            (m for m in stubs if path.startswith(m + ".") and path[len(m) + 1 :] in class_attributes(stubs[m])), None
        )
        if mod is not None:
            bases[mod] = [*bases.get(mod, []), _names_regex(path, sorted(names))]
    if not bases:
        return []
    return [
        "\n# Attributes a Python base class only annotates for its subclasses (absent from the class\n"
        "# at run time), which every registered class deriving from it has as a read-only field:\n"
        "# the stub declares them as read-only properties, true of every instance.\n",
        *(line for _, lines in sorted(bases.items()) for line in lines),
    ]


def _unnamed_members(data: Collection, stubs: dict[str, str]) -> list[str]:
    unnamed: dict[str, list[str]] = {}
    for key, info in sorted(data.classes.items()):
        members = [f.name for f in own_fields(data, key)] + [m.name for m in data.types[key].methods]
        odd = [n for n in members if not n.isidentifier() or is_keyword(n)]
        if info.module in stubs and odd and info.qualname in class_attributes(stubs[info.module]):
            unnamed.setdefault(info.module, []).append(_names_regex(info.path, odd))
    if not unnamed:
        return []
    return [
        "\n# Registry members whose names are Python keywords or not identifiers (a field named\n"
        "# def): no stub can declare them; they are reached with getattr.\n",
        *(line for _, lines in sorted(unnamed.items()) for line in lines),
    ]


def _not_covered(data: Collection) -> list[str]:
    failed = sorted(m for m in data.failed if not any(m.startswith(f + ".") for f in data.failed))
    if not failed:
        return []
    by_parent: dict[str, list[str]] = {}
    for m in failed:
        parent, _, name = m.rpartition(".")
        by_parent.setdefault(parent, []).append(name)
    return [
        "\n# Modules not covered (they failed to import while generating: a missing optional\n"
        "# dependency, argparse at import, a timeout; see the generator's warnings), with what is\n"
        "# under them: the stubs are partial there (py.typed says so).\n",
        *(_names_regex(parent, names, "(\\..+)?") for parent, names in sorted(by_parent.items())),
    ]
