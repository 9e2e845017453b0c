"""The stubs checked by ``mypy --strict`` as a last step: what the package's own sources declare
and no rule of ``rewrite.py`` can repair (an override its classes really make, ``__eq__`` returning
an expression, an optional dependency that is not installed) gets the narrowest
``# type: ignore[code]`` on the line mypy reports, as a hand-written stub would carry; so the stub
package has no errors of its own.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tempfile
import tokenize
from collections.abc import Callable
from pathlib import Path

__all__ = ["add_ignores", "mypy_errors", "silence_own_errors"]

_ERROR = re.compile(r"^(?P<path>[^:\n]+\.pyi):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")
#: what ``mypy -v`` logs for each file it reads
_PARSING = re.compile(r"^LOG:  Parsing (?P<path>.+) \((?P<module>[\w.]+)\)$")


def mypy_errors(files: dict[str, str], top: str, read: list[str] | None = None) -> dict[str, dict[int, set[str]]]:
    """``mypy --strict`` over the stub package ``top`` (``files``: text per path relative to the
    folder holding it): per path, per line, the error codes reported. With ``read``, the files
    mypy read besides these (typeshed's, installed packages': from its ``-v`` log) are appended
    to it (none when the log's format is not the one known here: it always reads ``builtins``)."""
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in files.items():
            path = Path(tmp, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        Path(tmp, "empty.ini").write_text("[mypy]\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "MYPY_CACHE_DIR")}
        cmd = [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            "empty.ini",
            "--cache-dir",
            os.devnull,
            "--show-error-codes",
            "--no-error-summary",
            "--hide-error-context",
            "--no-pretty",
            "--show-absolute-path",
            *(["-v"] if read is not None else []),
            "-p",
            top,
        ]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, cwd=tmp, env=env, stdin=subprocess.DEVNULL, check=False
        )
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"mypy --strict over the stubs failed: {(proc.stderr or proc.stdout).strip()[-2000:]}")
        root = Path(tmp).resolve()
        if read is not None:
            for line in proc.stderr.splitlines():
                m = _PARSING.match(line)
                if m is not None and not Path(m["path"]).resolve().is_relative_to(root):
                    read.append(str(Path(m["path"]).resolve()))
        out: dict[str, dict[int, set[str]]] = {}
        for line in proc.stdout.splitlines():
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
