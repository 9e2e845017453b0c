"""Command line: ``tvmffi-gen LIB -o OUT`` (also ``python -m tvmffi_gen``)."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from .. import __version__
from ..model.builder import build_model
from ..model.package import GenerationError, default_package_name
from ..model.prefixes import kept_by_prefixes
from ..model.uses import UsedPackageError
from ..registry.snapshot import Snapshot, SnapshotError
from ..registry.snapshot_process import nothing_registered, take_snapshot
from ..render.package import render_package
from ..text.wording import counted
from ..write.api_changes import change_summary
from ..write.project import (
    ProjectError,
    ProjectPlan,
    check_project_folder,
    plan_project,
    project_package_name,
    runtime_requirement,
    write_project,
)
from ..write.writer import OutputError, Plan, apply_plan, plan_output
from .options import Options, option_conflict, parser
from .package_name import check_package_name

__all__ = ["main", "generate", "package_name", "cmake_dir", "default_library", "library_shipped_with", "INTERRUPTED"]

#: The exit status of a run stopped by Ctrl-C (SIGINT): 128 + the signal's number, as shells report it.
INTERRUPTED = 128 + int(signal.SIGINT)


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
    from ..registry.runtime_files import platform_module

    plat = platform or platform_module().CURRENT
    names = plat.library_names("tvm_ffi_testing")
    found, _tried = plat.find_library("tvm_ffi_testing", [str(d) for d in _package_lib_dirs("tvm_ffi")])
    if found is None:
        raise SnapshotError(
            f"no library given, and {' or '.join(names)} of apache-tvm-ffi (which ships"
            " the default) was not found: pip install apache-tvm-ffi"
        )
    return str(found)


def cmake_dir() -> Path:
    """The folder of ``tvmffi_gen-config.cmake`` (``find_package(tvmffi_gen CONFIG)``), which the
    build integration's CMake functions are in: ``tvmffi_gen/share/cmake/tvmffi_gen``."""
    return Path(__file__).resolve().parents[1] / "share" / "cmake" / "tvmffi_gen"


def _tvm_ffi_libdir() -> str | None:
    dirs = _package_lib_dirs("tvm_ffi")
    return str(dirs[0]) if dirs else None


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


def package_name(options: Options, package_dir: Path) -> str:
    """The package's import name: ``--name``, else its folder's name."""
    return options.name or default_package_name(str(package_dir))


def generate(
    options: Options,
    package_dir: Path | None = None,
    snapshot: Snapshot | None = None,
    notes: list[str] | None = None,
) -> tuple[Snapshot, dict[str, str], list[str]]:
    """Snapshot ``options.library`` (unless ``snapshot`` is given), model and render the package
    written into ``package_dir`` (default: ``-o``); returns (snapshot, files, warnings).

    ``notes``, when given, gets the model's notes to the library's author."""
    from ..model.uses import read_used_package

    used = [read_used_package(u) for u in options.use]
    if snapshot is None:
        assert options.library is not None
        snapshot = take_snapshot(options.library, list(options.preload), timeout=options.timeout)
    if package_dir is None:
        assert options.output is not None, "generate() needs -o or a package folder"
        package_dir = Path(options.output)
    prefixes = list(options.prefix)
    warnings: list[str] = []
    model = build_model(
        snapshot,
        package_name(options, package_dir),
        prefixes,
        warn=warnings.append,
        used=used,
        bundled=options.bundle,
        record_absolute=not options.portable,
    )
    # (the exported functions, kept whatever the prefixes, do not count as matching one)
    registered = [t.type_key for t in snapshot.types] + [f.name for f in snapshot.functions if not f.exported]
    unmatched = [p for p in prefixes if not any(kept_by_prefixes(n, [p]) for n in registered)]
    if prefixes and len(unmatched) == len(prefixes):
        raise GenerationError(
            f"{snapshot.library_path}: the library registers nothing to generate under {', '.join(unmatched)}"
        )
    warnings += [f"--prefix {p}: the library registers nothing under it" for p in unmatched]
    if not model.classes and not any(m.functions for m in model.modules.values()):
        raise GenerationError(nothing_registered(snapshot))
    files = render_package(model, _tvm_ffi_libdir(), package_dir)
    if notes is not None:
        notes += model.notes
    return snapshot, files, warnings


def _verify(root: Path, which: str, log: _Log) -> int:
    """Run the requested checkers over the written package; 1 if any reports an error."""
    from ..verify.checkers import find_pyright, run_checker

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


def _plan_with_edit_policy(args: Options, target: _Target, files: dict[str, str], log: _Log) -> Plan:
    """``plan_output`` under the run's choice for edited generated members (refused unless
    --keep-edits or --overwrite-edits), listing each edit it kept or replaced."""
    policy = "keep" if args.keep_edits else "overwrite" if args.overwrite_edits else "refuse"
    plan = plan_output(
        target.package_dir,
        files,
        f"tvmffi-gen {__version__}",
        force=args.force,
        edit_policy=policy,
        package=target.package,
    )
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


def _main_stubs(args: Options, log: _Log) -> int:
    from ..stubs import StubsError, run_stubs

    assert args.stubs_for is not None and args.output is not None
    try:
        status = run_stubs(
            args.stubs_for,
            args.output,
            list(args.exclude),
            list(args.preload),
            args.project,
            args.check,
            args.timeout,
            log.info,
            log.warn,
            force=args.force,
            use_cache=not args.no_cache,
            progress=not args.quiet,
        )
    except StubsError as exc:
        log.error(str(exc))
        if exc.detail:
            log.debug(f"what the importing process printed:\n{exc.detail.rstrip()}")
        return 2
    if args.check and status == 0:
        log.info(f"{args.output}: the stubs of {args.stubs_for} are up to date")
    return status


@dataclass
class _Target:
    """Where a package run writes: the package folder (``package_dir``) of the package named
    ``package``, and with ``--project`` the project folder holding it, with the project's
    requirement on the runtime."""

    package: str
    package_dir: Path
    project_dir: Path | None
    requirement: str


@dataclass
class _RunPlan:
    """What a package run decided before writing anything: the registry it read, the files of the
    package and of its project, and how they differ from what is on disk."""

    target: _Target
    snapshot: Snapshot
    files: dict[str, str]
    output: Plan
    project: ProjectPlan | None

    @property
    def has_changes(self) -> bool:
        project = self.project
        return self.output.has_changes or (project is not None and bool(project.changed or project.removed))


def _target(args: Options) -> _Target:
    """The folders ``-o``, ``--name`` and ``--project`` name, once the package name is checked."""
    assert args.output is not None
    project_dir = Path(args.output) if args.project else None
    requirement = runtime_requirement(args.runtime_requirement)
    output = Path(args.output)
    if project_dir is not None:
        output = project_dir / (args.name or project_package_name(project_dir))
    package = package_name(args, output)
    check_package_name(package, args.name is not None or args.project, output, args.force)
    if args.name and output.name != args.name.split(".")[-1]:
        raise GenerationError(
            f"--name {args.name} -o {output}: a package is imported by its folder's name, so its"
            f" folder must be named {args.name.split('.')[-1]} (or give --project, whose package"
            " folder takes --name)"
        )
    return _Target(package, output, project_dir, requirement)


def _registry_source(args: Options, log: _Log) -> tuple[str | None, Snapshot | None]:
    """The library to load, or the snapshot ``--from-snapshot`` names (one of the two)."""
    library = args.library
    if args.from_snapshot:
        if library:
            raise GenerationError("give either a library or --from-snapshot, not both")
        try:
            text = Path(args.from_snapshot).read_text(encoding="utf-8")
        except OSError as exc:
            raise SnapshotError(f"--from-snapshot {args.from_snapshot}: {exc.strerror}") from None
        snapshot = Snapshot.from_json(text, args.from_snapshot)
        if args.bundle and not os.path.isfile(snapshot.library_path):
            raise GenerationError(f"--bundle: the snapshot's library {snapshot.library_path} does not exist")
        return None, snapshot
    if library is None:
        library = default_library()
        log.info(f"no library given: using the embedded default {library}")
    return library, None


def _plan_run(args: Options, log: _Log) -> _RunPlan:
    """Read the registry, render the package and decide every file to write: nothing is written
    here but ``--save-snapshot``'s file."""
    target = _target(args)
    if target.project_dir is not None:
        check_project_folder(target.project_dir, target.package_dir, args.force)
    library, snapshot = _registry_source(args, log)
    log.debug(f"reading the registry of {library or args.from_snapshot}")
    notes: list[str] = []
    options = dataclasses.replace(args, library=library)
    snapshot, files, warnings = generate(options, target.package_dir, snapshot, notes)
    for w in warnings:
        log.warn(w)
    if args.save_snapshot:
        _save_snapshot(snapshot, args.save_snapshot)
    project = None
    if target.project_dir is not None:
        project = plan_project(
            target.project_dir,
            target.package_dir.name,
            args.project_version or "0.1.0",
            snapshot.library,
            args.bundle,
            force=args.force,
            requirement=target.requirement,
        )
    if args.bundle:
        files[snapshot.library] = ""  # placeholder: copied by _apply_run, listed in the manifest
    plan = _plan_with_edit_policy(args, target, files, log)
    for note in notes:  # for the author of a library whose package is written: not on a refusal
        log.info(f"note: {note}")
    if args.bundle:
        plan.changed = [c for c in plan.changed if c != snapshot.library]
    return _RunPlan(target, snapshot, files, plan, project)


def _apply_run(run: _RunPlan, bundle: bool) -> None:
    """Write what ``_plan_run`` decided: the package, the bundled library, the project files."""
    apply_plan(run.output)
    if bundle:
        shutil.copy2(run.snapshot.library_path, run.target.package_dir / run.snapshot.library)
    if run.project is not None:
        write_project(run.project)


def _report_merges(run: _RunPlan, log: _Log) -> None:
    """Say what became of the user's code in the package: members kept, files left in place."""
    root = run.target.package_dir
    for rel, kept in sorted(run.output.merged.items()):
        if kept:
            log.info(f"kept {kept} member(s) you added in {root / rel}")
    for rel in run.output.orphaned:
        log.warn(f"{root / rel} is no longer generated, but you edited it: left in place")
    for path in run.project.kept if run.project is not None else []:
        log.info(f"kept your {path} (its marker line removed): not regenerated")


def _report_api(run: _RunPlan, log: _Log) -> None:
    """What changed in the package's API since the last run, and the user code that names
    something removed (each said with its file and line)."""
    changes = run.output.api_changes
    if changes is None:
        return  # a first run, or the last run's manifest recorded no API
    for line in change_summary(changes, None if log.verbose else 20):
        log.info(line)
    for use in run.output.stale_uses:
        log.warn(use.describe(str(run.target.package_dir / use.path)))


def _report_check(run: _RunPlan, log: _Log) -> int:
    """``--check``: list the files the run would write or remove; 1 if any."""
    root = run.target.package_dir
    for rel in run.output.changed:
        print(f"would write {root / rel}")
    for rel in run.output.removed:
        print(f"would remove {root / rel}")
    for path in run.project.changed if run.project is not None else []:
        print(f"would write {path}")
    for path in run.project.removed if run.project is not None else []:
        print(f"would remove {path}")
    if run.has_changes:
        return 1
    log.info(f"{root}: up to date")
    return 0


def _report_written(run: _RunPlan, prefixes: list[str], log: _Log, elapsed: float) -> None:
    """The line a run that wrote its output ends with: what it wrote, and how long it took."""
    n_types = sum(1 for t in run.snapshot.types if kept_by_prefixes(t.type_key, prefixes))
    n_modules = sum(1 for f in run.files if f.endswith(".py"))
    log.info(
        f"wrote {run.target.package_dir} ({counted(n_types, 'type')}, {counted(n_modules, 'module')};"
        f" {counted(_files_changed(run.output, run.project), 'file')} changed) in {elapsed:.2f} s"
    )


def _main_package(args: Options, log: _Log) -> int:
    """Generate a package (plan, then write unless ``--check``, then report and verify)."""
    start = time.perf_counter()
    try:
        run = _plan_run(args, log)
        _report_merges(run, log)
        _report_api(run, log)
        if args.check:
            return _report_check(run, log)
        _apply_run(run, args.bundle)
        _report_written(run, list(args.prefix), log, time.perf_counter() - start)
        if args.verify:
            return _verify(run.target.package_dir, args.verify, log)
        return 0
    except (SnapshotError, GenerationError, OutputError, ProjectError, UsedPackageError) as exc:
        log.error(str(exc))
        if isinstance(exc, SnapshotError) and exc.detail:
            log.debug(f"what the loading process printed:\n{exc.detail.rstrip()}")
        return 2


def main(argv: list[str] | None = None) -> int:
    """Run ``tvmffi-gen`` with ``argv`` (default: the process's); the exit status."""
    arg_parser = parser()
    args = Options.from_namespace(arg_parser.parse_args(argv))
    if args.cmakedir:
        print(cmake_dir())
        return 0
    conflict = option_conflict(args)
    if conflict is not None:
        print(f"tvmffi-gen: error: {conflict}", file=sys.stderr)
        return 2
    if args.list_exports is not None:
        from ..registry.list_exports import main_list_exports

        return main_list_exports(args.list_exports, args.timeout)
    if args.output is None:
        arg_parser.error("the following arguments are required: -o/--output")
    log = _Log(args.quiet, args.verbose)
    if args.stubs_for:
        return _main_stubs(args, log)
    return _main_package(args, log)


def run() -> NoReturn:
    """The ``tvmffi-gen`` command: ``main``, then the process ends without the interpreter
    freeing what it built, as mypy's command does (for tvm's stubs, every stub's syntax tree: its
    cost is in benchmarks/results_stubs.md). The exit handlers still run (a temporary folder left
    open is removed), and the output is flushed. Ctrl-C ends it with one line and status 130: every
    file is written whole or not at all (staged, then moved into place), so there is nothing
    to clean up but the temporary folders the exit handlers remove."""
    try:
        code = main()
    except SystemExit as exc:  # argparse's --help, --version and usage errors
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:  # Ctrl-C: the shell's status for SIGINT, and one line, not a traceback
        print("tvmffi-gen: interrupted", file=sys.stderr)
        code = INTERRUPTED
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):  # output lost (a full disk, a closed pipe): as Python reports it
        code = code or 120
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)
