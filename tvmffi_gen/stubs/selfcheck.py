"""The stubs checked by ``mypy --strict`` as a last step: what the package's own sources declare
and no rule of ``rewrite.py`` can repair (an override its classes really make, ``__eq__`` returning
an expression, an optional dependency that is not installed) gets the narrowest
``# type: ignore[code]`` on the line mypy reports, as a hand-written stub would carry; so the stub
package has no errors of its own.

Half of that check is mypy reading what the stubs import (typeshed, ``tvm_ffi``, numpy), which
does not depend on the stubs: ``Warmup`` reads it into a cache of mypy's own, with the same
options, while the package is still being imported, and the check then takes it from there.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tokenize
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

from .scratch import scratch_folder

__all__ = ["Warmup", "add_ignores", "mypy_errors", "silence_own_errors"]

_ERROR = re.compile(r"^(?P<path>[^:\n]+\.pyi):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")
#: what ``mypy -v`` logs for each file it reads
_PARSING = re.compile(r"^LOG:  Parsing (?P<path>.+) \((?P<module>[\w.]+)\)$")
_WARMUP_MODULE = "tvmffi_gen_warmup"


def _run_mypy(
    folder: str, targets: list[str], cache: str | None, verbose: bool, log: IO[str] | None = None
) -> subprocess.Popen[str]:
    """``mypy --strict`` over ``targets`` in ``folder`` (an empty configuration, no ``MYPYPATH``),
    with its cache in ``cache`` (none when None); the check and its warm-up share these options,
    which a cache entry must match to be used. Its output goes to pipes, or with ``log`` (a
    process nobody reads from while it runs) its stderr to that file and its stdout nowhere."""
    Path(folder, "empty.ini").write_text("[mypy]\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "MYPY_CACHE_DIR")}
    env["PYTHONIOENCODING"] = "utf-8"  # its paths are read back as UTF-8 whatever the locale
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--config-file",
        "empty.ini",
        *(["--sqlite-cache", "--cache-dir", cache] if cache else ["--cache-dir", os.devnull]),
        "--show-error-codes",
        "--no-error-summary",
        "--hide-error-context",
        "--no-pretty",
        "--show-absolute-path",
        *(["-v"] if verbose else []),
        *targets,
    ]
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE if log is None else subprocess.DEVNULL,
        stderr=subprocess.PIPE if log is None else log,
        encoding="utf-8",
        errors="replace",
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def _files_read(log: str, outside: Path) -> list[str]:
    """The files ``mypy -v``'s log says it parsed, outside the folder ``outside``."""
    parsed = [Path(m["path"]).resolve() for line in log.splitlines() if (m := _PARSING.match(line))]
    return [str(path) for path in parsed if not path.is_relative_to(outside)]


class Warmup:
    """mypy's cache of ``modules`` (what the stubs will import), filled by ``mypy --strict`` over a
    module importing them, in a process started now. ``cache`` waits for it: the folder and the
    files it read (None when it failed, or could not start: it only saves time, and the check
    then reads everything itself)."""

    def __init__(self, modules: Iterable[str]) -> None:
        self._tmp = scratch_folder("tvmffi-gen-mypy-")
        self._log = Path(self._tmp.name, "mypy.log")
        self._proc: subprocess.Popen[str] | None = None
        self._ready: tuple[str, list[str]] | None = None
        names = sorted(set(modules))
        try:
            Path(self._tmp.name, f"{_WARMUP_MODULE}.py").write_text(
                "".join(f"import {name}\n" for name in names), encoding="utf-8"
            )
            with self._log.open("w", encoding="utf-8") as log:  # (the process keeps its own handle)
                self._proc = _run_mypy(
                    self._tmp.name, ["-m", _WARMUP_MODULE], os.path.join(self._tmp.name, "cache"), True, log
                )
        except OSError:  # a full scratch folder, no process to spare
            self._proc = None

    def cache(self) -> tuple[str, list[str]] | None:
        if self._proc is not None:
            if self._proc.wait() in (0, 1):
                log = self._log.read_text(encoding="utf-8", errors="replace")
                self._ready = (os.path.join(self._tmp.name, "cache"), _files_read(log, Path(self._tmp.name).resolve()))
            self._proc = None
        return self._ready

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._proc = None
        self._tmp.cleanup()


def mypy_errors(
    files: dict[str, str], top: str, read: list[str] | None = None, warm: Warmup | None = None
) -> dict[str, dict[int, set[str]]]:
    """``mypy --strict`` over the stub package ``top`` (``files``: text per path relative to the
    folder holding it): per path, per line, the error codes reported. With ``read``, the files
    mypy read besides these (typeshed's, installed packages': from its ``-v`` log) are appended
    to it (none when the log's format is not the one known here: it always reads ``builtins``).
    With ``warm``, what the stubs import is taken from its cache (what it read counts as read)."""
    ready = warm.cache() if warm is not None else None
    with scratch_folder("tvmffi-gen-selfcheck-") as tmp:
        for rel, text in files.items():
            path = Path(tmp, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        proc = _run_mypy(tmp, ["-p", top], ready[0] if ready else None, read is not None)
        stdout, stderr = proc.communicate()
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"mypy --strict over the stubs failed: {(stderr or stdout).strip()[-2000:]}")
        root = Path(tmp).resolve()
        if read is not None:
            now = _files_read(stderr, root)
            read += sorted(set(ready[1]) | set(now)) if ready else now  # (none: a log not understood)
        out: dict[str, dict[int, set[str]]] = {}
        for line in stdout.splitlines():
            m = _ERROR.match(line)
            if m is None:
                continue
            path = Path(m["path"]).resolve()
            if not path.is_relative_to(root):
                continue  # an error in another installed package
            rel = path.relative_to(root).as_posix()
            out.setdefault(rel, {}).setdefault(int(m["line"]), set()).add(m["code"])
        return out


def _comment_columns(text: str) -> dict[int, int]:
    """Per line (1-based), the column where a comment starts on it."""
    out: dict[int, int] = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.start[1]
    return out


def add_ignores(text: str, lines: dict[int, set[str]]) -> str:
    """``text`` with ``  # type: ignore[codes]`` at the end of each line of ``lines`` (before a
    comment the line already has)."""
    comments = _comment_columns(text)
    rows = text.split("\n")
    for number, codes in lines.items():
        row = rows[number - 1]
        ignore = f"# type: ignore[{', '.join(sorted(codes))}]"
        col = comments.get(number)
        if col is None:
            rows[number - 1] = f"{row.rstrip()}  {ignore}"
        else:
            rows[number - 1] = f"{row[:col].rstrip()}  {ignore}  {row[col:]}"
    return "\n".join(rows)


def silence_own_errors(
    files: dict[str, str],
    root: str,
    top: str,
    check: Callable[[dict[str, str], str], dict[str, dict[int, set[str]]]] = mypy_errors,
) -> int:
    """Check the ``.pyi`` files under ``root`` (``PKG-stubs``) as package ``top`` and add the
    narrowest ignores in place; the number of lines that got one. ``check``: ``mypy_errors``, or
    its cached form (``cache.cached_mypy_errors``)."""
    prefix = root + "/"
    as_package = {
        top + "/" + rel[len(prefix) :]: text
        for rel, text in files.items()
        if rel.startswith(prefix) and rel.endswith(".pyi")
    }
    errors = check(as_package, top)
    for rel, lines in errors.items():
        key = prefix + rel[len(top) + 1 :]
        files[key] = add_ignores(files[key], lines)
    return sum(len(v) for v in errors.values())
