"""A user's project, checked the way its CI would: no configuration of ours, every checker's
default mode and the strict ones, warnings included.

The folder (under the system's temporary directory, outside the repository) holds what a user
puts there: the generated testing package (``tvmffi-gen -o DIR``, the library apache-tvm-ffi
ships), the two packages the docs' examples import (``exprpkg``, ``foldpkg``, from the C++
fixtures), a package generated with ``--use`` over another (``derivedpkg`` over ``basepkg``,
whose classes override the base package's), and every ``python`` block of
docs/generated-packages.md, docs/apache-tvm.md and runtime/README.md as a script. One run of
each checker over the whole folder must exit 0 with nothing reported: basedpyright with no
configuration (its "recommended" defaults), pyright's default, ``mypy --strict`` and
basedpyright strict (the mode set in a file outside the folder).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main

from conftest import ROOT, build_shared
from fixtures import build_expr_ir
from mypy_reports import mypy_strict_in, user_env

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md

#: the docs whose ``python`` blocks must be clean as scripts
DOCS = ("docs/generated-packages.md", "docs/apache-tvm.md", "runtime/README.md")


def doc_scripts() -> dict[str, str]:
    """``file name -> source`` for every ``python`` block of ``DOCS``."""
    scripts: dict[str, str] = {}
    for doc in DOCS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        stem = Path(doc).stem.replace("-", "_").lower()
        for n, block in enumerate(re.findall(r"^```python\n(.*?)^```", text, re.S | re.M), 1):
            scripts[f"doc_{stem}_{n}.py"] = block
    return scripts


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("user_project")
    assert not root.is_relative_to(ROOT)
    assert main(["-o", str(root / "tvmffi_testing"), "-q"]) == 0  # the embedded testing library
    assert main([str(build_expr_ir()), "-o", str(root / "exprpkg"), "-q"]) == 0
    fold_lib = build_shared("fold_ir", (ROOT / "tests" / "fixtures" / "fold_ir.cc").read_text())
    assert main([str(fold_lib), "-o", str(root / "foldpkg"), "-q"]) == 0
    base_lib, derived_lib = _ext_fixture("ext_base"), _ext_fixture("ext_derived")
    assert main([str(base_lib), "-o", str(root / "basepkg"), "-q"]) == 0
    sys.path.insert(0, str(root))  # --use imports the base package
    try:
        used = ["--preload", str(base_lib), "--use", "basepkg"]
        assert main([str(derived_lib), *used, "-o", str(root / "derivedpkg"), "-q"]) == 0
    finally:
        sys.path.remove(str(root))
    for name, source in doc_scripts().items():
        (root / name).write_text(source, encoding="utf-8")
    return root


def _ext_fixture(name: str) -> Path:
    """The --use fixtures' libraries (tests/e2e/test_extension.py builds the same)."""
    fixtures = ROOT / "tests" / "fixtures"
    header = (fixtures / "ext_base.h").read_text()
    return build_shared(name, (fixtures / f"{name}.cc").read_text().replace('#include "ext_base.h"', header))


def test_the_docs_have_examples() -> None:
    names = doc_scripts()
    assert len(names) >= 3 and any(n.startswith("doc_generated_packages") for n in names), names


def _tool(name: str) -> str:
    found = Path(sys.executable).parent / name
    if found.is_file():
        return str(found)
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]' installs it)")
    return path


def _pyright_like(exe: str, root: Path, *extra: str) -> tuple[int, list[str], int]:
    """(exit status, each diagnostic of any severity as a line, files analysed)."""
    proc = subprocess.run(
        [exe, "--outputjson", "--pythonpath", sys.executable, *extra],
        cwd=root,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{exe} failed (exit {proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}")
    lines = [
        f"{Path(d['file']).relative_to(root)}:{d['range']['start']['line'] + 1}: {d['severity']}:"
        f" {' '.join(d['message'].split())} [{d.get('rule', '')}]"
        for d in report["generalDiagnostics"]
        if d["severity"] in ("error", "warning")
    ]
    return proc.returncode, lines, report["summary"]["filesAnalyzed"]


def _python_files(root: Path) -> int:
    """How many files each checker must read: the three packages' modules, their ``.pyi``
    faces, and the scripts."""
    return sum(1 for _ in root.rglob("*.py")) + sum(1 for _ in root.rglob("*.pyi"))


def test_basedpyright_default(project: Path) -> None:
    status, lines, analysed = _pyright_like(_tool("basedpyright"), project)
    assert (status, lines) == (0, []), "\n".join(lines)
    assert analysed == _python_files(project)


def test_pyright_default(project: Path) -> None:
    status, lines, analysed = _pyright_like(_tool("pyright"), project)
    assert (status, lines) == (0, []), "\n".join(lines)
    assert analysed == _python_files(project)


def test_basedpyright_strict(project: Path, tmp_path: Path) -> None:
    # the mode in a configuration file outside the folder: the folder stays the user's, as is
    config = tmp_path / "pyrightconfig.json"
    config.write_text(
        json.dumps(
            {
                "typeCheckingMode": "strict",
                "include": [str(project)],
                "executionEnvironments": [{"root": str(project)}],
            }
        )
    )
    status, lines, analysed = _pyright_like(_tool("basedpyright"), project, "--project", str(config))
    assert (status, lines) == (0, []), "\n".join(lines)
    assert analysed == _python_files(project)


def test_mypy_strict(project: Path) -> None:
    proc = mypy_strict_in(project, ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checked = re.search(r"Success: no issues found in (\d+) source files", proc.stdout)
    # one source per module: mypy reads a module's .pyi face in place of its .py
    modules = sum(1 for _ in project.rglob("*.py"))
    assert checked is not None and int(checked.group(1)) == modules, proc.stdout
