"""The runtime itself is ``mypy --strict`` clean (generated packages are checked against it, and
their checks only count errors in the package, so a runtime error would otherwise go unseen)."""

from __future__ import annotations

from pathlib import Path

import pytest

RUNTIME = Path(__file__).resolve().parent.parent / "runtime"


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
