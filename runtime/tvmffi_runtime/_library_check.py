"""Why a file cannot be loaded as a shared library by this process, found before ``dlopen``.

Some broken files do not fail ``dlopen`` cleanly: the loader maps a truncated ELF file's segments
and the process dies of SIGBUS touching their pages. :func:`library_problem` reads the header and
the program headers (on Linux; elsewhere what the platform can tell from the first bytes) so the
load error names the file and what is wrong with it instead.
"""

from __future__ import annotations

import os
import struct
import sys
from typing import Any

from ._platform import CURRENT as _PLATFORM

__all__ = ["library_problem"]


def library_problem(path: str) -> str | None:
    """Explain why ``path`` is not a loadable shared library for this process, if we can tell.

    Besides the header (magic, class, architecture), every loadable (``PT_LOAD``) segment must
    lie inside the file: the loader maps the segments and dies of SIGBUS touching the pages of
    a truncated file, before ``dlopen`` could report anything.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            size = os.fstat(fh.fileno()).st_size
            if not sys.platform.startswith("linux"):
                import platform

                return _PLATFORM.wrong_platform(path) or _PLATFORM.architecture_problem(path, platform.machine())
            problem = _PLATFORM.wrong_platform(path) or _elf_header_problem(head)
            if problem is not None:
                return problem
            return _elf_segment_problem(fh, head, size)
    except OSError as exc:
        return f"cannot read it ({exc.strerror})"


def _elf_header_problem(head: bytes) -> str | None:
    if len(head) == 0:
        return "the file is empty"
    if head[:4] != b"\x7fELF":
        return "not an ELF shared library"
    if len(head) < 20:
        return "truncated ELF file"
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    import platform

    expected = {"x86_64": 62, "aarch64": 183, "arm64": 183, "ppc64le": 21, "riscv64": 243}
    want = expected.get(platform.machine())
    if want is not None and machine != want:
        return f"built for another architecture (ELF machine {machine}, this process is {platform.machine()})"
    return None


_PT_LOAD = 1
_PN_XNUM = 0xFFFF  # the real program header count is elsewhere (section header 0)


def _elf_segment_problem(fh: Any, head: bytes, size: int) -> str | None:
    """Why the program headers or the loadable segments of an ELF file (open as ``fh``, ``size``
    bytes, starting with ``head``) do not fit in it, or None. Only checks what it can parse:
    an unknown class or byte order is left to the loader to report."""
    if head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    is64 = head[4] == 2
    end = "<" if head[5] == 1 else ">"
    if len(head) < (64 if is64 else 52):
        return f"truncated ELF file ({size} bytes; its ELF header ends past that)"
    if is64:
        (phoff,) = struct.unpack_from(end + "Q", head, 32)
        phentsize, phnum = struct.unpack_from(end + "HH", head, 54)
        ph_fmt, ph_min = end + "IIQQQQ", 40  # type, flags, offset, vaddr, paddr, filesz
    else:
        (phoff,) = struct.unpack_from(end + "I", head, 28)
        phentsize, phnum = struct.unpack_from(end + "HH", head, 42)
        ph_fmt, ph_min = end + "IIIII", 20  # type, offset, vaddr, paddr, filesz
    if phnum == 0 or phnum == _PN_XNUM:
        return None
    if phentsize < ph_min or phoff + phentsize * phnum > size:
        return f"truncated ELF file ({size} bytes; its program headers end past that)"
    fh.seek(phoff)
    table = fh.read(phentsize * phnum)
    if len(table) < phentsize * phnum:  # the file shrank under us
        return f"truncated ELF file ({size} bytes; its program headers end past that)"
    for i in range(phnum):
        fields = struct.unpack_from(ph_fmt, table, i * phentsize)
        if is64:
            p_type, p_offset, p_filesz = fields[0], fields[2], fields[5]
        else:
            p_type, p_offset, p_filesz = fields[0], fields[1], fields[4]
        if p_type == _PT_LOAD and p_offset + p_filesz > size:
            return f"truncated ELF file ({size} bytes; a loadable segment ends at byte {p_offset + p_filesz})"
    return None
