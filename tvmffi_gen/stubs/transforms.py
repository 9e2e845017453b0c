"""The libcst rewrites of a stub module that follow the running package, one transformer each,
applied by ``rewrite.augment``: registry members appended to class bodies and read-only fields
declared as attributes turned into properties (``AddMembers``), an explicit metaclass for
classes whose metaclass is tvm_ffi's private one (``DeclaredMetaclass``), the run-time ``__all__``
(``SetAll``), module functions a decorator bound to None (``NoneDefs``) or replaced by a packed
function, which takes no keywords (``PositionalOnly``); and the index of a module's classes by
qualname with the names each body defines (``class_index``, ``body_names``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any, ClassVar

import libcst as cst

__all__ = [
    "DropInits",
    "unbound_assignments",
    "class_index",
    "body_names",
    "StubTransformer",
    "ClassRewriter",
    "simple_body",
    "AddMembers",
    "DeclaredMetaclass",
    "SetAll",
    "NoneDefs",
    "PositionalOnly",
]


def class_index(module: cst.Module) -> dict[str, cst.ClassDef]:
    out: dict[str, cst.ClassDef] = {}

    def walk(body: Any, prefix: str) -> None:
        for stmt in body:
            if isinstance(stmt, cst.ClassDef):
                q = prefix + stmt.name.value
                out[q] = stmt
                if isinstance(stmt.body, cst.IndentedBlock):
                    walk(stmt.body.body, q + ".")

    walk(module.body, "")
    return out


def body_names(cls: cst.ClassDef) -> set[str]:
    names: set[str] = set()
    body: Sequence[cst.BaseStatement] = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else []
    for stmt in body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            names.add(stmt.name.value)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                target = small.target if isinstance(small, cst.AnnAssign) else None
                if isinstance(small, cst.Assign):
                    for t in small.targets:
                        if isinstance(t.target, cst.Name):
                            names.add(t.target.value)
                if isinstance(target, cst.Name):
                    names.add(target.value)
    return names


class StubTransformer(cst.CSTTransformer):
    """A transformer that descends only into the nodes of ``holders``: by default those that can
    hold a class or a function (the module, compound statements, their bodies). libcst walks and
    rebuilds every node it descends into, so not descending into expressions, decorators,
    parameters, simple statements and whitespace is most of the saving; the ``leave_`` methods of
    the nodes not descended into are still called, their ``visit_`` ones too, on the node itself
    (not on what is under it). A function is descended into only when its body holds a compound
    statement (``simple_body``): its parameters and result are the subclass's to read in
    ``leave_FunctionDef``. A subclass that changes annotated assignments adds their holders."""

    holders: ClassVar[tuple[type[cst.CSTNode], ...]] = (
        cst.Module,
        cst.BaseCompoundStatement,
        cst.BaseSuite,
        cst.Else,
        cst.ExceptHandler,
        cst.ExceptStarHandler,
        cst.Finally,
        cst.MatchCase,
    )
    _holds: ClassVar[dict[type[cst.CSTNode], bool]] = {}  # whether a node type is in holders

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._holds = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if not super().on_visit(node):
            return False
        if type(node) is cst.FunctionDef:  # its parameters are not holders; nor its body, unless ...
            return not simple_body(node)  # ... it has a compound statement (never in a stub)
        holds = self._holds.get(type(node))
        if holds is None:
            holds = self._holds[type(node)] = isinstance(node, self.holders)
        return holds


def simple_body(node: cst.FunctionDef | cst.ClassDef) -> bool:
    """Whether the body of a function (or class) holds simple statements only (``...``, a
    docstring): no class or function, nothing a ``StubTransformer`` descends into."""
    body = node.body
    return isinstance(body, cst.SimpleStatementSuite) or all(
        isinstance(st, cst.SimpleStatementLine) for st in body.body
    )


def _dedent(text: str) -> str:
    return textwrap.dedent(text)


class ClassRewriter(StubTransformer):
    """A transformer that rewrites classes by their qualname (``Outer.Inner``): each class is
    handed to ``rewrite_class`` once what is inside it has been rewritten."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.stack.append(node.name.value)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        qualname = ".".join(self.stack)
        self.stack.pop()
        return self.rewrite_class(qualname, updated_node)

    def rewrite_class(self, q: str, updated_node: cst.ClassDef) -> cst.ClassDef:
        """The class ``q`` as the stub should have it (by default as it is)."""
        return updated_node


class AddMembers(ClassRewriter):
    """Appends registry members to class bodies; turns the attributes in ``read_only`` (per
    class) into read-only properties of the type the package annotated them with."""

    def __init__(self, additions: dict[str, str], read_only: dict[str, set[str]]) -> None:
        super().__init__()
        self.additions = additions
        self.read_only = read_only

    def rewrite_class(self, q: str, updated_node: cst.ClassDef) -> cst.ClassDef:
        text = self.additions.get(q)
        frozen = self.read_only.get(q)
        if frozen and isinstance(updated_node.body, cst.IndentedBlock):
            body: list[Any] = []
            for st in updated_node.body.body:
                small = st.body[0] if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 else None
                if (
                    isinstance(small, cst.AnnAssign)
                    and small.value is None
                    and isinstance(small.target, cst.Name)
                    and small.target.value in frozen
                ):
                    ann = cst.Module([]).code_for_node(small.annotation.annotation)
                    body += list(cst.parse_module(f"@property\ndef {small.target.value}(self) -> {ann}: ...\n").body)
                else:
                    body.append(st)
            updated_node = updated_node.with_changes(body=updated_node.body.with_changes(body=body))
        if not text:
            return updated_node
        new_stmts = list(cst.parse_module(_dedent(text)).body)
        if isinstance(updated_node.body, cst.IndentedBlock):
            old = [
                s
                for s in updated_node.body.body
                if not (
                    isinstance(s, cst.SimpleStatementLine)
                    and len(s.body) == 1
                    and isinstance(s.body[0], cst.Expr)
                    and isinstance(s.body[0].value, cst.Ellipsis)
                )
            ]
            return updated_node.with_changes(body=updated_node.body.with_changes(body=[*old, *new_stmts]))
        return updated_node.with_changes(body=cst.IndentedBlock(body=new_stmts))


class DeclaredMetaclass(ClassRewriter):
    """The classes in ``names`` (qualnames) whose metaclass is tvm_ffi's private
    ``_ObjectSlotsMeta`` (which no stub can name: tvm_ffi's own ``core.pyi`` does not declare it)
    get ``metaclass=type``, so stubtest sees that the class has a metaclass of its own. ``type``
    and not the private class's public base ``abc.ABCMeta``: a class declared with ``ABCMeta``
    and no abstract methods is one basedpyright's default mode warns about at every
    instantiation (``reportEmptyAbstractUsage``), and these classes are made by their users. A
    class that names a metaclass keeps it."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names

    def rewrite_class(self, q: str, updated_node: cst.ClassDef) -> cst.ClassDef:
        if q not in self.names or any(
            k.keyword is not None and k.keyword.value == "metaclass" for k in updated_node.keywords
        ):
            return updated_node
        meta = cst.Arg(
            cst.Name("type"),
            keyword=cst.Name("metaclass"),
            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
        )
        args = list(updated_node.bases) + list(updated_node.keywords)
        if args:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        bases = args[: len(updated_node.bases)]
        keywords = [*args[len(updated_node.bases) :], meta]
        return updated_node.with_changes(bases=bases, keywords=keywords, lpar=cst.LeftParen(), rpar=cst.RightParen())


class _ModuleLevel(StubTransformer):
    """A transformer of module-level statements only: class bodies and function bodies are not
    descended into."""

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False


class SetAll(_ModuleLevel):
    """The module's ``__all__`` statements (``__all__ = [...]``, ``__all__: Incomplete``,
    ``__all__ += [...]``) become one ``__all__ = [...]`` of the given names, where the first was."""

    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self.names = names

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body: list[Any] = []
        done = False
        for stmt in updated_node.body:
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
            target = (
                small.targets[0].target
                if isinstance(small, cst.Assign) and len(small.targets) == 1
                else small.target
                if isinstance(small, (cst.AnnAssign, cst.AugAssign))
                else None
            )
            if isinstance(target, cst.Name) and target.value == "__all__":
                if not done:
                    body.append(cst.parse_statement(f"__all__ = {self.names!r}\n"))
                    done = True
                continue
            body.append(stmt)
        if not done:
            body.append(cst.parse_statement(f"__all__ = {self.names!r}\n"))
        return updated_node.with_changes(body=body)


class _ModuleFunctions(_ModuleLevel):
    """Rewrites the module-level functions named in ``names`` (``leave_FunctionDef``); class
    bodies and nested functions are left as they are."""

    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names


class NoneDefs(_ModuleFunctions):
    """Module-level functions whose name the running module binds to None (a registering
    decorator that returns nothing) become ``name: None``."""

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.BaseStatement:
        if updated_node.name.value not in self.names:
            return updated_node
        return cst.parse_statement(f"{updated_node.name.value}: None  # a decorator returned None\n")


class PositionalOnly(_ModuleFunctions):
    """The module-level functions in ``names`` (packed functions at run time, which take no
    keywords) get positional-only parameters."""

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        ps = updated_node.params
        if updated_node.name.value not in self.names or not ps.params:
            return updated_node
        return updated_node.with_changes(
            params=ps.with_changes(posonly_params=[*ps.posonly_params, *ps.params], params=[])
        )


def unbound_assignments(module: cst.Module, bound: set[str]) -> tuple[cst.Module, bool]:
    """``module`` with each module-level ``X = Y`` whose ``Y`` is a name not in ``bound`` (what
    the stub binds: stubgen's ``_lib_path = path`` of a loop variable, a name error to every
    checker) declared ``X: Incomplete`` (once); and whether it changed any."""
    body: list[cst.BaseStatement | cst.BaseSmallStatement] = []
    changed = False
    declared = {
        stmt.body[0].target.value
        for stmt in module.body
        if isinstance(stmt, cst.SimpleStatementLine)
        and isinstance(stmt.body[0], cst.AnnAssign)
        and isinstance(stmt.body[0].target, cst.Name)
    }
    for stmt in module.body:
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and isinstance(small.value, cst.Name)
            and small.value.value not in bound
        ):
            name = small.targets[0].target.value
            if name not in declared:  # (stubgen may have declared it already: ``x: Incomplete``)
                body.append(cst.parse_statement(f"{name}: Incomplete\n"))
                declared.add(name)
            changed = True
        else:
            body.append(stmt)
    return (module.with_changes(body=body), True) if changed else (module, False)


class DropInits(ClassRewriter):
    """The ``__init__`` of each class in ``classes`` (qualnames) removed: one written for
    checkers only (an ``if TYPE_CHECKING:`` block, which stubgen flattens) of a class whose
    running constructor is another (the registry's)."""

    def __init__(self, classes: set[str]) -> None:
        super().__init__()
        self.classes = classes

    def rewrite_class(self, q: str, updated_node: cst.ClassDef) -> cst.ClassDef:
        if q not in self.classes or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        kept = [
            stmt
            for stmt in updated_node.body.body
            if not (isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__")
        ]
        if len(kept) == len(updated_node.body.body):
            return updated_node
        body = kept or [cst.SimpleStatementLine([cst.Expr(cst.Ellipsis())])]
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))
