"""Every name the runtime exports is usable under a user's strict checkers.

A user's file in a folder outside the repository (no configuration of ours) names every entry of
``tvmffi_runtime.__all__`` as ``rt.NAME`` and every entry of each public submodule's ``__all__``
as ``from tvmffi_runtime.SUB import NAME``; mypy --strict and basedpyright strict must both accept
it (an ``__all__`` built in a form a checker does not follow makes the name "not exported").
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import tvmffi_runtime as rt
from tvmffi_gen.verify.checkers import run_mypy, run_pyright

pytestmark = pytest.mark.slow  # whole packages through a checker: see tests/README.md


def _public_submodules() -> list[str]:
    """``containers``, ``structural.equality``...: every module whose dotted name has no private part."""
    names = [m.name.split(".", 1)[1] for m in pkgutil.walk_packages(rt.__path__, prefix="tvmffi_runtime.")]
    return sorted(n for n in names if not any(part.startswith("_") for part in n.split(".")))


def _user_program() -> str:
    lines = ["import tvmffi_runtime as rt"]
    used = [f"rt.{name}" for name in sorted(rt.__all__)]
    for sub in _public_submodules():
        module = importlib.import_module(f"tvmffi_runtime.{sub}")
        names = sorted(getattr(module, "__all__", []))
        for i, name in enumerate(names):
            alias = f"{sub.replace('.', '_')}_{i}"
            lines.append(f"from tvmffi_runtime.{sub} import {name} as {alias}")
            used.append(alias)
    lines.append("")
    lines.append("used: list[object] = [")
    lines += [f"    {u}," for u in used]
    lines.append("]")
    lines.append("print(len(used))")
    return "\n".join(lines) + "\n"


def test_user_program_lists_the_structural_equality_api() -> None:
    """The generated program covers the names of issue 18 item 6 (guards the generator above)."""
    program = _user_program()
    for name in (
        "structural_equal",
        "structural_hash",
        "get_first_structural_mismatch",
        "StructuralKey",
        "AccessPath",
        "AccessKind",
        "AccessStep",
    ):
        assert f"rt.{name}," in program
        assert f"from tvmffi_runtime.structural.equality import {name} as" in program


def test_the_package_exports_the_whole_structural_equality_api() -> None:
    from tvmffi_runtime.structural import equality

    assert set(equality.__all__) <= set(rt.__all__)


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_every_exported_name_is_usable_from_a_user_file(tmp_path: Path, checker: str) -> None:
    user = tmp_path / "user_project"
    user.mkdir()
    prog = user / "uses_every_name.py"
    prog.write_text(_user_program())
    run = run_mypy if checker == "mypy" else run_pyright
    # run_* checks the folder's "package" and the file; the folder holds only the user's file
    errors, report = run(user, [prog])
    assert errors == 0 and report == "", f"{checker} on a user's file naming every export:\n{report}"
