"""The libcst rewrites that make a stub module's names denote what the running module's do,
whatever stubgen read in the source, applied by ``rewrite.augment``:

* ``rebind_shadowed``: a package's name that is also one of its submodules' names but is a class
  or function at run time (``from .extern import X`` then ``from .op import *`` rebinding
  ``extern``) is bound to that object by an explicit import at the end of the stub: a checker
  binds a submodule's name on its package at ``from .extern import X``, and stubgen writes star
  imports first, so without it ``nn.extern`` would be the submodule;
* ``AddBases``: a class without bases that a decorator replaced by a class of another kind
  (``@module_pass`` makes a ``ModulePass`` subclass) derives from the nearest registered class the
  running one derives from;
* ``TypedAliases``: a type alias with string forward references, which stubgen writes as
  ``Incomplete``, is declared as the alias;
* ``InstanceNames``: a module-level function a decorator replaced by an instance of another class
  (``@T.prim_func`` makes a ``PrimFunc``) is declared as a name of that class;
* ``InferredReturns``: a function without a return annotation whose result the source determines
  (``source_facts.inferred_returns``) is annotated with it, and one annotated with a class whose
  registry call returns a strict subclass of it (``source_facts.narrowed_returns``) with that.
"""

from __future__ import annotations

import libcst as cst

from .transforms import ClassRewriter, StubTransformer

__all__ = ["rebind_shadowed", "AddBases", "TypedAliases", "InstanceNames", "InferredReturns"]


def rebind_shadowed(module: cst.Module, shadowed: dict[str, str]) -> cst.Module:
    """``module`` with ``from M import Q as name`` appended for each ``name -> "M:Q"``."""
    lines = "".join(
        f"from {path.split(':')[0]} import {path.split(':')[1]} as {name}  # bound so at run time\n"
        for name, path in sorted(shadowed.items())
    )
    return module.with_changes(body=[*module.body, *cst.parse_module(lines).body]) if lines else module


class AddBases(ClassRewriter):
    """Gives the classes (qualnames) in ``bases`` that declare no base of their own those base
    expressions. (A class a decorator wraps but that declares a base, as tvm's
    ``@relax.expr_functor.mutator class M(PyExprMutator)``, is what it declares to a checker: its
    wrapper's registered base is a private backing class.)"""

    def __init__(self, bases: dict[str, list[str]]) -> None:
        super().__init__()
        self.bases = bases

    def rewrite_class(self, q: str, updated_node: cst.ClassDef) -> cst.ClassDef:
        extra = [cst.Arg(cst.parse_expression(t)) for t in self.bases.get(q, [])]
        if not extra or updated_node.bases:
            return updated_node
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        args = [*updated_node.bases, *extra, *updated_node.keywords]
        args = [a.with_changes(comma=comma) for a in args[:-1]] + [
            args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        ]
        n = len(updated_node.bases) + len(extra)
        return updated_node.with_changes(bases=args[:n], keywords=args[n:], lpar=cst.LeftParen(), rpar=cst.RightParen())


class TypedAliases(StubTransformer):
    """Module-level ``name: Incomplete`` (no value) for each name in ``aliases`` becomes
    ``name: _t.TypeAlias = <alias>``."""

    def __init__(self, aliases: dict[str, str]) -> None:
        super().__init__()
        self.aliases = aliases
        self.used = False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement:
        small = updated_node.body[0] if len(updated_node.body) == 1 else None
        if not (isinstance(small, cst.AnnAssign) and small.value is None and isinstance(small.target, cst.Name)):
            return updated_node
        alias = self.aliases.get(small.target.value)
        ann = small.annotation.annotation
        if alias is None or not (isinstance(ann, cst.Name) and ann.value == "Incomplete"):
            return updated_node
        self.used = True
        return cst.parse_statement(f"{small.target.value}: _t.TypeAlias = {alias}\n")


class InferredReturns(ClassRewriter):
    """Functions (``name``, ``Class.name``) without a return annotation get the one in
    ``returns``; with ``replace``, those with one get it instead."""

    def __init__(self, returns: dict[str, str], *, replace: bool = False) -> None:
        super().__init__()
        self.returns = returns
        self.replace = replace
        self.used = 0

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        q = ".".join([*self.stack, updated_node.name.value])
        text = self.returns.get(q)
        if text is None or (updated_node.returns is not None) != self.replace:
            return updated_node
        if any(cst.Module([]).code_for_node(d.decorator).endswith("overload") for d in updated_node.decorators):
            return updated_node  # one of several signatures: the source's function is another
        self.used += 1
        return updated_node.with_changes(returns=cst.Annotation(cst.parse_expression(text)))


class InstanceNames(StubTransformer):
    """Module-level ``def name`` (each of its overloads) for each name in ``classes`` becomes
    ``name: <class>``."""

    def __init__(self, classes: dict[str, str]) -> None:
        super().__init__()
        self.classes = classes
        self.done: set[str] = set()

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.BaseStatement | cst.RemovalSentinel:
        name = updated_node.name.value
        cls = self.classes.get(name)
        if cls is None:
            return updated_node
        if name in self.done:
            return cst.RemoveFromParent()  # another overload of the same name
        self.done.add(name)
        return cst.parse_statement(f"{name}: {cls}  # a decorator made it so at run time\n")
