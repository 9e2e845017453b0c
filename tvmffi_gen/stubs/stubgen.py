"""Step 2 of ``--stubs-for``: mypy's stubgen over the package's sources (``--no-import``), which
gives the package's own classes, functions, signatures and annotations as written.
``PythonStubs`` starts it in a child process, so it runs while the package is being imported
elsewhere, and reads back the stub of each module; a module that ships its own ``.pyi`` (an
extension module's) keeps that file. ``cache.CachedPythonStubs`` is its cached form.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .errors import StubsError
from .scratch import scratch_folder

__all__ = ["PythonStubs", "python_stubs"]

#: stubgen's command, ending the process once the stubs are written: freeing what mypy built for
#: a large package at interpreter exit takes longer than making the stubs (tvm's, measured in
#: benchmarks/results_stubs.md), and mypy's own command skips it the same way
_RUN_STUBGEN = (
    "import os, sys; from mypy.stubgen import main; main(sys.argv[1:]);"
    " sys.stdout.flush(); sys.stderr.flush(); os._exit(0)"
)


class PythonStubs:
    """mypy's stubgen over a package's sources, started in a child process (it reads the sources
    and imports nothing, so it runs while the package is being imported elsewhere); ``result``
    waits for it and returns the stub text per module (dotted name)."""

    from_cache = False  # (``cache.CachedPythonStubs``: whether stubgen did not run)

    def __init__(self, modules: dict[str, str]) -> None:
        self.modules = dict(modules)
        self.own_pyi: dict[str, str] = {}
        self.sources: list[tuple[str, str]] = []
        for name, path in sorted(modules.items()):
            p = Path(path)
            pyi = p.parent / (p.name.split(".")[0] + ".pyi")
            if pyi.is_file():  # the package's own stub for this module wins
                self.own_pyi[name] = pyi.read_text(encoding="utf-8")
            elif path.endswith(".py"):
                self.sources.append((name, path))
        self._tmp = scratch_folder("tvmffi-gen-stubgen-")
        self._proc: subprocess.Popen[str] | None = None
        if self.sources:
            cmd = [
                sys.executable,
                "-c",
                _RUN_STUBGEN,
                "--no-import",
                "--include-private",
                "-q",
                "-o",
                self._tmp.name,
                *(p for _, p in self.sources),
            ]
            self._proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL
            )

    def result(self, keep: set[str]) -> dict[str, str]:
        """Stubs of the modules in ``keep``."""
        try:
            if self._proc is not None:
                _, err = self._proc.communicate()
                if self._proc.returncode != 0:
                    raise StubsError(f"mypy's stubgen failed: {err.strip()[-2000:]}")
            out = {m: t for m, t in self.own_pyi.items() if m in keep}
            for name, path in self.sources:
                if name not in keep:
                    continue
                rel = Path(*name.split("."))
                stub = Path(self._tmp.name) / (
                    str(rel / "__init__.pyi") if path.endswith("__init__.py") else f"{rel}.pyi"
                )
                out[name] = stub.read_text(encoding="utf-8") if stub.is_file() else ""
            return out
        finally:
            self._tmp.cleanup()

    def stop(self) -> None:
        """End stubgen's process now, from any thread (``result``, waiting in another, then raises)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()


def python_stubs(modules: dict[str, str]) -> dict[str, str]:
    """Stub text per module (dotted name) from the package's sources, by mypy's stubgen."""
    return PythonStubs(modules).result(set(modules))
