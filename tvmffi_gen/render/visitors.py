"""Render ``visitors.py``: the package's walker, visitor, mapper and mutator bases, one typed hook
per class of the package (:attr:`PackageModel.visitors <tvmffi_gen.model.package.PackageModel.visitors>`
decides them), over the runtime's bases or the ``--use`` packages' ones."""

from __future__ import annotations

from dataclasses import dataclass, replace

import jinja2

from ..model.package import PackageModel, VisitorHook
from ..text.layout import fit_value
from .import_lines import ImportLine, used_imports
from .suppressions import VISITORS_RULES_OFF, pyright_header

__all__ = ["render_visitors"]


@dataclass(frozen=True)
class _Base:
    name: str
    runtime_base: str
    prefix: str
    ret: str
    doc: str


_BASES = [
    _Base(
        "Walker",
        "_rt.WalkerBase",
        "walk_",
        "_Walked",
        "Walk hooks: return None or ``WalkResult.ADVANCE`` to go on, ``WalkResult.SKIP`` to skip the\n"
        "children, ``WalkResult.interrupt_with(payload)`` to stop. Use with ``structural_walk``.\n\n"
        "Each hook below stands for the default: it returns None.",
    ),
    _Base(
        "Visitor",
        "_rt.VisitorBase",
        "visit_",
        "_Visited",
        "Visit hooks own the traversal of what they match: call ``self.default_visit_children(node)``\n"
        "or ``self.visit(child)``. Use with ``structural_visit``.\n\n"
        "Each hook below stands for the default: ``self.default_visit_children(node)``.",
    ),
    _Base(
        "Mapper",
        "_rt.MapperBase",
        "map_",
        "object",
        "Map hooks return a replacement value or ``UNCHANGED``. Use with ``structural_map``.\n\n"
        "Each hook below stands for the default: it returns ``UNCHANGED``.",
    ),
    _Base(
        "Mutator",
        "_rt.MutatorBase",
        "mutate_",
        "object",
        "Mutate hooks return the new value; ``self.default_mutate(node)`` rebuilds children\n"
        "copy-on-write, ``self.default_maybe_inplace_mutate(node)`` reuses uniquely owned nodes.\n"
        "Use with ``structural_mutate``.\n\n"
        "Each hook below stands for the default: ``self.default_maybe_inplace_mutate(node)``.",
    ),
]


def _hook_entry(hook: VisitorHook) -> list[str]:
    """A ``_HOOK_TYPES`` entry; the class in parentheses on a line of its own where it is long."""
    return fit_value(f'"{hook.suffix}": ', hook.handles, ",", "    ")


def render_visitors(env: jinja2.Environment, pkg: PackageModel) -> str:
    visitors = pkg.visitors
    imports = [ImportLine(pkg.modules[ns].py_module, pkg.modules[ns].alias) for ns in visitors.namespaces]
    bases = _BASES
    if visitors.used_modules:  # subclass the used packages' bases: their hooks dispatch here too
        modules = used_imports(set(visitors.used_modules))
        imports += modules
        bases = [replace(b, runtime_base=", ".join(f"{m.alias}.{b.name}" for m in modules)) for b in _BASES]
    rules = [r for r in VISITORS_RULES_OFF if visitors.used_modules or r != "reportImplicitOverride"]
    return env.get_template("visitors.py.jinja").render(
        pkg=pkg,
        hooks=visitors.hooks,
        bases=bases,
        imports=imports,
        object_hook="walk_object",
        any_hook="walk_any",
        hook_entry=_hook_entry,
        pyright_header=pyright_header(rules, VISITORS_RULES_OFF),
    )
