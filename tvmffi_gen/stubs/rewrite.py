"""Step 3 of ``--stubs-for``: ``augment``, the libcst rewrite of stubgen's stubs into the final
ones. Per module (on every core, ``parallel.shared``) it adds what the registry knows and the
sources do not say (``registry_text``, typed through ``resolve``), follows what the running
package says beyond its sources (names made at run time, classes imported under another name,
the run-time ``__all__`` and the submodules it lists, an explicit metaclass, functions bound
to None or packed, read-only fields: ``transforms``, ``frozen``), fills what is unannotated
(``fill_annotations``) and writes the module's header and imports; then it repairs imports of
names no stub defines (``missing_imports``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

import libcst as cst

from ..model.typemap import SchemaError, function_sig
from .collected import Collection, ReturnSource
from .conversions import BUILTIN, Conversions
from .fill_annotations import FillAnnotations, stdlib_generic_names
from .followed import AddBases, InferredReturns, InstanceNames, TypedAliases, rebind_shadowed
from .forwarders import widen_forwarded
from .frozen import frozen_attributes
from .missing_imports import drop_missing_imports
from .parallel import shared
from .pyright_types import World, stub_annotation
from .registry_text import (
    class_members,
    function_text,
    inherited_names,
    is_keyword,
    names_below,
)
from .resolve import StubContext, public_path
from .stubtext import (
    INCOMPLETE_IMPORT,
    STUB_HEADER,
    TYPED_IMPORTS,
    binds,
    binds_in,
    class_attributes,
    class_body_bindings,
    class_declarations,
    defines,
    exported_names,
    module_bindings,
    star_exports,
    stub_tree,
)
from .transforms import (
    AddMembers,
    DeclaredMetaclass,
    DropInits,
    NoneDefs,
    PositionalOnly,
    SetAll,
    body_names,
    class_index,
    unbound_assignments,
)

__all__ = ["augment"]


@dataclass
class _Package:
    """What the rewrite of every module reads: the collection, stubgen's stubs and what is
    derived from them once."""

    data: Collection
    stubs: dict[str, str]
    exports: dict[str, set[str]]
    public: dict[str, str]  # type key -> public path of its class
    by_module: dict[str, list[str]]  # module -> type keys of the classes it defines
    parsed: dict[str, cst.Module]
    stub_members: dict[str, set[str]]  # type key -> names its stub class's body defines
    below: dict[str, set[str]]  # type key -> names the classes deriving from it declare
    attribute_names: dict[str, set[str]]
    frozen: dict[str, set[str]]
    conversions: Conversions
    inferred: dict[str, dict[str, str]]  # module -> qualname -> pyright's printed result (oracle.py)
    world: World


@dataclass
class _Module:
    """One module's rewrite in progress."""

    name: str
    tree: cst.Module
    ctx: StubContext
    typed_members: bool = False  # registry members or ffi functions added: the header imports
    needs_incomplete: bool = False
    extra_body: list[str] = field(default_factory=list)


def augment(
    data: Collection,
    stubs: dict[str, str],
    conversions: Conversions = BUILTIN,
    inferred: dict[str, dict[str, str]] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """The final stub text per module, and the warnings (schemas typed as Any). ``inferred``:
    what pyright infers for the results the sources leave unannotated (``oracle.py``)."""
    pkg = _package(data, stubs, conversions, inferred or {})
    out: dict[str, str] = {}
    warnings: list[str] = []
    for mod in shared(sorted(stubs), out, warnings):  # the body runs on every core (parallel.py)
        out[mod], found = _rewrite_module(pkg, mod)
        warnings += found
    drop_missing_imports(out, {m for m, f in data.modules.items() if f.is_package}, data.modules)
    return out, sorted(set(warnings))


def _package(
    data: Collection, stubs: dict[str, str], conversions: Conversions, inferred: dict[str, dict[str, str]]
) -> _Package:
    exports = {m: exported_names(t) for m, t in stubs.items()}
    by_module: dict[str, list[str]] = {}
    for key, info in data.classes.items():
        by_module.setdefault(info.module, []).append(key)
    parsed: dict[str, cst.Module] = {}
    stub_members: dict[str, set[str]] = {}
    for mod, keys in by_module.items():
        if mod not in stubs:
            continue
        parsed[mod] = cst.parse_module(stubs[mod])
        index = class_index(parsed[mod])
        # an __init__ the running class does not have (declared for checkers only, under
        # ``if TYPE_CHECKING:``, as an older tvm-ffi-stubgen writes) gives way to the registry's
        checkers_only = {
            data.classes[k].qualname
            for k in keys
            if not data.classes[k].python_init
            and (c := index.get(data.classes[k].qualname)) is not None
            and "__init__" in body_names(c)
        }
        if checkers_only:
            parsed[mod] = parsed[mod].visit(DropInits(checkers_only))
            index = class_index(parsed[mod])
        for key in keys:
            c = index.get(data.classes[key].qualname)
            if c is not None:
                stub_members[key] = body_names(c)
    return _Package(
        data=data,
        stubs=stubs,
        exports=exports,
        public={key: public_path(info, exports) for key, info in data.classes.items()},
        by_module=by_module,
        parsed=parsed,
        stub_members=stub_members,
        below=names_below(
            data,
            stub_members,
            {
                path: found
                for m, text in stubs.items()
                for path, found in class_declarations(text, m, _is_package(data, m)).items()
            },
        ),
        attribute_names={f"{m}.{q}": names for m, t in stubs.items() for q, names in class_attributes(t).items()},
        frozen=frozen_attributes(data, stubs),
        conversions=conversions,
        inferred=inferred,
        world=World(data.world_classes),
    )


def _is_package(data: Collection, module: str) -> bool:
    """Whether ``module`` is a package (its relative imports start from itself)."""
    facts = data.modules.get(module)
    return facts is not None and facts.is_package


def _rewrite_module(pkg: _Package, mod: str) -> tuple[str, list[str]]:
    """The final text of stub module ``mod`` and its warnings."""
    ctx = StubContext(
        pkg.data,
        pkg.public,
        mod,
        attribute_names=pkg.attribute_names,
        frozen=pkg.frozen,
        conversions=pkg.conversions,
        module_names=frozenset(module_bindings(stub_tree(pkg.stubs[mod]))),
        class_names=frozenset(class_body_bindings(stub_tree(pkg.stubs[mod]))),
    )
    m = _Module(mod, pkg.parsed.get(mod) or cst.parse_module(pkg.stubs[mod]), ctx)
    _add_registry_members(pkg, m)
    m.tree, widened = widen_forwarded(ctx, m.tree, pkg.by_module.get(mod, []))
    m.typed_members |= widened
    ffi_names = _add_ffi_functions(pkg, m)
    made = _add_made_names(pkg, m, ffi_names)
    subs = _follow_runtime_all(pkg, m, made)
    if subs:  # what ``import pkg`` binds on it: submodules its own import imported
        line = "from . import " + ", ".join(f"{s} as {s}" for s in subs)
        m.tree = m.tree.with_changes(body=[cst.parse_statement(line), *m.tree.body])
    _follow_running_objects(pkg, m, ffi_names)
    _follow_runtime_kinds(pkg, m)
    _add_pyright_returns(pkg, m)
    _follow_source_declarations(pkg, m)
    filler = FillAnnotations(stdlib_generic_names(pkg.stubs[mod]))
    m.tree = m.tree.visit(filler)
    head = [STUB_HEADER]
    if m.typed_members:
        head += [f"import {module} as {name}\n" for module, name in TYPED_IMPORTS]
    head += [line + "\n" for line in sorted(ctx.imports)]
    code = m.tree.code
    if (filler.used or m.needs_incomplete) and INCOMPLETE_IMPORT not in code:
        head.append(INCOMPLETE_IMPORT + "\n")
    return "".join(head) + ("\n" if len(head) > 1 else "") + code, ctx.warnings


def _add_registry_members(pkg: _Package, m: _Module) -> None:
    """Registry members appended to the classes of the module's type keys, and the read-only
    fields its stub declares as attributes made properties."""
    index = class_index(m.tree)
    additions: dict[str, str] = {}
    for key in sorted(pkg.by_module.get(m.name, [])):
        q = pkg.data.classes[key].qualname
        if q not in index:
            continue
        inherited = inherited_names(pkg.data, key, pkg.stub_members)
        text = class_members(m.ctx, key, pkg.stub_members.get(key, set()), inherited, pkg.below.get(key, set()))
        if text:
            additions[q] = text
    read_only = {q: pkg.frozen[f"{m.name}.{q}"] for q in index if f"{m.name}.{q}" in pkg.frozen}
    if additions or read_only:
        m.tree = m.tree.visit(AddMembers(additions, read_only))
    m.typed_members |= bool(additions)


def _add_ffi_functions(pkg: _Package, m: _Module) -> set[str]:
    """The functions ``init_ffi_api`` put into the module that its stub lacks; returns the names
    of all it put there."""
    funcs = pkg.data.ffi_api.get(m.name, [])
    extra: list[str] = []
    for f in funcs:
        if f.name in pkg.exports[m.name] or not f.name.isidentifier() or is_keyword(f.name):
            continue
        doc = f.doc or f"The registry's global function ``{f.global_name}``."
        extra.append(function_text(m.ctx, f.name, f.schema, doc, f.global_name, f"function {f.global_name}"))
    if funcs:
        m.tree = m.tree.with_changes(body=[*m.tree.body, *cst.parse_module("".join(extra)).body])
        m.typed_members = True
    return {f.name for f in funcs}


def _append(m: _Module, text: str) -> None:
    m.tree = m.tree.with_changes(body=[*m.tree.body, *cst.parse_module(text).body])


def _add_made_names(pkg: _Package, m: _Module, ffi_names: set[str]) -> list[str]:
    """Names the module made at run time that its stub lacks (``Incomplete``), and the classes it
    imports under another name (an alias assignment); returns the names made."""
    text, facts = pkg.stubs[m.name], pkg.data.module(m.name)
    have = pkg.exports[m.name] | ffi_names
    star_import = re.search(r"^from \S+ import \*", text, re.M) is not None
    made = [
        n
        for n in facts.runtime_names
        if n not in have
        and n.isidentifier()
        and not is_keyword(n)
        and n != "TYPE_CHECKING"  # typing's constant, imported: not the module's API
        and not defines(text, n)
        and not star_import
    ]  # (what a star import brings is not known here)
    imports: list[str] = []
    for n, path in sorted(facts.renamed_imports.items()):
        where, qual = path.split(":")
        if n in have or n in made or defines(text, n) or star_import:
            continue
        if where.split(".")[0] in (pkg.data.package.split(".")[0], "tvm_ffi"):  # modules with types
            # an alias assignment, which a stub exports (an import under another name is private)
            imports.append(f"from {where} import {qual} as _{n}_alias\n{n} = _{n}_alias")
    if imports:  # a class the module imports under another name
        m.tree = m.tree.with_changes(body=[*cst.parse_module("\n".join(imports) + "\n").body, *m.tree.body])
    if made:  # made at run time (a loop, a factory, setattr): known to exist, type unknown
        _append(m, "".join(f"{n}: Incomplete  # made at run time\n" for n in made))
        m.needs_incomplete = True
    return made


def _follow_runtime_all(pkg: _Package, m: _Module, made: list[str]) -> list[str]:
    """The stub's ``__all__`` made the module's at run time (what it lists that the stub does not
    bind becomes ``Incomplete``); returns the submodules to bind on it."""
    text, facts, stubs = pkg.stubs[m.name], pkg.data.module(m.name), pkg.stubs
    subs = [s for s in facts.bound_submodules if f"{m.name}.{s}" in stubs and s not in pkg.exports[m.name]]
    runtime_all = facts.runtime_all
    if runtime_all is None:
        return subs
    all_names = {n: f.runtime_all for n, f in pkg.data.modules.items() if f.runtime_all is not None}
    starred = star_exports(m.name, stubs, facts.is_package, all_names)
    # a submodule it lists is bound on it (``from pkg import *`` gets it; a lazy package's module
    # __getattr__ imports it)
    subs += [s for s in runtime_all if f"{m.name}.{s}" in stubs and s not in subs and not binds(text, s)]
    unbound = [
        n
        for n in dict.fromkeys(runtime_all)
        if n.isidentifier()
        and not is_keyword(n)
        and f"{m.name}.{n}" not in stubs
        and n not in made
        and n not in starred
        and not binds(text, n)
    ]
    if unbound:  # listed, made at run time (a loop, a module __getattr__): type unknown
        _append(m, "".join(f"{n}: Incomplete  # in __all__, made at run time\n" for n in unbound))
        m.needs_incomplete = True
    m.tree = m.tree.visit(SetAll(list(dict.fromkeys(runtime_all))))
    return subs


def _follow_running_objects(pkg: _Package, m: _Module, ffi_names: set[str]) -> None:
    """Classes declared with their explicit metaclass, functions bound to None declared so, and
    functions replaced by a packed one made positional-only."""
    facts = pkg.data.module(m.name)
    metaclass = DeclaredMetaclass(set(facts.private_metaclass))
    if metaclass.names:
        m.tree = m.tree.visit(metaclass)
    if facts.none_names:
        m.tree = m.tree.visit(NoneDefs(set(facts.none_names)))
    packed = set(facts.packed) - ffi_names
    if packed:
        m.tree = m.tree.visit(PositionalOnly(packed))


def _follow_runtime_kinds(pkg: _Package, m: _Module) -> None:
    """What a name is at run time, where stubgen's reading of the source says otherwise
    (``followed.py``): a package's name rebinding a submodule's, a class or function a decorator
    made another kind of, an alias with forward references, a
    result the source determines."""
    facts = pkg.data.module(m.name)
    text = pkg.stubs[m.name]
    shadowed = {n: p for n, p in facts.shadowed_submodules.items() if not binds(text, n)}
    m.tree = rebind_shadowed(m.tree, shadowed)  # (one the stub binds explicitly is bound so)
    bases = {q: [b] for q, keys in facts.replaced_bases.items() if (b := m.ctx.resolve(keys[0]))}
    if bases:
        m.tree = m.tree.visit(AddBases(bases))
    instances = {n: t for n, r in sorted(facts.replaced_functions.items()) if (t := _return_text(m, n, r))}
    if instances:
        m.tree = m.tree.visit(InstanceNames(instances))
    if facts.string_aliases:
        aliases = TypedAliases(facts.string_aliases)
        m.tree = m.tree.visit(aliases)
        m.typed_members |= aliases.used
    for sources, replace in ((facts.returns, False), (facts.narrowed_returns, True)):
        returns = {q: t for q, r in sorted(sources.items()) if (t := _return_text(m, q, r))}
        if returns:
            inferred = InferredReturns(returns, replace=replace)
            m.tree = m.tree.visit(inferred)
            m.typed_members |= inferred.used > 0


def _follow_source_declarations(pkg: _Package, m: _Module) -> None:
    """What stubgen drops that the module's source declares and the running module has: its
    explicit re-exports (``from m import a as a``, which a checker reads as the module's API),
    its string metadata (``__version__`` beside an ``__all__``); and an assignment of a name the
    stub does not bind (stubgen's ``_lib_path = path`` of a loop variable) declared
    ``Incomplete``."""
    facts = pkg.data.module(m.name)
    tree = stub_tree(m.tree.code)
    bound = {n for n in facts.reexports if binds_in(tree, n)} | {n for n in facts.dunder_strings if binds_in(tree, n)}
    lines = [f"from {src} import {n} as {n}" for n, src in sorted(facts.reexports.items()) if n not in bound]
    lines += [f"{n}: str" for n in facts.dunder_strings if n not in bound]
    if lines:
        _append(m, "".join(line + "\n" for line in lines))
    added = {n for n in [*facts.reexports, *facts.dunder_strings] if n not in bound}
    m.tree, declared = unbound_assignments(m.tree, module_bindings(tree) | added)
    m.needs_incomplete |= declared


def _add_pyright_returns(pkg: _Package, m: _Module) -> None:
    """The results still unannotated typed as pyright infers them from the sources (after the
    registry's and the running module's, which say more: pyright sees ``_ffi_api`` calls as
    Unknown)."""
    printed = pkg.inferred.get(m.name, {})
    returns: dict[str, str] = {}
    for q, text in sorted(printed.items()):
        spelled = stub_annotation(text, pkg.world, functools.partial(_return_text, m, q))
        if spelled is not None:
            returns[q] = spelled
    if returns:
        inferred = InferredReturns(returns)
        m.tree = m.tree.visit(inferred)
        m.typed_members |= inferred.used > 0
        m.needs_incomplete |= any("Incomplete" in t for t in returns.values())


def _return_text(m: _Module, where: str, r: ReturnSource) -> str | None:
    """The annotation of what ``r`` says a function returns (None when nothing more than Any)."""
    if r.kind in ("key", "class"):
        return m.ctx.spell(r)
    try:
        sig = function_sig(r.schema)
    except SchemaError:
        return None
    text = m.ctx.annotate(sig.ret, "return", f"{m.name}.{where}")
    return None if text == "_t.Any" else text
