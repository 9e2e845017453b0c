"""Which generated modules each module of the package imports, derived from its annotations.

An annotation naming a class of another module names that module's alias
(:attr:`ModuleModel.alias <tvmffi_gen.model.package.ModuleModel.alias>`, or a ``--use`` package's
:attr:`UsedClass.alias <tvmffi_gen.model.uses.UsedClass.alias>`); nothing else records an import.
"""

from __future__ import annotations

from .package import GenerationError, ModuleModel, Namespace
from .uses import UsedClass

__all__ = ["check_import_cycles", "derive_imports"]


def derive_imports(modules: dict[Namespace, ModuleModel], used: dict[str, UsedClass]) -> None:
    """Fill in each module's imports from the aliases its annotations name: a module whose
    class a base names is imported when the module runs, one only other annotations name under
    ``TYPE_CHECKING``; a ``--use`` package's module always when it runs."""
    namespaces = {mod.alias: ns for ns, mod in modules.items()}
    used_modules = {ucls.alias: ucls.module for ucls in used.values()}
    for mod in modules.values():
        bases, others = mod.annotations()
        for held, imports in ((bases, mod.runtime_imports), (others, mod.type_imports)):
            for alias in frozenset[str]().union(*(a.aliases for a in held)):
                if alias in used_modules:
                    mod.used_imports.add(used_modules[alias])
                elif alias in namespaces:
                    imports.add(namespaces[alias])


def check_import_cycles(modules: dict[Namespace, ModuleModel]) -> None:
    """GenerationError naming the cycle when modules import each other when they run (their
    classes' bases), which Python cannot load."""
    graph = {ns: {d for d in m.runtime_imports if d != ns} for ns, m in modules.items()}
    visiting: set[Namespace] = set()
    done: set[Namespace] = set()

    def visit(ns: Namespace, path: list[Namespace]) -> None:
        if ns in done:
            return
        if ns in visiting:
            cycle = " -> ".join(".".join(n) or "<root>" for n in [*path, ns])
            raise GenerationError(f"namespaces inherit from each other in a cycle: {cycle}")
        visiting.add(ns)
        for dep in sorted(graph[ns]):
            visit(dep, [*path, ns])
        visiting.discard(ns)
        done.add(ns)

    for ns in sorted(graph):
        visit(ns, [])
