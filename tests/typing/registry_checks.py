"""Checks shared by the registry tests of this folder (``test_properties``, ``test_hostile_registries``):
what a rendered class declares, a rendered module's imports, and mypy --strict over a rendered
package."""

from __future__ import annotations

import ast
import os
import tempfile
from pathlib import Path

from tvmffi_gen.model.registration import class_statements
from tvmffi_gen.render.import_lines import STANDARD_IMPORTS
from tvmffi_gen.verify.checkers import run_mypy
from tvmffi_gen.write.writer import apply_plan, plan_output

#: The aliases of the standard imports a generated module may need (``_t``, ``_rt``, ...).
STANDARD_ALIASES = {alias for group in STANDARD_IMPORTS for alias in group}


def declared_fields(node: ast.ClassDef) -> dict[str, str]:
    """Registry name -> how it is given ("attribute" or "name=") of the class's field declarations
    (``x: ... = _bind.field(...)`` / ``_bind.registry_field(...)``, in its nested ``__fields``
    class)."""
    out: dict[str, str] = {}
    for stmt in class_statements(node):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        call = stmt.value
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            continue
        if call.func.attr not in ("field", "registry_field"):
            continue
        named = [k.value for k in call.keywords if k.arg == "name"]
        if named:
            assert isinstance(named[0], ast.Constant) and isinstance(named[0].value, str)
            out[named[0].value] = "name="
        else:
            out[stmt.target.id] = "attribute"
    return out


def import_problems(tree: ast.Module) -> list[str]:
    """What is wrong with a generated module's imports: an import it never uses (a re-export is
    written ``name as name``), or a name of the generator's standard imports (``_t``, ``_rt``...)
    that it uses without importing."""
    imported: set[str] = set()
    unused: list[str] = []
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not (
            isinstance(node, ast.ImportFrom) and node.module == "__future__"
        ):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                imported.add(bound)
                if bound not in used and alias.asname != alias.name:
                    unused.append(f"unused import {bound!r} (line {node.lineno})")
    missing = [f"{name!r} used but not imported" for name in sorted(STANDARD_ALIASES & used - imported)]
    return unused + missing


def mypy_errors(files: dict[str, str]) -> tuple[int, str]:
    """mypy --strict over the rendered package ``files``, written to a temporary folder: the
    error count and the report."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pkg"
        apply_plan(plan_output(root, files, "test"))
        return run_mypy(root)


def mypy_errors_each(
    packages: dict[str, dict[str, str]], programs: dict[str, str] | None = None
) -> dict[str, tuple[int, str]]:
    """mypy --strict over several rendered packages (package name -> files, each rendered for
    that name) in one run (a run costs about a second before it reaches the packages): each
    package's error count and report. ``programs`` (package name -> a user program importing it,
    written beside the packages as ``use_<name>.py``) are checked in the same run, and what mypy
    says on a program (its ``reveal_type`` notes too) is in its package's report. What mypy
    reports on no package nor program (its own failure) counts against every package."""
    programs = programs or {}
    with tempfile.TemporaryDirectory() as tmp:
        roots = {name: Path(tmp) / name for name in packages}
        for name, files in packages.items():
            apply_plan(plan_output(roots[name], files, "test"))
        uses = {name: Path(tmp) / f"use_{name}.py" for name in programs}
        for name, text in programs.items():
            uses[name].write_text(text, encoding="utf-8")
        errors, report = run_mypy(next(iter(roots.values())), extra_files=[*roots.values(), *uses.values()])
        base = os.path.realpath(tmp)
    owned: dict[str, list[str]] = {name: [] for name in packages}
    rest: list[str] = []
    for line in report.splitlines():
        path = os.path.normpath(os.path.join(base, line.split(":", 1)[0]))
        owner = next(
            (
                name
                for name in packages
                if path.startswith(os.path.join(base, name, "")) or path == os.path.join(base, f"use_{name}.py")
            ),
            None,
        )
        (owned[owner] if owner is not None else rest).append(line)
    rest_errors = errors - sum(1 for lines in owned.values() for line in lines if ": error:" in line)
    return {
        name: (sum(1 for line in lines if ": error:" in line) + rest_errors, "\n".join(lines + rest))
        for name, lines in owned.items()
    }
