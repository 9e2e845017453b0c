"""Command line: ``tvmffi-gen LIB -o OUT`` (also ``python -m tvmffi_gen``)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from . import __version__
from .build import build_model
from .model import GenerationError, default_package_name, validate_package_name
from .project import (
    ProjectError,
    ProjectPlan,
    plan_project,
    project_package_name,
    runtime_requirement,
    write_project,
)
from .render import render_package
from .snapshot import Snapshot, SnapshotError, take_snapshot
from .uses import UsedPackageError
from .wording import counted
from .writer import OutputError, Plan, apply_plan, plan_output

__all__ = ["main", "generate", "default_library", "library_shipped_with"]


def _package_lib_dirs(package: str) -> list[Path]:
    """The ``lib`` folders of an installed Python package, found without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(loc) / "lib" for loc in spec.submodule_search_locations]


def library_shipped_with(package: str, filename: str) -> Path | None:
    """``<package>/lib/<filename>`` of an installed Python package (as apache-tvm-ffi and
    apache-tvm ship their libraries); None if the package or file is absent."""
    return next((d / filename for d in _package_lib_dirs(package) if (d / filename).is_file()), None)


def default_library(platform: Any = None) -> str:
    """apache-tvm-ffi's testing library, named as on this platform (``libtvm_ffi_testing.so``,
    ``libtvm_ffi_testing.dylib``, ``tvm_ffi_testing.dll``): the embedded default."""
    from .runtime_files import platform_module

    plat = platform or platform_module().CURRENT
    names = plat.library_names("tvm_ffi_testing")
    found, _tried = plat.find_library("tvm_ffi_testing", [str(d) for d in _package_lib_dirs("tvm_ffi")])
    if found is None:
        raise SnapshotError(
            f"no library given, and {' or '.join(names)} of apache-tvm-ffi (which ships"
            " the default) was not found: pip install apache-tvm-ffi"
        )
    return str(found)


def _tvm_ffi_libdir() -> str | None:
    dirs = _package_lib_dirs("tvm_ffi")
    return str(dirs[0]) if dirs else None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tvmffi-gen",
        description="Generate a typed Python package for a library built on TVM FFI.",
    )
    p.add_argument(
        "library",
        nargs="?",
        help="shared library to load (default: apache-tvm-ffi's testing library,"
        " libtvm_ffi_testing.so / .dylib or tvm_ffi_testing.dll)",
    )
    p.add_argument(
        "-o",
        "--output",
        help="output package folder (with --project: the project folder holding it); required unless --list-exports",
    )
    p.add_argument("--name", help="package name (default: the output folder's name)")
    p.add_argument(
        "--prefix",
        action="append",
        default=[],
        metavar="NS",
        help="keep only this namespace (repeatable), e.g. --prefix testing",
    )
    p.add_argument(
        "--preload",
        action="append",
        default=[],
        metavar="LIB",
        help="load this library first (its registrations are not generated)",
    )
    p.add_argument(
        "--use",
        action="append",
        default=[],
        metavar="PKG",
        help="a package generated before for a --preload library: its classes become the"
        " bases and annotations of the types deriving from them (repeatable)",
    )
    p.add_argument("--bundle", action="store_true", help="copy the library into the package")
    p.add_argument("--check", action="store_true", help="write nothing; list files that would change; exit 1 if any")
    p.add_argument(
        "--verify",
        nargs="?",
        const="auto",
        choices=["auto", "mypy", "pyright", "both"],
        help="type-check the output as a user's project would: mypy --strict, and pyright "
        "strict when installed (auto, the default), or the checker(s) named; "
        "fail on any error",
    )
    p.add_argument(
        "--project",
        action="store_true",
        help="write an installable project: OUT/pyproject.toml beside the package OUT/NAME/",
    )
    p.add_argument(
        "--project-version", metavar="VERSION", help="version written into the project's pyproject.toml (default 0.1.0)"
    )
    p.add_argument(
        "--runtime-requirement",
        metavar="SPEC",
        help="with --project: the project's PEP 508 requirement on tvmffi-runtime, e.g. a"
        " direct reference 'tvmffi-runtime @ file:///path/to/tvmffi_runtime-....whl'"
        " (default: tvmffi-runtime>=0.1.0,<0.2)",
    )
    p.add_argument(
        "--portable",
        action="store_true",
        help="record no absolute paths (a library beside the package is found only relative to it)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="write into a non-empty folder not generated by tvmffi-gen, or under a name an"
        " importable module already has",
    )
    edits = p.add_mutually_exclusive_group()
    edits.add_argument(
        "--keep-edits",
        action="store_true",
        help="keep your edits to generated members instead of the newly generated ones",
    )
    edits.add_argument(
        "--overwrite-edits", action="store_true", help="replace your edits to generated members (each is listed)"
    )
    p.add_argument("--from-snapshot", metavar="FILE", help="generate from a saved snapshot instead of a library")
    p.add_argument("--save-snapshot", metavar="FILE", help="also save the registry snapshot as JSON")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the library to load")
    p.add_argument(
        "--list-exports",
        metavar="LIB",
        help="print the TVM FFI functions an ELF, Mach-O or PE library exports (any platform's,"
        " read without loading it here), then exit",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    p.add_argument("-v", "--verbose", action="store_true", help="print each step and warning")
    stubs = p.add_argument_group("stubs for an existing package")
    stubs.add_argument(
        "--stubs-for",
        metavar="PKG",
        help="write PEP 561 stubs OUT/PKG-stubs for an installed package built on TVM FFI"
        " (tvm, tvm_ffi) instead of generating a package from a library",
    )
    stubs.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="with --stubs-for: skip the modules matching this glob and their subtrees",
    )
    stubs.add_argument(
        "--no-cache",
        action="store_true",
        help="with --stubs-for: neither read nor write the cache of stubgen's and libcst's results"
        " (kept in $TVMFFI_GEN_CACHE_DIR, else $XDG_CACHE_HOME/tvmffi-gen or ~/.cache/tvmffi-gen)",
    )
    p.add_argument("--version", action="version", version=f"tvmffi-gen {__version__}")
    return p


class _Log:
    def __init__(self, quiet: bool, verbose: bool) -> None:
        self.quiet = quiet
        self.verbose = verbose

    def info(self, msg: str) -> None:
        if not self.quiet:
            print(msg)

    def debug(self, msg: str) -> None:
        if self.verbose:
            print(msg)

    def warn(self, msg: str) -> None:
        if not self.quiet:
            print(f"warning: {msg}", file=sys.stderr)

    def error(self, msg: str) -> None:
        print(f"tvmffi-gen: error: {msg}", file=sys.stderr)


def generate(
    library: str | None,
    output: str,
    name: str | None = None,
    prefixes: list[str] | None = None,
    preload: list[str] | None = None,
    bundle: bool = False,
    snapshot: Snapshot | None = None,
    timeout: float = 120.0,
    portable: bool = False,
    use: list[str] | None = None,
) -> tuple[Snapshot, dict[str, str], list[str]]:
    """Snapshot (unless given), model and render; returns (snapshot, files, warnings).

    ``use`` names packages generated before for libraries this one extends (``--use``)."""
    from .uses import read_used_package

    used = [read_used_package(u) for u in use or []]
    if snapshot is None:
        assert library is not None
        snapshot = take_snapshot(library, preload or [], timeout=timeout)
    pkg_name = name or default_package_name(output)
    warnings: list[str] = []
    model = build_model(snapshot, pkg_name, prefixes or [], warn=warnings.append, used=used)
    model.bundled = bundle
    model.record_absolute = not portable
    if not model.classes and not any(m.functions for m in model.modules.values()):
        what = f" under {', '.join(prefixes)}" if prefixes else ""
        raise GenerationError(f"{snapshot.library}: the library registers nothing to generate{what}")
    files = render_package(model, _tvm_ffi_libdir(), Path(output))
    return snapshot, files, warnings


def _verify(root: Path, which: str, log: _Log) -> int:
    """Run the requested checkers over the written package; 1 if any reports an error."""
    from .verify import find_pyright, run_checker

    if which == "auto":
        checkers = ["mypy", "pyright"] if find_pyright() else ["mypy"]
        if len(checkers) == 1:
            log.info("pyright is not installed (pip install basedpyright): checked with mypy only")
    else:
        checkers = ["mypy", "pyright"] if which == "both" else [which]
    failed = False
    for checker in checkers:
        label = "mypy --strict" if checker == "mypy" else "pyright strict"
        errors, report = run_checker(checker, root)
        if errors:
            print(report, file=sys.stderr)
            log.error(f"{label} found {errors} error(s) in {root}")
            failed = True
        else:
            log.info(f"{label}: no errors")
    return 1 if failed else 0


def check_package_name(name: str, explicit: bool, output: Path, force: bool) -> None:
    """Refuse a package name Python cannot import, or one that shadows a module already
    importable here (``numpy``, ``tvmffi_runtime``) unless ``force``: GenerationError says why."""
    if not explicit and not name.isidentifier():
        raise GenerationError(
            f"-o {output}: the folder's name {name!r} is not a valid package name (a Python"
            " identifier, such as mypkg); name the folder like a package, or pass --name"
        )
    validate_package_name(name)
    top = name.split(".")[0]
    where = _importable_elsewhere(top, output)
    if where is not None and not force:
        raise GenerationError(
            f"package name {top!r} is already an importable module ({where}): the generated package"
            " would shadow it or be shadowed by it; choose another name (--name), or pass --force"
        )


def _importable_elsewhere(top: str, output: Path) -> str | None:
    """Where the top-level module ``top`` is found, unless it is this output folder, another
    package tvmffi-gen wrote, or a namespace package (a bare folder, which any package beats)."""
    import importlib.util

    from .writer import MANIFEST

    if top in sys.builtin_module_names:
        return "built in"
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin in (None, "namespace"):
        return None
    if not spec.has_location:
        return spec.origin  # "frozen", "built-in"
    found = Path(spec.origin).resolve()
    folder = found.parent if found.name == "__init__.py" else found
    if folder == output.resolve() or (folder.is_dir() and (folder / MANIFEST).is_file()):
        return None
    return str(found)


def _plan_with_edit_policy(args: argparse.Namespace, root: Path, files: dict[str, str], log: _Log) -> Plan:
    """``plan_output`` under the run's choice for edited generated members (refused unless
    --keep-edits or --overwrite-edits), listing each edit it kept or replaced."""
    policy = "keep" if args.keep_edits else "overwrite" if args.overwrite_edits else "refuse"
    package = args.name or default_package_name(str(root))
    plan = plan_output(root, files, f"tvmffi-gen {__version__}", force=args.force, edit_policy=policy, package=package)
    verb = "kept your edited" if policy == "keep" else "replaced your edits to the generated"
    for path, what in plan.edits:
        log.warn(f"{path}: {verb} {what}")
    return plan


def _save_snapshot(snapshot: Snapshot, path: str) -> None:
    """Write the snapshot's JSON to ``path`` (``--save-snapshot``); GenerationError naming it if not."""
    try:
        Path(path).write_text(snapshot.to_json(), encoding="utf-8")
    except OSError as exc:
        raise GenerationError(f"--save-snapshot {path}: {exc.strerror or exc}") from None


def _files_changed(plan: Plan, project: ProjectPlan | None) -> int:
    """How many files the run wrote or removed: the package's and the project's."""
    count = len(plan.changed) + len(plan.removed)
    if project is not None:
        count += len(project.changed) + len(project.removed)
    return count


def _main_stubs(args: argparse.Namespace, log: _Log) -> int:
    from .stubs import StubsError, run_stubs

    if args.library or args.from_snapshot:
        log.error("--stubs-for PKG takes no library or --from-snapshot")
        return 2
    try:
        return run_stubs(
            args.stubs_for,
            args.output,
            args.exclude,
            args.preload,
            args.project,
            args.check,
            args.timeout,
            log.info,
            log.warn,
            force=args.force,
            use_cache=not args.no_cache,
        )
    except StubsError as exc:
        log.error(str(exc))
        if exc.detail:
            log.debug(f"what the importing process printed:\n{exc.detail.rstrip()}")
        return 2


# Options that only one kind of run reads: giving one to another kind is refused, not ignored.
_PACKAGE_ONLY = (
    "--name",
    "--prefix",
    "--use",
    "--bundle",
    "--portable",
    "--verify",
    "--keep-edits",
    "--overwrite-edits",
    "--from-snapshot",
    "--save-snapshot",
    "--project-version",
    "--runtime-requirement",
)
_PROJECT_ONLY = ("--project-version", "--runtime-requirement")


def _given(args: argparse.Namespace, option: str) -> bool:
    """Whether ``option`` was given (its value differs from the parser's default)."""
    value = getattr(args, option.lstrip("-").replace("-", "_"))
    return value not in (None, False, [])


def _option_conflict(args: argparse.Namespace) -> str | None:
    """The options of this command line that the run would not read, said as an error, or None."""
    if args.timeout <= 0:
        return f"--timeout {args.timeout:g}: give the seconds to wait, a number above 0"
    if args.list_exports is not None:
        extra = [
            o
            for o, value in (("-o", args.output), ("--stubs-for", args.stubs_for), ("--project", args.project))
            if value
        ]
        if extra:
            return f"--list-exports LIB reads one library and writes nothing: {', '.join(extra)} does not apply"
        return None
    if args.stubs_for:
        extra = [o for o in _PACKAGE_ONLY if _given(args, o)]
        if extra:
            return f"--stubs-for writes stubs, not a package: {', '.join(extra)} does not apply to it"
        return None
    if args.exclude:
        return "--exclude chooses the modules of --stubs-for PKG: give --stubs-for too"
    if args.no_cache:
        return "--no-cache is for the cache of --stubs-for PKG: give --stubs-for too"
    if not args.project:
        extra = [o for o in _PROJECT_ONLY if _given(args, o)]
        if extra:
            what = "they are" if len(extra) > 1 else "it is"
            return f"{', '.join(extra)}: {what} for --project's pyproject.toml: give --project too"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    conflict = _option_conflict(args)
    if conflict is not None:
        print(f"tvmffi-gen: error: {conflict}", file=sys.stderr)
        return 2
    if args.list_exports is not None:
        from .list_exports import main_list_exports

        return main_list_exports(args.list_exports, args.timeout)
    if args.output is None:
        parser.error("the following arguments are required: -o/--output")
    log = _Log(args.quiet, args.verbose)
    if args.stubs_for:
        return _main_stubs(args, log)
    start = time.perf_counter()
    try:
        # with --project, OUT is the project folder and the package OUT/NAME inside it
        project_dir = Path(args.output) if args.project else None
        requirement = runtime_requirement(args.runtime_requirement)
        output = args.output
        if project_dir is not None:
            output = str(project_dir / (args.name or project_package_name(project_dir)))
        check_package_name(
            args.name or default_package_name(output),
            args.name is not None or args.project,
            Path(output),
            args.force,
        )
        if args.name and Path(output).name != args.name.split(".")[-1]:
            raise GenerationError(
                f"--name {args.name} -o {output}: a package is imported by its folder's name, so its"
                f" folder must be named {args.name.split('.')[-1]} (or give --project, whose package"
                " folder takes --name)"
            )
        snapshot = None
        library = args.library
        if args.from_snapshot:
            if library:
                raise GenerationError("give either a library or --from-snapshot, not both")
            try:
                text = Path(args.from_snapshot).read_text(encoding="utf-8")
            except OSError as exc:
                raise SnapshotError(f"--from-snapshot {args.from_snapshot}: {exc.strerror}") from None
            snapshot = Snapshot.from_json(text, args.from_snapshot)
        elif library is None:
            library = default_library()
            log.info(f"no library given: using the embedded default {library}")
        if args.bundle and snapshot is not None and not os.path.isfile(snapshot.library_path):
            raise GenerationError(f"--bundle: the snapshot's library {snapshot.library_path} does not exist")
        log.debug(f"reading the registry of {library or args.from_snapshot}")
        snapshot, files, warnings = generate(
            library,
            output,
            args.name,
            args.prefix,
            args.preload,
            args.bundle,
            snapshot,
            args.timeout,
            args.portable,
            args.use,
        )
        for w in warnings:
            log.warn(w)
        if args.save_snapshot:
            _save_snapshot(snapshot, args.save_snapshot)
        root = Path(output)
        project = None
        if project_dir is not None:
            project = plan_project(
                project_dir,
                root.name,
                args.project_version or "0.1.0",
                snapshot.library,
                args.bundle,
                force=args.force,
                requirement=requirement,
            )
        if args.bundle:
            files[snapshot.library] = ""  # placeholder: copied below, listed in the manifest
        plan = _plan_with_edit_policy(args, root, files, log)
        if args.bundle:
            plan.changed = [c for c in plan.changed if c != snapshot.library]
        for rel, kept in sorted(plan.merged.items()):
            if kept:
                log.info(f"kept {kept} member(s) you added in {root / rel}")
        for rel in plan.orphaned:
            log.warn(f"{root / rel} is no longer generated, but you edited it: left in place")
        if args.check:
            for rel in plan.changed:
                print(f"would write {root / rel}")
            for rel in plan.removed:
                print(f"would remove {root / rel}")
            for path in project.changed if project is not None else []:
                print(f"would write {path}")
            for path in project.removed if project is not None else []:
                print(f"would remove {path}")
            if plan.has_changes or (project is not None and (project.changed or project.removed)):
                return 1
            log.info(f"{root}: up to date")
            return 0
        apply_plan(plan)
        if args.bundle:
            shutil.copy2(snapshot.library_path, root / snapshot.library)
        if project is not None:
            write_project(project)
        n_types = sum(
            1
            for t in snapshot.types
            if not args.prefix or any(t.type_key.startswith(p.rstrip(".") + ".") for p in args.prefix)
        )
        elapsed = time.perf_counter() - start
        log.info(
            f"wrote {root} ({counted(n_types, 'type')},"
            f" {counted(sum(1 for f in files if f.endswith('.py')), 'module')};"
            f" {counted(_files_changed(plan, project), 'file')} changed) in {elapsed:.2f} s"
        )
        if args.verify:
            return _verify(root, args.verify, log)
        return 0
    except (SnapshotError, GenerationError, OutputError, ProjectError, UsedPackageError) as exc:
        log.error(str(exc))
        if isinstance(exc, SnapshotError) and exc.detail:
            log.debug(f"what the loading process printed:\n{exc.detail.rstrip()}")
        return 2
