"""Exported names of a PE (Windows ``.dll``) file: the name table of its export directory.

Only what is needed is read: the DOS and COFF headers, the optional header's data directories,
the section table (to map addresses to file offsets) and the export directory's name pointers.
Every count and offset is checked against the file, so a malformed file gives
``BinaryFormatError``, never a hang.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from .errors import BinaryFormatError

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer  # bytes, memoryview, mmap: what memoryview() takes

__all__ = ["is_pe", "pe_exports"]

_MACHINES = {0x14C: "x86", 0x8664: "x86_64", 0xAA64: "arm64", 0x1C4: "arm"}


def is_pe(head: bytes) -> bool:
    return head[:2] == b"MZ"


def pe_exports(what: str, data: ReadableBuffer, prefix: bytes = b"") -> tuple[str, list[str]]:
    """(description, sorted names) of the names ``data`` exports that start with ``prefix``."""
    buf = memoryview(data)
    size = len(buf)
    if bytes(buf[:2]) != b"MZ":
        raise BinaryFormatError(f"{what}: not a PE file")
    if size < 0x40:
        raise BinaryFormatError(f"{what}: truncated PE file ({size} bytes)")
    (pe_off,) = struct.unpack_from("<I", buf, 0x3C)
    if pe_off + 24 > size:
        raise BinaryFormatError(f"{what}: truncated PE file (its PE header at byte {pe_off} is past its {size} bytes)")
    if bytes(buf[pe_off : pe_off + 4]) != b"PE\0\0":
        raise BinaryFormatError(f"{what}: not a PE file (an MS-DOS program without a PE header)")
    machine, nsections, _t, _p, _n, opt_size, _c = struct.unpack_from("<HHIIIHH", buf, pe_off + 4)
    arch = _MACHINES.get(machine, hex(machine))
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
    desc = f"{kind} {arch}"
    if opt_size < count_at + 4:
        return desc, []
    (ndirs,) = struct.unpack_from("<I", buf, opt + count_at)
    if ndirs == 0 or opt_size < dirs_at + 8:
        return desc, []
    exp_rva, exp_size = struct.unpack_from("<II", buf, opt + dirs_at)
    if exp_rva == 0 or exp_size == 0:
        return desc, []
    sec_at = opt + opt_size
    if sec_at + nsections * 40 > size:
        raise BinaryFormatError(f"{what}: truncated PE file ({nsections} section headers end past its {size} bytes)")
    sections: list[tuple[int, int, int, int]] = [
        struct.unpack_from("<IIII", buf, sec_at + i * 40 + 8) for i in range(nsections)
    ]

    def offset(rva: int, length: int, thing: str) -> int:
        for vsize, vaddr, raw_size, raw_ptr in sections:
            if vaddr <= rva < vaddr + max(vsize, raw_size):
                off = raw_ptr + rva - vaddr
                if off + length > size:
                    raise BinaryFormatError(
                        f"{what}: truncated PE file ({thing} at byte {off} ends past its {size} bytes)"
                    )
                return off
        raise BinaryFormatError(f"{what}: malformed PE file ({thing} at address {rva:#x} is outside its sections)")

    edir = offset(exp_rva, 40, "the export directory")
    nnames, _functions, names_rva = struct.unpack_from("<III", buf, edir + 24)  # NumberOfNames, AddressOf*
    if nnames == 0:
        return desc, []
    if nnames * 4 > size:
        raise BinaryFormatError(
            f"{what}: malformed PE file (it claims {nnames} exported names, more than its {size} bytes can hold)"
        )
    table = offset(names_rva, nnames * 4, f"the table of {nnames} exported names")
    names: list[str] = []
    for (rva,) in struct.iter_unpack("<I", buf[table : table + nnames * 4]):
        at = offset(rva, 1, "an exported name")
        if bytes(buf[at : at + len(prefix)]) != prefix:
            continue
        chunk = bytes(buf[at : at + 4096])
        nul = chunk.find(b"\0")
        if nul < 0 and at + len(chunk) >= size:
            raise BinaryFormatError(
                f"{what}: truncated PE file (an exported name at byte {at} runs past its {size} bytes)"
            )
        if nul < 0:
            raise BinaryFormatError(f"{what}: malformed PE file (an exported name at byte {at} is not terminated)")
        names.append(chunk[:nul].decode("utf-8", "replace"))
    return desc, sorted(set(names))
