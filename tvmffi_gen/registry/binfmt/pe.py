"""Exported names of a PE (Windows ``.dll``) file, the name table of its export directory, and
the DLLs it imports from, the names of its import directory.

Only what is needed is read: the DOS and COFF headers, the optional header's data directories,
the section table (to map addresses to file offsets), the export directory's name pointers and
the import descriptors' names.
Every count and offset is checked against the file, so a malformed file gives
``BinaryFormatError``, never a hang.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from .errors import BinaryFormatError

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer  # bytes, memoryview, mmap: what memoryview() takes

__all__ = ["is_pe", "pe_dependencies", "pe_exports"]

_MACHINES = {0x14C: "x86", 0x8664: "x86_64", 0xAA64: "arm64", 0x1C4: "arm"}


def is_pe(head: bytes) -> bool:
    return head[:2] == b"MZ"


class _Layout:
    """What every reader of a PE file needs: its description (``PE32+ x86_64``), its data
    directories, and the mapping of addresses to file offsets through its sections."""

    def __init__(self, what: str, buf: memoryview) -> None:
        self.what = what
        self.buf = buf
        size = self.size = len(buf)
        if bytes(buf[:2]) != b"MZ":
            raise BinaryFormatError(f"{what}: not a PE file")
        if size < 0x40:
            raise BinaryFormatError(f"{what}: truncated PE file ({size} bytes)")
        (pe_off,) = struct.unpack_from("<I", buf, 0x3C)
        if pe_off + 24 > size:
            raise BinaryFormatError(
                f"{what}: truncated PE file (its PE header at byte {pe_off} is past its {size} bytes)"
            )
        if bytes(buf[pe_off : pe_off + 4]) != b"PE\0\0":
            raise BinaryFormatError(f"{what}: not a PE file (an MS-DOS program without a PE header)")
        machine, nsections, _t, _p, _n, opt_size, _c = struct.unpack_from("<HHIIIHH", buf, pe_off + 4)
        opt = pe_off + 24
        if opt + opt_size > size or opt_size < 2:
            raise BinaryFormatError(f"{what}: truncated PE file (its optional header ends past its {size} bytes)")
        (opt_magic,) = struct.unpack_from("<H", buf, opt)
        if opt_magic == 0x20B:
            count_at, dirs_at, kind = 108, 112, "PE32+"
        elif opt_magic == 0x10B:
            count_at, dirs_at, kind = 92, 96, "PE32"
        else:
            raise BinaryFormatError(f"{what}: malformed PE file (optional header magic {opt_magic:#x})")
        self.desc = f"{kind} {_MACHINES.get(machine, hex(machine))}"
        self.ndirs = 0
        if opt_size >= count_at + 4:
            (ndirs,) = struct.unpack_from("<I", buf, opt + count_at)
            self.ndirs = min(ndirs, (opt_size - dirs_at) // 8) if opt_size >= dirs_at else 0
        self.dirs_at = opt + dirs_at
        self.sec_at = opt + opt_size
        self.nsections = nsections
        self._sections: list[tuple[int, int, int, int]] | None = None

    def directory(self, index: int) -> tuple[int, int]:
        """(address, size) of data directory ``index``; (0, 0) when the file has none."""
        if index >= self.ndirs:
            return 0, 0
        rva, length = struct.unpack_from("<II", self.buf, self.dirs_at + 8 * index)
        return int(rva), int(length)

    def offset(self, rva: int, length: int, thing: str) -> int:
        """The file offset of ``length`` bytes at address ``rva`` (``thing`` names them in errors)."""
        if self._sections is None:
            if self.sec_at + self.nsections * 40 > self.size:
                raise BinaryFormatError(
                    f"{self.what}: truncated PE file ({self.nsections} section headers end past its {self.size} bytes)"
                )
            self._sections = [
                struct.unpack_from("<IIII", self.buf, self.sec_at + i * 40 + 8) for i in range(self.nsections)
            ]
        for vsize, vaddr, raw_size, raw_ptr in self._sections:
            if vaddr <= rva < vaddr + max(vsize, raw_size):
                off = raw_ptr + rva - vaddr
                if off + length > self.size:
                    raise BinaryFormatError(
                        f"{self.what}: truncated PE file ({thing} at byte {off} ends past its {self.size} bytes)"
                    )
                return int(off)
        raise BinaryFormatError(f"{self.what}: malformed PE file ({thing} at address {rva:#x} is outside its sections)")

    def string(self, at: int, thing: str) -> str:
        """The NUL-terminated name at file offset ``at`` (at most 4096 bytes)."""
        chunk = bytes(self.buf[at : at + 4096])
        nul = chunk.find(b"\0")
        if nul < 0 and at + len(chunk) >= self.size:
            raise BinaryFormatError(
                f"{self.what}: truncated PE file ({thing} at byte {at} runs past its {self.size} bytes)"
            )
        if nul < 0:
            raise BinaryFormatError(f"{self.what}: malformed PE file ({thing} at byte {at} is not terminated)")
        return chunk[:nul].decode("utf-8", "replace")


def pe_exports(what: str, data: ReadableBuffer, prefix: bytes = b"") -> tuple[str, list[str]]:
    """(description, sorted names) of the names ``data`` exports that start with ``prefix``."""
    pe = _Layout(what, memoryview(data))
    exp_rva, exp_size = pe.directory(0)
    if exp_rva == 0 or exp_size == 0:
        return pe.desc, []
    edir = pe.offset(exp_rva, 40, "the export directory")
    nnames, _functions, names_rva = struct.unpack_from("<III", pe.buf, edir + 24)  # NumberOfNames, AddressOf*
    if nnames == 0:
        return pe.desc, []
    if nnames * 4 > pe.size:
        raise BinaryFormatError(
            f"{what}: malformed PE file (it claims {nnames} exported names, more than its {pe.size} bytes can hold)"
        )
    table = pe.offset(names_rva, nnames * 4, f"the table of {nnames} exported names")
    names: list[str] = []
    for (rva,) in struct.iter_unpack("<I", pe.buf[table : table + nnames * 4]):
        at = pe.offset(rva, 1, "an exported name")
        if bytes(pe.buf[at : at + len(prefix)]) != prefix:
            continue
        names.append(pe.string(at, "an exported name"))
    return pe.desc, sorted(set(names))


#: Import descriptors read at most (a real DLL imports from tens of DLLs): a bound on a malformed file.
_MAX_IMPORTS = 4096


def pe_dependencies(what: str, data: ReadableBuffer) -> list[str]:
    """The DLLs ``data`` imports from (its import directory's names, as written:
    ``tvm_ffi.dll``, ``KERNEL32.dll``), in the order listed."""
    pe = _Layout(what, memoryview(data))
    imp_rva, imp_size = pe.directory(1)
    if imp_rva == 0 or imp_size == 0:
        return []
    names: list[str] = []
    for i in range(_MAX_IMPORTS):
        at = pe.offset(imp_rva + 20 * i, 20, "an import descriptor")
        descriptor = struct.unpack_from("<IIIII", pe.buf, at)
        if not any(descriptor):
            return names
        names.append(pe.string(pe.offset(descriptor[3], 1, "an imported DLL's name"), "an imported DLL's name"))
    raise BinaryFormatError(f"{what}: malformed PE file (more than {_MAX_IMPORTS} import descriptors)")
