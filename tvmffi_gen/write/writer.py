"""Write a rendered package: atomically per file, never touching files the generator did not write.

A manifest (``.tvmffi-gen.json``) in the output folder lists the files the last run wrote, with
a hash of each and the members it generated; only those files are ever replaced or removed, and
a file the user edited is merged (their additions kept, see ``merge``) instead of overwritten,
and never removed. Everything is planned before anything is written, so a run that fails leaves
the previous output as it was.
"""

from __future__ import annotations

import ast
import concurrent.futures
import concurrent.futures.process
import contextlib
import json
import multiprocessing
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .api_changes import (
    ApiChange,
    NameUse,
    StaleUse,
    api_changes,
    module_api,
    names_used,
    removals_to_record,
    stale_uses,
    still_removed,
)
from .code_names import module_names
from .manifest_entries import generated_names, member_keys, text_hash
from .merge import MergeConflict, UserImport, merge_source

__all__ = ["MANIFEST", "OutputError", "Plan", "plan_output", "apply_plan", "refuse_foreign_folder"]

MANIFEST = ".tvmffi-gen.json"


class OutputError(RuntimeError):
    """The output folder cannot be written; the message names the path and why."""


@dataclass
class Plan:
    root: Path
    files: dict[str, str]
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    previous: list[str] = field(default_factory=list)
    #: files whose user additions were merged into the new output (path -> members kept)
    merged: dict[str, int] = field(default_factory=dict)
    #: files no longer generated but edited by the user: left in place
    orphaned: list[str] = field(default_factory=list)
    #: generated members the user had edited, kept or overwritten per the edit policy: (file, member)
    edits: list[tuple[str, str]] = field(default_factory=list)
    #: what changed in the package's API since the last run (None: the last run recorded none)
    api_changes: list[ApiChange] | None = None
    #: places in the user's code in the package that name something the library no longer has
    stale_uses: list[StaleUse] = field(default_factory=list)

    @property
    def has_changes(self) -> bool:
        return bool(self.changed or self.removed)


def _read_manifest(root: Path) -> dict[str, Any] | None:
    path = root / MANIFEST
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        files: object = data["files"]
        if not isinstance(files, list) or not all(isinstance(f, str) for f in cast("list[object]", files)):
            raise ValueError("files must be a list of strings")
        if not isinstance(data.get("generated", {}), dict):
            raise ValueError("generated must be an object")
        return dict(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise OutputError(f"{path}: unreadable manifest ({exc}); remove it or use another folder") from None


#: Parse in worker processes when this much new text needs member keys (large packages).
_PARALLEL_PARSE_BYTES = 1 << 20


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _file_record(item: tuple[str, str]) -> dict[str, Any]:
    """What the manifest records of one generated file (``item``: its path and text): its hash,
    its members' keys and fingerprints, and its API (``api_changes.module_api``; a module's
    ``.pyi`` face says the API of its ``.py`` again, so it records none)."""
    rel, text = item
    tree = ast.parse(text)  # once: the API reads it, then the keys change it
    api = module_api(rel, text, tree) if rel.endswith(".py") else {}
    return {"hash": text_hash(text), "members": member_keys(text, tree), "api": api}


def _parsed_records(items: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """``_file_record`` of each file; large batches are parsed in worker processes.

    Only where that is safe: fork is available, this process has no other threads (a forked
    child could inherit a held lock) and is not itself a daemonic worker. Any failure of the
    pool (a worker killed, say) falls back to parsing here.
    """
    workers = min(len(items), _usable_cpus())
    if (
        workers < 2
        or sum(len(text) for _, text in items) < _PARALLEL_PARSE_BYTES
        or threading.active_count() > 1
        or multiprocessing.current_process().daemon
        or "fork" not in multiprocessing.get_all_start_methods()
    ):
        return [_file_record(item) for item in items]
    try:
        ctx = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            return list(pool.map(_file_record, items))
    except (concurrent.futures.process.BrokenProcessPool, OSError):
        return [_file_record(item) for item in items]


def _file_records(files: dict[str, str], previous: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``_file_record`` of each generated module and face (``.pyi``); one unchanged since the
    last run (whose record is of the current form) is taken from the manifest, not parsed again."""
    records: dict[str, dict[str, Any]] = {}
    to_parse: list[tuple[str, str]] = []
    for rel, text in sorted(files.items()):
        if not rel.endswith((".py", ".pyi")):
            continue
        before: dict[str, Any] = previous.get(rel) or {}
        current = "members" in before and isinstance(before.get("api"), dict)
        if current and before.get("hash") == text_hash(text):
            records[rel] = {"hash": before["hash"], "members": before["members"], "api": before["api"]}
        else:
            to_parse.append((rel, text))
    for (rel, _), record in zip(to_parse, _parsed_records(to_parse), strict=True):
        records[rel] = record
    return records


def _recorded_api(records: dict[str, Any]) -> dict[str, str] | None:
    """The package's API as ``records`` give it (None when one of them has none: a manifest
    written before API records)."""
    if not records or not all(isinstance(entry.get("api"), dict) for entry in records.values()):
        return None
    return {name: kind for entry in records.values() for name, kind in entry["api"].items()}


def _manifest_text(
    files: dict[str, str], generator: str, records: dict[str, dict[str, Any]], removed: dict[str, str]
) -> str:
    """The manifest: the files written, each one's record, and (only while there are any) the
    removed API members user code in the package still names (``api_changes.removals_to_record``)."""
    data: dict[str, Any] = {"generator": generator, "files": sorted(files), "generated": dict(sorted(records.items()))}
    if removed:
        data["removed"] = removed
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def _recorded_removals(manifest: dict[str, Any] | None) -> dict[str, str]:
    """The removals the last run recorded as still named by user code (empty if none or unreadable)."""
    removed: object = (manifest or {}).get("removed", {})
    if not isinstance(removed, dict):
        return {}
    return {str(k): str(v) for k, v in cast("dict[object, object]", removed).items()}


def plan_output(
    root: Path,
    files: dict[str, str],
    generator: str,
    force: bool = False,
    edit_policy: str = "refuse",
    package: str | None = None,
) -> Plan:
    """Compare rendered ``files`` with what is in ``root``; merge user additions into files the
    user edited (``edit_policy``: see ``merge.EDIT_POLICIES``); refuse folders we did not
    generate. ``package``: the package's import name, to check the user's absolute imports of
    its modules (relative ones are checked without it). Nothing is written here."""
    if root.exists() and not root.is_dir():
        raise OutputError(f"{root}: the output path exists and is not a folder")
    manifest = _read_manifest(root) if root.is_dir() else None
    if root.is_dir() and manifest is None and not force:
        refuse_foreign_folder(root, f"no {MANIFEST} manifest")
    previous_files: list[str] = list(manifest["files"]) if manifest else []
    previous_gen: dict[str, Any] = dict(manifest.get("generated", {})) if manifest else {}
    final = dict(files)
    plan = Plan(root, final, previous=previous_files)
    conflicts: list[str] = []
    edits: list[str] = []
    user_imports: dict[str, list[UserImport]] = {}
    user_uses: dict[str, list[NameUse]] = {}
    on_disk = {rel: _read_text(root / rel) for rel in [*files, MANIFEST]}  # each file read once
    for rel, text in sorted(files.items()):
        target = root / rel
        current = on_disk[rel]
        if current is None or current == text:
            continue
        before = previous_gen.get(rel)
        if before is None or text_hash(current) == before.get("hash"):
            continue  # not edited since we wrote it (or --force over a foreign file)
        try:
            merged = merge_source(str(target), current, list(before.get("members", [])), text, edit_policy)
        except MergeConflict as exc:
            conflicts += [f"{exc.path}: {p}" for p in exc.problems]
            edits += [f"{exc.path}: {e}" for e in exc.edits]
            continue
        final[rel] = merged.text
        plan.merged[rel] = merged.kept
        user_imports[rel] = merged.imports
        user_uses[rel] = merged.uses
        plan.edits += [(str(target), what) for what in merged.edits]
    _plan_removals(plan, files, previous_gen)
    targets = ImportTargets(final, plan.removed, previous_gen, package)
    for rel, imports in sorted(user_imports.items()):
        conflicts += [f"{root / rel}: {p}" for imp in imports for p in targets.stale(rel, imp)]
    if conflicts or edits:
        raise OutputError(_refusal(conflicts, edits))
    records = _file_records(files, previous_gen)
    recorded = _recorded_removals(manifest)
    _plan_api_report(plan, _recorded_api(records), _recorded_api(previous_gen), user_uses, recorded)
    final[MANIFEST] = _manifest_text(files, generator, records, removals_to_record(plan.stale_uses))
    for rel, text in sorted(final.items()):
        if on_disk[rel] != text:
            plan.changed.append(rel)
    return plan


def refuse_foreign_folder(folder: Path, missing: str) -> None:
    """The one rule for the folder ``-o`` names, a package's or (``--project``) a project's: a
    non-empty one that tvmffi-gen did not write (``missing`` says what would have shown it did)
    is refused, naming what is in it, unless ``--force`` (the caller checks that)."""
    entries = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    if not entries:
        return
    shown = ", ".join(entries[:5]) + (f", ... ({len(entries)} entries)" if len(entries) > 5 else "")
    raise OutputError(
        f"{folder}: the folder is not empty ({shown}) and was not generated by tvmffi-gen ({missing});"
        " pass --force to write into it anyway"
    )


def _refusal(conflicts: list[str], edits: list[str]) -> str:
    """Why a run wrote nothing: the user's code that clashes with what the library now
    registers, and the generated members the user edited (a decision only they can make)."""
    parts: list[str] = []
    if conflicts:
        parts.append("your code conflicts with what the library now registers:\n  " + "\n  ".join(conflicts))
    if edits:
        parts.append(
            "you edited code the generator wrote, which regeneration replaces: pass --keep-edits to"
            " keep your versions or --overwrite-edits to replace them:\n  " + "\n  ".join(edits)
        )
    return "\n".join(parts) + "\n(nothing was written)"


def _plan_api_report(
    plan: Plan,
    after: dict[str, str] | None,
    before: dict[str, str] | None,
    user_uses: dict[str, list[NameUse]],
    recorded: dict[str, str],
) -> None:
    """What changed in the API since the last run, and where the user's code in the package
    names what was removed, by this run or by an earlier one whose removal that code still names
    (``recorded``): in the files merged, and in files of theirs the run never wrote."""
    if before is None or after is None:
        return
    plan.api_changes = api_changes(before, after)
    reported = {c.name for c in plan.api_changes}
    removed = [c for c in plan.api_changes if c.change == "removed"]
    removed += [c for c in still_removed(recorded, after) if c.name not in reported]
    if not removed:
        return
    uses = dict(user_uses)
    ours = set(plan.files) | set(plan.previous)
    for path in sorted(plan.root.rglob("*.py")) if plan.root.is_dir() else []:
        rel = path.relative_to(plan.root).as_posix()
        text = _read_text(path) if rel not in ours else None
        if text is not None:
            try:
                uses[rel] = names_used(ast.parse(text))
            except SyntaxError:
                continue
    for rel, found in sorted(uses.items()):
        plan.stale_uses += stale_uses(rel, found, removed, after)


def _plan_removals(plan: Plan, files: dict[str, str], previous_gen: dict[str, Any]) -> None:
    """Files of the last run no longer generated: removed, or left in place (``orphaned``)
    when the user edited them."""
    for rel in sorted(set(plan.previous) - set(files)):
        target = plan.root / rel
        if not target.is_file():
            continue
        before = previous_gen.get(rel)
        current = _read_text(target)
        if before is not None and current is not None and text_hash(current) != before.get("hash"):
            plan.orphaned.append(rel)  # the user edited it: never delete their work
        elif rel != MANIFEST:
            plan.removed.append(rel)


@dataclass
class ImportTargets:
    """The package's modules as the run leaves them, to check that user code importing from one
    still gets each name it imports (a type the library dropped is gone from its module)."""

    final: dict[str, str]
    #: files of the last run this one removes (a module the user edited stays, so its imports work)
    removed: list[str]
    previous_gen: dict[str, Any]
    package: str | None

    def stale(self, importer: str, imp: UserImport) -> list[str]:
        """Problems with one import in the file ``importer`` (empty when it is fine or names a
        module outside the package)."""
        parts = self._module_parts(importer, imp)
        if parts is None:
            return []
        shown = "." * imp.level + imp.module
        target = next((f for f in _module_files(parts) if f in self.final), None)
        if target is None:
            if any(f in self.removed for f in _module_files(parts)):
                return [f"{imp.who} imports from {shown}, a module no longer generated; change or remove your code"]
            return []
        before = generated_names(list(self.previous_gen.get(target, {}).get("members", [])))
        now = module_names(self.final[target])
        missing = [
            n
            for n in imp.names
            if n in before and n not in now and not any(f in self.final for f in _module_files([*parts, n]))
        ]
        if not missing:
            return []
        return [
            f"{imp.who} imports {', '.join(map(repr, missing))} from {shown}, which the generator wrote there"
            " last time and no longer does; change or remove your code"
        ]

    def _module_parts(self, importer: str, imp: UserImport) -> list[str] | None:
        """The path of the imported module inside the package, or None when it is outside."""
        here = importer.split("/")[:-1]  # the package holding the importing file
        named = imp.module.split(".") if imp.module else []
        if imp.level == 0:
            top = self.package.split(".") if self.package else None
            return named[len(top) :] if top and named[: len(top)] == top else None
        if imp.level - 1 > len(here):
            return None
        return here[: len(here) - (imp.level - 1)] + named


def _module_files(parts: list[str]) -> list[str]:
    """The files that could hold the module at ``parts`` inside the package."""
    package_init = "/".join([*parts, "__init__.py"])
    return [package_init, "/".join(parts) + ".py"] if parts else [package_init]


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        return None


def new_file_mode() -> int:
    """The mode ``open()`` would give a new file: 0o666 less the process umask (read by setting
    it, so set straight back). ``mkstemp`` creates files 0o600, which other users cannot read."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def stage_file(target: Path, text: str, mode: int) -> str:
    """Write ``text`` to a temporary file beside ``target`` (to ``os.replace`` it there later)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
    except BaseException:  # a full disk, or Ctrl-C: no partial file is left beside the target
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def apply_plan(plan: Plan) -> None:
    """Stage every changed file next to its target, then move them all into place."""
    root = plan.root
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{root}: cannot create the output folder ({exc.strerror})") from None
    if not os.access(root, os.W_OK):
        raise OutputError(f"{root}: the output folder is not writable")
    staged: list[tuple[str, Path]] = []
    mode = new_file_mode()
    try:
        for rel in plan.changed:
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            staged.append((stage_file(target, plan.files[rel], mode), target))
    except BaseException as exc:  # an OSError, or Ctrl-C while staging: no staged file is left
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(exc, OSError):
            raise OutputError(f"{root}: cannot write the output ({exc})") from None
        raise
    for tmp, target in staged:
        os.replace(tmp, target)
    for rel in plan.removed:
        with contextlib.suppress(OSError):
            (root / rel).unlink()
        parent = (root / rel).parent
        while parent != root and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
