"""``tvmffi-gen --list-exports LIB``: the TVM FFI functions a library exports, one per line.

The names come from the file itself (``binfmt``), so an ELF, Mach-O or PE library is listed on any
platform without being loaded. A type schema and a doc string are not in the file as text: the
library computes them when its ``__tvm_ffi__metadata_<name>`` / ``__tvm_ffi__doc_<name>`` getters
are called. So for a library of this platform's own format they are read in a child process that
loads it (this process never does); for another platform's library each line says which of them
the library carries.

Output: a heading line ``FILE: FORMAT, N exported TVM FFI function(s)``, then per function its
name, then tab-separated its type schema and the first line of its doc (or ``[metadata]`` /
``[doc]`` markers when they could not be read here).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from typing import TextIO, cast

from .binfmt import BinaryFormatError, Exports, read_exports

__all__ = ["list_exports", "host_format"]

_CHILD = r"""
import json, sys
import tvmffi_runtime as rt
from tvmffi_runtime import reflection as R
functions, types = set(R.list_global_functions()), set(R.list_type_keys())
mod = rt.Module.load_from_file(sys.argv[1])
out = {}
for name in json.loads(sys.argv[2]):
    out[name] = [mod.function_metadata_json(name), mod.function_doc(name)]
registered = [len(set(R.list_global_functions()) - functions), len(set(R.list_type_keys()) - types)]
print(json.dumps({"exports": out, "registered": registered}))
"""


@dataclass
class _Loaded:
    """What loading the library in a child process read: each export's metadata and doc, and
    how many global functions and types its loading added to the registry."""

    values: dict[str, list[str | None]] = field(default_factory=dict)
    functions: int = 0
    types: int = 0


def host_format(platform: str | None = None) -> str:
    """The first word of ``Exports.format`` for this platform's libraries (ELF, Mach-O or PE)."""
    platform = sys.platform if platform is None else platform
    return "Mach-O" if platform == "darwin" else "PE" if platform in ("win32", "cygwin") else "ELF"


def _load(path: str, exports: Exports, timeout: float) -> tuple[_Loaded, str | None]:
    """Load the library in a child process (only one of this platform's format): what it read,
    or why it was not read."""
    family = "PE" if exports.format.startswith("PE") else exports.format.split()[0]
    if family != host_format():
        return _Loaded(), f"a {exports.format} library is not loaded on {sys.platform}"
    wanted = [f.name for f in exports.functions if f.has_metadata or f.has_doc]
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, path, json.dumps(wanted)], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return _Loaded(), f"loading it took more than {timeout:g} s"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return _Loaded(), f"loading it failed: {last}"
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        functions, types = data["registered"]
        return _Loaded(data["exports"], functions, types), None
    except (ValueError, IndexError, KeyError, TypeError):
        return _Loaded(), "loading it printed no metadata"


def _registry_note(path: str, loaded: _Loaded) -> str | None:
    """A line saying what the library registers, which are not exports and not listed."""
    if not (loaded.functions or loaded.types):
        return None
    plural = "" if loaded.functions == 1 else "s"
    types = f" and {loaded.types} type{'' if loaded.types == 1 else 's'}" if loaded.types else ""
    return (
        f"(not exports, so not listed: loading it registers {loaded.functions} global function{plural}{types}"
        f" in the TVM FFI registry; tvmffi-gen {path} -o OUT generates them, --save-snapshot FILE"
        " saves them as JSON)"
    )


def _schema(metadata: str | None) -> str:
    if not metadata:
        return ""
    try:
        value: object = json.loads(metadata)
    except ValueError:
        return ""
    schema = cast("dict[str, object]", value).get("type_schema") if isinstance(value, dict) else None
    return schema if isinstance(schema, str) else ""


def list_exports(path: str, out: TextIO, timeout: float = 60.0) -> None:
    """Print the exports of ``path``; ``BinaryFormatError`` when it is no library or malformed."""
    exports = read_exports(path)
    count = len(exports.functions)
    print(f"{path}: {exports.format}, {count} exported TVM FFI function{'' if count == 1 else 's'}", file=out)
    loaded, why_not = _load(path, exports, timeout)
    for fn in exports.functions:
        fields = [fn.name]
        if fn.name in loaded.values:
            metadata, doc = loaded.values[fn.name]
            fields.append(_schema(metadata))
            fields.append((doc or "").strip().split("\n", 1)[0])
        else:
            fields += [m for m, has in (("[metadata]", fn.has_metadata), ("[doc]", fn.has_doc)) if has]
        print("\t".join(fields).rstrip("\t"), file=out)
    if why_not:
        print(f"(type schemas, docs and registry not read: {why_not})", file=out)
    note = _registry_note(path, loaded)
    if note is not None:
        print(note, file=out)


def main_list_exports(path: str, timeout: float) -> int:
    try:
        list_exports(path, sys.stdout, timeout)
    except BinaryFormatError as exc:
        print(f"tvmffi-gen: error: {exc}", file=sys.stderr)
        return 2
    return 0
