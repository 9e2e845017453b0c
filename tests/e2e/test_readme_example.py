"""The README's commands and examples are true: its C++ compiles with the README's own g++
command into a library, its tvmffi-gen command writes a package for it, and its Python runs and
passes ``mypy --strict`` against that package. Its first command (the one ``.ci/run`` runs after
installing) writes into a new folder on each run, so a first run is never mistaken for a
regeneration."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT


def readme_block(language: str, after: str) -> str:
    """The first ``language`` code block of the README below the heading ``after``."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index(after) :]
    match = re.search(rf"^```{language}\n(.*?)^```$", section, re.DOTALL | re.MULTILINE)
    assert match is not None, f"README.md has no {language} block below {after!r}"
    return match.group(1)


def readme_commands(after: str) -> list[str]:
    """The commands of the first ``sh`` block below ``after``: its lines but comments and blanks,
    as ``.ci/run`` reads them (a trailing comment is left to the shell)."""
    return [line for line in readme_block("sh", after).splitlines() if line.strip() and not line.startswith("#")]


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` run by bash as a user types it, with this environment's commands
    (tvm-ffi-config, tvmffi-gen) first on PATH, and ``cwd`` as the temporary folder (mktemp's)."""
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    env["TMPDIR"] = str(cwd)
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command], capture_output=True, text=True, cwd=cwd, env=env, timeout=600
    )


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_readme_cpp_compiles_with_its_command_and_the_python_example_runs_and_type_checks(
    tmp_path: Path, have_gxx: bool
) -> None:
    (tmp_path / "geom.cc").write_text(readme_block("cpp", "## The C++ side"))
    commands = readme_commands("## Wrap a library")
    assert [c.split()[0] for c in commands] == ["g++", "tvmffi-gen"], commands
    assert "$(tvm-ffi-config --cxxflags --ldflags --libs)" in commands[0]
    for command in commands:
        proc = _shell(command, tmp_path)
        assert proc.returncode == 0, f"{command}\n{proc.stdout}{proc.stderr}"
    assert (tmp_path / "libgeom.so").is_file() and (tmp_path / "geom" / "geom" / "__init__.py").is_file()
    script = tmp_path / "use_geom.py"
    script.write_text(readme_block("python", "## Wrap a library"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "runtime")])}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    mypy = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(script)],
        capture_output=True,
        text=True,
        env={**env, "MYPYPATH": env["PYTHONPATH"]},
        cwd=tmp_path,
        timeout=300,
    )
    assert mypy.returncode == 0, mypy.stdout


@pytest.mark.slow  # runs mypy and pyright over the package, twice
def test_readme_first_command_writes_a_new_package_on_every_run(tmp_path: Path) -> None:
    """The README's first block holds the two commands ``.ci/run`` runs; the generator part of
    the first, run twice, writes a package each time, and neither run is taken for a
    regeneration of an earlier one ("API unchanged since the last generation")."""
    commands = readme_commands("# tvmffi-gen")
    assert len(commands) == 2, commands
    install, _, generate = commands[0].partition(" && ")
    assert install.startswith("python -m pip install -e ./runtime") and generate.startswith("tvmffi-gen -o "), commands
    written: list[str] = []
    for _ in range(2):
        proc = _shell(generate, tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "API unchanged" not in proc.stdout and "mypy --strict: no errors" in proc.stdout, proc.stdout
        written += re.findall(r"^wrote (\S+) \(", proc.stdout, re.MULTILINE)
    assert len(written) == 2 and written[0] != written[1], written
    assert all(Path(w, "__init__.py").is_file() and Path(w).is_relative_to(tmp_path) for w in written)
