"""This repository's two wheels, ``tvmffi-runtime`` and ``tvmffi-gen``, built once per content of
their sources and shared by every test that installs them (tests/generator/test_packaging.py,
tests/e2e/test_build_integration.py).

They are built with ``python -m build --wheel --no-isolation`` from copies of the sources (the tree
stays clean) into ``tests/_build/repository-wheels-<hash>/``, the hash taken over every file the
copies hold: a change to a source builds them again, an unchanged tree reuses them. A lock keeps
parallel workers from building the same pair twice; a reader never sees a half-filled folder (the
pair is built in a temporary folder and renamed into place).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from conftest import BUILD_DIR, ROOT, _build_lock

#: What the copies leave out: build products and caches, never a source.
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.egg-info", "build", "_build", "dist")
#: The generator's distribution: its metadata and its package (the runtime is the whole ``runtime/``).
GENERATOR_FILES = ("pyproject.toml", "README.md")


def _copy_sources(into: Path) -> tuple[Path, Path]:
    """Copies of the runtime's and the generator's sources under ``into``: (runtime, generator)."""
    runtime, gen = into / "runtime", into / "gen"
    shutil.copytree(ROOT / "runtime", runtime, ignore=IGNORED)
    gen.mkdir()
    for name in GENERATOR_FILES:
        shutil.copy2(ROOT / name, gen / name)
    shutil.copytree(ROOT / "tvmffi_gen", gen / "tvmffi_gen", ignore=IGNORED)
    return runtime, gen


def _digest(sources: Path) -> str:
    """A hash of every file's relative path and bytes under ``sources``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in sources.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(sources)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _build_wheel(source: Path, outdir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    command = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(outdir)]
    proc = subprocess.run(command, cwd=source, capture_output=True, text=True, timeout=600, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"building the wheel of {source.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def repository_wheels() -> dict[str, Path]:
    """The two wheels, by ``"runtime"`` and ``"gen"``, alone in one folder (a ``--find-links``
    folder for pip), built unless a build of the same sources is there."""
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILD_DIR, prefix="repository-sources-") as scratch:
        runtime, gen = _copy_sources(Path(scratch))
        dist = BUILD_DIR / f"repository-wheels-{_digest(Path(scratch))}"
        if not dist.is_dir():
            with _build_lock(dist):
                if not dist.is_dir():
                    partial = Path(scratch) / "dist"
                    for source in (runtime, gen):
                        _build_wheel(source, partial)
                    os.replace(partial, dist)
    (runtime_wheel,) = dist.glob("tvmffi_runtime-*.whl")
    (gen_wheel,) = dist.glob("tvmffi_gen-*.whl")
    return {"runtime": runtime_wheel, "gen": gen_wheel}
