"""The runtime's public signatures say what they take and give: no plain ``Any`` unless it is
right for the user.

The public API is ``tvmffi_runtime.__all__`` and the ``__all__`` of its public submodules; for
each function, and each class (with its runtime bases) and their public methods, properties and
class-level attribute annotations, every parameter and return annotated as plain ``typing.Any``
(the whole annotation, not ``list[Any]``) must be listed in :data:`ALLOWED` with the reason it
stays ``Any``. The list must also stay current: an entry whose annotation is no longer ``Any``
fails too.

``python tests/typing/test_public_types.py`` prints the plain-``Any`` annotations per module.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import typing
from collections import Counter
from pathlib import Path
from types import ModuleType

PUBLIC_MODULES = (
    "tvmffi_runtime",
    "tvmffi_runtime.containers",
    "tvmffi_runtime.copying",
    "tvmffi_runtime.enums",
    "tvmffi_runtime.bind",
    "tvmffi_runtime.interop",
    "tvmffi_runtime.module",
    "tvmffi_runtime.records",
    "tvmffi_runtime.reflection",
    "tvmffi_runtime.structural",
    "tvmffi_runtime.structural.equality",
    "tvmffi_runtime.tensor",
)

_NATIVE = (
    "a value converted from native code: its type is only known at run time (object would force a cast on every use)"
)
_OVERRIDE = (
    "an overridable hook's parameter: subclasses annotate the narrower type they handle"
    " (with object that override is an LSP error)"
)
_STATE = (
    "the callbacks' state, the caller's own object: the context has no type parameter to carry its type,"
    " and object would force a cast on every use"
)
_TVM_FFI_WRAPPER = (
    "a tvm_ffi wrapper whose class tvm_ffi picks at run time"
    " (tvm_ffi.Object, Function, Tensor, container, or Shape, a tuple)"
)
_GRADUAL = (
    "(*args: Any, **kwargs: Any) is the gradual signature every producer's own __dlpack__ keywords match"
    " (typed ones would not)"
)

#: Public plain-``Any`` annotations that stay, each with its reason.
#: Keys: ``module:Qualname.member:parameter`` (``return`` for the return, ``attr`` for a
#: class-level attribute annotation).
ALLOWED: dict[str, str] = {
    # values read from the library (their type is the callee's / the field's, known at run time)
    "tvmffi_runtime.module:Module.__call__:return": _NATIVE,
    "tvmffi_runtime.reflection:FieldAccessor.get:return": _NATIVE,
    "tvmffi_runtime.reflection:get_field:return": _NATIVE,
    "tvmffi_runtime.reflection:type_attr:return": _NATIVE + "; the column's value depends on the attribute name",
    "tvmffi_runtime.copying:from_json_graph:return": _NATIVE + "; whatever the JSON graph describes",
    "tvmffi_runtime.structural.equality:StructuralKey.key:return": _NATIVE
    + "; the wrapped value came back through the FFI (a list is an Array now)",
    "tvmffi_runtime.structural:VisitInterrupt.value:return": _NATIVE + "; the payload came back through the FFI",
    "tvmffi_runtime.structural:MutateContext.mutate:return": _NATIVE + "; the mutated child",
    "tvmffi_runtime.structural:MutateContext.default_mutate:return": _NATIVE + "; the mutated value",
    "tvmffi_runtime.structural:MutateContext.default_maybe_inplace_mutate:return": _NATIVE + "; the mutated value",
    "tvmffi_runtime.structural:MutateContext.var_remap_get:return": _NATIVE + "; the recorded replacement or None",
    "tvmffi_runtime.structural:MutatorBase.mutate:return": _NATIVE + "; the mutated child",
    "tvmffi_runtime.structural:MutatorBase.default_mutate:return": _NATIVE + "; the mutated value",
    "tvmffi_runtime.structural:MutatorBase.default_maybe_inplace_mutate:return": _NATIVE + "; the mutated value",
    "tvmffi_runtime.structural:MutatorBase.var_remap_get:return": _NATIVE + "; the recorded replacement or None",
    "tvmffi_runtime.structural:VisitContext.with_def_region_kind:return": _NATIVE
    + "; fn's result comes back through the FFI call (a list as an Array), so it is not fn's type",
    "tvmffi_runtime.structural:MutateContext.with_def_region_kind:return": _NATIVE
    + "; fn's result comes back through the FFI call (a list as an Array), so it is not fn's type",
    "tvmffi_runtime.structural:VisitorBase.with_def_region_kind:return": _NATIVE
    + "; fn's result comes back through the FFI call (a list as an Array), so it is not fn's type",
    "tvmffi_runtime.structural:MutatorBase.with_def_region_kind:return": _NATIVE
    + "; fn's result comes back through the FFI call (a list as an Array), so it is not fn's type",
    "tvmffi_runtime.structural:VisitContext.value:attr": _NATIVE + "; the value the callback runs on",
    "tvmffi_runtime.structural:MutateContext.value:attr": _NATIVE + "; the value the callback runs on",
    # the caller's own object, handed back without a type parameter to carry its type
    "tvmffi_runtime.structural:VisitContext.state:attr": _STATE,
    "tvmffi_runtime.structural:MutateContext.state:attr": _STATE,
    # tvm_ffi's objects: tvm_ffi picks the class (Object, Function, Tensor, Array, Shape (a tuple), ...)
    "tvmffi_runtime.interop:to_tvm_ffi:return": _TVM_FFI_WRAPPER,
    "tvmffi_runtime._object:Object.__tvm_ffi_object__:return": _TVM_FFI_WRAPPER,
    # what a native function returns (its schema types the generated def, not the runtime)
    "tvmffi_runtime._call:Function.__call__:return": _NATIVE,
    "tvmffi_runtime._functions:GlobalFunction.__call__:return": _NATIVE,
    "tvmffi_runtime._fields:FieldAccess.get:return": _NATIVE,
    "tvmffi_runtime.bind:enum_entry:return": "a class attribute typed by the generated Enum class's annotation",
    # protocols and overridable hooks
    "tvmffi_runtime:DLPackExporter.__dlpack__:args": _GRADUAL,
    "tvmffi_runtime:DLPackExporter.__dlpack__:kwargs": _GRADUAL,
    "tvmffi_runtime.structural:ContextPolicy.enter:value": _OVERRIDE + " (the values its types select)",
    "tvmffi_runtime.structural:ContextPolicy.exit:value": _OVERRIDE + " (the values its types select)",
    "tvmffi_runtime.structural:ContextPolicy.around:value": _OVERRIDE + " (the values its types select)",
}


def _is_plain_any(annotation: object) -> bool:
    if annotation is typing.Any:
        return True
    return isinstance(annotation, str) and annotation.strip() in ("Any", "typing.Any", "_t.Any", "t.Any")


def _hints(fn: object) -> dict[str, object]:
    raw: dict[str, object] = dict(getattr(fn, "__annotations__", None) or {})
    try:
        resolved = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - a name only imported for type checking: read the annotation text
        return raw
    return {k: resolved.get(k, v) for k, v in raw.items()}


def _public_member(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def plain_any_annotations() -> dict[str, str]:
    """``key -> where`` for every plain-``Any`` parameter, return and attribute of the public API."""
    found: dict[str, str] = {}
    seen: set[int] = set()

    def check_function(fn: object, where: str) -> None:
        if callable(fn):
            fn = inspect.unwrap(fn)
        for param, annotation in _hints(fn).items():
            if _is_plain_any(annotation):
                found[f"{where}:{param}"] = where

    def walk(obj: object) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        module = getattr(obj, "__module__", "") or ""
        if not module.startswith("tvmffi_runtime"):
            return
        where = f"{module}:{getattr(obj, '__qualname__', '?')}"
        if inspect.isclass(obj):
            for base in obj.__mro__[1:]:
                walk(base)
            for name, member in vars(obj).items():
                if not _public_member(name):
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    for accessor in (member.fget, member.fset):
                        if accessor is not None:
                            check_function(accessor, f"{where}.{name}")
                elif inspect.isfunction(member):
                    check_function(member, f"{where}.{name}")
            for name, annotation in (vars(obj).get("__annotations__") or {}).items():
                if not name.startswith("_") and _is_plain_any(annotation):
                    found[f"{where}.{name}:attr"] = where
        elif inspect.isfunction(obj):
            check_function(obj, where)

    for module_name in PUBLIC_MODULES:
        module: ModuleType = importlib.import_module(module_name)
        for name in getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")]):
            walk(getattr(module, name, None))
    return found


def per_module(keys: typing.Iterable[str]) -> Counter[str]:
    return Counter(k.split(":", 1)[0] for k in keys)


def test_public_api_has_no_unjustified_plain_any() -> None:
    found = plain_any_annotations()
    assert len(found) >= len(ALLOWED) > 0  # the walk reaches the API (and the allow-list is in use)
    unjustified = sorted(set(found) - set(ALLOWED))
    assert not unjustified, (
        "public annotations that are plain Any: give them their type (object for a value that is"
        " converted, Callable[..., object] for a callback, ...) or add them to ALLOWED with the"
        " reason Any is right for the user:\n  " + "\n  ".join(unjustified)
    )


def test_allow_lists_are_current() -> None:
    found = plain_any_annotations()
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, "no longer plain Any (or gone): drop from ALLOWED:\n  " + "\n  ".join(stale)


def test_allowed_entries_have_reasons() -> None:
    assert all(len(reason) > 20 for reason in ALLOWED.values())


if __name__ == "__main__":
    found = plain_any_annotations()
    for module_name, n in sorted(per_module(found).items()):
        print(f"{n:4d}  {module_name}")
    print(f"{len(found):4d}  total ({len(set(found) & set(ALLOWED))} allowed)")
    if "-v" in sys.argv:
        for key in sorted(found):
            print("   ", key, "[allowed]" if key in ALLOWED else "")


def test_the_runtime_readme_lists_each_allowed_any() -> None:
    # runtime/README.md's table names each member that stays Any (a method by its class-qualified
    # name or, where several classes share it, by its own name beside the classes)
    readme = (Path(__file__).parents[2] / "runtime" / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Where the public API says `Any`")
    section = readme[start : readme.index("\n## ", start + 1)]
    missing = [
        key for key in ALLOWED if f"`{key.split(':')[1]}`" not in section and not _named_with_classes(key, section)
    ]
    assert not missing, "runtime/README.md does not list: " + ", ".join(missing)


def _named_with_classes(key: str, section: str) -> bool:
    owner, _, member = key.split(":")[1].rpartition(".")
    row = next((line for line in section.splitlines() if f"`{member}`" in line), "")
    return bool(owner) and f"`{owner}`" in row
