"""One generation step inside a library author's build: what CMake's ``tvmffi_gen_add_package`` /
``tvmffi_gen_add_stubs`` and ``tvmffi_gen.integration.setuptools.build_ext`` run after the library is built.

A step reads the built library's registry (one child process), and regenerates only when what the
output is made from differs from the last run: the registry and exports, the package's Python
sources (stubs mode), the options and the generator's version. The library's bytes are not the
key: a build in a fresh isolated environment embeds that environment's header paths in them, so
they differ on every ``pip wheel`` even when nothing the generator reads did.

The generator runs as ``python -m tvmffi_gen`` into a work folder beside the stamp, and the files
it wrote are copied into the destination (the package folder that goes into the wheel); files a
previous run copied there and this one no longer writes are removed. On error the generator's own
message is printed and the step exits with its status, which fails the build.

Run as ``python -m tvmffi_gen.integration.step {package,stubs} ...`` (``--help`` lists the options).
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .. import __version__
from ..registry.snapshot import SnapshotError
from ..registry.snapshot_process import take_snapshot
from .options import add_step_arguments, build_options, generator_arguments, not_read_by

__all__ = [
    "Step",
    "authors_marker",
    "main",
    "python_sources",
    "run_step",
    "write_dist_info",
    "lacks_runtime",
    "declared_requirements",
]

Mode = Literal["package", "stubs"]


@dataclass(frozen=True)
class Step:
    """What to generate, from which library, and where the result goes."""

    mode: Mode
    #: the built library whose registry is read
    library: Path
    #: the package's import name (``shapes``, ``my.pkg``)
    package: str
    #: the package folder the output is copied into (the one going into the wheel)
    destination: Path
    #: where the step keeps its stamp and the generator's own output between builds
    work: Path
    #: the generator's options the build gave, as its command line (``--prefix ns``), from
    #: ``integration.options.generator_arguments``
    options: tuple[str, ...] = ()
    #: stubs mode: the folder holding the package (its parent), importable with the library
    sources: Path | None = None
    #: stubs mode: the package's Python source files, part of what the output is made from
    source_files: tuple[Path, ...] = field(default=())
    #: stubs mode: the folder ``sources`` is a staged copy of; the generator's messages name its
    #: files (the ones an author edits) instead of the copies
    authored: Path | None = None

    @property
    def stamp(self) -> Path:
        return self.work / "stamp.json"

    def generator_options(self) -> list[str]:
        """What the generator is told besides where it reads and writes: the package, the build's
        options and those every package step gives. The stamp's key holds exactly these
        (``step_key``), so no option reaches the generator without making a new key."""
        if self.mode == "stubs":
            return ["--stubs-for", self.package, *self.options]
        return ["--name", self.package, *self.options, "--bundle", "--portable", "--force"]

    def generator_args(self, snapshot_file: Path) -> list[str]:
        """The ``tvmffi-gen`` command line (after ``python -m tvmffi_gen``) of this step: where
        it reads and writes, then ``generator_options``. Not ``-q``: the generator's warnings
        (an exported function without type metadata, a module ``--stubs-for`` could not import)
        belong in the build's output."""
        out = self.work.resolve() / "out"
        if self.mode == "stubs":
            return [*self.generator_options(), "-o", str(out)]
        where = ["--from-snapshot", str(snapshot_file), "-o", str(out / self.package.split(".")[-1])]
        return [*where, *self.generator_options()]

    def generated_root(self) -> Path:
        """Where the generator writes the package's files (stubs: ``OUT/PKG-stubs/<subpackages>``)."""
        if self.mode == "stubs":
            top, *rest = self.package.split(".")
            return self.work / "out" / f"{top}-stubs" / Path(*rest)
        return self.work / "out" / self.package.split(".")[-1]


def step_key(step: Step, registry_json: str) -> str:
    """What the output is made from, hashed: equal keys mean regenerating would write the same."""
    digest = hashlib.sha256()
    head = [__version__, step.mode, str(step.destination), *step.generator_options()]
    digest.update(json.dumps(head).encode())
    digest.update(registry_json.encode())
    for path in sorted(step.source_files):
        digest.update(str(path.relative_to(step.sources) if step.sources else path).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _read_stamp(stamp: Path) -> tuple[str, list[str]]:
    """The key and the copied files a previous run recorded; ("", []) when there is none."""
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
        return str(data["key"]), [str(f) for f in data["files"]]
    except (OSError, ValueError, KeyError, TypeError):
        return "", []


def authors_marker(destination: Path, sources: Path | None, package: str, previous: list[str]) -> bool:
    """Whether the package has a ``py.typed`` of its author's (one a previous run did not write),
    in the destination or in its sources: the wheel gets that one, and no second copy."""
    if "py.typed" in previous:
        return False
    folders = [destination] + ([sources.joinpath(*package.split("."))] if sources is not None else [])
    return any((folder / "py.typed").is_file() for folder in folders)


def _copy_into(step: Step, previous: list[str]) -> list[str]:
    """Copy the generator's files into the destination (stubs: the ``.pyi`` files and
    ``py.typed``), skipping identical ones; remove what ``previous`` copied and this run did not."""
    generated, destination = step.generated_root(), step.destination
    wanted = sorted(
        p.relative_to(generated).as_posix()
        for p in generated.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and (step.mode == "package" or p.suffix == ".pyi")
    )
    if step.mode == "stubs" and not authors_marker(destination, step.sources, step.package, previous):
        (generated / "py.typed").write_text("", encoding="utf-8")
        wanted.append("py.typed")
    for rel in wanted:
        src, dst = generated / rel, destination / rel
        if dst.is_file() and filecmp.cmp(src, dst, shallow=False):
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    for rel in sorted(set(previous) - set(wanted)):
        (destination / rel).unlink(missing_ok=True)
    return wanted


def _run_generator(step: Step, snapshot_file: Path) -> int:
    """``python -m tvmffi_gen`` for the step; its messages go straight to the build's output."""
    env = dict(os.environ)
    if step.sources is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(step.sources.resolve()), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "tvmffi_gen", *step.generator_args(snapshot_file.resolve())]
    # run from the work folder: from the project's folder, `python -m` would import the package's
    # sources (the first entry of sys.path) instead of the built package beside its library
    if step.sources is None or step.authored is None:
        return subprocess.run(cmd, env=env, cwd=step.work, check=False).returncode
    proc = subprocess.run(cmd, env=env, cwd=step.work, check=False, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(authored_paths(proc.stderr, step.sources, step.authored))
    sys.stderr.flush()
    return proc.returncode


def authored_paths(text: str, stage: Path, authored: Path) -> str:
    """``text`` with each ``.py`` file of the staged copy named by its path in ``authored``: an
    import failure points at the line the author edits, not at the build tree's copy."""
    for folder in {str(stage), str(stage.resolve())}:
        text = re.sub(re.escape(folder + os.sep) + r"([^\s:()]+\.py)\b", lambda m: str(authored / m.group(1)), text)
    return text


def run_step(step: Step, say: Callable[[str], None] = print) -> int:
    """Regenerate into ``step.destination`` unless the stamp says nothing it reads changed;
    0 on success, the generator's status on failure."""
    try:
        snapshot = take_snapshot(step.library)
    except SnapshotError as exc:
        print(f"tvmffi-gen: error: {exc}", file=sys.stderr)
        return 2
    library_path = snapshot.library_path
    snapshot.library_path = ""  # the build folder's path is no part of what is generated
    registry = snapshot.to_json()
    key = step_key(step, registry)
    old_key, old_files = _read_stamp(step.stamp)
    if key == old_key and all((step.destination / f).is_file() for f in old_files):
        step.stamp.touch()  # newer than the library: make and ninja see the step done
        say(f"tvmffi-gen: {step.destination} is up to date with {step.library.name}: not regenerated")
        return 0
    # a fresh output folder: what the generator wrote for a module since removed is not copied
    shutil.rmtree(step.work / "out", ignore_errors=True)
    step.work.mkdir(parents=True, exist_ok=True)
    snapshot.library_path = library_path
    snapshot_file = step.work / "registry.json"
    snapshot_file.write_text(snapshot.to_json(), encoding="utf-8")
    status = _run_generator(step, snapshot_file)
    if status != 0:
        step.stamp.unlink(missing_ok=True)
        return status
    files = _copy_into(step, old_files)
    step.stamp.write_text(json.dumps({"key": key, "files": files}, indent=1) + "\n", encoding="utf-8")
    say(f"tvmffi-gen: wrote {step.mode} for {step.package} into {step.destination} ({len(files)} files)")
    return 0


#: the distribution a generated package (package mode) imports at run time
RUNTIME = "tvmffi-runtime"


def lacks_runtime(requirements: Sequence[object]) -> str | None:
    """The warning for a distribution whose requirements (``[project] dependencies``) do not
    include tvmffi-runtime, which the generated package imports; None when they do."""
    names = [re.split(r"[\s\[<>=!~;@(]", str(r).strip(), maxsplit=1)[0] for r in requirements]
    if any(re.sub(r"[-_.]+", "-", n).lower() == RUNTIME for n in names):
        return None
    return (
        "warning: tvmffi-gen: the generated package imports tvmffi_runtime, which this distribution"
        f' does not require: add "{RUNTIME}" to [project] dependencies'
    )


def declared_requirements(project_dir: Path) -> list[str] | None:
    """``[project] dependencies`` of the first ``pyproject.toml`` at or above ``project_dir``;
    None when there is none or they are ``dynamic`` (another tool fills them in: not known here)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10: tomli, which scikit-build-core requires there
        import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]

    for folder in [project_dir, *project_dir.parents]:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            with pyproject.open("rb") as f:
                project = tomllib.load(f).get("project", {})
            if "dependencies" in project.get("dynamic", []):
                return None
            return [str(r) for r in project.get("dependencies", [])]
    return None


def python_sources(sources: Path, package: str) -> tuple[Path, ...]:
    """The ``.py`` files of ``package`` under ``sources`` (the folder holding it)."""
    root = sources.joinpath(*package.split("."))
    return tuple(sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tvmffi_gen.integration.step", description=(__doc__ or "").split("\n\n")[0]
    )
    p.add_argument("mode", choices=["package", "stubs"])
    p.add_argument("--library", required=True, help="the built library")
    p.add_argument("--package", required=True, help="the package's import name")
    p.add_argument("--destination", required=True, help="the package folder the output is copied into")
    p.add_argument("--work", required=True, help="the step's own folder (stamp, generator output)")
    add_step_arguments(p)  # the generator's options a build may give (--prefix NS)
    p.add_argument(
        "--project-dir",
        help="package mode: the project's folder; the build warns when its pyproject.toml lacks tvmffi-runtime",
    )
    p.add_argument("--sources", help="stubs mode: the folder holding the package")
    p.add_argument(
        "--distribution",
        default="",
        help="stubs mode: the distribution the package is installed by (default: its top-level name)",
    )
    p.add_argument("--version", default="0", help="stubs mode: the distribution's version")
    p.add_argument(
        "--library-dir",
        default=".",
        help="stubs mode: where in the package the package loads the library from (relative to it)",
    )
    return p


def _staged_sources(args: argparse.Namespace, work: Path) -> Path:
    """A copy of the package's sources with the built library where the package loads it from,
    and the distribution's metadata, so ``--stubs-for`` imports the package as it is installed."""
    stage = work / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    rel = Path(*args.package.split("."))
    shutil.copytree(Path(args.sources) / rel, stage / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyi"))
    lib_dir = stage / rel / args.library_dir
    lib_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(args.library, lib_dir / Path(args.library).name)
    write_dist_info(stage, args.distribution or args.package.split(".")[0], args.version)
    return stage


def write_dist_info(stage: Path, distribution: str, version: str) -> Path:
    """The ``.dist-info`` an installed wheel of ``distribution`` has, for the files under ``stage``.

    A package can find its own files through its distribution's metadata: apache-tvm-ffi's
    ``tvm_ffi.libinfo.load_lib_module(distribution, target)`` looks for the library in the
    ``RECORD`` of the installed distribution (then only on ``LD_LIBRARY_PATH``/``PATH``), and
    ``importlib.metadata.version(distribution)`` is a common ``__version__``. In the build tree
    nothing is installed; with this folder on ``sys.path`` before site-packages, both answer as
    they will once the wheel is installed.
    """
    name = re.sub(r"[-_.]+", "_", distribution)
    files = sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file())
    dist_info = stage / f"{name}-{version}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n", encoding="utf-8"
    )
    record = [f"{f},," for f in files] + [f"{dist_info.name}/METADATA,,", f"{dist_info.name}/RECORD,,"]
    (dist_info / "RECORD").write_text("\n".join(record) + "\n", encoding="utf-8")
    return dist_info


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    values = {build.key: getattr(args, build.dest) for build in build_options()}
    refused = not_read_by(args.mode, values)
    if refused:
        flags = ", ".join(b.step_flag for b in refused)
        print(f"tvmffi-gen: error: {flags}: not an option of {args.mode} mode", file=sys.stderr)
        return 2
    work = Path(args.work)
    sources: Path | None = None
    if args.mode == "stubs":
        if not args.sources:
            print("tvmffi-gen: error: stubs mode needs --sources (the folder holding the package)", file=sys.stderr)
            return 2
        if not python_sources(Path(args.sources), args.package):
            where = Path(args.sources).joinpath(*args.package.split("."))
            print(f"tvmffi-gen: error: {where}: no Python sources of package {args.package}", file=sys.stderr)
            return 2
        work.mkdir(parents=True, exist_ok=True)
        sources = _staged_sources(args, work)
    elif args.project_dir:
        requirements = declared_requirements(Path(args.project_dir))
        warning = lacks_runtime(requirements) if requirements is not None else None
        if warning:
            print(warning, file=sys.stderr)
    step = Step(
        mode=args.mode,
        library=Path(args.library),
        package=args.package,
        destination=Path(args.destination),
        work=work,
        options=generator_arguments(values, "python -m tvmffi_gen.integration.step"),
        sources=sources,
        source_files=python_sources(sources, args.package) if sources is not None else (),
        authored=Path(args.sources).resolve() if sources is not None else None,
    )
    return run_step(step)


if __name__ == "__main__":
    sys.exit(main())
