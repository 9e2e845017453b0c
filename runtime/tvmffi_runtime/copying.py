"""``copy.copy``, ``copy.deepcopy`` and ``pickle`` of objects, through what the library offers.

- shallow copy: the type's ``__ffi_shallow_copy__`` (a type attribute the library registers for
  copy-constructible C++ types); containers are rebuilt from the same items by their own
  constructor (a new container sharing the elements, like ``copy.copy`` of a list);
- deep copy: the global ``ffi.DeepCopy`` (copies the whole graph, keeping shared nodes shared
  and reference cycles closed: it walks the graph with its own stack, so any depth is fine);
- pickle: the JSON graph serialisation (:func:`to_json_graph`, ``ffi.ToJSONGraphString``, read
  back by :func:`from_json_graph` through ``ffi.FromJSONGraphString``). The writer recurses on
  the C stack, so a graph with a reference cycle or nested deeper than
  ``tvmffi_runtime.max_graph_depth()`` is refused first (``ReferenceCycleError``,
  ``GraphTooDeepError``) instead of crashing the process.

Enum entries are singletons and copy to themselves. Where the library has no way (a type that
is not copy-constructible, a Function, a Tensor, a type without a JSON creator), the error is a
``TypeError`` naming the type key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ._call import Function, get_global_func, type_attr_value
from ._graph_guard import check_graph
from ._object import Object
from ._values import TypeIndex

__all__ = ["deep_copy", "from_json_graph", "reduce_object", "shallow_copy", "to_json_graph"]

_O = TypeVar("_O", bound=Object)

#: Containers without ``__ffi_shallow_copy__``: type index -> constructor, and whether the
#: constructor takes flattened key/value pairs.
_CONTAINER_CTORS: dict[int, tuple[str, bool]] = {
    TypeIndex.ARRAY: ("ffi.Array", False),
    TypeIndex.LIST: ("ffi.List", False),
    TypeIndex.SHAPE: ("ffi.Shape", False),
    TypeIndex.MAP: ("ffi.Map", True),
    TypeIndex.DICT: ("ffi.Dict", True),
}


def _global(name: str) -> Function:
    f = get_global_func(name, allow_missing=True)
    if f is None:
        raise TypeError(f"{name} is not registered in this libtvm_ffi (built without its extra API?)")
    return f


def _is_enum_entry(obj: Object) -> bool:
    from .enums import Enum

    return isinstance(obj, Enum)


def _rebuilt_container(obj: Any, ctor: str, pairs: bool) -> Any:
    """A new container of ``obj``'s kind holding the same items (keys and values)."""
    items: list[Any] = [x for kv in obj.items() for x in kv] if pairs else list(obj)
    return _global(ctor)(*items)


def shallow_copy(obj: _O) -> _O:
    """A new object with the same field values as ``obj`` (``copy.copy``)."""
    if _is_enum_entry(obj):
        return obj
    copier = type_attr_value(obj.type_index, "__ffi_shallow_copy__")
    if isinstance(copier, Function):
        return copier(obj)  # type: ignore[no-any-return]  # the same type
    container = _CONTAINER_CTORS.get(obj.type_index)
    if container is not None:
        return _rebuilt_container(obj, *container)  # type: ignore[no-any-return]
    raise TypeError(
        f"copy.copy: {obj.type_key} has no __ffi_shallow_copy__ (its C++ type is not"
        " copy-constructible, or the library registers no way to copy it)"
    )


def deep_copy(obj: _O) -> _O:
    """A copy of the whole graph under ``obj`` (``copy.deepcopy``), by ``ffi.DeepCopy``."""
    if _is_enum_entry(obj):
        return obj
    try:
        return _global("ffi.DeepCopy")(obj)  # type: ignore[no-any-return]
    except RuntimeError as exc:
        if getattr(exc, "kind", None) != "InternalError":  # not the library's refusal
            raise
        raise TypeError(f"copy.deepcopy: {obj.type_key} cannot be deep-copied: {exc}") from exc


def to_json_graph(value: object, what: str = "to_json_graph") -> str:
    """The JSON graph string of ``value`` (``ffi.ToJSONGraphString``), after refusing a cycle
    or a too deep graph the native writer would crash on."""
    check_graph(value, what)
    return str(_global("ffi.ToJSONGraphString")(value, None))


def reduce_object(obj: Object) -> tuple[Callable[[str], Any], tuple[str]]:
    """``__reduce__``: rebuild from the object's JSON graph (``ffi.ToJSONGraphString``)."""
    try:
        text = to_json_graph(obj, f"pickle of {obj.type_key}")
    except TypeError as exc:
        raise TypeError(f"{obj.type_key} objects cannot be pickled: {exc}") from exc
    return (from_json_graph, (text,))


def from_json_graph(text: str) -> Any:
    """The object a JSON graph string describes (what pickled objects are rebuilt by)."""
    return _global("ffi.FromJSONGraphString")(text)
