"""One ``mypy --strict`` run over several programs or packages, its report split over them, for
the tests that check many of them at once (a run spends about a second before it reaches them)
and then assert on each one's lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from tvmffi_gen.verify.checkers import run_mypy


def user_env() -> dict[str, str]:
    """This process's environment without ``MYPYPATH`` and ``PYTHONPATH``: a checker run with it
    finds only what is installed, as it would in a user's own folder."""
    return {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}


def mypy_strict_in(folder: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` over ``targets``, run from ``folder`` with ``user_env`` and no cache."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull, *targets],
        cwd=folder,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def mypy_by_program(package: Path, programs: dict[str, str], folder: Path) -> dict[str, list[str]]:
    """``mypy --strict`` over ``package`` and the ``programs`` (file name -> text, none importing
    another), written to ``folder``, in one run: ``lines_by_program`` of its report."""
    for name, text in programs.items():
        (folder / name).write_text(text)
    _, report = run_mypy(package, extra_files=[package, *(folder / name for name in programs)])
    return lines_by_program(report, programs)


def lines_by_program(report: str, programs: Iterable[str]) -> dict[str, list[str]]:
    """The report's lines by program file name (``"prog.py"``: the lines on ``.../prog.py:``);
    ``""`` holds the lines on no program (the package's, mypy's own failure), ``"all"`` every line."""
    names = list(programs)
    lines = report.splitlines()
    by_file = {name: [line for line in lines if f"/{name}:" in line] for name in names}
    by_file[""] = [line for line in lines if not any(f"/{name}:" in line for name in names)]
    by_file["all"] = lines
    return by_file


def lines_by_package(errors: int, report: str, packages: Iterable[str]) -> dict[str, list[str]]:
    """Per package (a folder mypy was run beside, so its paths start with the package's name):
    the report's lines on it and those on no package (mypy's own), which count against every
    one; a failure that reported nothing is such a line too."""
    names = list(packages)
    lines = report.splitlines() or ([f"mypy failed ({errors} errors) and reported nothing"] if errors else [])
    owner = {line: Path(line.split(":", 1)[0]).parts[0] for line in lines}
    rest = [line for line in lines if owner[line] not in names]
    return {name: [line for line in lines if owner[line] == name] + rest for name in names}


def revealed_types(report: str) -> list[str]:
    """The types mypy's ``reveal_type`` notes in ``report`` name, in the order of the report."""
    return re.findall(r'note: Revealed type is "(.*)"$', report, re.M)
