"""What a running module or registered class holds, read in ``--stubs-for``'s child
(``child.py``) once the package imported: the facts a source reader cannot see, as
``collected.ModuleFacts`` and ``collected.RegisteredClass``.
"""

from __future__ import annotations

import ast
import inspect
import os
import sys
from types import ModuleType
from typing import Any, cast

from .collected import LateMember, ModuleFacts, RegisteredClass, ReturnSource
from .forwarders import forwarding, own_type_key, registry_name
from .source_facts import (
    class_source,
    dunder_strings,
    ffi_classes,
    inferred_returns,
    narrowed_returns,
    reexports,
    source_tree,
    string_aliases,
)

__all__ = ["module_facts", "registered_class", "made_by_tvm_ffi", "world_classes"]


def _namespace(owner: object) -> dict[str, Any]:
    """A copy of a module's or class's namespace (the walk below may import, which can add names)."""
    return dict(vars(owner))


def runtime_all(mod: ModuleType) -> list[str] | None:
    """A module's ``__all__`` as it is at run time, when it is a list or tuple of strings."""
    listed: object = getattr(mod, "__all__", None)
    if not isinstance(listed, (list, tuple)):
        return None
    names = list(cast("list[object] | tuple[object, ...]", listed))
    return [n for n in names if isinstance(n, str)] if all(isinstance(n, str) for n in names) else None


def _signature_text(obj: Any) -> str | None:
    """``(a, b=..., *args)`` for a function attached to a class: names and kinds only."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    parts: list[str] = []
    kind_prev = None
    for p in sig.parameters.values():
        if p.kind == p.KEYWORD_ONLY and kind_prev not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL):
            parts.append("*")
        if kind_prev == p.POSITIONAL_ONLY and p.kind != p.POSITIONAL_ONLY:
            parts.append("/")
        prefix = "*" if p.kind == p.VAR_POSITIONAL else "**" if p.kind == p.VAR_KEYWORD else ""
        parts.append(prefix + p.name + ("=..." if p.default is not p.empty else ""))
        kind_prev = p.kind
    if kind_prev == inspect.Parameter.POSITIONAL_ONLY:
        parts.append("/")
    return "(" + ", ".join(parts) + ")"


def runtime_names(mod: Any) -> list[str]:
    """The public names a module has at run time that it made itself (``__all__`` when it has
    one; else what it defines, not what it imported), whatever a source reader sees of them."""
    import types

    name = mod.__name__
    explicit = getattr(mod, "__all__", None)
    out: list[str] = []
    for attr, value in _namespace(mod).items():
        if isinstance(value, types.ModuleType) or type(value).__module__ == "__future__":
            continue
        if isinstance(explicit, (list, tuple)):
            if attr in explicit:
                out.append(attr)
            continue
        if attr.startswith("_") and attr != "__version__":
            continue
        owner = getattr(value, "__module__", None) if callable(value) else name
        if owner == name:
            out.append(attr)
    return sorted(set(out))


def packed_functions(mod: Any) -> list[str]:
    """Names of a module bound to a ``tvm_ffi.Function`` (a Python function registered as a global
    function by a decorator is replaced by the packed function, which takes no keywords)."""
    import tvm_ffi

    return sorted(attr for attr, value in _namespace(mod).items() if isinstance(value, tvm_ffi.Function))


def private_metaclass(mod: Any) -> list[str]:
    """Classes a module defines (paths from the module, nested ones included; a class a decorator
    replaced by another made in the module counts) whose metaclass is a private class of tvm_ffi
    (``_ObjectSlotsMeta``), which no stub can name."""
    out: list[str] = []

    def walk(owner: Any, prefix: str) -> None:
        for attr, value in _namespace(owner).items():
            if inspect.isclass(value) and value.__module__ == mod.__name__:
                meta = type(value)
                if meta.__module__.split(".")[0] == "tvm_ffi" and meta.__name__.startswith("_"):
                    out.append(prefix + attr)
                if value.__qualname__ == prefix + attr:
                    walk(value, prefix + attr + ".")

    walk(mod, "")
    return sorted(out)


def replaced_classes(mod: Any) -> list[str]:
    """Module-level names bound to a class with another name, made in a function: where the
    stub declares a class by that name, a class decorator replaced it by a wrapper class
    (``@relax.expr_functor.mutator``)."""
    return sorted(
        attr
        for attr, value in _namespace(mod).items()
        if inspect.isclass(value) and "<locals>" in value.__qualname__ and value.__qualname__.rsplit(".", 1)[-1] != attr
    )


def renamed_imports(mod: Any) -> dict[str, str]:
    """Public names bound to a class imported under another name
    (``from tvm_ffi._dtype import dtype as DataType``), which stubgen leaves out: name -> path."""
    out: dict[str, str] = {}
    for attr, value in _namespace(mod).items():
        if attr.startswith("_") or not inspect.isclass(value):
            continue
        where, qual = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
        if (
            isinstance(where, str)
            and where != mod.__name__
            and qual != attr
            and "." not in qual
            and qual.isidentifier()
            and getattr(sys.modules.get(where), qual, None) is value
        ):
            out[attr] = f"{where}:{qual}"
    return out


def made_by_tvm_ffi(func: Any) -> bool:
    """Whether a function in a class's ``__dict__`` was made by ``register_object`` (its
    ``__init__`` from ``__ffi_init__``, its dunders), not written in the class's module."""
    import tvm_ffi

    code = getattr(func, "__code__", None)
    if code is None:
        return False
    made = {os.path.join(os.path.dirname(tvm_ffi.__file__), f) for f in ("_dunder.py", "registry.py")}
    return code.co_filename in made


def late_members(cls: type, package: str) -> dict[str, LateMember]:
    """Plain Python functions in ``cls.__dict__`` (candidates for members attached after the
    body; the parent keeps those the source-read stub lacks)."""
    out: dict[str, LateMember] = {}
    for name, value in cls.__dict__.items():
        kind = "method"
        func: object = value
        if isinstance(value, staticmethod):
            kind, func = "static", cast("object", value.__func__)
        elif isinstance(value, classmethod):
            kind, func = "class", cast("object", value.__func__)
        elif isinstance(value, property):
            kind, func = "property", value.fget
        if not inspect.isfunction(func) or name in ("__init__", "__ffi_init__"):
            continue
        if not str(getattr(func, "__module__", "") or "").startswith(package) or made_by_tvm_ffi(func):
            continue  # installed by tvm_ffi (registry methods, dunders): handled from the registry
        sig = _signature_text(func)
        if sig is not None:
            out[name] = LateMember(kind, sig)
    return out


def shadowed_submodules(mod: ModuleType) -> dict[str, str]:
    """Names of package ``mod`` that are also its submodules' names but bound to a class or
    function at run time: name -> ``module:qualname`` of it."""
    out: dict[str, str] = {}
    for attr, value in _namespace(mod).items():
        sub = sys.modules.get(f"{mod.__name__}.{attr}")
        if sub is None or value is sub or not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        where, qual = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
        if isinstance(where, str) and qual.isidentifier() and getattr(sys.modules.get(where), qual, None) is value:
            out[attr] = f"{where}:{qual}"
    return out


def replaced_bases(mod: ModuleType, names: list[str]) -> dict[str, list[str]]:
    """For each of ``names`` (classes a decorator replaced, ``replaced_classes``), the type keys of
    the registered classes the running class derives from, nearest first."""
    out: dict[str, list[str]] = {}
    for attr in names:
        cls = _namespace(mod)[attr]
        keys = [key for base in cls.__mro__[1:] if (key := own_type_key(base)) is not None]
        if keys:
            out[attr] = keys
    return out


def replaced_functions(mod: ModuleType, defined: list[str]) -> dict[str, ReturnSource]:
    """Of the functions the source defines at module level (``defined``), those a decorator
    replaced by an instance of a class that does not wrap the function (``@T.prim_func`` makes a
    ``PrimFunc``, ``@module_pass`` a ``ModulePass``): name -> that class. A wrapper that keeps
    the function as ``__wrapped__`` (``functools.lru_cache``, ``functools.update_wrapper``) is
    called as the function is, and is left out."""
    out: dict[str, ReturnSource] = {}
    namespace = _namespace(mod)
    for attr in defined:
        value: object = namespace.get(attr)
        if value is None or inspect.isroutine(value) or inspect.isclass(value) or isinstance(value, ModuleType):
            continue
        if hasattr(value, "__wrapped__") or type(value).__name__ == "Function":
            continue  # a wrapper called as the function is; a packed function (``packed``)
        source = class_source(type(value))
        if source is not None:
            out[attr] = source
    return out


def module_names(mod: ModuleType) -> dict[str, str]:
    """Public names bound to a module of the same package: name -> that module's name."""
    root = mod.__name__.split(".")[0] + "."
    return {
        attr: value.__name__
        for attr, value in _namespace(mod).items()
        if isinstance(value, ModuleType) and not attr.startswith("_") and value.__name__.startswith(root)
    }


def module_facts(mod: ModuleType, path: str, bound: list[str]) -> ModuleFacts:
    """What module ``mod`` (from file ``path``) holds at run time; ``bound``: the submodules
    bound on it right after its own import."""
    tree = source_tree(path)
    replaced = replaced_classes(mod)
    return ModuleFacts(
        path=path,
        bound_submodules=bound,
        runtime_names=runtime_names(mod),
        renamed_imports=renamed_imports(mod),
        runtime_all=runtime_all(mod),
        packed=packed_functions(mod),
        private_metaclass=private_metaclass(mod),
        replaced_classes=replaced,
        none_names=sorted(a for a, v in _namespace(mod).items() if v is None),
        shadowed_submodules=shadowed_submodules(mod) if path.endswith("__init__.py") else {},
        replaced_bases=replaced_bases(mod, replaced),
        string_aliases=string_aliases(tree) if tree is not None else {},
        returns=inferred_returns(tree, mod, registry_name) if tree is not None else {},
        narrowed_returns=narrowed_returns(tree, mod, registry_name) if tree is not None else {},
        replaced_functions=replaced_functions(mod, _defined_functions(tree)) if tree is not None else {},
        module_names=module_names(mod),
        reexports=reexports(tree, mod) if tree is not None else {},
        dunder_strings=dunder_strings(tree, mod) if tree is not None else [],
        ffi_classes={
            name: source
            for name, (_, made) in sorted(ffi_classes().items())
            if made.__module__ == mod.__name__ and (source := class_source(made)) is not None
        },
    )


def world_classes() -> dict[str, ReturnSource]:
    """Every class defined in a loaded module (found there under its own name), by
    ``module.qualname``, as a stub names it (``source_facts.class_source``)."""
    out: dict[str, ReturnSource] = {}
    for name, mod in sorted(sys.modules.items()):
        namespace = getattr(mod, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attr, value in list(cast("dict[str, Any]", namespace).items()):
            if isinstance(value, type) and value.__module__ == name and value.__qualname__ == attr:
                source = class_source(value)
                if source is not None:
                    out[f"{name}.{attr}"] = source
    return out


def _defined_functions(tree: ast.Module) -> list[str]:
    """The public functions a module's source defines at module level."""
    functions = (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return [n.name for n in functions if not n.name.startswith("_")]


def registered_class(cls: type, paths: list[str]) -> RegisteredClass:
    """The Python class registered for a type key; ``paths``: where the loaded modules bind it."""
    own_init = cls.__dict__.get("__init__")
    python_init = own_init is not None and not made_by_tvm_ffi(own_init)
    return RegisteredClass(
        module=cls.__module__,
        qualname=cls.__qualname__,
        paths=sorted(set(paths) | {f"{cls.__module__}.{cls.__qualname__}"}),
        python_init=python_init,
        made_init=own_init is not None and made_by_tvm_ffi(own_init),
        # a hand-written __init__ that only forwards its parameters to a registry function
        forwards=forwarding(own_init, own_type_key(cls))[0] if python_init else None,
        late=late_members(cls, cls.__module__.split(".")[0]),
        bases=[f"{b.__module__}.{b.__qualname__}" for b in cls.__mro__[1:]],
        hashable=cls.__hash__ is not None,
        python_eq=any("__eq__" in b.__dict__ for b in cls.__mro__[:-1] if not b.__module__.startswith("tvm_ffi")),
        inherited=sorted(
            {n for base in cls.__mro__[1:] for n, v in base.__dict__.items() if not _registry_or_dunder(n, v)}
            # the names only: inspect.get_annotations would evaluate them (3.14), and fail on forward references
            | {n for base in cls.__mro__[1:] for n in base.__dict__.get("__annotations__", {})}  # noqa: RUF063
        ),
    )


def _registry_or_dunder(name: str, value: object) -> bool:
    """A registry field's property (``FFIProperty``) or a dunder, which the registry members and
    Python's own rules answer for."""
    return type(value).__name__ == "FFIProperty" or name.startswith("__")
