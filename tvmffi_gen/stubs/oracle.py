"""What pyright infers from a package's sources for the functions whose result they leave
unannotated: the oracle that keeps a stub from knowing less than a checker reading the sources.

A stub that says ``-> Incomplete`` for ``def astype(self, dtype, span=None)`` hides what pyright
works out from the body (``Expr | NotImplementedType``), and installed stubs are all a checker
reads. ``InferredReturns`` runs basedpyright (a dependency of this tool) over a probe file that
``reveal_type``s every such function of stubgen's stubs, with the package's own folder reached
through ``extraPaths`` (so installed stubs of it, ours included, are not what it reads), and
returns pyright's printed result per function. ``pyright_types.py`` turns that text into a stub's
annotation, with the running module's names.

It starts once stubgen's stubs exist, in a process of its own, while the package is still being
imported; a checker that cannot run, fails or takes longer than ``TIMEOUT`` only leaves the
results ``Incomplete`` (``result`` says why).
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import cast

from .scratch import scratch_folder

__all__ = ["InferredReturns", "probe_targets", "return_part", "TIMEOUT"]

#: seconds basedpyright may take over the probe (tvm: about 15 s of CPU)
TIMEOUT = 600.0

_REVEAL = re.compile(r'Type of "(?P<expr>.*)" is "(?P<type>.*)"\Z', re.S)
#: the probe's own names, which no decoy class may take
_PROBE_NAME = re.compile(r"_m\d+\Z|_builtins\Z|_decoys\Z|reveal_type\Z")


def probe_targets(stubs: dict[str, str]) -> dict[str, list[str]]:
    """Per module, the qualnames (``f``, ``Class.f``, ``Outer.Inner.f``) of the functions its
    stub declares without a result annotation; a property's getter marked ``PROPERTY`` (pyright
    reads it on an instance). A function another decorator wraps is left out: pyright's type of
    it is the wrapper's (``@contextmanager``'s ``_GeneratorContextManager``), not the def's."""
    out: dict[str, list[str]] = {}
    for mod, text in sorted(stubs.items()):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        found = _unannotated(tree.body, "")
        if found:
            out[mod] = list(dict.fromkeys(found))
    return out


#: decorators after which a function is still the function its ``def`` declares
_KEEPS_SIGNATURE = {"staticmethod", "classmethod", "abstractmethod", "final", "override"}

#: how ``probe_targets`` marks a property (its getter's result is the property's type)
PROPERTY = "@property:"


def _unannotated(body: list[ast.stmt], prefix: str) -> list[str]:
    found: list[str] = []
    for node in body:
        if isinstance(node, ast.ClassDef):
            found += _unannotated(node.body, f"{prefix}{node.name}.")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is None:
            decorators = {ast.unparse(d).rsplit(".", 1)[-1] for d in node.decorator_list}
            if decorators & {"property", "cached_property"} and prefix:
                found.append(PROPERTY + prefix + node.name)
            elif decorators <= _KEEPS_SIGNATURE:  # (another decorator's result is not the def's)
                found.append(prefix + node.name)
    return found


def _probe(targets: dict[str, list[str]], decoys: list[str]) -> tuple[str, dict[int, tuple[str, str]]]:
    """The probe file's text, and which (module, qualname) each line reveals (0-based lines).
    Each function is revealed beside a class of each name in ``decoys``, so pyright prints the
    classes of those names in the function's type by their full names."""
    decoys = [d for d in decoys if not _PROBE_NAME.match(d)]
    lines = ["import builtins as _builtins", *(f"class {d}: ..." for d in decoys)]
    lines.append(f"def _decoys() -> _builtins.tuple[{', '.join(decoys) or '()'}]: ...")
    where: dict[int, tuple[str, str]] = {}
    for i, (mod, quals) in enumerate(sorted(targets.items())):
        lines.append(f"import {mod} as _m{i}")
        for q in quals:
            where[len(lines)] = (mod, q)
            if q.startswith(PROPERTY):  # read on an instance: the value's type
                cls, _, name = q.removeprefix(PROPERTY).rpartition(".")
                lines.append(f"def _p{len(lines)}(x: _m{i}.{cls}) -> None: reveal_type((x.{name}, _decoys()))")
            else:
                lines.append(f"reveal_type((_m{i}.{q}, _decoys()))")
    return "\n".join(lines) + "\n", where


def return_part(revealed: str) -> str | None:
    """The result of a function type as pyright prints it (``(x: int) -> str | None`` gives
    ``str | None``), without enclosing parentheses; None for anything but a function."""
    depth, arrow = 0, -1
    for i, c in enumerate(revealed):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and revealed.startswith("->", i):
            arrow = i
    if arrow < 0 or not revealed.startswith("("):
        return None
    return _unparenthesized(revealed[arrow + 2 :])


def _unparenthesized(text: str) -> str:
    out = text.strip()
    while out.startswith("(") and out.endswith(")") and _balanced(out[1:-1]):
        out = out[1:-1].strip()
    return out


def _key(obj: object, key: str) -> object:
    """``obj[key]`` of a JSON object, None for anything else."""
    return cast("dict[str, object]", obj).get(key) if isinstance(obj, dict) else None


def _list(obj: object) -> list[object]:
    """A JSON array's items, none for anything else."""
    return cast("list[object]", obj) if isinstance(obj, list) else []


def _function_part(revealed: str) -> str:
    """The function's type in pyright's print of ``(function, decoys)``: ``tuple[F, tuple[...]]``."""
    inner = revealed.removeprefix("tuple[").removesuffix("]")
    parts: list[str] = []
    depth, start = 0, 0
    for i, c in enumerate(inner):
        depth += c in "([{"
        depth -= c in ")]}"
        if c == "," and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    function = ",".join(parts).strip() if parts else inner.strip()
    if return_part(function) is None and function.startswith("(") and function.endswith(")"):
        return function[1:-1]  # a callable parenthesized in the tuple
    return function


def _balanced(text: str) -> bool:
    depth = 0
    for c in text:
        depth += c in "([{"
        depth -= c in ")]}"
        if depth < 0:
            return False
    return depth == 0


class InferredReturns:
    """basedpyright over a probe of ``targets`` (``probe_targets``), started at once; ``result``
    waits for it. ``package_dir``: the folder of the package's top-level module; ``decoys``: the
    class names pyright must print in full (``pyright_types.World.ambiguous``)."""

    def __init__(self, targets: dict[str, list[str]], package_dir: str, decoys: list[str]) -> None:
        self.targets = targets
        self.text, self._where = _probe(targets, decoys)
        self._tmp = scratch_folder("tvmffi-gen-oracle-")
        self._proc: subprocess.Popen[str] | None = None
        self.error = ""
        if not targets:
            return
        root = Path(self._tmp.name)
        (root / "site").mkdir()
        os.symlink(package_dir, root / "site" / Path(package_dir).name)
        (root / "probe.py").write_text(self.text, encoding="utf-8")
        config = {
            "include": ["probe.py"],
            "extraPaths": ["site"],
            "pythonVersion": f"{sys.version_info.major}.{sys.version_info.minor}",
            "typeCheckingMode": "basic",
        }
        (root / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
        cmd = [sys.executable, "-m", "basedpyright", "--outputjson", "-p", str(root / "pyrightconfig.json")]
        cmd += ["--pythonpath", sys.executable]
        try:
            self._proc = subprocess.Popen(
                cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL
            )
        except OSError as exc:
            self.error = f"basedpyright could not start ({exc})"

    def result(self) -> dict[str, dict[str, str]]:
        """Per module, per qualname, the result pyright infers, as it prints it (``Unknown`` where
        it knows nothing); empty, with ``error`` saying why, when basedpyright did not answer."""
        try:
            if self._proc is None:
                return {}
            try:
                out, err = self._proc.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.communicate()
                self.error = f"basedpyright took more than {TIMEOUT:.0f} s"
                return {}
            try:
                report = json.loads(out)
            except ValueError:
                first = (err.strip() or out.strip() or f"exit status {self._proc.returncode}").splitlines()[0]
                self.error = f"basedpyright failed: {first}"
                return {}
            return self._parse(report)
        finally:
            self._tmp.cleanup()

    def _parse(self, report: object) -> dict[str, dict[str, str]]:
        found: dict[str, dict[str, str]] = {}
        for d in _list(_key(report, "generalDiagnostics")):
            if _key(d, "severity") != "information":
                continue
            line = _key(_key(_key(d, "range"), "start"), "line")
            match = _REVEAL.match(str(_key(d, "message") or ""))
            if match is None or not isinstance(line, int) or line not in self._where:
                continue
            mod, qual = self._where[line]
            part = _function_part(match["type"])
            ret = _unparenthesized(part) if qual.startswith(PROPERTY) else return_part(part)
            if ret is not None:
                found.setdefault(mod, {})[qual.removeprefix(PROPERTY)] = ret
        return found

    def stop(self) -> None:
        """End basedpyright's process now (``result`` then returns nothing)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
