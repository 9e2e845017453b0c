"""Where ``--stubs-for`` keeps what only its own processes read (stubgen's output, the copy of
the stubs the self-check's mypy reads, that mypy's cache): a folder in memory when the system has
one to spare, since thousands of small files written to a journalled disk while other processes
write cost seconds (tvm's, measured in benchmarks/results_stubs.md). ``TMPDIR`` (or ``TEMP``,
``TMP``), when set, is the user's choice.
"""

from __future__ import annotations

import functools
import os
import tempfile

__all__ = ["scratch_folder"]

#: Linux's shared-memory file system, when it is mounted
MEMORY = "/dev/shm"
#: the space it must have free (tvm's scratch files take about 60 MB at once)
NEEDED = 512 * 1024 * 1024
#: what ``tempfile`` reads to choose its folder: when one is set, that choice stands
_CHOSEN = ("TMPDIR", "TEMP", "TMP")


@functools.cache
def _memory_folder() -> str | None:
    if any(os.environ.get(name) for name in _CHOSEN) or not os.path.isdir(MEMORY):
        return None
    if not os.access(MEMORY, os.W_OK | os.X_OK):
        return None
    try:
        stat = os.statvfs(MEMORY)
    except OSError:
        return None
    return MEMORY if stat.f_bavail * stat.f_frsize >= NEEDED else None


def scratch_folder(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A new temporary folder for files only this tool's processes read (see the module's doc)."""
    return tempfile.TemporaryDirectory(prefix=prefix, dir=_memory_folder())
