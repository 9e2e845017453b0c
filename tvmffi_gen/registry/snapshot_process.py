"""Taking a registry snapshot: a child process loads the library and reads its registry.

``take_snapshot`` runs ``python -m tvmffi_gen.registry.snapshot_process`` so a library that aborts, crashes
or hangs while loading is reported instead of taking the generator down; the child
(``snapshot_in_process``) writes the :class:`~tvmffi_gen.registry.snapshot.Snapshot` as JSON on its
standard output. ``summarise_failure`` turns a failed loading process's output into the error
line and the library's own frames.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from .facts import decoded_schema, field_snap, read_type, run_child
from .snapshot import FunctionSnap, Snapshot, SnapshotError

__all__ = ["nothing_registered", "snapshot_in_process", "summarise_failure", "take_snapshot"]


def snapshot_in_process(library: str, preload: list[str] | None = None) -> Snapshot:
    """Load ``library`` into this process and read what it registered (used by the child)."""
    import tvmffi_runtime as rt
    from tvmffi_runtime import reflection as R

    for pre in preload or []:
        rt.load_library(pre)
    before_types = set(R.list_type_keys())
    before_funcs = set(R.list_global_functions())
    rt.load_library(library)
    after_types = R.list_type_keys()
    new_types = [k for k in after_types if k not in before_types]
    new_funcs = [n for n in R.list_global_functions() if n not in before_funcs]

    snap = Snapshot(
        library=os.path.basename(library),
        library_path=os.path.abspath(library),
        tvm_ffi_version=list(rt.libtvm_ffi_version()),
    )
    referenced: set[str] = set()
    for key in sorted(new_types):
        ts = read_type(key)
        referenced.update(ts.ancestors)
        snap.types.append(ts)
    for name in sorted(new_funcs):
        md = R.global_function_metadata(name)
        snap.functions.append(
            FunctionSnap(name=name, doc=str(md.get("doc", "") or ""), schema=decoded_schema(md.get("type_schema")))
        )
    # Functions the library exports as symbols (TVM_FFI_DLL_EXPORT_TYPED_FUNC) rather than
    # registering; their schema and doc come from the optional metadata symbols.
    from .binfmt import BinaryFormatError, exported_ffi_functions

    try:
        exported = exported_ffi_functions(library)
    except (BinaryFormatError, OSError):
        exported = []
    if exported:
        module = rt.Module.load_from_file(library)
        for name in exported:
            md = module.function_metadata(name) or {}
            doc = module.function_doc(name) or ""
            snap.functions.append(
                FunctionSnap(name=name, doc=doc, schema=decoded_schema(md.get("type_schema")), exported=True)
            )
    # Ancestors of every type that is not ours, so the model can map types it does not contain.
    for key in sorted(before_types):
        try:
            snap.external_types[key] = list(R.type_info(key).ancestors)
        except KeyError:
            continue
    for key in sorted(referenced & before_types):
        fields = R.type_info(key).fields
        if fields:
            snap.external_fields[key] = [field_snap(f) for f in fields]
    return snap


def _child_main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tvmffi_gen.registry.snapshot_process")
    parser.add_argument("library")
    parser.add_argument("--preload", action="append", default=[])
    args = parser.parse_args(argv)
    try:
        snap = snapshot_in_process(args.library, args.preload)
    except Exception as exc:  # noqa: BLE001 - reported to the parent as text on stderr
        sys.stderr.write(f"{type(exc).__name__}: {exc}\n")
        return 3
    sys.stdout.write(snap.to_json())
    return 0


def _other_platforms_library(path: str) -> str | None:
    """Why ``path`` cannot load here because it is another platform's library (by its first bytes), or None."""
    from .runtime_files import platform_module

    problem: str | None = platform_module().CURRENT.wrong_platform(path)
    return problem


def take_snapshot(library: str | Path, preload: list[str] | None = None, timeout: float = 120.0) -> Snapshot:
    """Snapshot ``library`` in a child process; errors name the library and what went wrong."""
    lib = str(library)
    if not os.path.exists(lib):
        raise SnapshotError(f"{lib}: no such file")
    if os.path.isdir(lib):
        raise SnapshotError(f"{lib}: is a directory, not a shared library")
    for pre in preload or []:
        if not os.path.isfile(pre):
            raise SnapshotError(f"--preload {pre}: no such file")
    for path, option in [(lib, ""), *((pre, "--preload ") for pre in preload or [])]:
        foreign = _other_platforms_library(path)
        if foreign is not None:
            raise SnapshotError(f"{option}{path}: {foreign}; tvmffi-gen --list-exports {path} lists its functions")
    args = [os.path.abspath(lib)]
    for pre in preload or []:
        args += ["--preload", os.path.abspath(pre)]
    try:
        proc = run_child("tvmffi_gen.registry.snapshot_process", args, timeout)
    except subprocess.TimeoutExpired:
        raise SnapshotError(
            f"{lib}: loading the library did not finish within {timeout:g} s (it hangs in its initialisers?)"
        ) from None
    if proc.returncode != 0:
        error, frames = summarise_failure(proc.stderr)
        where = "".join(f"\n  at {f}" for f in frames)
        more = "\n  (-v shows everything the loading process printed)" if proc.stderr.strip() else ""
        if proc.returncode < 0:
            sig = signal.Signals(-proc.returncode).name
            raise SnapshotError(
                f"{lib}: the process loading it died with {sig} — the library crashes or aborts in its"
                f" static initialisers" + (f":\n  {error}" if error else "") + where + more,
                proc.stderr,
            )
        reason = error or f"snapshot failed with exit status {proc.returncode}"
        raise SnapshotError(f"{lib}: {reason}" + where + (more if where else ""), proc.stderr)
    return Snapshot.from_json(proc.stdout, source=lib)


#: libtvm_ffi as a library names its dependency on it, on each platform (any version suffix).
_TVM_FFI_DEPENDENCY = re.compile(r"libtvm_ffi\.so(\.\d+)*|libtvm_ffi(\.\d+)*\.dylib|tvm_ffi\.dll")


def _links_tvm_ffi(dependency: str) -> bool:
    """Whether a dynamic dependency, as a library names it (``libtvm_ffi.so``,
    ``@rpath/libtvm_ffi.dylib``, ``tvm_ffi.dll``), is libtvm_ffi."""
    name = dependency.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return _TVM_FFI_DEPENDENCY.fullmatch(name) is not None


def nothing_registered(snapshot: Snapshot) -> str:
    """Why a library gave nothing to generate, naming it by its full path: it does not link
    libtvm_ffi (read from the file's dynamic dependencies), or it links it and registers nothing."""
    from .binfmt import BinaryFormatError, dynamic_dependencies

    path = snapshot.library_path
    try:
        needed = dynamic_dependencies(path) if os.path.isfile(path) else None
    except BinaryFormatError:
        needed = None  # (the library loaded, so this is unexpected: the plainer message says enough)
    if needed is not None and not any(_links_tvm_ffi(n) for n in needed):
        links = f"it links {', '.join(needed)} only" if needed else "it links no library"
        return (
            f"{path} does not link libtvm_ffi ({links}): it is not a library built on TVM FFI,"
            " so it registers nothing to generate"
        )
    return f"{path}: the library registers nothing to generate"


#: Source files of the dynamic loader, libc and the Python interpreter: frames there say nothing
#: about the library (a loading traceback is mostly these).
_NOT_THE_LIBRARY = ("./", "Objects/", "Python/", "Modules/", "Parser/", "Include/", "/tmp/python-build")
_MAX_FRAMES = 8


def summarise_failure(stderr: str) -> tuple[str, list[str]]:
    """The error's first line and the frames of the library's own code (at most eight), from the
    output of a loading process that failed: a native traceback is mostly loader and interpreter
    frames, and its error line is neither the first nor the last line."""
    lines = [ln.rstrip() for ln in stderr.splitlines() if ln.strip()]
    frames: list[str] = []
    error = ""
    for ln in lines:
        frame = _frame(ln)
        if frame is not None:
            if frame and len(frames) < _MAX_FRAMES:
                frames.append(frame)
        elif not error and not ln.startswith("Traceback"):
            error = ln.strip().strip("!").strip()  # "!!!!!!! Segfault encountered !!!!!!!"
    return error, frames


def _frame(line: str) -> str | None:
    """A traceback line as ``function (file:line)``: "" for a loader or interpreter frame, None
    when the line is not a frame."""
    text = line.strip()
    if not text.startswith('File "') or '", line ' not in text:
        return None
    path, _, rest = text[6:].partition('", line ')
    number, _, func = rest.partition(", in ")
    if path.startswith(_NOT_THE_LIBRARY) or func in ("_start", "") or func.startswith("0x"):
        return ""
    if len(func) > 120:
        func = func[:117] + "..."
    return func if path == "<unknown>" else f"{func} ({path}:{number})"


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
