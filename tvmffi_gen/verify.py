"""Run mypy --strict on a generated package through mypy's API (mypy checks what we emit)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["run_mypy"]


def _runtime_source_dir() -> str | None:
    here = Path(__file__).resolve().parent.parent / "runtime"
    return str(here) if (here / "tvmffi_runtime").is_dir() else None


def run_mypy(package_dir: Path, extra_files: list[Path] | None = None) -> tuple[int, str]:
    """Type-check the package at ``package_dir`` with --strict; returns (error count, report)."""
    from mypy import api

    package_dir = package_dir.resolve()
    paths = [str(package_dir.parent)]
    runtime = _runtime_source_dir()
    if runtime:
        paths.append(runtime)
    env_before = os.environ.get("MYPYPATH")
    os.environ["MYPYPATH"] = os.pathsep.join(paths)
    try:
        args = ["--strict", "--no-error-summary", "--show-error-codes", "--no-incremental",
                "--cache-dir", os.devnull]
        if extra_files:  # user programs: mypy follows their imports into the package
            args += [str(f) for f in extra_files]
        else:
            args += ["-p", package_dir.name]
        stdout, stderr, status = api.run(args)
    finally:
        if env_before is None:
            os.environ.pop("MYPYPATH", None)
        else:
            os.environ["MYPYPATH"] = env_before
    # Count (and report) errors in what we check; imported libraries answer for themselves.
    ours = [str(package_dir)] + [str(Path(f).resolve()) for f in extra_files or []]
    lines = []
    for line in (stdout + stderr).splitlines():
        path = line.split(":", 1)[0]
        resolved = str(Path(path).resolve()) if path else ""
        if ": error:" in line and not any(resolved.startswith(o) for o in ours):
            continue
        if ": note:" in line and not any(resolved.startswith(o) for o in ours):
            continue
        lines.append(line)
    report = "\n".join(lines).strip()
    errors = sum(1 for line in lines if ": error:" in line)
    if status == 2 and errors == 0:  # mypy itself failed (bad invocation, crash)
        errors = 1
    return errors, report
