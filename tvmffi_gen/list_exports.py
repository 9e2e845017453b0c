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
from typing import TextIO, cast

from .binfmt import BinaryFormatError, Exports, read_exports

__all__ = ["list_exports", "host_format"]

_CHILD = r"""
import json, sys
import tvmffi_runtime as rt
mod = rt.Module.load_from_file(sys.argv[1])
out = {}
for name in json.loads(sys.argv[2]):
    out[name] = [mod.function_metadata_json(name), mod.function_doc(name)]
print(json.dumps(out))
"""


def host_format(platform: str | None = None) -> str:
    """The first word of ``Exports.format`` for this platform's libraries (ELF, Mach-O or PE)."""
    platform = sys.platform if platform is None else platform
    return "Mach-O" if platform == "darwin" else "PE" if platform in ("win32", "cygwin") else "ELF"


def _read_metadata(path: str, exports: Exports, timeout: float) -> tuple[dict[str, list[str | None]], str | None]:
    wanted = [f.name for f in exports.functions if f.has_metadata or f.has_doc]
    if not wanted:
        return {}, None
    family = "PE" if exports.format.startswith("PE") else exports.format.split()[0]
    if family != host_format():
        return {}, f"a {exports.format} library is not loaded on {sys.platform}"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, path, json.dumps(wanted)], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {}, f"loading it took more than {timeout:g} s"
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        return {}, f"loading it failed: {last}"
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1]), None
    except (ValueError, IndexError):
        return {}, "loading it printed no metadata"


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
    values, why_not = _read_metadata(path, exports, timeout)
    for fn in exports.functions:
        fields = [fn.name]
        if fn.name in values:
            metadata, doc = values[fn.name]
            fields.append(_schema(metadata))
            fields.append((doc or "").strip().split("\n", 1)[0])
        else:
            fields += [m for m, has in (("[metadata]", fn.has_metadata), ("[doc]", fn.has_doc)) if has]
        print("\t".join(fields).rstrip("\t"), file=out)
    if why_not:
        print(f"(type schemas and docs not read: {why_not})", file=out)


def main_list_exports(path: str, timeout: float) -> int:
    try:
        list_exports(path, sys.stdout, timeout)
    except BinaryFormatError as exc:
        print(f"tvmffi-gen: error: {exc}", file=sys.stderr)
        return 2
    return 0
