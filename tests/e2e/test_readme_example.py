"""The README's first example is true: its C++ compiles into a library, the generator writes a
package for it, and its Python runs and passes ``mypy --strict`` against that package."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tvmffi_gen.cli import main

from conftest import ROOT, build_shared


def readme_block(language: str, after: str) -> str:
    """The first ``language`` code block of the README below the heading ``after``."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index(after) :]
    match = re.search(rf"^```{language}\n(.*?)^```$", section, re.DOTALL | re.MULTILINE)
    assert match is not None, f"README.md has no {language} block below {after!r}"
    return match.group(1)


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_readme_cpp_and_python_examples_run_and_type_check(tmp_path: Path, have_gxx: bool) -> None:
    library = build_shared("readme_geom", readme_block("cpp", "## The C++ side"))
    assert main([str(library), "-o", str(tmp_path / "geom"), "-q"]) == 0
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
