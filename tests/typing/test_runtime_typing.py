"""The runtime itself is ``mypy --strict`` and pyright-strict clean (generated packages are checked
against it, and their checks only count errors in the package, so a runtime error would otherwise
go unseen)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tvmffi_gen.verify.checkers import find_pyright

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"


@pytest.fixture(scope="module")
def mypy_strict(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    """One mypy --strict run over the runtime (found through MYPYPATH, as source) and the
    generator (which imports the runtime, so a run of its own analyses the runtime again): the
    exit status and the report."""
    pytest.importorskip("mypy")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--show-error-codes",
            "--cache-dir",
            str(tmp_path_factory.mktemp("mypy") / "cache"),
            "-p",
            "tvmffi_runtime",
            "-p",
            "tvmffi_gen",
        ],
        cwd=RUNTIME.parent,
        env={**os.environ, "MYPYPATH": str(RUNTIME)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def _mypy_clean(result: tuple[int, str], folder: str, other: str) -> None:
    """``folder`` has no error in the shared run: it exited 0 ("Success"), or 1 with errors
    only in ``other`` (a failure of mypy itself, exit 2, fails both)."""
    status, report = result
    errors = [line for line in report.splitlines() if ": error:" in line]
    assert status in (0, 1), f"mypy --strict on {folder}:\n{report}"
    assert status == 1 or "Success" in report, report
    assert all(line.startswith(f"{other}/") for line in errors), f"mypy --strict on {folder}:\n{report}"


def test_runtime_is_mypy_strict_clean(mypy_strict: tuple[int, str]) -> None:
    _mypy_clean(mypy_strict, "runtime", "tvmffi_gen")


def _pyright_strict(args: list[str], cwd: Path) -> tuple[int, list[dict[str, Any]], str]:
    """basedpyright run with ``args`` in ``cwd``: the number of files it analysed, its errors, and a
    report of the first of them (per file counts, then one line each)."""
    pyright = find_pyright()
    assert pyright, "basedpyright is part of the test extras"
    proc = subprocess.run(
        [pyright, "--outputjson", *args, "--pythonpath", sys.executable], cwd=cwd, capture_output=True, text=True
    )
    result = json.loads(proc.stdout)
    errors = [d for d in result["generalDiagnostics"] if d["severity"] == "error"]
    per_file = Counter(Path(d["file"]).name for d in errors)
    first = "\n".join(f"{Path(d['file']).name}:{d['range']['start']['line'] + 1}: {d['message']}" for d in errors[:20])
    report = f"errors per file {dict(per_file)}:\n{first}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    return result["summary"]["filesAnalyzed"], errors, report


def test_runtime_passes_pyright_strict() -> None:
    """basedpyright with the runtime's own runtime/pyrightconfig.json (strict) reports 0 errors."""
    assert (RUNTIME / "pyrightconfig.json").is_file()
    analysed, errors, report = _pyright_strict([], RUNTIME)
    assert analysed > 0, report
    assert not errors, f"pyright strict on the runtime, {report}"


def test_generator_is_mypy_strict_clean(mypy_strict: tuple[int, str]) -> None:
    """The generator too: its model objects are what the templates trust."""
    _mypy_clean(mypy_strict, "tvmffi_gen", "runtime")


def test_generator_passes_pyright_strict(tmp_path: Path) -> None:
    """basedpyright strict over tvmffi_gen/ (stubs/ included): 0 errors. The configuration is
    written here rather than kept beside the package, where a checker run from a generated
    package's folder could pick it up."""
    config = tmp_path / "pyrightconfig.json"
    config.write_text(
        json.dumps(
            {
                "typeCheckingMode": "strict",
                "include": [str(RUNTIME.parent / "tvmffi_gen")],
                "reportPrivateUsage": False,  # the generator's modules share their private helpers
            }
        )
    )
    analysed, errors, report = _pyright_strict(["-p", str(config)], tmp_path)
    assert analysed > 40, report
    assert not errors, f"pyright strict on the generator, {report}"
