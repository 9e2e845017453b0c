"""What a module's source says that stubgen drops, resolved against the running module: read in
``--stubs-for``'s child (``child.py``) from the module's file with ``ast``.

* ``string_aliases``: module-level type aliases written with string forward references
  (``ArgSpecType = typing.Union["Int", "Tensor"]``), which stubgen writes as ``Incomplete``: the
  alias as a stub can spell it (``Int | Tensor``: the strings unquoted, ``Union`` and ``Optional``
  as ``|``).
* ``inferred_returns``: functions without a return annotation whose every ``return`` (and the
  body's last statement) is a call of one thing the running module resolves: a registry function
  (``return _ffi_api.X(...)``: the schema's result), a class (``return Device(...)``: that class)
  or a function annotated as returning a class (``tvm.cpu``'s ``return device(...)``, which
  ``tvm_ffi`` annotates ``-> Device``).
* ``narrowed_returns``: functions annotated as returning a registered class whose every
  ``return`` is one registry function's call, when that function's schema returns a strict
  subclass of it.
"""

from __future__ import annotations

import ast
import inspect
from types import ModuleType
from typing import Any

from .collected import ReturnSource
from .forwarders import own_type_key, resolve_dotted

__all__ = [
    "class_source",
    "dunder_strings",
    "reexports",
    "source_tree",
    "string_aliases",
    "inferred_returns",
    "narrowed_returns",
    "registered_type_info",
]

_UNION_HEADS = {"Union", "Optional"}


def source_tree(path: str) -> ast.Module | None:
    """The module's source parsed (None for a file that is not Python source or does not parse)."""
    if not path.endswith(".py"):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return ast.parse(f.read())
    except (OSError, SyntaxError, ValueError):
        return None


def _head(node: ast.expr) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


class _Unquote(ast.NodeTransformer):
    """String constants parsed as the expressions they spell (not a ``Literal``'s);
    ``Union[a, b]`` as ``a | b``. ``unquoted``: whether it met a forward reference."""

    def __init__(self) -> None:
        self.unquoted = False

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str):
            self.unquoted = True
            parsed: ast.AST = self.visit(ast.parse(node.value, mode="eval").body)
            return parsed
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if _head(node.value) in ("Literal", "Annotated"):
            return node  # its strings are values
        self.generic_visit(node)
        if _head(node.value) not in _UNION_HEADS:
            return node
        members = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if _head(node.value) == "Optional":
            members.append(ast.Constant(None))
        out = members[0]
        for m in members[1:]:
            out = ast.BinOp(out, ast.BitOr(), m)
        return out


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """The module-level statements, those under an ``if`` or ``try`` at module level included."""
    out: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        out.append(node)
        if isinstance(node, (ast.If, ast.Try)):
            todo += node.body + node.orelse + [s for h in getattr(node, "handlers", []) for s in h.body]
            todo += getattr(node, "finalbody", [])
    return out


def reexports(tree: ast.Module, mod: ModuleType) -> dict[str, str]:
    """The names ``mod``'s source re-exports explicitly (``from m import a as a``) and binds at
    run time: name -> ``m`` (a relative module made absolute)."""
    out: dict[str, str] = {}
    package = mod.__name__ if hasattr(mod, "__path__") else mod.__name__.rpartition(".")[0]
    for node in _module_level(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            source = ".".join([*base, node.module] if node.module else base)
        else:
            source = node.module or ""
        for a in node.names:
            if a.asname == a.name and a.name != "*" and hasattr(mod, a.name):
                out[a.name] = source
    return out


#: what every module has, which no source writes as its metadata
_MODULE_DUNDERS = {"__name__", "__doc__", "__package__", "__loader__", "__spec__", "__file__", "__cached__",
                   "__builtins__", "__path__", "__all__"}  # fmt: skip


def dunder_strings(tree: ast.Module, mod: ModuleType) -> list[str]:
    """Module metadata (``__version__``) ``mod``'s source assigns that is a string at run time."""
    names = {
        t.id
        for node in _module_level(tree)
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name) and t.id.startswith("__") and t.id.endswith("__")
    }
    return sorted(n for n in names - _MODULE_DUNDERS if isinstance(getattr(mod, n, None), str))


def _type_shaped(node: ast.expr) -> bool:
    """Whether ``node`` is shaped like a type: a name, a subscript, None, or ``|`` of such (not a
    set, a call or a string of its own: ``_COMMON | {"a", "b"}`` is a set)."""
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, ast.BitOr) and _type_shaped(node.left) and _type_shaped(node.right)
    return isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) or (
        isinstance(node, ast.Constant) and node.value is None
    )


def string_aliases(tree: ast.Module) -> dict[str, str]:
    """Module-level ``Name = Generic[...]`` (or a ``|`` of such) holding a string forward
    reference: name -> the alias as a stub spells it."""
    out: dict[str, str] = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        if not isinstance(value, (ast.Subscript, ast.BinOp)) or not _type_shaped(value):
            continue
        unquote = _Unquote()
        try:
            text = ast.unparse(unquote.visit(value))
        except SyntaxError:
            continue  # a string that is not an expression
        if unquote.unquoted:
            out[node.targets[0].id] = text
    return out


def _returns(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Return] | None:
    """The ``return`` statements of ``fn``'s own body, when its last statement is one (or a raise)."""
    if not fn.body or not isinstance(fn.body[-1], (ast.Return, ast.Raise)):
        return None
    found: list[ast.Return] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _dotted(node: ast.expr) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def _source_of(call: ast.expr, scope: dict[str, Any], registry_name: Any) -> ReturnSource | None:
    """What the call ``call`` makes, when its callee resolves to a registry function or a class."""
    import tvm_ffi

    from tvmffi_runtime import reflection as R

    names = _dotted(call.func) if isinstance(call, ast.Call) else None
    obj = resolve_dotted(names, scope) if names else None
    if isinstance(obj, tvm_ffi.Function):
        gname = registry_name(obj)
        schema = R.global_function_metadata(gname).get("type_schema") if gname else None
        return ReturnSource("global", gname, schema) if schema is not None else None
    if inspect.isfunction(obj):
        obj = _annotated_class(obj)  # a function whose annotation says it returns a class
    return class_source(obj) if isinstance(obj, type) else None


def ffi_classes() -> dict[str, tuple[type, type]]:
    """The classes ``tvm_ffi`` makes its values of, where a package replaced ``tvm_ffi``'s own
    by a subclass: the typemap's runtime name -> (``tvm_ffi``'s class, the package's). tvm's
    ``tvm_ffi.core._set_class_device(tvm.runtime.Device)`` makes ``tvm_ffi.device("cpu")``, and
    every Device a function returns, a ``tvm.runtime.Device``."""
    import sys

    if "tvm_ffi.core" not in sys.modules:
        return {}
    import tvm_ffi
    from tvm_ffi import core

    bases = {
        "Device": (core.Device, "_CLASS_DEVICE"),
        "Tensor": (core.Tensor, "_CLASS_TENSOR"),
        "DataType": (tvm_ffi.dtype, "_CLASS_DTYPE"),
    }
    out: dict[str, tuple[type, type]] = {}
    for name, (base, attr) in bases.items():
        made = getattr(core, attr, None)
        if isinstance(made, type) and made is not base and issubclass(made, base):
            out[name] = (base, made)
    return out


def class_source(cls: type) -> ReturnSource | None:
    """How a stub names class ``cls``: its type key when it is registered, else the module that
    exports it and its qualname (None for a class made in a function). A class of ``tvm_ffi``'s
    that a package replaced by a subclass (``ffi_classes``) is named as that subclass: the
    values it describes are made of it."""
    replaced = dict(ffi_classes().values())
    cls = replaced.get(cls, cls)
    if "<locals>" in cls.__qualname__:
        return None
    key = own_type_key(cls)
    if key is not None:
        return ReturnSource("key", key)
    return ReturnSource("class", f"{_public_module(cls)}:{cls.__qualname__}")


def _public_module(cls: type) -> str:
    """The shortest module path without a private part that has ``cls`` under its own name
    (``tvm_ffi`` for ``tvm_ffi.core.Device``), else where it is defined."""
    import sys

    parts = cls.__module__.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if any(p.startswith("_") for p in parts[:i]):
            break
        if getattr(sys.modules.get(name), cls.__qualname__, None) is cls:
            return name
    return cls.__module__


def _annotated_class(func: Any) -> type | None:
    """The class ``func``'s return annotation names (None when it names something else, or
    cannot be evaluated)."""
    import typing

    if "return" not in getattr(func, "__annotations__", {}):
        return None
    try:
        ret = typing.get_type_hints(func).get("return")
    except Exception:  # noqa: BLE001 - an annotation naming what its module does not have
        return None
    return ret if isinstance(ret, type) else None


def inferred_returns(tree: ast.Module, mod: ModuleType, registry_name: Any) -> dict[str, ReturnSource]:
    """Per function without a return annotation (``name`` or ``Class.name`` of a module-level
    class), what every one of its returns makes, when that is one registry function's result or
    one class."""
    return dict(_uniform_returns(tree, mod, registry_name, annotated=False))


def narrowed_returns(tree: ast.Module, mod: ModuleType, registry_name: Any) -> dict[str, ReturnSource]:
    """Per function annotated as returning a registered class (``name`` or ``Class.name``) whose
    every return is one registry function's call, that call, when the function's schema returns
    a strict subclass of the annotation's class (``-> Object`` over a function whose schema
    returns ``ir.Expr``). The stub spells the schema's result as for an unannotated function."""
    from tvm_ffi import core

    out: dict[str, ReturnSource] = {}
    scope = dict(vars(mod))
    for where, source in _uniform_returns(tree, mod, registry_name, annotated=True):
        func = resolve_dotted(where.split("."), scope) if source.kind == "global" else None
        wide = _annotated_class(func) if func is not None else None
        narrow = _schema_result_class(source.schema)
        if wide is None or narrow is None or narrow is wide or not issubclass(narrow, wide):
            continue
        if issubclass(wide, core.Object):  # an object class (not str over an ffi.String)
            out[where] = source
    return out


def _uniform_returns(
    tree: ast.Module, mod: ModuleType, registry_name: Any, *, annotated: bool
) -> list[tuple[str, ReturnSource]]:
    """The functions (``name``, ``Class.name`` of a module-level class) with a return annotation
    (``annotated``) or without one, whose every return makes the same thing (one registry
    function's result, one class): (where, what)."""
    scope = dict(vars(mod))
    out: list[tuple[str, ReturnSource]] = []
    todo: list[tuple[str, ast.stmt]] = [("", n) for n in tree.body]
    for prefix, node in todo:
        if isinstance(node, ast.ClassDef) and not prefix:
            todo += [(node.name + ".", n) for n in node.body]
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or (node.returns is not None) != annotated:
            continue
        returns = _returns(node)
        if not returns or any(r.value is None for r in returns):
            continue
        sources = [_source_of(r.value, scope, registry_name) for r in returns if r.value is not None]
        first = sources[0]
        if first is not None and all(s == first for s in sources):
            out.append((prefix + node.name, first))
    return out


def _schema_result_class(schema: Any) -> type | None:
    """The registered Python class of the object type a function's schema returns (None for any
    other result, or a schema that does not parse)."""
    from ..model.typemap import SchemaError, function_sig

    try:
        key = function_sig(schema).ret.key
    except SchemaError:
        return None
    cls = getattr(registered_type_info(key), "type_cls", None)
    return cls if isinstance(cls, type) else None


def registered_type_info(key: str) -> Any:
    """``tvm_ffi``'s TypeInfo of the registered type ``key`` (its ``type_cls`` is the Python class
    registered for it, or None), or None when no type is registered as ``key``.

    apache-tvm-ffi 0.1.13 on looks it up by type index; 0.1.12 has only the lookup by key, which
    makes the entry (without a class) that ``tvm_ffi`` makes itself on meeting such an object."""
    from tvm_ffi import core

    index = core._object_type_key_to_index(key)
    if index is None:
        return None
    by_index = getattr(core, "_type_index_to_type_info", None)
    if by_index is not None:
        return by_index(index)
    return core._lookup_or_register_type_info_from_type_key(key)
