"""Hand-written constructors that only forward their parameters to a registry function.

A registered class's ``__init__`` whose body (after an optional docstring) is exactly one call
``self.__init_handle_by_constructor__(f, p1, p2, ...)`` — ``f`` a name or dotted name that
resolves, through the function's globals, to a ``tvm_ffi.Function`` the registry knows by name —
or ``self.__ffi_init__(p1, p2, ...)`` — the type's own registered ``__ffi_init__``, ``tvm_ffi``'s
idiom (fftvm's ``Sink.__init__(self, fn)``) — with every argument one of the ``__init__``'s own
parameters, by name, passed positionally, hands each of those parameters unchanged to that
registry function. What the function accepts is then what the constructor accepts, whatever the
package annotated: Apache TVM's ``relax.ShapeExpr.__init__(values: list[Expr] | tuple[Expr, ...] |
Array)`` builds from ``(4, 16)``, which its FFI converts. Anything else (another statement, a
keyword argument, an expression as an argument, ``*args``, a callee that is no registry function)
is not a forwarder.

``forwarding`` runs in the child (``collect``), on the live function: it reads the function's
source, resolves the callee and records the registry name and schema, and which parameter goes
to which position. ``WidenForwarded`` runs in the parent's rewrite: each forwarded parameter the
stub annotates becomes the union of its annotation and the registry parameter's (typed as the
``_ffi_api`` functions are, ``resolve.StubContext``), the package's members first, members whose
text repeats one already there dropped, and so are the schema's names of registered classes the
package's annotation already names (``Expr`` in ``tvm.tirx`` is the schema's ``_tvm_ir.Expr``:
the child records the type keys of the classes an annotation names). A forwarded parameter the
package wrote with neither annotation nor default takes the registry parameter's type alone; one
with a default and no annotation is left to the fill rules (stubgen writes ``x=None`` as
``Incomplete | None``).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Set
from typing import Any

import libcst as cst

from ..model.typemap import SchemaError, function_sig
from .collected import Forwarding
from .resolve import StubContext
from .transforms import ClassRewriter

__all__ = [
    "forwarding",
    "own_type_key",
    "registry_name",
    "resolve_dotted",
    "widen_forwarded",
    "WidenForwarded",
    "union_text",
]


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None for any other expression."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


class _Registry:
    """The registry name of a ``tvm_ffi.Function`` (functions compare and hash by handle), from
    every global function, read once on first use; a handle under several names gets the first
    in sorted order."""

    def __init__(self) -> None:
        self.names: dict[Any, str] | None = None

    def name_of(self, func: Any) -> str | None:
        import tvm_ffi

        if self.names is None:
            self.names = {}
            for name in sorted(tvm_ffi.registry.list_global_func_names()):
                found = tvm_ffi.get_global_func(name, allow_missing=True)
                if found is not None:
                    self.names.setdefault(found, name)
        return self.names.get(func)


_REGISTRY = _Registry()


def registry_name(func: object) -> str | None:
    """The registry name of the ``tvm_ffi.Function`` ``func`` (None for one the registry lacks)."""
    return _REGISTRY.name_of(func)


def forwarding(init: object, type_key: str | None = None) -> tuple[Forwarding | None, str]:
    """``(Forwarding(...), "forwards")`` when ``init`` (the ``__init__`` of the class registered
    for ``type_key``) only forwards its parameters to a registry function; else ``(None, why not)``."""
    if not inspect.isfunction(init):
        return None, "not a plain function"
    if hasattr(init, "__wrapped__"):
        return None, "decorated"
    fdef = _function_source(init)
    if isinstance(fdef, str):
        return None, fdef
    a = fdef.args
    positional = [*a.posonlyargs, *a.args]
    if not positional:
        return None, "no self parameter"
    body = list(fdef.body)
    first = body[0].value if body and isinstance(body[0], ast.Expr) else None
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        body = body[1:]  # the docstring
    stmt = body[0] if len(body) == 1 else None
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if (
        not isinstance(call, ast.Call)
        or not isinstance(call.func, ast.Attribute)
        or not isinstance(call.func.value, ast.Name)
        or call.func.value.id != positional[0].arg
    ):
        return None, "other statements"
    if call.func.attr == "__ffi_init__":
        callee, args = _type_init(type_key), call.args
    elif call.func.attr == "__init_handle_by_constructor__":
        callee, args = _registry_callee(call, init.__globals__), call.args[1:]
    else:
        return None, "other statements"
    if isinstance(callee, str):
        return None, callee
    if call.keywords:
        return None, "keyword arguments"
    params = {p.arg for p in [*positional[1:], *a.kwonlyargs]}
    names: list[str] = []
    for arg in args:
        if not isinstance(arg, ast.Name) or arg.id not in params:
            return None, "an argument is not a parameter"
        if arg.id in names:
            return None, "a parameter passed twice"
        names.append(arg.id)
    name, schema, via = callee
    written = getattr(init, "__annotations__", {})
    named = {n: keys for n in names if n in written and (keys := _named_keys(written[n], init.__globals__))}
    return Forwarding(
        global_name=name,
        schema=schema,
        count=len(names),
        params={n: i for i, n in enumerate(names)},
        via=via,
        # per parameter, the registered classes its annotation names as union members
        named=named,
    ), "forwards"


def _registry_callee(call: ast.Call, scope: dict[str, Any]) -> tuple[str, Any, str] | str:
    """``(registry name, schema, spelling)`` of the function ``self.__init_handle_by_constructor__``
    is called with (its first argument, resolved in ``scope``), or why there is none."""
    import tvm_ffi

    from tvmffi_runtime import reflection as R

    if not call.args:
        return "no function"
    callee = _dotted(call.args[0])
    if callee is None:
        return "callee is an expression"
    func = resolve_dotted(callee, scope)
    if func is None:
        return "callee not found"
    if not isinstance(func, tvm_ffi.Function):
        return "callee is not a tvm_ffi.Function"
    gname = _REGISTRY.name_of(func)
    if gname is None:
        return "callee is not a registry function"
    schema = R.global_function_metadata(gname).get("type_schema")
    return "no schema" if schema is None else (gname, schema, ".".join(callee))


def _type_init(type_key: str | None) -> tuple[str, Any, str] | str:
    """``(name, schema, spelling)`` of the registered ``__ffi_init__`` of ``type_key``, which
    ``self.__ffi_init__(...)`` calls (``tvm_ffi``'s own idiom), or why there is none."""
    from tvmffi_runtime import reflection as R

    if type_key is None:
        return "no type key"
    try:
        methods = R.type_info(type_key).methods
    except KeyError:
        return "type key not registered"
    schema = next((m.type_schema for m in methods if m.name == "__ffi_init__"), None)
    return "no schema" if schema is None else (f"{type_key}.__ffi_init__", schema, "self.__ffi_init__")


def _function_source(init: Any) -> ast.FunctionDef | str:
    """The parsed source of the function ``init`` (without decorators), or why there is none."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    except (OSError, TypeError, SyntaxError):
        return "no source"
    fdef = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(fdef, ast.FunctionDef):
        return "no source"
    return "decorated" if fdef.decorator_list else fdef


def resolve_dotted(dotted: list[str], scope: dict[str, Any]) -> object | None:
    """What the dotted name ``dotted`` is in ``scope`` (None when a part is missing)."""
    if dotted[0] not in scope:
        return None
    obj: object = scope[dotted[0]]
    for attr in dotted[1:]:
        try:
            obj = getattr(obj, attr)
        except Exception:  # noqa: BLE001 - a module's __getattr__ may raise anything
            return None
    return obj


def _named_keys(annotation: object, scope: dict[str, Any]) -> list[str]:
    """The type keys of the registered classes an annotation has among its union members
    (``Expr | None``, ``Optional[Expr]``; a string is read, names looked up in ``scope``, never
    evaluated): the stub then need not add what the schema calls the same class."""
    import types
    import typing

    found: list[object] = []

    def walk(ann: object) -> None:
        if isinstance(ann, str):
            try:
                tree = ast.parse(ann, mode="eval").body
            except SyntaxError:
                return
            walk_ast(tree)
        elif isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union:
            for arg in typing.get_args(ann):
                walk(arg)
        else:
            found.append(ann)

    def walk_ast(node: ast.expr) -> None:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            walk_ast(node.left)
            walk_ast(node.right)
            return
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            walk(node.value)
            return
        path = _dotted(node)
        if path is None or path[0] not in scope:
            return
        obj: object = scope[path[0]]
        for attr in path[1:]:
            obj = getattr(obj, attr, None)
        found.append(obj)

    walk(annotation)
    keys: list[str] = []
    for obj in found:
        key = own_type_key(obj) if isinstance(obj, type) else None
        if key is not None and key not in keys:
            keys.append(key)
    return keys


def own_type_key(cls: type) -> str | None:
    """The type key ``cls`` is registered for: its own ``__tvm_ffi_type_info__``, not one it
    inherits from a registered base (None for a class registered for none)."""
    key = getattr(cls.__dict__.get("__tvm_ffi_type_info__"), "type_key", None)
    return key if isinstance(key, str) else None


def _schema_params(record: Forwarding) -> list[Any] | None:
    """The registry function's parameter types, when known and as many as the call passes."""
    try:
        sig = function_sig(record.schema)
    except SchemaError:
        return None
    if sig.params is None or len(sig.params) != record.count:
        return None
    return list(sig.params)


def widen_forwarded(ctx: StubContext, module: cst.Module, keys: list[str]) -> tuple[cst.Module, bool]:
    """``module`` with the forwarded ``__init__`` parameters of the classes of ``keys`` (type keys
    defined in it) widened, and whether any was."""
    todo: dict[str, tuple[str, Forwarding, list[Any]]] = {}
    for key in sorted(keys):
        info = ctx.data.classes[key]
        record = info.forwards
        types = _schema_params(record) if record else None
        if record and types is not None and record.params:
            todo[info.qualname] = (key, record, types)
    if not todo:
        return module, False
    widen = WidenForwarded(ctx, todo)
    return module.visit(widen), widen.used


def _members(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The members of a ``|`` union, left to right (one member for anything else)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        return [*_members(expr.left), *_members(expr.right)]
    return [expr]


_ANY = {"Any", "Incomplete", "object"}


def _generic_name(expr: cst.BaseExpression) -> str | None:
    """The last part of a subscripted generic's name (``Callable`` of ``_abc.Callable[[int], int]``)."""
    if isinstance(expr, cst.Subscript):
        value = expr.value
        if isinstance(value, cst.Name):
            return value.value
        if isinstance(value, cst.Attribute):
            return value.attr.value
    return None


def _open_generic(expr: cst.BaseExpression) -> str | None:
    """The generic's name when it is bare or every argument of it takes anything (``Callable``,
    ``Callable[..., Incomplete]``, ``dict[Any, Any]``): another spelling of that generic adds
    nothing to it. (A bare class name is returned too; no schema member subscripts a class.)"""
    if isinstance(expr, cst.Name):
        return expr.value  # a bare generic (``Callable``, which the fill rules spell out later)
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    name = _generic_name(expr)
    if name is None or not isinstance(expr, cst.Subscript):
        return None
    code = cst.Module([]).code_for_node
    for el in expr.slice:
        if not isinstance(el.slice, cst.Index):
            return None
        text = code(el.slice.value)
        if text != "..." and text.rsplit(".", 1)[-1] not in _ANY:
            return None
    return name


def union_text(written: cst.BaseExpression, extra: str, same: Set[str] = frozenset()) -> cst.BaseExpression | None:
    """``written | extra`` without the members of ``extra`` whose text is already a member of
    ``written`` or is in ``same`` (what ``written`` names by another spelling), or that are a
    generic ``written`` has with arguments taking anything (``Callable[..., Incomplete]``); None
    when nothing is added or ``written`` already takes anything."""
    code = cst.Module([]).code_for_node
    have = [code(m) for m in _members(written)]
    if any(h.rsplit(".", 1)[-1] in _ANY for h in have):
        return None
    open_generics = {g for m in _members(written) if (g := _open_generic(m))}
    add = [
        code(m)
        for m in _members(cst.parse_expression(extra))
        if code(m) not in have and code(m) not in same and _generic_name(m) not in open_generics
    ]
    if not add:
        return None
    return cst.parse_expression(" | ".join([*have, *add]))


class WidenForwarded(ClassRewriter):
    """Widens the forwarded ``__init__`` parameters of the classes in ``todo`` (qualname -> type
    key, its ``forwarding`` record, the registry parameter types); a class body with more than
    one ``__init__`` (overloads) is left as written. An import an annotation needed is kept only
    when the annotation was used."""

    def __init__(self, ctx: StubContext, todo: dict[str, tuple[str, Forwarding, list[Any]]]) -> None:
        super().__init__()
        self.ctx = ctx
        self.todo = todo
        self.used = False

    def rewrite_class(self, q: str, updated_node: cst.ClassDef) -> cst.ClassDef:
        found = self.todo.get(q)
        if found is None or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        key, record, types = found
        inits = [
            i
            for i, s in enumerate(updated_node.body.body)
            if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"
        ]
        if len(inits) != 1:
            return updated_node
        body = list(updated_node.body.body)
        init = body[inits[0]]
        assert isinstance(init, cst.FunctionDef)
        ctx = self.ctx

        def widen(p: cst.Param) -> cst.Param:
            pos = record.params.get(p.name.value)
            if pos is None or (p.annotation is None and p.default is not None):
                return p  # not forwarded, or unannotated with a default (the fill rules apply)
            imports, warnings = set(ctx.imports), list(ctx.warnings)
            # the classes the package's annotation names, as the schema's annotation would name them
            same = {t for k in record.named.get(p.name.value, []) if (t := ctx.resolve(k))}
            ctx.imports.intersection_update(imports)
            extra = ctx.annotate(types[pos], "param", f"{key}.__init__({p.name.value})")
            if extra == "_t.Any":
                new = None
            elif p.annotation is None:  # nothing written: the value reaches the function as it is
                new = cst.parse_expression(extra)
            else:
                new = union_text(p.annotation.annotation, extra, same)
            if new is None:  # nothing added: nor its imports
                ctx.imports.intersection_update(imports)
                ctx.warnings[:] = warnings
                return p
            self.used = True
            return p.with_changes(annotation=cst.Annotation(new))

        ps = init.params
        body[inits[0]] = init.with_changes(
            params=ps.with_changes(
                posonly_params=[widen(p) for p in ps.posonly_params],
                params=[widen(p) for p in ps.params],
                kwonly_params=[widen(p) for p in ps.kwonly_params],
            )
        )
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))
