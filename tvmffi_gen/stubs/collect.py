"""What a running package tells about itself: run as ``python -m tvmffi_gen.stubs.collect PKG``.

This runs in a child process (``take_collection``) because importing a package may crash, hang or
exit. It imports PKG and every submodule found on disk under it (each under a timeout; one that
raises, exits — argparse at import — or times out is recorded and skipped), then reads from the
running process:

* every registered type key, its registry facts (fields, methods, constructor) and, when a Python
  class was registered for it, where that class is defined and every path it is reachable by;
* the ``_ffi_api`` modules, found by recording each ``tvm_ffi.init_ffi_api(prefix, module)`` call
  while the package imports, with the functions that call put there and their registry schemas;
* the members a registered class got after its ``class`` body (plain Python functions attached
  later), which a source-reading stub generator cannot see.

The result is JSON on stdout; everything the package prints goes to stderr.
"""

from __future__ import annotations

import fnmatch
import inspect
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any, cast

__all__ = ["collect", "module_files", "excluded", "CollectError"]

#: a module whose import computes this many seconds of CPU, or makes no progress (less than
#: ``IDLE_SHARE`` of a core) for this many seconds of wall time, is stopped and not covered
MODULE_TIMEOUT = 15.0
IDLE_SHARE = 0.05
#: and one still importing after this many seconds of wall time, whatever it does
MODULE_WALL_LIMIT = 8 * MODULE_TIMEOUT


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


def _quick_getmodule() -> Any:
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


def _import_all(package: str, files: dict[str, str], bound: dict[str, list[str]]) -> tuple[list[str], dict[str, str]]:
    """Import each module; ``bound`` gets, per package, the submodules bound on it right after
    its import (what ``import pkg.sub`` gives a user), before later imports bind more."""
    import importlib
    import types

    ok: list[str] = []
    failed: dict[str, str] = {}
    watch = _Watch()
    for name in sorted(files):
        if any(name.startswith(f + ".") for f in failed):
            failed[name] = "its package failed to import"
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
            last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
            where = f" ({last[0].filename}:{last[0].lineno})" if last else ""
            failed[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}{where}"
        finally:
            watch.end()
    return ok, failed


def _namespace(owner: object) -> dict[str, Any]:
    """A copy of a module's or class's namespace (the walk below may import, which can add names)."""
    return dict(vars(owner))


def _runtime_all(mod: ModuleType) -> list[str] | None:
    """A module's ``__all__`` as it is at run time, when it is a list or tuple of strings."""
    listed: object = getattr(mod, "__all__", None)
    if not isinstance(listed, (list, tuple)):
        return None
    names = list(cast("list[object] | tuple[object, ...]", listed))
    return [n for n in names if isinstance(n, str)] if all(isinstance(n, str) for n in names) else None


def _type_facts(key: str) -> dict[str, Any]:
    from tvmffi_runtime import reflection as R

    from ..snapshot import _field_snap, _parse_schema

    info = R.type_info(key)
    fields: list[dict[str, Any]] = []
    for f in info.fields:
        snap = _field_snap(f)
        fields.append(
            {
                "name": snap.name,
                "doc": snap.doc,
                "schema": snap.schema,
                "writable": snap.writable,
                "has_default": snap.has_default,
                "init": snap.init,
                "kw_only": snap.kw_only,
            }
        )
    methods: list[dict[str, Any]] = []
    init: dict[str, Any] | None = None
    for m in info.methods:
        entry: dict[str, Any] = {
            "name": m.name,
            "doc": m.doc,
            "schema": _parse_schema(m.type_schema),
            "is_static": m.is_static,
        }
        if m.name == "__ffi_init__":
            init = {"kind": "method", **entry}
        else:
            methods.append(entry)
    if init is None and R.type_attr(info.type_index, "__ffi_init__") is not None:
        init = {"kind": "auto"}
    return {"ancestors": list(info.ancestors), "doc": info.doc, "fields": fields, "methods": methods, "init": init}


def _signature_text(obj: Any) -> str | None:
    """``(a, b=..., *args)`` for a function attached to a class: names and kinds only."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    parts: list[str] = []
    kind_prev = None
    for p in sig.parameters.values():
        if p.kind == p.KEYWORD_ONLY and kind_prev not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL):
            parts.append("*")
        if kind_prev == p.POSITIONAL_ONLY and p.kind != p.POSITIONAL_ONLY:
            parts.append("/")
        prefix = "*" if p.kind == p.VAR_POSITIONAL else "**" if p.kind == p.VAR_KEYWORD else ""
        parts.append(prefix + p.name + ("=..." if p.default is not p.empty else ""))
        kind_prev = p.kind
    if kind_prev == inspect.Parameter.POSITIONAL_ONLY:
        parts.append("/")
    return "(" + ", ".join(parts) + ")"


def _runtime_names(mod: Any) -> list[str]:
    """The public names a module has at run time that it made itself (``__all__`` when it has
    one; else what it defines, not what it imported), whatever a source reader sees of them."""
    import types

    name = mod.__name__
    explicit = getattr(mod, "__all__", None)
    out: list[str] = []
    for attr, value in _namespace(mod).items():
        if isinstance(value, types.ModuleType) or type(value).__module__ == "__future__":
            continue
        if isinstance(explicit, (list, tuple)):
            if attr in explicit:
                out.append(attr)
            continue
        if attr.startswith("_") and attr != "__version__":
            continue
        owner = getattr(value, "__module__", None) if callable(value) else name
        if owner == name:
            out.append(attr)
    return sorted(set(out))


def _packed_functions(mod: Any) -> list[str]:
    """Names of a module bound to a ``tvm_ffi.Function`` (a Python function registered as a global
    function by a decorator is replaced by the packed function, which takes no keywords)."""
    import tvm_ffi

    return sorted(attr for attr, value in _namespace(mod).items() if isinstance(value, tvm_ffi.Function))


def _private_metaclass(mod: Any) -> list[str]:
    """Classes a module defines (paths from the module, nested ones included; a class a decorator
    replaced by another made in the module counts) whose metaclass is a private class of tvm_ffi
    (``_ObjectSlotsMeta``), which no stub can name."""
    out: list[str] = []

    def walk(owner: Any, prefix: str) -> None:
        for attr, value in _namespace(owner).items():
            if inspect.isclass(value) and value.__module__ == mod.__name__:
                meta = type(value)
                if meta.__module__.split(".")[0] == "tvm_ffi" and meta.__name__.startswith("_"):
                    out.append(prefix + attr)
                if value.__qualname__ == prefix + attr:
                    walk(value, prefix + attr + ".")

    walk(mod, "")
    return sorted(out)


def _replaced_classes(mod: Any) -> list[str]:
    """Module-level names bound to a class with another name, made in a function: where the
    stub declares a class by that name, a class decorator replaced it by a wrapper class
    (``@relax.expr_functor.mutator``)."""
    return sorted(
        attr
        for attr, value in _namespace(mod).items()
        if inspect.isclass(value) and "<locals>" in value.__qualname__ and value.__qualname__.rsplit(".", 1)[-1] != attr
    )


def _renamed_imports(mod: Any) -> dict[str, str]:
    """Public names bound to a class imported under another name
    (``from tvm_ffi._dtype import dtype as DataType``), which stubgen leaves out: name -> path."""
    out: dict[str, str] = {}
    for attr, value in _namespace(mod).items():
        if attr.startswith("_") or not inspect.isclass(value):
            continue
        where, qual = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
        if (
            isinstance(where, str)
            and where != mod.__name__
            and qual != attr
            and "." not in qual
            and qual.isidentifier()
            and getattr(sys.modules.get(where), qual, None) is value
        ):
            out[attr] = f"{where}:{qual}"
    return out


def _made_by_tvm_ffi(func: Any) -> bool:
    """Whether a function in a class's ``__dict__`` was made by ``register_object`` (its
    ``__init__`` from ``__ffi_init__``, its dunders), not written in the class's module."""
    import tvm_ffi

    code = getattr(func, "__code__", None)
    if code is None:
        return False
    made = {os.path.join(os.path.dirname(tvm_ffi.__file__), f) for f in ("_dunder.py", "registry.py")}
    return code.co_filename in made


def _late_members(cls: type, package: str) -> dict[str, dict[str, Any]]:
    """Plain Python functions in ``cls.__dict__`` (candidates for members attached after the
    body; the parent keeps those the source-read stub lacks)."""
    out: dict[str, dict[str, Any]] = {}
    for name, value in cls.__dict__.items():
        kind = "method"
        func: object = value
        if isinstance(value, staticmethod):
            kind, func = "static", cast("object", value.__func__)
        elif isinstance(value, classmethod):
            kind, func = "class", cast("object", value.__func__)
        elif isinstance(value, property):
            kind, func = "property", value.fget
        if not inspect.isfunction(func) or name in ("__init__", "__ffi_init__"):
            continue
        if not str(getattr(func, "__module__", "") or "").startswith(package) or _made_by_tvm_ffi(func):
            continue  # installed by tvm_ffi (registry methods, dunders): handled from the registry
        sig = _signature_text(func)
        if sig is not None:
            out[name] = {"kind": kind, "sig": sig}
    return out


def collect(package: str, patterns: list[str], preload: list[str]) -> dict[str, Any]:
    import ctypes
    import importlib

    import tvm_ffi
    from tvm_ffi import core

    for lib in preload:
        ctypes.CDLL(os.path.abspath(lib), mode=ctypes.RTLD_GLOBAL)
    api_calls: list[tuple[str, str]] = []
    original = tvm_ffi.init_ffi_api

    def recording_init_ffi_api(namespace: str, target_module_name: str | None = None) -> None:
        api_calls.append((namespace, target_module_name or namespace))
        original(namespace, target_module_name)

    tvm_ffi.init_ffi_api = recording_init_ffi_api
    tvm_ffi.registry.init_ffi_api = recording_init_ffi_api

    try:
        top = importlib.import_module(package)
    except BaseException as exc:  # noqa: BLE001
        raise ImportError(f"{package} does not import: {type(exc).__name__}: {exc}") from None
    roots = list(getattr(top, "__path__", []) or [])
    if roots:
        files = module_files(package, roots, patterns)
    else:
        files = {} if excluded(package, patterns) else {package: str(getattr(top, "__file__", ""))}
    if not files:
        given = " ".join(f"--exclude {p!r}" for p in patterns)
        raise CollectError(
            f"{given}: {'they drop' if len(patterns) > 1 else 'it drops'} every module of"
            f" {package}, so nothing is left to stub"
        )
    unmatched = unmatched_excludes(package, roots, patterns)
    bound: dict[str, list[str]] = {}
    import inspect

    original_getmodule = _quick_getmodule()
    try:
        ok, failed = _import_all(package, files, bound)
    finally:
        inspect.getmodule = original_getmodule
    try:
        from importlib.metadata import packages_distributions, version

        dists = packages_distributions().get(package, [])
        dist = dists[0] if dists else package
        dist_version = version(dist)
    except Exception:  # noqa: BLE001
        dist, dist_version = package, ""

    from tvmffi_runtime import reflection as R

    from .forwarders import forwarding

    covered = set(ok)
    types: dict[str, Any] = {}
    classes: dict[str, Any] = {}
    # every path a class is reachable by, over the modules loaded now
    paths: dict[int, list[str]] = {}
    loaded: dict[str, ModuleType | None] = dict(sys.modules)  # a failed import can leave None
    for mod_name, mod in sorted(loaded.items()):
        if mod is None or not (mod_name in covered or mod_name == "tvm_ffi" or mod_name.startswith("tvm_ffi.")):
            continue
        for attr, value in _namespace(mod).items():
            if isinstance(value, type) and "__tvm_ffi_type_info__" in value.__dict__:
                paths.setdefault(id(value), []).append(f"{mod_name}.{attr}")
    for key in sorted(R.list_type_keys()):
        try:
            types[key] = _type_facts(key)
        except Exception as exc:  # noqa: BLE001
            types[key] = {"ancestors": [], "doc": "", "fields": [], "methods": [], "init": None, "error": str(exc)}
        index = core._object_type_key_to_index(key)
        info = core._type_index_to_type_info(index) if index is not None else None
        cls = info.type_cls if info is not None else None
        if cls is None:
            continue
        found = paths.get(id(cls), [])
        defined = f"{cls.__module__}.{cls.__qualname__}"
        python_init = "__init__" in cls.__dict__ and not _made_by_tvm_ffi(cls.__dict__["__init__"])
        classes[key] = {
            "module": cls.__module__,
            "qualname": cls.__qualname__,
            "paths": sorted(set(found) | {defined}),
            "python_init": python_init,
            # a hand-written __init__ that only forwards its parameters to a registry function
            "forwards": forwarding(cls.__dict__["__init__"])[0] if python_init else None,
            "late": _late_members(cls, cls.__module__.split(".")[0]),
            "bases": [f"{b.__module__}.{b.__qualname__}" for b in cls.__mro__[1:]],
            "hashable": cls.__hash__ is not None,
            "python_eq": any(
                "__eq__" in b.__dict__ for b in cls.__mro__[:-1] if not b.__module__.startswith("tvm_ffi")
            ),
            # names its bases define in Python (not registry fields): those declarations win
            "inherited": sorted(
                {
                    n
                    for base in cls.__mro__[1:]
                    for n, v in base.__dict__.items()
                    if type(v).__name__ != "FFIProperty" and not n.startswith("__")
                }
                # the names only: inspect.get_annotations would evaluate them (3.14), and fail on forward references
                | {n for base in cls.__mro__[1:] for n in base.__dict__.get("__annotations__", {})}  # noqa: RUF063
            ),
        }
    runtime_names = {m: _runtime_names(sys.modules[m]) for m in ok if m in sys.modules}
    packed = {m: names for m in ok if m in sys.modules and (names := _packed_functions(sys.modules[m]))}
    private_meta = {m: names for m in ok if m in sys.modules and (names := _private_metaclass(sys.modules[m]))}
    replaced = {m: names for m in ok if m in sys.modules and (names := _replaced_classes(sys.modules[m]))}
    none_names = {
        m: names
        for m in ok
        if m in sys.modules and (names := sorted(a for a, v in _namespace(sys.modules[m]).items() if v is None))
    }
    aliases = {m: a for m in ok if m in sys.modules and (a := _renamed_imports(sys.modules[m]))}
    # each module's __all__ as it is at run time (often built by code a source reader cannot follow)
    all_names = {m: listed for m in ok if m in sys.modules and (listed := _runtime_all(sys.modules[m])) is not None}
    ffi_api: dict[str, list[dict[str, Any]]] = {}
    all_funcs = tvm_ffi.registry.list_global_func_names()
    for namespace, target in api_calls:
        if target not in covered:
            continue
        prefix = namespace[4:] if namespace.startswith("tvm.") else namespace
        for gname in sorted(all_funcs):
            if not gname.startswith(prefix):
                continue
            short = gname[len(prefix) + 1 :]
            if "." in short or not short:
                continue
            md = R.global_function_metadata(gname)
            ffi_api.setdefault(target, []).append(
                {
                    "name": short,
                    "global": gname,
                    "doc": str(md.get("doc", "") or ""),
                    "schema": md.get("type_schema"),
                }
            )
    return {
        "package": package,
        "distribution": dist,
        "version": dist_version,
        "modules": {m: files[m] for m in ok},
        "failed": failed,
        "submodules": bound,
        "runtime_names": runtime_names,
        "aliases": aliases,
        "all_names": all_names,
        "packed": packed,
        "private_metaclass": private_meta,
        "replaced_classes": replaced,
        "none_names": none_names,
        "types": types,
        "classes": classes,
        "ffi_api": ffi_api,
        "exclude_unmatched": unmatched,
    }


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tvmffi_gen.stubs.collect")
    parser.add_argument("package")
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--preload", action="append", default=[])
    args = parser.parse_args(argv)
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what the package prints while importing goes to stderr
    sys.stdout = sys.stderr
    try:
        data = collect(args.package, args.exclude, args.preload)
    except Exception as exc:  # noqa: BLE001 - reported to the parent as text on stderr
        sys.stderr.write(f"{exc}\n" if isinstance(exc, CollectError) else f"{type(exc).__name__}: {exc}\n")
        sys.stderr.flush()
        os._exit(3)
    out.write(json.dumps(data, sort_keys=True))
    out.flush()
    sys.stderr.flush()
    os._exit(0)  # skip the package's atexit handlers and thread joins


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
