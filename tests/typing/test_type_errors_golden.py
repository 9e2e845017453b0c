"""What a user must be told is wrong: ``negative/user_errors.py``, a program over the generated
testing package whose every commented line is a mistake (a wrong argument to a constructor,
method or function, a read-only or wrongly typed field assigned, a result used as what it is
not), is checked by mypy --strict and basedpyright strict from a folder outside the repository,
and their errors are diffed against the reports committed beside it.

The committed reports were checked by hand, line by line, against the comment on each line. When
a checker's wording changes, the diff shows it: check the new lines the same way before
committing them (``user_errors.mypy.txt``: mypy's error lines; ``user_errors.pyright.txt``: line,
severity, the message on one line and the rule).
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tvmffi_gen.verify.checkers import find_pyright

from conftest import ROOT
from mypy_reports import mypy_strict_in, user_env

PKG = ROOT / "generated" / "tvmffi_testing"
HERE = Path(__file__).resolve().parent / "negative"
PROGRAM = HERE / "user_errors.py"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's folder: the package and the program, nothing of this repository's configuration."""
    root = tmp_path_factory.mktemp("negative")
    shutil.copytree(PKG, root / PKG.name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROGRAM, root / PROGRAM.name)
    return root


def _marked_lines() -> set[int]:
    """The program's lines that are mistakes: code with a comment after it."""
    lines = PROGRAM.read_text(encoding="utf-8").splitlines()
    return {n for n, line in enumerate(lines, 1) if re.match(r"^\S.*\S  # ", line)}


def _diff(expected_file: Path, got: list[str]) -> str:
    expected = expected_file.read_text(encoding="utf-8").splitlines()
    return "\n".join(difflib.unified_diff(expected, got, str(expected_file.name), "this run", lineterm=""))


def _one_line(message: str) -> str:
    """pyright's message, its indented explanation lines joined to the first with " / "."""
    return " / ".join(part.strip() for part in message.splitlines())


def test_the_program_marks_mistakes() -> None:
    assert len(_marked_lines()) >= 20, _marked_lines()


def test_mypy_reports_each_mistake_as_committed(folder: Path) -> None:
    proc = mypy_strict_in(folder, "--no-error-summary", "--show-error-codes", PROGRAM.name)
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert {int(line.split(":")[1]) for line in errors} == _marked_lines(), proc.stdout
    diff = _diff(HERE / "user_errors.mypy.txt", errors)
    assert not diff, diff


def test_pyright_reports_each_mistake_as_committed(folder: Path) -> None:
    pyright = find_pyright()
    assert pyright, "basedpyright is part of the test extras"
    (folder / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "strict"}))
    proc = subprocess.run(
        [pyright, "--outputjson", "--pythonpath", sys.executable, PROGRAM.name],
        cwd=folder,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    diagnostics = json.loads(proc.stdout)["generalDiagnostics"]
    got = [
        f"{d['range']['start']['line'] + 1}: {d['severity']}: {_one_line(d['message'])} [{d.get('rule', '')}]"
        for d in sorted(diagnostics, key=lambda d: (d["range"]["start"]["line"], d["range"]["start"]["character"]))
    ]
    assert {int(line.split(":")[0]) for line in got} == _marked_lines(), got
    diff = _diff(HERE / "user_errors.pyright.txt", got)
    assert not diff, diff
