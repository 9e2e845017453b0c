"""Type-check a generated package the way the user's own project will: mypy --strict, pyright strict.

Both checkers run as separate processes of this interpreter's environment, from the folder that
holds the package, with no search paths added by us: the runtime must be found exactly where the
user's environment installs it (a missing or unreadable runtime is an error here too, not a
false "no errors").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["CHECKERS", "PYRIGHT_MODES", "find_pyright", "run_checker", "run_mypy", "run_pyright"]

CHECKERS = ("mypy", "pyright")


def _user_env() -> dict[str, str]:
    """The environment minus what would make the checkers see more than the user's project."""
    return {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}


def _checked_paths(package_dir: Path, extra_files: list[Path] | None) -> list[Path]:
    return [package_dir.resolve()] + [Path(f).resolve() for f in extra_files or []]


def _is_checked(path: str, checked: list[Path], cwd: Path) -> bool:
    """Whether a checker's message is about ``path`` (as it names it, relative to ``cwd``) in one
    of the ``checked`` files or folders, not about an installed library."""
    resolved = (cwd / path).resolve() if path else None
    return resolved is not None and any(resolved == c or c in resolved.parents for c in checked)


def run_mypy(package_dir: Path, extra_files: list[Path] | None = None, python: str | None = None) -> tuple[int, str]:
    """``mypy --strict`` over the package (or over ``extra_files``, which import it), resolving
    imports in the environment of ``python`` (default: this interpreter's).

    Returns (error count, report). Errors mypy reports in installed libraries are not ours
    and are left out; an invocation mypy itself rejects counts as one error.
    """
    package_dir = package_dir.resolve()
    cwd = package_dir.parent
    args = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--no-error-summary",
        "--show-error-codes",
        "--no-incremental",
        "--cache-dir",
        os.devnull,
    ]
    if python:
        args += ["--python-executable", python]
    if extra_files:  # user programs: mypy follows their imports into the package
        args += [str(Path(f).resolve()) for f in extra_files]
    else:
        args += ["-p", package_dir.name]
    proc = subprocess.run(args, cwd=cwd, env=_user_env(), capture_output=True, text=True)
    checked = _checked_paths(package_dir, extra_files)
    lines = [
        line
        for line in (proc.stdout + proc.stderr).splitlines()
        if not (": error:" in line or ": note:" in line) or _is_checked(line.split(":", 1)[0], checked, cwd)
    ]
    report = "\n".join(lines).strip()
    errors = sum(1 for line in lines if ": error:" in line)
    if proc.returncode == 2 and errors == 0:  # mypy itself failed (bad invocation, crash)
        errors = 1
    return errors, report


def find_pyright() -> str | None:
    """The pyright executable of this environment (basedpyright preferred), or None."""
    bindir = Path(sys.executable).parent
    for name in ("basedpyright", "pyright"):
        local = bindir / name
        if local.is_file() and os.access(local, os.X_OK):
            return str(local)
        found = shutil.which(name)
        if found:
            return found
    return None


#: How pyright is configured: "strict" (``typeCheckingMode`` strict; errors count), or
#: "default" (no mode set: the checker's own default, basedpyright's "recommended" with its many
#: warnings; errors and warnings count, in the package as in your own files).
PYRIGHT_MODES = ("strict", "default")


def run_pyright(
    package_dir: Path, extra_files: list[Path] | None = None, python: str | None = None, mode: str = "strict"
) -> tuple[int, str]:
    """pyright in ``mode`` (one of ``PYRIGHT_MODES``) over the package and ``extra_files``;
    returns (problems, report).

    The configuration (the mode, the folder holding the package as the execution root, this
    interpreter's environment) is written to a temporary file, not into the user's folder.
    """
    if mode not in PYRIGHT_MODES:
        raise ValueError(f"run_pyright: mode {mode!r} is not one of {', '.join(PYRIGHT_MODES)}")
    exe = find_pyright()
    if exe is None:
        return 1, "pyright is not installed (pip install basedpyright)"
    package_dir = package_dir.resolve()
    checked = _checked_paths(package_dir, extra_files)
    config: dict[str, object] = {"typeCheckingMode": "strict"} if mode == "strict" else {}
    config |= {
        "include": [str(p) for p in checked],
        "executionEnvironments": [{"root": str(package_dir.parent)}],
        "extraPaths": [str(package_dir.parent)],  # for extra_files outside that folder
    }
    with tempfile.TemporaryDirectory(prefix="tvmffi-gen-pyright-") as tmp:
        config_path = Path(tmp) / "pyrightconfig.json"
        config_path.write_text(json.dumps(config), encoding="utf-8")
        proc = subprocess.run(
            [exe, "--outputjson", "--pythonpath", python or sys.executable, "--project", str(config_path)],
            cwd=package_dir.parent,
            env=_user_env(),
            capture_output=True,
            text=True,
        )
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return 1, f"pyright failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-2000:]}"
    reported = ("error",) if mode == "strict" else ("error", "warning")
    lines: list[str] = []
    for diag in result.get("generalDiagnostics", []):
        severity = diag.get("severity")
        if severity not in reported:
            continue
        start = diag.get("range", {}).get("start", {})
        rule = f"  [{diag['rule']}]" if diag.get("rule") else ""
        message = " ".join(diag.get("message", "").replace("\xa0", " ").split())  # one line each
        lines.append(
            f"{diag.get('file')}:{start.get('line', 0) + 1}:{start.get('character', 0) + 1}:"
            f" {severity}: {message}{rule}"
        )
    return len(lines), "\n".join(lines)


def run_checker(
    checker: str, package_dir: Path, extra_files: list[Path] | None = None, python: str | None = None
) -> tuple[int, str]:
    """Run one of ``CHECKERS`` by name."""
    if checker == "mypy":
        return run_mypy(package_dir, extra_files, python)
    if checker == "pyright":
        return run_pyright(package_dir, extra_files, python)
    raise ValueError(f"unknown checker {checker!r}; expected one of {', '.join(CHECKERS)}")
