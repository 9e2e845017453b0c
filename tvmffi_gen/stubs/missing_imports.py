"""The last repair of the rewritten stubs (``drop_missing_imports``): a name a stub imports from
another stub of the package that does not define it (stubgen misses names a module makes at run
time, and modules that failed to import are not stubbed) becomes an ``Incomplete`` attribute
instead of an import error, or the import of the package's module it is bound to at run time
(``from . import cpp`` in ``tvm.topi.nn.loss``, where ``cpp`` is ``tvm.topi.cpp`` bound on
``tvm.topi.nn``, not a module ``tvm.topi.nn.cpp``). It runs over all modules at once, in order, since a module's repair
reads the stubs before it as already repaired.
"""

from __future__ import annotations

import ast
from typing import Any

import libcst as cst

from .collected import ModuleFacts
from .stubtext import INCOMPLETE_IMPORT, STUB_HEADER, defines, exported_names, stub_tree

__all__ = ["drop_missing_imports"]


def _drop_imports(module: cst.Module, missing: set[tuple[int, str]], modules: dict[str, str]) -> cst.Module:
    """``module`` without the imports of ``missing`` (statement index, bound name), each declared
    in their place as the import of the module ``modules`` binds it to, else ``Incomplete`` (a
    change of module-level statements only: nothing is walked)."""
    body: list[Any] = []
    for i, stmt in enumerate(module.body):
        drop = {name for (j, name) in missing if j == i}
        if drop and isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.ImportFrom):
            imp = stmt.body[0]
            assert not isinstance(imp.names, cst.ImportStar)
            kept = [a for a in imp.names if _bound(a) not in drop]
            if kept:
                kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                body.append(stmt.with_changes(body=[imp.with_changes(names=kept)]))
            body += [
                cst.parse_statement(
                    f"import {modules[name]} as {name}"
                    if name in modules
                    else f"{name}: Incomplete  # not found by the stub generator"
                )
                for name in sorted(drop)
            ]
        else:
            body.append(stmt)
    return module.with_changes(body=body)


def _bound(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return cst.Module([]).code_for_node(alias.name).split(".")[0]


def drop_missing_imports(stubs: dict[str, str], packages: set[str], facts: dict[str, ModuleFacts]) -> None:
    """Names a stub imports from another stub of the package that does not define them (stubgen
    misses names a module makes at run time, and modules that failed are not stubbed) become
    imports of the stubbed module they are bound to at run time (``facts``' ``module_names``),
    else ``Incomplete`` attributes, instead of import errors."""
    exports = {m: exported_names(t) for m, t in stubs.items()}
    top = next(iter(stubs)).split(".")[0] if stubs else ""
    for mod, text in list(stubs.items()):
        tree = stub_tree(text)
        missing: set[tuple[int, str]] = set()
        for i, node in enumerate(tree.body):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = mod.split(".") if mod in packages else mod.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != top or target not in exports:
                continue
            for a in node.names:
                if (
                    a.name != "*"
                    and a.name not in exports[target]
                    and f"{target}.{a.name}" not in stubs
                    and not defines(stubs[target], a.name)
                ):
                    missing.add((i, a.asname or a.name))
        if missing:
            own = facts[mod].module_names if mod in facts else {}
            modules = {n: m for n, m in own.items() if m in stubs}
            code = _drop_imports(cst.parse_module(text), missing, modules).code
            if any(n not in modules for _, n in missing) and INCOMPLETE_IMPORT not in code:
                code = code.replace(STUB_HEADER, STUB_HEADER + INCOMPLETE_IMPORT + "\n", 1)
            stubs[mod] = code
