"""What makes stubgen's signatures pass ``mypy --strict`` and pyright strict, as one libcst
transformer (``FillAnnotations``): every unannotated parameter and result becomes ``Incomplete``
(``__init__`` returns None), a bare generic (``list``, ``Callable``) gets its explicit Any
arguments, a parameter whose default is None admits None, and every default is written ``...``
(a stub says that a default exists, not its value). ``stdlib_generic_names`` tells which names
of a stub denote such a generic.
"""

from __future__ import annotations

import ast
from typing import ClassVar

import libcst as cst

from .stubtext import stub_tree
from .transforms import StubTransformer, simple_body

__all__ = ["FillAnnotations", "stdlib_generic_names"]


#: Generic classes an annotation may name bare (``list``, ``Callable``), with the type arguments
#: that spell out what a bare name means (Any for each parameter), so ``mypy --strict`` and
#: pyright strict see an explicit Any instead of a missing argument or an Unknown.
_BARE_GENERICS = {
    **dict.fromkeys(["list", "set", "frozenset", "type", "List", "Set", "FrozenSet", "Type", "Sequence",
                     "MutableSequence", "Iterable", "Iterator", "Collection", "AbstractSet", "MutableSet",
                     "AsyncIterator", "AsyncIterable", "Awaitable", "deque", "Deque", "Counter", "PathLike",
                     "Pattern", "Match", "CompletedProcess", "Popen", "Queue", "Future", "KeysView",
                     "ValuesView", "Reversible", "Container"], "Incomplete"),
    **dict.fromkeys(["dict", "Dict", "Mapping", "MutableMapping", "defaultdict", "DefaultDict",
                     "OrderedDict", "ItemsView"], "Incomplete, Incomplete"),
    **dict.fromkeys(["Generator", "Coroutine"], "Incomplete, Incomplete, Incomplete"),
    **dict.fromkeys(["tuple", "Tuple"], "Incomplete, ..."),
    **dict.fromkeys(["Callable"], "..., Incomplete"),
}  # fmt: skip


_STDLIB_GENERIC_MODULES = (
    "typing",
    "typing_extensions",
    "collections",
    "collections.abc",
    "os",
    "subprocess",
    "re",
    "queue",
    "concurrent.futures",
    "asyncio",
    "builtins",
)


def stdlib_generic_names(text: str) -> set[str]:
    """The names in a stub that denote a generic of ``_BARE_GENERICS``: the builtins, names
    imported from the standard modules defining the others, and those modules' dotted forms."""
    names = {"list", "set", "frozenset", "dict", "tuple", "type"}
    tree = stub_tree(text)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in _STDLIB_GENERIC_MODULES:
            names.update((a.asname or a.name) for a in node.names if a.name in _BARE_GENERICS)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in _STDLIB_GENERIC_MODULES:
                    names.update(f"{a.asname or a.name}.{g}" for g in _BARE_GENERICS)
    names.update(f"_t.{g}" for g in _BARE_GENERICS)
    names.update(f"_abc.{g}" for g in _BARE_GENERICS)
    return names


def _spell_generics(expr: cst.BaseExpression, generic: set[str]) -> tuple[cst.BaseExpression, bool]:
    """``expr`` with each bare generic of ``_BARE_GENERICS`` (named as in ``generic``) given its
    Any arguments."""
    if isinstance(expr, (cst.Name, cst.Attribute)):
        last = expr.value if isinstance(expr, cst.Name) else expr.attr.value
        args = _BARE_GENERICS.get(last)
        if args is None or cst.Module([]).code_for_node(expr) not in generic:
            return expr, False
        sub = cst.parse_expression(f"X[{args}]")
        assert isinstance(sub, cst.Subscript)
        return sub.with_changes(value=expr), True
    if isinstance(expr, cst.BinaryOperation):
        left, a = _spell_generics(expr.left, generic)
        right, b = _spell_generics(expr.right, generic)
        return expr.with_changes(left=left, right=right), a or b
    if isinstance(expr, cst.Subscript):
        changed = False
        elems: list[cst.SubscriptElement] = []
        for el in expr.slice:
            if isinstance(el.slice, cst.Index):
                new, c = _spell_generics(el.slice.value, generic)
                changed = changed or c
                el = el.with_changes(slice=el.slice.with_changes(value=new))
            elems.append(el)
        return expr.with_changes(slice=elems), changed
    if isinstance(expr, cst.List):  # Callable[[a, b], r]
        changed = False
        items: list[cst.BaseElement] = []
        for item in expr.elements:
            new, c = _spell_generics(item.value, generic)
            changed = changed or c
            items.append(item.with_changes(value=new))
        return expr.with_changes(elements=items), changed
    return expr, False


def _accepts_none(expr: cst.BaseExpression) -> bool:
    """Whether an annotation already admits None: None, Any, Incomplete or object, Optional[...],
    or a union with one of them among its members (``list[Incomplete]`` does not)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        return _accepts_none(expr.left) or _accepts_none(expr.right)
    if isinstance(expr, (cst.Name, cst.Attribute)):
        last = expr.value if isinstance(expr, cst.Name) else expr.attr.value
        return last in ("None", "Any", "Incomplete", "object")
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, (cst.Name, cst.Attribute)):
        last = expr.value.value if isinstance(expr.value, cst.Name) else expr.value.attr.value
        if last == "Optional":
            return True
        if last == "Union":
            return any(isinstance(el.slice, cst.Index) and _accepts_none(el.slice.value) for el in expr.slice)
        return False
    return not isinstance(expr, cst.Subscript)  # a string or other form: left as written


class FillAnnotations(StubTransformer):
    """Every unannotated parameter and result becomes ``Incomplete`` (``__init__`` returns None).
    A function's parameters (and, unless its body holds a compound statement, its result) are not
    descended into: ``leave_FunctionDef`` spells their annotations' generics itself, as
    ``leave_Annotation`` does elsewhere."""

    # and the annotated assignments (the annotations under them are left, not descended into)
    holders: ClassVar[tuple[type[cst.CSTNode], ...]] = (
        *StubTransformer.holders,
        cst.SimpleStatementLine,
        cst.AnnAssign,
    )

    def __init__(self, generic: set[str]) -> None:
        super().__init__()
        self.class_depth = [False]
        self.spell_result: list[bool] = []  # per function being visited: its result not descended into
        self.used = False
        self.generic = generic  # names of the bare generics to spell out (stdlib_generic_names)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.class_depth.append(True)

    def leave_Annotation(self, original_node: cst.Annotation, updated_node: cst.Annotation) -> cst.Annotation:
        return self._spelled(updated_node)

    def _spelled(self, annotation: cst.Annotation) -> cst.Annotation:
        new, changed = _spell_generics(annotation.annotation, self.generic)
        if changed:
            self.used = True
            return annotation.with_changes(annotation=new)
        return annotation

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        self.class_depth.pop()
        return updated_node

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign) -> cst.Assign:
        """A type alias (``LanesFn = Callable[[dict], int]``: a subscript, or a union of such)
        gets its bare generics' arguments as an annotation does."""
        value = updated_node.value
        shaped = isinstance(value, cst.Subscript) or (
            isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.BitOr)
        )
        if not shaped:
            return updated_node
        new, changed = _spell_generics(value, self.generic)
        if not changed:
            return updated_node
        self.used = True
        return updated_node.with_changes(value=new)

    def _spelled_param(self, param: cst.Param) -> cst.Param:
        if param.annotation is None:
            return param
        spelled = self._spelled(param.annotation)
        return param if spelled is param.annotation else param.with_changes(annotation=spelled)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.class_depth.append(False)
        self.spell_result.append(simple_body(node))  # StubTransformer descends into it otherwise

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self.class_depth.pop()
        if self.spell_result.pop() and updated_node.returns is not None:
            spelled = self._spelled(updated_node.returns)
            if spelled is not updated_node.returns:
                updated_node = updated_node.with_changes(returns=spelled)
        in_class = self.class_depth[-1]
        decorators = {d.decorator.value for d in updated_node.decorators if isinstance(d.decorator, cst.Name)}
        has_self = in_class and "staticmethod" not in decorators
        ps = updated_node.params

        def fill(p: cst.Param) -> cst.Param:
            if (
                p.annotation is not None
                and isinstance(p.default, cst.Name)
                and p.default.value == "None"
                and not _accepts_none(p.annotation.annotation)
            ):
                # the source's implicit Optional: None is accepted, it is the default
                optional = cst.BinaryOperation(p.annotation.annotation, cst.BitOr(), cst.Name("None"))
                p = p.with_changes(annotation=p.annotation.with_changes(annotation=optional))
            if p.default is not None:
                # a stub says that a default exists, not its value (which may contradict the
                # annotation: ``strides: int | tuple[int, int] = (1, 1, 1)``, an implicit Optional)
                p = p.with_changes(default=cst.Ellipsis())
            if p.annotation is not None:
                return p
            self.used = True
            spaced = cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(" "), whitespace_after=cst.SimpleWhitespace(" ")
            )
            return p.with_changes(
                annotation=cst.Annotation(cst.Name("Incomplete")), equal=spaced if p.default is not None else p.equal
            )

        pos_only = [self._spelled_param(p) for p in ps.posonly_params]
        params = [self._spelled_param(p) for p in ps.params]
        first_in_posonly = bool(pos_only)
        if has_self and first_in_posonly:
            pos_only = [pos_only[0], *map(fill, pos_only[1:])]
            params = list(map(fill, params))
        elif has_self and params:
            pos_only = list(map(fill, pos_only))
            params = [params[0], *map(fill, params[1:])]
        else:
            pos_only = list(map(fill, pos_only))
            params = list(map(fill, params))
        star = ps.star_arg
        if isinstance(star, cst.Param):
            star = fill(self._spelled_param(star))
        kwonly = [fill(self._spelled_param(p)) for p in ps.kwonly_params]
        star_kw = fill(self._spelled_param(ps.star_kwarg)) if ps.star_kwarg is not None else None
        new = updated_node.with_changes(
            params=ps.with_changes(
                posonly_params=pos_only, params=params, star_arg=star, kwonly_params=kwonly, star_kwarg=star_kw
            )
        )
        if new.returns is None:
            if updated_node.name.value == "__init__":
                ret: cst.BaseExpression = cst.Name("None")
            else:
                self.used = True
                ret = cst.Name("Incomplete")
            new = new.with_changes(returns=cst.Annotation(ret))
        return new
