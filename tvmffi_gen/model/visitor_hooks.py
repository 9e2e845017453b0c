"""The hooks of a package's ``visitors.py``, named: one per builtin, one per class, one for any
object and one for any value (docs/generated-packages.md, "Structural traversal").

A class's hook is named by its class's snake_case name (``TestIntPair``: ``walk_test_int_pair``),
namespace-qualified where two classes share one, claimed in sorted order like any other name.
"""

from __future__ import annotations

from collections.abc import Iterable

from .naming import Scope, snake_case
from .package import ClassModel, ModuleModel, Namespace, VisitorHook, VisitorsModel
from .uses import UsedPackage

__all__ = ["visitor_hooks"]

#: Builtins the dispatch bases have hooks for, named by the builtin.
_BUILTIN_HOOKS = ["bool", "int", "float", "str", "bytes"]


def _snake_names(classes: Iterable[ClassModel]) -> dict[str, str]:
    """Type key -> the snake_case name of its class, namespace-qualified where two share one."""
    by_snake: dict[str, list[ClassModel]] = {}
    for cls in classes:
        by_snake.setdefault(snake_case(cls.name), []).append(cls)
    names: dict[str, str] = {}
    for snake, group in by_snake.items():
        for cls in group:
            names[cls.type_key] = snake if len(group) == 1 else snake_case("_".join([*cls.namespace, cls.name]))
    return names


def visitor_hooks(
    classes: dict[str, ClassModel], modules: dict[Namespace, ModuleModel], used_packages: list[UsedPackage]
) -> VisitorsModel:
    """The hooks in order: builtins, then one per class in order of its name (the engine
    dispatches by depth, not by this order), then any object and any value. A hook a ``--use``
    package's bases define keeps its meaning there, so no class's hook takes its name."""
    scope = Scope()
    for builtin in [*_BUILTIN_HOOKS, "object", "any"]:
        scope.claim(builtin)
    hooks = [VisitorHook(tp, tp, tp) for tp in _BUILTIN_HOOKS]
    used = [u for u in used_packages if u.has_visitors]
    for u in used:
        scope.taken.update(u.hook_suffixes)
    snake = _snake_names(classes.values())
    namespaces: set[Namespace] = set()
    for cls in sorted(classes.values(), key=lambda c: (snake[c.type_key], c.type_key)):
        ref = f"{modules[cls.namespace].alias}.{cls.name}"
        namespaces.add(cls.namespace)
        hooks.append(VisitorHook(scope.claim(snake[cls.type_key]), ref, ref))
    hooks.append(VisitorHook("object", "_rt.Object", "_rt.Object"))
    hooks.append(VisitorHook("any", "object", "object"))
    return VisitorsModel(hooks, sorted(namespaces), sorted(f"{u.name}.visitors" for u in used))
