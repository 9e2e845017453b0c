"""Importing a package and each of its submodules in ``--stubs-for``'s child (``child.py``).

``module_files`` finds the package's modules on disk (without the ``--exclude`` subtrees);
``import_all`` imports each under a watch that stops one that is stuck (``_Watch``: a loop that
does not end, a wait for something that does not come), not one that is slow because the machine
is busy, and records why a module did not import; ``quick_getmodule`` spares TVMScript's
``inspect.stack()`` calls at import thousands of scans of ``sys.modules``.
"""

from __future__ import annotations

import fnmatch
import os
import signal
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .progress import PROGRESS_MARK

__all__ = [
    "excluded",
    "import_failure",
    "module_files",
    "unmatched_excludes",
    "quick_getmodule",
    "import_all",
    "CollectError",
]


#: a module whose import computes this many seconds of CPU, or makes no progress (less than
#: ``IDLE_SHARE`` of a core) for this many seconds of wall time, is stopped and not covered
MODULE_TIMEOUT = 15.0
IDLE_SHARE = 0.05
#: and one still importing after this many seconds of wall time, whatever it does
MODULE_WALL_LIMIT = 8 * MODULE_TIMEOUT


#: why a module under a package that failed to import is not covered
PACKAGE_FAILED = "its package failed to import"


class CollectError(Exception):
    """A mistake in what the child was asked to do (its message is reported as it is)."""


def excluded(module: str, patterns: list[str]) -> bool:
    """Whether ``module`` or one of its parent packages matches one of the ``--exclude`` globs."""
    parts = module.split(".")
    return any(fnmatch.fnmatchcase(".".join(parts[:i]), pat) for pat in patterns for i in range(1, len(parts) + 1))


def module_files(package: str, roots: list[str], patterns: list[str]) -> dict[str, str]:
    """Every module of ``package`` on disk (``.py`` files, and extension modules shipping a
    ``.pyi``), by dotted name, without the excluded subtrees; a folder is a subpackage only with
    an ``__init__.py``."""
    out: dict[str, str] = {}

    def walk(folder: Path, name: str) -> None:
        if excluded(name, patterns):
            return
        init = folder / "__init__.py"
        if init.is_file():
            out[name] = str(init)
        for entry in sorted(folder.iterdir()):
            stem = entry.name.split(".")[0]
            if not stem.isidentifier() or stem == "__init__":
                continue
            child = f"{name}.{stem}"
            if entry.is_dir():
                if (entry / "__init__.py").is_file():
                    walk(entry, child)
            elif entry.suffix == ".py" and not excluded(child, patterns):
                out[child] = str(entry)
            elif entry.suffix in (".so", ".pyd") and (folder / f"{stem}.pyi").is_file():
                if not excluded(child, patterns):
                    out[child] = str(entry)
            # as the branch above: what the entry is, then whether it is wanted
            elif entry.suffix == ".pyi" and not (folder / f"{stem}.py").is_file() and child not in out:  # noqa: SIM102
                if not excluded(child, patterns) and not any((folder / f"{stem}{x}").exists() for x in (".so", ".pyd")):
                    out[child] = str(entry)  # a stub the package ships for a module it makes at run time

    for root in roots:
        walk(Path(root), package)
    return out


def unmatched_excludes(package: str, roots: list[str], patterns: list[str]) -> list[str]:
    """The ``--exclude`` globs that match no module of ``package`` (nor a package holding one)."""
    every = module_files(package, roots, []) if roots else {package: ""}
    return [pat for pat in patterns if not any(excluded(m, [pat]) for m in every)]


def quick_getmodule() -> Any:
    """Put a memo in front of ``inspect.getmodule``; returns the original, to put back.

    ``inspect.stack()`` (which TVMScript's ``@T.prim_func`` calls at import, 40 times in
    ``tvm.s_tir.tensor_intrin.cuda``) asks ``getmodule`` about each frame; for a frame of a file
    that is no module's (``<frozen importlib._bootstrap>``, ``<string>``), every call scans all of
    ``sys.modules``, which here holds the whole package: thousands of scans, seconds of CPU, and
    under load over the per-module timeout. The memo answers such a frame None again without the
    scan while ``sys.modules`` has not changed size since it last found nothing — the answer the
    scan would give, as no module's file is named ``<...>``.
    """
    import inspect

    original = inspect.getmodule
    misses: dict[str, int] = {}

    def getmodule(obj: Any, _filename: str | None = None) -> Any:
        if (
            _filename is None
            or not (_filename.startswith("<") and _filename.endswith(">"))
            or _filename in inspect.modulesbyfile
            or inspect.ismodule(obj)
            or hasattr(obj, "__module__")
            or hasattr(obj, "__name__")
        ):
            return original(obj, _filename)
        size = len(sys.modules)
        if misses.get(_filename) == size:
            return None
        found = original(obj, _filename)
        if found is None:
            misses[_filename] = size
        return found

    inspect.getmodule = getmodule  # type: ignore[assignment]
    return original


def import_failure(exc: BaseException, roots: Sequence[str]) -> str:
    """One line that says why an import failed, enough to act on: the exception's type, the first
    line of its message, and where it was raised in the package's own code (under ``roots``),
    the line a user edits, rather than deep in a library the package called (``tvm_ffi.libinfo``
    raising a multi-line "Cannot find library" for ``load_lib_module``); the innermost frame when
    no frame is the package's."""
    text = str(exc).strip()
    first = text.splitlines()[0].strip() if text else ""
    more = " ..." if "\n" in text else ""
    frames: list[traceback.FrameSummary] = list(traceback.extract_tb(exc.__traceback__)) if exc.__traceback__ else []
    folders = [os.path.join(os.path.realpath(r), "") for r in roots]
    own = [f for f in frames if any(os.path.realpath(f.filename).startswith(d) for d in folders)]
    at = (own or frames)[-1:]
    where = f" (at {at[0].filename}:{at[0].lineno})" if at else ""
    return f"{type(exc).__name__}: {first}{more}{where}" if first else f"{type(exc).__name__}{where}"


class _Timeout(BaseException):
    pass


class _Watch:
    """Stops a module's import that is stuck, not one that is slow because the machine is busy.

    A wall-clock limit alone made the output depend on the load: on a busy machine
    ``tvm.s_tir.tensor_intrin`` (a few seconds of CPU compiling TVMScript at import) ran past
    15 s and was left out. SIGALRM each second compares the CPU the process used since the
    import began (``MODULE_TIMEOUT`` of it: a loop that does not end) and over the last
    ``MODULE_TIMEOUT`` seconds (less than ``IDLE_SHARE`` of a core: waiting on something that
    does not come), with ``MODULE_WALL_LIMIT`` as the last resort.
    """

    def __init__(self) -> None:
        self.start = (0.0, 0.0)
        self.samples: list[tuple[float, float]] = []

    def begin(self) -> None:
        self.start = (time.monotonic(), time.process_time())
        self.samples = [self.start]
        signal.signal(signal.SIGALRM, self._tick)
        signal.setitimer(signal.ITIMER_REAL, 1.0, 1.0)

    def end(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    def _tick(self, signum: int, frame: Any) -> None:
        now = (time.monotonic(), time.process_time())
        self.samples.append(now)
        while len(self.samples) > 2 and self.samples[1][0] <= now[0] - MODULE_TIMEOUT:
            self.samples.pop(0)
        wall, cpu = now[0] - self.start[0], now[1] - self.start[1]
        recent = now[1] - self.samples[0][1]
        if cpu >= MODULE_TIMEOUT:
            raise _Timeout(f"importing it computed for {MODULE_TIMEOUT:g} s of CPU without finishing")
        if (
            wall >= MODULE_TIMEOUT
            and now[0] - self.samples[0][0] >= MODULE_TIMEOUT
            and recent < IDLE_SHARE * MODULE_TIMEOUT
        ):
            raise _Timeout(f"importing it made no progress for {MODULE_TIMEOUT:g} s (it waits on something?)")
        if wall >= MODULE_WALL_LIMIT:
            raise _Timeout(f"importing it did not finish within {MODULE_WALL_LIMIT:g} s")


def import_all(
    package: str, files: dict[str, str], bound: dict[str, list[str]], roots: Sequence[str] = ()
) -> tuple[list[str], dict[str, str]]:
    """Import each module; ``bound`` gets, per package, the submodules bound on it right after
    its import (what ``import pkg.sub`` gives a user), before later imports bind more; a failure
    is told with the line of the package's own code that raised (``roots``: its folders)."""
    import importlib
    import types

    ok: list[str] = []
    failed: dict[str, str] = {}
    watch = _Watch()
    report = os.environ.get("TVMFFI_GEN_PROGRESS") == "1"  # the parent shows it (progress.py)
    for i, name in enumerate(sorted(files)):
        if report:
            # the module itself: what a slow run is waiting for
            sys.stderr.write(f"{PROGRESS_MARK}{i + 1}/{len(files)} {name}\n")
            sys.stderr.flush()
        if any(name.startswith(f + ".") for f in failed):
            failed[name] = PACKAGE_FAILED
            continue
        sys.argv = [name]  # a module running argparse at import sees no arguments of ours
        watch.begin()
        try:
            mod = importlib.import_module(name)
            ok.append(name)
            if files[name].endswith("__init__.py"):
                bound[name] = sorted(
                    a for a, v in vars(mod).items() if isinstance(v, types.ModuleType) and v.__name__ == f"{name}.{a}"
                )
        except _Timeout as exc:
            failed[name] = str(exc)
        except SystemExit as exc:
            failed[name] = f"it exits at import (SystemExit({exc.code!r}); argparse at import?)"
        except BaseException as exc:  # noqa: BLE001 - any failure of a package's module is reported
            failed[name] = import_failure(exc, roots)
        finally:
            watch.end()
    return ok, failed
