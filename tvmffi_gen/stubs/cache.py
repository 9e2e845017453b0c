"""A user cache for the steps of ``--stubs-for`` after the import: mypy's stubgen, the libcst
rewrite, the stubtest allowlist and the ``mypy --strict`` self-check.

Each entry is stored under a SHA-256 of everything its result is made from, so a stale entry is
never used: for stubgen, the contents (and paths) of every source file it reads, mypy's version,
the Python version and this tool's version; for the rewrite (``augment``), the complete
collected data, stubgen's stubs and the conversions (``conversions.py``), libcst's version, the
Python version and this tool's version; for the allowlist, the data, stubgen's stubs and the
rewritten ones (it reads nothing else). "This tool's version" is its version string and a hash
of every source file of the ``tvmffi_gen`` package, so an edited checkout is a new version.

The self-check (``cached_mypy_errors``) also reads what is installed: typeshed (mypy's own),
and the typed packages the stubs import (``tvm_ffi``, numpy), while an import of a package that
is missing or untyped gets an error that depends on that. Its key is the stub texts, mypy's,
Python's and this tool's versions and the installed packages mypy can find (every folder of
``sys.path`` it searches, the names at its top level and each distribution's metadata folder
with its modification time: an installed, removed or reinstalled package changes the key); an
entry also records each file mypy read outside the stubs (from its ``-v`` log) with its SHA-256,
compared before the entry is used, so an installed file edited in place (an editable install
keeps its version) is a miss too. Not seen: a module added inside an installed package without
reinstalling it (an editable install), which matters only to a stub importing it by that name
(``--no-cache`` then).
Importing the package is never cached: it is what finds the registry, and it runs the package.

Where: ``$TVMFFI_GEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/tvmffi-gen``, else
``~/.cache/tvmffi-gen``; the last ``KEEP`` entries of each kind are kept. Off: ``--no-cache``
or ``TVMFFI_GEN_NO_CACHE=1``. A cache that cannot be read or written is as if empty.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any, cast

import tvmffi_gen.stubs.selfcheck as selfcheck  # not ``from .``: that names the package, a cycle

from .allowlist import stubtest_allowlist
from .collected import Collection
from .conversions import BUILTIN, Conversions
from .frozen import frozen_attributes
from .oracle import InferredReturns
from .rewrite import augment
from .stubgen import PythonStubs

__all__ = [
    "cache_dir",
    "disabled",
    "CachedPythonStubs",
    "CachedInferredReturns",
    "cached_augment",
    "cached_allowlist",
    "cached_mypy_errors",
    "tool_version",
]

KEEP = 8
_OFF: list[bool] = []  # the innermost ``disabled()`` in effect


def cache_dir() -> Path | None:
    """The cache folder, or None when caching is off."""
    if (_OFF and _OFF[-1]) or os.environ.get("TVMFFI_GEN_NO_CACHE", "") not in ("", "0"):
        return None
    explicit = os.environ.get("TVMFFI_GEN_CACHE_DIR", "")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME", "") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "tvmffi-gen")


@contextlib.contextmanager
def disabled(off: bool = True) -> Generator[None]:
    """Within it, with ``off``, nothing is read from or written to the cache."""
    _OFF.append(off)
    try:
        yield
    finally:
        _ = _OFF.pop()


@functools.lru_cache(maxsize=1)
def tool_version() -> str:
    """This tool's version string and a hash of all its source files."""
    from .. import __version__

    h = hashlib.sha256(__version__.encode())
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{__version__}+{h.hexdigest()[:16]}"


def _key(kind: str, *parts: bytes | str) -> str:
    h = hashlib.sha256(f"tvmffi-gen {kind} cache 1\0{tool_version()}\0{sys.version}\0".encode())
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(str(len(data)).encode() + b":" + data)
    return h.hexdigest()


def _load(kind: str, key: str) -> Any:
    where = cache_dir()
    if where is None:
        return None
    path = where / kind / f"{key}.json"
    try:
        entry: object = json.loads(path.read_text(encoding="utf-8"))
        os.utime(path)  # recently used: kept by the pruning
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict):
        return None
    fields = cast("dict[str, Any]", entry)
    return fields["value"] if fields.get("key") == key else None


def _store(kind: str, key: str, value: Any) -> None:
    where = cache_dir()
    if where is None:
        return
    folder = where / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"key": key, "value": value}, f)
        os.replace(tmp, folder / f"{key}.json")
        entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass


def _mypy_version() -> str:
    from mypy.version import __version__

    return __version__


def _stubgen_sources(modules: dict[str, str]) -> list[tuple[str, str]]:
    """The modules stubgen reads (as ``PythonStubs`` chooses: a ``.py`` without a ``.pyi`` beside it)."""
    out: list[tuple[str, str]] = []
    for name, path in sorted(modules.items()):
        p = Path(path)
        if path.endswith(".py") and not (p.parent / (p.name.split(".")[0] + ".pyi")).is_file():
            out.append((name, path))
    return out


class CachedPythonStubs(PythonStubs):
    """``PythonStubs`` that takes stubgen's output from the cache when every source it reads is
    unchanged, and stores it after a run."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._key: str | None = None
        self._hit: dict[str, str] | None = None
        sources = _stubgen_sources(modules)
        if cache_dir() is not None and sources:
            parts: list[bytes | str] = [_mypy_version()]
            try:
                for name, path in sources:
                    parts += [name, path, Path(path).read_bytes()]
                self._key = _key("stubgen", *parts)
            except OSError:
                self._key = None
            hit: object = _load("stubgen", self._key) if self._key is not None else None
            if isinstance(hit, dict) and set(cast("dict[str, str]", hit)) == {name for name, _ in sources}:
                self._hit = cast("dict[str, str]", hit)
        if self._hit is None:
            super().__init__(modules)
            return
        # the package's own .pyi files as PythonStubs reads them; stubgen is not started
        super().__init__({m: p for m, p in modules.items() if m not in self._hit})
        self.from_cache = True
        self.modules: dict[str, str] = dict(modules)
        self._hit_sources: list[tuple[str, str]] = sources

    @property
    def key(self) -> str | None:
        """The key of the sources stubgen reads (None when the cache is off or one cannot be read)."""
        return self._key

    def result(self, keep: set[str]) -> dict[str, str]:
        if self._hit is not None:
            out = super().result(keep)
            out.update((name, self._hit[name]) for name, _ in self._hit_sources if name in keep)
            return out
        everything = super().result(set(self.modules))
        if self._key is not None:
            _store("stubgen", self._key, {name: everything[name] for name, _ in self.sources})
        return {m: t for m, t in everything.items() if m in keep}


def cached_augment(
    data: Collection,
    stubs: dict[str, str],
    conversions: Conversions = BUILTIN,
    inferred: dict[str, dict[str, str]] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """``rewrite.augment``, from the cache when the data, stubs, conversions and pyright's
    results are the same."""
    from importlib.metadata import version

    if cache_dir() is None:
        return augment(data, stubs, conversions, inferred)
    parts = [version("libcst"), data.to_json(), json.dumps(list(stubs.items())), conversions.to_json()]
    parts.append(json.dumps(inferred or {}, sort_keys=True))
    key = _key("augment", *parts)
    hit: object = _load("augment", key)
    if isinstance(hit, dict):
        entry = cast("dict[str, Any]", hit)
        final_items, warned = entry.get("final"), entry.get("warnings")
        if isinstance(final_items, list) and isinstance(warned, list):
            return dict(cast("list[tuple[str, str]]", final_items)), cast("list[str]", warned)
    final, warnings = augment(data, stubs, conversions, inferred)
    _store("augment", key, {"final": list(final.items()), "warnings": warnings})
    return final, warnings


def cached_allowlist(data: Collection, stubs: dict[str, str], final: dict[str, str]) -> str:
    """The stubtest allowlist (``allowlist.stubtest_allowlist`` of the final stubs, with the
    read-only attributes of stubgen's), from the cache when the data and both stubs are the
    same: it reads nothing else."""
    if cache_dir() is None:
        return stubtest_allowlist(data, final, frozen_attributes(data, stubs))
    key = _key(
        "allowlist",
        data.to_json(),
        json.dumps(list(stubs.items())),
        json.dumps(list(final.items())),
    )
    hit: object = _load("allowlist", key)
    if isinstance(hit, str):
        return hit
    text = stubtest_allowlist(data, final, frozen_attributes(data, stubs))
    _store("allowlist", key, text)
    return text


def _search_path() -> list[str]:
    """What an installed package mypy may read is found among: each folder of ``sys.path`` after
    the first (the script's, which mypy does not search either), with the names of what it holds
    at its top level, and for a distribution's metadata folder its modification time (a
    reinstall makes it anew)."""
    parts: list[str] = []
    for entry in sys.path[1:]:
        parts.append(f"{entry}\0")
        try:
            with os.scandir(entry or ".") as it:
                names = sorted((e.name, e) for e in it if e.name != "__pycache__")
        except OSError:
            continue
        for name, e in names:
            if name.endswith((".dist-info", ".egg-info")):
                with contextlib.suppress(OSError):
                    name += f"\0{e.stat().st_mtime_ns}"
            parts.append(name)
    return parts


def _digests(paths: list[str]) -> list[str] | None:
    """The SHA-256 of each file (None when one cannot be read)."""
    out: list[str] = []
    for path in paths:
        try:
            out.append(hashlib.sha256(Path(path).read_bytes()).hexdigest())
        except OSError:
            return None
    return out


def cached_mypy_errors(
    files: dict[str, str], top: str, warm: selfcheck.Warmup | None = None
) -> dict[str, dict[int, set[str]]]:
    """``selfcheck.mypy_errors``, from the cache when nothing it reads changed.

    The key: the stub texts and their paths, ``top``, mypy's version, the Python version and this
    tool's version, and what the installed packages mypy can import are (``_search_path``: every
    folder it searches, what each holds at its top level, each distribution's metadata folder
    with its time: an installed, removed or reinstalled package is another key, so an import
    that was not found, or that is now found untyped or typed, is checked again). An entry also
    lists every file mypy read outside the stubs (typeshed's, ``tvm_ffi``'s, numpy's: from its
    ``-v`` log) with its SHA-256, compared before the entry is used: an edited installed file (an
    editable install keeps its version) is a miss. ``warm``: a ``selfcheck.Warmup`` for a miss."""
    if cache_dir() is None:
        return selfcheck.mypy_errors(files, top, warm=warm)
    key = _key("selfcheck", _mypy_version(), top, json.dumps(sorted(files.items())), *_search_path())
    hit: object = _load("selfcheck", key)
    if isinstance(hit, dict):
        entry = cast("dict[str, Any]", hit)
        read, digests, errors = entry.get("read"), entry.get("digests"), entry.get("errors")
        if isinstance(read, list) and isinstance(errors, dict) and digests == _digests(cast("list[str]", read)):
            return {
                path: {int(line): set(codes) for line, codes in lines.items()}
                for path, lines in cast("dict[str, dict[str, list[str]]]", errors).items()
            }
    read_now: list[str] = []
    result = selfcheck.mypy_errors(files, top, read_now, warm)
    digests_now = _digests(read_now)
    if read_now and digests_now is not None:  # none read: mypy's log was not understood
        _store(
            "selfcheck",
            key,
            {
                "read": read_now,
                "digests": digests_now,
                "errors": {
                    path: {str(line): sorted(codes) for line, codes in lines.items()} for path, lines in result.items()
                },
            },
        )
    return result


class CachedInferredReturns(InferredReturns):
    """``oracle.InferredReturns`` taken from the cache when the probe, every source stubgen read
    (``sources_key``: ``CachedPythonStubs.key``), basedpyright's version and the installed
    packages it can read (``_search_path``) are the same; stored after a run that answered."""

    def __init__(
        self, targets: dict[str, list[str]], package_dir: str, decoys: list[str], sources_key: str | None
    ) -> None:
        from importlib.metadata import PackageNotFoundError, version

        self._cache_key: str | None = None
        self._hit: dict[str, dict[str, str]] | None = None
        if cache_dir() is not None and sources_key is not None and targets:
            try:
                checker = version("basedpyright")
            except PackageNotFoundError:
                checker = ""
            probe = json.dumps([sorted(targets.items()), decoys])
            self._cache_key = _key("oracle", checker, sources_key, package_dir, probe, *_search_path())
            hit: object = _load("oracle", self._cache_key)
            if isinstance(hit, dict):
                self._hit = cast("dict[str, dict[str, str]]", hit)
        super().__init__({} if self._hit is not None else targets, package_dir, decoys)

    def result(self) -> dict[str, dict[str, str]]:
        found = super().result()  # (nothing ran on a hit: this removes its scratch folder)
        if self._hit is not None:
            return self._hit
        if self._cache_key is not None and not self.error:
            _store("oracle", self._cache_key, found)
        return found
