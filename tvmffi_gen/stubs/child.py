"""What a running package tells about itself: run as ``python -m tvmffi_gen.stubs.child PKG``.

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

import os
import sys
from collections.abc import Callable
from types import ModuleType

from ..registry.snapshot import TypeSnap
from .collected import ApiFunction, Collection, ModuleFacts, RegisteredClass
from .collector import rare_full_collections
from .importing import (
    CollectError,
    excluded,
    import_all,
    import_failure,
    module_files,
    quick_getmodule,
    unmatched_excludes,
)
from .reach import nothing_can_register, package_folders
from .running import module_facts, registered_class, world_classes
from .source_facts import registered_type_info

__all__ = ["collect"]


def collect(package: str, patterns: list[str], preload: list[str]) -> Collection:
    """Import ``package`` and its submodules and read what the running process knows."""
    import ctypes

    for lib in preload:
        ctypes.CDLL(os.path.abspath(lib), mode=ctypes.RTLD_GLOBAL)
    api_calls = _record_init_ffi_api()
    from tvmffi_runtime import reflection as R

    before = set(R.list_type_keys())
    if not preload:
        _refuse_when_nothing_can_register(package)
    files, roots = _package_files(package, patterns)
    bound: dict[str, list[str]] = {}
    original_getmodule = quick_getmodule()
    try:
        ok, failed = import_all(package, files, bound, roots)
    finally:
        import inspect

        inspect.getmodule = original_getmodule
    dist, dist_version = _distribution(package)
    types = _registered_types()
    modules = {
        m: module_facts(sys.modules[m], files[m], bound.get(m, [])) if m in sys.modules else ModuleFacts(files[m])
        for m in ok
    }
    return Collection(
        package=package,
        distribution=dist,
        version=dist_version,
        modules=modules,
        failed=failed,
        types=types,
        classes=_registered_classes(types, set(ok)),
        types_added=sorted(set(types) - before),
        ffi_api=_ffi_api_functions(api_calls, set(ok)),
        exclude_unmatched=unmatched_excludes(package, roots, patterns),
        world_classes=world_classes(),
    )


def _record_init_ffi_api() -> list[tuple[str, str]]:
    """Record every ``tvm_ffi.init_ffi_api(prefix, module)`` call from now on (prefix, module)."""
    import tvm_ffi

    api_calls: list[tuple[str, str]] = []
    original: Callable[[str, str | None], None] = tvm_ffi.init_ffi_api

    def recording_init_ffi_api(namespace: str, target_module_name: str | None = None) -> None:
        api_calls.append((namespace, target_module_name or namespace))
        original(namespace, target_module_name)

    tvm_ffi.init_ffi_api = recording_init_ffi_api
    tvm_ffi.registry.init_ffi_api = recording_init_ffi_api
    return api_calls


def _package_files(package: str, patterns: list[str]) -> tuple[dict[str, str], list[str]]:
    """Import the package itself; its modules on disk (without the excluded ones) and its folders."""
    import importlib

    roots = _package_folders(package)
    try:
        top = importlib.import_module(package)
    except BaseException as exc:  # noqa: BLE001
        # one line: the parent shows the child's last line of stderr
        raise CollectError(f"{package} does not import: {import_failure(exc, roots)}") from None
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
    return files, roots


def _package_folders(package: str) -> list[str]:
    """The package's folders, found without importing it (its parent package is imported for a
    dotted name); none when it is not found (the import then says why)."""
    try:
        return package_folders(package)
    except BaseException:  # noqa: BLE001 - a parent package that fails: the import below says so
        return []


def _refuse_when_nothing_can_register(package: str) -> None:
    """Refuse before importing anything when no module of the package can register a type or
    fill an ``_ffi_api`` module (``reach.py``): importing a large package takes minutes."""
    roots = _package_folders(package)
    reason = nothing_can_register(roots) if roots else None
    if reason is not None:
        raise CollectError(
            f"{reason}: it can register no TVM FFI type and fill no _ffi_api module, so there is"
            f" nothing to stub beyond its Python (mypy's stubgen writes stubs of its Python: stubgen -p {package}"
            " -o OUT)"
        )


def _distribution(package: str) -> tuple[str, str]:
    """The installed distribution providing ``package`` and its version (``package`` and "" when
    not known)."""
    try:
        from importlib.metadata import packages_distributions, version

        dists = packages_distributions().get(package, [])
        dist = dists[0] if dists else package
        return dist, version(dist)
    except Exception:  # noqa: BLE001
        return package, ""


def _registered_types() -> dict[str, TypeSnap]:
    """Every type key the registry has now, with what it says about it."""
    from tvmffi_runtime import reflection as R

    from ..registry.facts import read_type

    out: dict[str, TypeSnap] = {}
    for key in sorted(R.list_type_keys()):
        try:
            out[key] = read_type(key)
        except Exception:  # noqa: BLE001 - a type the registry cannot describe is stubbed without members
            out[key] = TypeSnap(type_key=key, ancestors=[])
    return out


def _registered_classes(types: dict[str, TypeSnap], covered: set[str]) -> dict[str, RegisteredClass]:
    """The Python class registered for each type key that has one, with every path the covered
    modules (and ``tvm_ffi``'s) bind it under."""
    paths: dict[int, list[str]] = {}
    loaded: dict[str, ModuleType | None] = dict(sys.modules)  # a failed import can leave None
    for mod_name, mod in sorted(loaded.items()):
        if mod is None or not (mod_name in covered or mod_name == "tvm_ffi" or mod_name.startswith("tvm_ffi.")):
            continue
        for attr, value in dict(vars(mod)).items():
            if isinstance(value, type) and "__tvm_ffi_type_info__" in value.__dict__:
                paths.setdefault(id(value), []).append(f"{mod_name}.{attr}")
    out: dict[str, RegisteredClass] = {}
    for key in sorted(types):
        info = registered_type_info(key)
        cls = info.type_cls if info is not None else None
        if cls is not None:
            out[key] = registered_class(cls, paths.get(id(cls), []))
    return out


def _ffi_api_functions(api_calls: list[tuple[str, str]], covered: set[str]) -> dict[str, list[ApiFunction]]:
    """Per ``_ffi_api`` module that imported, the functions ``init_ffi_api`` put there: every
    global function named ``prefix.name`` (no further dot), with its doc and schema."""
    import tvm_ffi

    from tvmffi_runtime import reflection as R

    out: dict[str, list[ApiFunction]] = {}
    all_funcs = sorted(tvm_ffi.registry.list_global_func_names())
    for namespace, target in api_calls:
        if target not in covered:
            continue
        prefix = namespace[4:] if namespace.startswith("tvm.") else namespace
        for gname in all_funcs:
            short = gname[len(prefix) + 1 :] if gname.startswith(prefix) else ""
            if "." in short or not short:
                continue
            md = R.global_function_metadata(gname)
            doc = str(md.get("doc", "") or "")
            out.setdefault(target, []).append(ApiFunction(short, gname, doc, md.get("type_schema")))
    return out


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tvmffi_gen.stubs.child")
    parser.add_argument("package")
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--preload", action="append", default=[])
    args = parser.parse_args(argv)
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what the package prints while importing goes to stderr
    sys.stdout = sys.stderr
    try:
        with rare_full_collections():
            data = collect(args.package, args.exclude, args.preload)
    except Exception as exc:  # noqa: BLE001 - reported to the parent as text on stderr
        sys.stderr.write(f"{exc}\n" if isinstance(exc, CollectError) else f"{type(exc).__name__}: {exc}\n")
        sys.stderr.flush()
        os._exit(3)
    out.write(data.to_json())
    out.flush()
    sys.stderr.flush()
    os._exit(0)  # skip the package's atexit handlers and thread joins


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
