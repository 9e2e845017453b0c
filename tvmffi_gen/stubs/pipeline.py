"""``--stubs-for PKG``: a PEP 561 stub-only package ``PKG-stubs`` for an existing Python package.

``build_stubs`` runs the steps in order, each in a module of its own, and lays the result out as
files (with the stubtest allowlist, ``allowlist.py``, and with ``--project`` the project files,
``project.py``):

1. ``child_run.take_collection`` imports PKG in a child process (``child.py``: modules found
   and imported by ``importing.py``, running objects read by ``running.py`` and
   ``source_facts.py``, the registry by ``registry_facts.read_type``) and gets back what only the
   running process knows, as a ``collected.Collection``: which submodules import, the registry's
   types (``snapshot.TypeSnap``) with the Python class registered for each, what each module
   binds at run time, and the ``_ffi_api`` modules ``tvm_ffi.init_ffi_api`` filled.
2. ``stubgen.PythonStubs`` runs mypy's stubgen over the modules that imported, reading their
   *sources* (``--no-import``): the package's own classes, functions, signatures and annotations
   as written. An extension module that ships its own ``.pyi`` keeps that file. It starts before
   step 1, over the modules found on disk, and its result is used when they cover what imported.
2b. ``oracle.InferredReturns`` runs basedpyright over the functions stubgen's stubs leave
   without a result, once steps 1 and 2 ended: what it infers from the sources (read by
   ``pyright_types.py``) types those results in step 3.
3. ``rewrite.augment`` adds, with libcst, what the registry knows and the sources do not say:
   fields, reflected methods, the ``__ffi_init__`` constructor of a class without a Python
   ``__init__``, members attached to a class after its body, and the ``_ffi_api`` functions, all
   typed from the registry's schemas (``typemap.Annotator``); a parameter or result the sources
   leave unannotated becomes ``Incomplete`` so the stubs pass ``mypy --strict``; every default is
   written ``...``. What the running package says beyond its sources is followed too: a module's
   run-time ``__all__`` (and the submodules it lists), registered classes' metaclass,
   read-only fields the sources declare as attributes (``frozen.frozen_attributes``), and what
   each name is at run time (``followed.py``). What a package's C++ converts beyond its schemas
   is data (``conversions.py``).
4. ``selfcheck.silence_own_errors`` runs ``mypy --strict`` over the result and gives what the
   package's own declarations still get reported for the narrowest ``# type: ignore[code]``;
   the stubtest allowlist is made meanwhile, in this process.

Steps 2, 2b, 3 and 4 and the allowlist go through the user cache (``cache.py``).
"""

from __future__ import annotations

import functools
import importlib.util
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from .cache import CachedInferredReturns, CachedPythonStubs, cached_allowlist, cached_augment, cached_mypy_errors
from .child_run import modules_on_disk, take_collection
from .collected import Collection
from .conversions import load_conversions
from .errors import StubsError
from .oracle import probe_targets
from .progress import Progress
from .project import render_project
from .pyright_types import World
from .selfcheck import Warmup, silence_own_errors
from .stubgen import python_stubs
from .stubtext import TYPED_IMPORTS, imported_modules

__all__ = ["StubResult", "build_stubs"]


@dataclass
class StubResult:
    files: dict[str, str]  # path relative to OUT -> text
    data: Collection
    warnings: list[str]


def build_stubs(
    package: str,
    exclude: list[str],
    preload: list[str],
    timeout: float,
    project: bool,
    progress: Progress | None = None,
) -> StubResult:
    """Everything ``--stubs-for`` writes, relative to OUT; ``progress`` shows the phases."""
    show = progress or Progress(enabled=False)
    conversions = load_conversions()  # a bad file is reported before the package is imported
    top = package.split(".")[0]
    data, stubs, warm, oracle = _import_and_stubgen(package, exclude, preload, timeout, show)
    try:
        inferred: dict[str, dict[str, str]] = {}
        if oracle is not None:
            show.show("waiting for basedpyright's inferred results")
            try:
                inferred = oracle.result()
            except BaseException:  # an interrupt: basedpyright's process ends with this one
                oracle.stop()
                raise
        show.show(f"rewriting {len(stubs)} stubs with the registry's members")
        final, warnings = cached_augment(data, stubs, conversions, inferred)
        if oracle is not None and oracle.error:
            warnings.append(f"results the sources leave unannotated stay Incomplete: {oracle.error}")
        root = f"{top}-stubs"
        files: dict[str, str] = {}
        for mod, text in final.items():
            parts = mod.split(".")
            is_pkg = data.modules[mod].is_package or (mod == package and len(parts) == 1)
            rel = "/".join([root, *parts[1:], "__init__.pyi"] if is_pkg else [root, *parts[1:-1], parts[-1] + ".pyi"])
            files[rel] = text
        # the self-check mostly waits for mypy's process: the allowlist, which does not depend on it,
        # is made meanwhile (the thread only adds ignores to ``files``, which the allowlist does not read)
        show.show(f"checking the stubs with mypy --strict ({len(files)} files)")
        check = functools.partial(cached_mypy_errors, warm=warm)
        with ThreadPoolExecutor(max_workers=1) as pool:
            checked = pool.submit(silence_own_errors, files, root, top, check)
            allowlist = cached_allowlist(data, stubs, final)
            try:
                _ = checked.result()
            except RuntimeError as exc:
                raise StubsError(f"{package}: {exc}") from None
    finally:
        if warm is not None:
            warm.close()
    files[f"{root}/py.typed"] = "partial\n" if data.failed else ""
    files["stubtest-allowlist.txt"] = allowlist
    if project:
        files.update(render_project(data, root, files))
    return StubResult(files, data, warnings)


def _import_and_stubgen(
    package: str, exclude: list[str], preload: list[str], timeout: float, show: Progress
) -> tuple[Collection, dict[str, str], Warmup | None, CachedInferredReturns | None]:
    """The package imported in a child process and stubgen over its modules on disk, at once, in
    two processes; once stubgen has run (not taken from the cache), a ``Warmup`` of what its stubs
    import, so that the self-check's mypy finds them read; once both ended, basedpyright started
    over the results the stubs leave unannotated (``oracle.py``, with the classes the import
    loaded). The import is waited for in this thread (an interrupt ends its child), stubgen in
    another; a failed import stops stubgen."""
    on_disk = modules_on_disk(package, exclude)
    early = CachedPythonStubs(on_disk) if on_disk else None
    show.show(f"importing {package}")
    with ThreadPoolExecutor(max_workers=1) as pool:
        stubbing = pool.submit(_stubgen_then_warmup, early, package) if early is not None else None
        try:
            data = take_collection(package, exclude, preload, timeout, show)
            if stubbing is not None and not stubbing.done():
                show.show(f"waiting for mypy's stubgen ({len(on_disk or {})} modules)")
            found, warm = stubbing.result() if stubbing is not None else ({}, None)
        except BaseException:
            if early is not None:
                early.stop()
            _close_started_warmup(stubbing)
            raise
    if early is not None and set(data.modules) <= set(early.modules):
        stubs = {m: t for m, t in found.items() if m in data.modules}
        return data, stubs, warm, _start_oracle(stubs, data, early.key)
    try:
        stubs = python_stubs({m: f.path for m, f in data.modules.items()})
        return data, stubs, warm, _start_oracle(stubs, data, None)
    except BaseException:
        if warm is not None:
            warm.close()
        raise


def _start_oracle(stubs: dict[str, str], data: Collection, sources_key: str | None) -> CachedInferredReturns | None:
    """basedpyright started over the results ``stubs`` leave unannotated (None when the package's
    top-level module is not found, or ``TVMFFI_GEN_NO_ORACLE`` is set)."""
    if os.environ.get("TVMFFI_GEN_NO_ORACLE", "") not in ("", "0"):
        return None
    top = data.package.split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin is None:
        return None
    where = spec.submodule_search_locations
    package_dir = next(iter(where)) if where else spec.origin
    decoys = World(data.world_classes).ambiguous()
    return CachedInferredReturns(probe_targets(stubs), package_dir, decoys, sources_key)


def _stubgen_then_warmup(early: CachedPythonStubs, package: str) -> tuple[dict[str, str], Warmup | None]:
    """stubgen's stubs of every module on disk; and, when stubgen ran rather than came from the
    cache (so the self-check will run too), a ``Warmup`` of what they import and of what the
    rewrite adds (none when ``TVMFFI_GEN_NO_WARMUP`` is set)."""
    stubs = early.result(set(early.modules))
    if early.from_cache or os.environ.get("TVMFFI_GEN_NO_WARMUP", "") not in ("", "0"):
        return stubs, None
    top = package.split(".")[0]
    reads = {m for text in stubs.values() for m in imported_modules(text)}
    reads |= {module for module, _ in TYPED_IMPORTS} | {"_typeshed"}
    try:
        return stubs, Warmup(m for m in reads if m.split(".")[0] != top)
    except OSError:  # no scratch folder for it: the check reads everything itself
        return stubs, None


def _close_started_warmup(stubbing: Future[tuple[dict[str, str], Warmup | None]] | None) -> None:
    """Wait for stubgen's thread (its process stopped) and close the warm-up it started, if any."""
    if stubbing is None or stubbing.exception() is not None:
        return
    _, warm = stubbing.result()
    if warm is not None:
        warm.close()
