"""Which attributes a stub declares that are read-only at run time (``frozen_attributes``): an
attribute without a value (``span: Span``) that is a read-only registry field of the class, or,
in a Python base that is not registered, of every registered class deriving from it. The rewrite
declares them as read-only properties of the type declared, and the stubtest allowlist names
those a Python base only annotates.
"""

from __future__ import annotations

from .collected import Collection
from .registry_text import chain_of
from .stubtext import class_attributes

__all__ = ["frozen_attributes"]


def frozen_attributes(data: Collection, stubs: dict[str, str]) -> dict[str, set[str]]:
    """Per class ("module.qualname"), the attributes its stub declares (``span: Span``, without a
    value) that are read-only registry fields at run time, to be written as read-only properties
    of the type declared: in a registered class, a read-only field of its type or of an ancestor's;
    in a Python class that is not registered (a base such as ``BinaryOpExpr`` declaring ``a: Expr``
    for its subclasses), a read-only field of every registered class deriving from it (at least
    one). Not when a base in the class's MRO declares the attribute and does not become a
    property too (a property cannot override an attribute)."""
    bare = {f"{m}.{q}": names for m, t in stubs.items() for q, names in class_attributes(t, without_value=True).items()}
    declared = {f"{m}.{q}": names for m, t in stubs.items() for q, names in class_attributes(t).items()}
    fields: dict[str, tuple[set[str], set[str]]] = {}  # class path -> (read-only, writable) field names
    mro: dict[str, list[str]] = {}
    derived: dict[str, list[str]] = {}  # unregistered class path -> registered classes deriving from it
    for key, info in data.classes.items():
        path = info.path
        all_fields = [f for _, f in chain_of(data, key)]
        fields[path] = (
            {f.name for f in all_fields if not f.writable},
            {f.name for f in all_fields if f.writable},
        )
        bases = list(info.bases)
        mro[path] = bases
        for i, b in enumerate(bases):
            derived.setdefault(b, []).append(path)
            mro.setdefault(b, bases[i + 1 :])
    candidates: dict[str, set[str]] = {}
    for path, names in bare.items():
        if path in fields:
            chosen = names & fields[path][0]
        else:
            subs = derived.get(path, [])
            chosen = {
                n
                for n in names
                if subs and all(n in fields[k][0] for k in subs if k in fields) and any(k in fields for k in subs)
            }
        if chosen:
            candidates[path] = chosen
    changed = True
    while changed:  # drop what would override a base's attribute that stays an attribute
        changed = False
        for path, names in list(candidates.items()):
            blocked = {
                n
                for n in names
                for b in mro.get(path, [])
                if n in declared.get(b, set()) and n not in candidates.get(b, set())
            }
            if blocked:
                changed = True
                if names - blocked:
                    candidates[path] = names - blocked
                else:
                    del candidates[path]
    return candidates
