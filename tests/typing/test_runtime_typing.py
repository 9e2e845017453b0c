"""The runtime itself is ``mypy --strict`` and pyright-strict clean (generated packages are checked
against it, and their checks only count errors in the package, so a runtime error would otherwise
go unseen)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tvmffi_gen.verify import find_pyright

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"


def test_runtime_is_mypy_strict_clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    api = pytest.importorskip("mypy.api")
    monkeypatch.setenv("MYPYPATH", str(RUNTIME))
    stdout, stderr, status = api.run(
        [
            "--strict",
            "--show-error-codes",
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            "-p",
            "tvmffi_runtime",
        ]
    )
    report = (stdout + stderr).strip()
    errors = [line for line in report.splitlines() if ": error:" in line]
    assert status == 0 and not errors, f"mypy --strict on the runtime:\n{report}"
    assert "Success" in stdout, report


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


def test_generator_is_mypy_strict_clean(tmp_path: Path) -> None:
    """The generator too: its model objects are what the templates trust."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--show-error-codes",
            "--cache-dir",
            str(tmp_path / "c"),
            "-p",
            "tvmffi_gen",
        ],
        cwd=RUNTIME.parent,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]


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
