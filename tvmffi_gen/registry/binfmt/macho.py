"""Exported symbols of a Mach-O library (thin 32/64-bit, either byte order, or universal "fat").

Exports are read from the dyld export trie (``LC_DYLD_EXPORTS_TRIE`` or the export part of
``LC_DYLD_INFO[_ONLY]``), which is what the loader resolves names against; a file without one falls
back to the external defined symbols of ``LC_SYMTAB``. Names are returned as C spells them: the one
leading underscore Mach-O adds is removed. Every count and offset is checked against the file
before use, so a malformed file gives ``BinaryFormatError``, never a hang.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from .errors import BinaryFormatError

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer  # bytes, memoryview, mmap: what memoryview() takes

__all__ = ["is_macho", "macho_dependencies", "macho_exports"]

_THIN = {
    b"\xcf\xfa\xed\xfe": ("<", True),
    b"\xce\xfa\xed\xfe": ("<", False),
    b"\xfe\xed\xfa\xcf": (">", True),
    b"\xfe\xed\xfa\xce": (">", False),
}
_FAT = {b"\xca\xfe\xba\xbe": False, b"\xca\xfe\xba\xbf": True}
_MAX_FAT_ARCHS = 32  # real files hold a handful; a Java class file shares 0xcafebabe with a far larger count

_LC_SYMTAB = 0x2
_LC_DYSYMTAB = 0xB
_LC_DYLD_INFO = 0x22
_LC_DYLD_INFO_ONLY = 0x80000022
_LC_DYLD_EXPORTS_TRIE = 0x80000033
#: LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB, LC_LAZY_LOAD_DYLIB, LC_LOAD_UPWARD_DYLIB
_LC_DEPENDENCIES = (0xC, 0x80000018, 0x8000001F, 0x20, 0x80000023)

_CPU_NAMES = {
    7: "i386",
    0x01000007: "x86_64",
    12: "arm",
    0x0100000C: "arm64",
    0x0200000C: "arm64_32",
    18: "ppc",
    0x01000012: "ppc64",
}


def is_macho(head: bytes) -> bool:
    return head[:4] in _THIN or head[:4] in _FAT


def macho_exports(what: str, data: ReadableBuffer, prefix: bytes = b"") -> tuple[str, list[str]]:
    """(description, sorted names) of the symbols ``data`` exports whose C name starts with ``prefix``.

    ``what`` names the file in errors. A universal file yields the union over its slices."""
    buf = memoryview(data)
    magic = bytes(buf[:4])
    if magic in _FAT:
        return _fat(what, buf, _FAT[magic], prefix)
    if magic in _THIN:
        arch, names = _thin(what, buf, prefix)
        return f"Mach-O {arch}", sorted(names)
    raise BinaryFormatError(f"{what}: not a Mach-O file")


def _fat_slices(what: str, buf: memoryview, is64: bool) -> list[tuple[str, tuple[int, int]]]:
    """Each slice of a universal file: its name in errors, and its (offset, size), checked."""
    if len(buf) < 8:
        raise BinaryFormatError(f"{what}: truncated universal Mach-O file ({len(buf)} bytes)")
    (nfat,) = struct.unpack_from(">I", buf, 4)
    if nfat == 0 or nfat > _MAX_FAT_ARCHS:
        raise BinaryFormatError(
            f"{what}: not a universal Mach-O file (it claims {nfat} architectures; a Java class file"
            " starts with the same magic)"
        )
    entry = struct.Struct(">iiQQII" if is64 else ">iiIII")
    if 8 + nfat * entry.size > len(buf):
        raise BinaryFormatError(
            f"{what}: truncated universal Mach-O file (its {nfat} architecture entries end past its {len(buf)} bytes)"
        )
    slices: list[tuple[str, tuple[int, int]]] = []
    for i in range(nfat):
        cputype, _sub, offset, size = entry.unpack_from(buf, 8 + i * entry.size)[:4]
        if offset + size > len(buf) or size < 4:
            raise BinaryFormatError(
                f"{what}: truncated universal Mach-O file (architecture {i} at bytes"
                f" {offset}..{offset + size}, past its {len(buf)} bytes)"
            )
        slices.append((f"{what} ({_CPU_NAMES.get(cputype, hex(cputype))} slice)", (offset, size)))
    return slices


def _fat(what: str, buf: memoryview, is64: bool, prefix: bytes) -> tuple[str, list[str]]:
    archs: list[str] = []
    names: set[str] = set()
    for name, (offset, size) in _fat_slices(what, buf, is64):
        arch, found = _thin(name, buf[offset : offset + size], prefix)
        archs.append(arch)
        names.update(found)
    return f"Mach-O universal ({', '.join(archs)})", sorted(names)


def _load_commands(what: str, buf: memoryview) -> tuple[str, str, bool, list[tuple[int, int, int]]]:
    """A thin file's architecture, byte order, whether it is 64-bit, and its load commands as
    (command, offset, size), each checked to lie within the commands' area."""
    magic = bytes(buf[:4])
    if magic not in _THIN:
        raise BinaryFormatError(f"{what}: not a Mach-O file")
    end, is64 = _THIN[magic]
    header = 32 if is64 else 28
    if len(buf) < header:
        raise BinaryFormatError(f"{what}: truncated Mach-O file ({len(buf)} bytes, its header needs {header})")
    cputype, _sub, _filetype, ncmds, sizeofcmds = struct.unpack_from(end + "iiIII", buf, 4)
    arch = _CPU_NAMES.get(cputype, hex(cputype & 0xFFFFFFFF))
    if header + sizeofcmds > len(buf):
        raise BinaryFormatError(
            f"{what}: truncated Mach-O file (its load commands end at byte"
            f" {header + sizeofcmds}, past its {len(buf)} bytes)"
        )
    if ncmds * 8 > sizeofcmds:
        raise BinaryFormatError(
            f"{what}: malformed Mach-O file ({ncmds} load commands cannot fit in {sizeofcmds} bytes)"
        )
    commands: list[tuple[int, int, int]] = []
    off, stop = header, header + sizeofcmds
    for i in range(ncmds):
        if off + 8 > stop:
            raise BinaryFormatError(f"{what}: malformed Mach-O file (load command {i} past the commands' end)")
        cmd, cmdsize = struct.unpack_from(end + "II", buf, off)
        if cmdsize < 8 or off + cmdsize > stop:
            raise BinaryFormatError(f"{what}: malformed Mach-O file (load command {i} of {cmdsize} bytes)")
        commands.append((cmd, off, cmdsize))
        off += cmdsize
    return arch, end, is64, commands


def _thin(what: str, buf: memoryview, prefix: bytes) -> tuple[str, set[str]]:
    arch, end, is64, commands = _load_commands(what, buf)
    trie: tuple[int, int] | None = None
    symtab: tuple[int, int, int, int] | None = None
    extdef: tuple[int, int] | None = None
    for cmd, off, cmdsize in commands:
        if cmd == _LC_DYLD_EXPORTS_TRIE and cmdsize >= 16:
            trie = struct.unpack_from(end + "II", buf, off + 8)
        elif cmd in (_LC_DYLD_INFO, _LC_DYLD_INFO_ONLY) and cmdsize >= 48:
            export_off, export_size = struct.unpack_from(end + "II", buf, off + 40)
            if export_size:
                trie = (export_off, export_size)
        elif cmd == _LC_SYMTAB and cmdsize >= 24:
            symtab = struct.unpack_from(end + "IIII", buf, off + 8)
        elif cmd == _LC_DYSYMTAB and cmdsize >= 24:
            extdef = struct.unpack_from(end + "II", buf, off + 16)
    if trie is not None and trie[1]:
        names = _trie(what, buf, trie[0], trie[1], b"_" + prefix if prefix else b"")
    elif symtab is not None:
        names = _symtab(what, buf, end, is64, symtab, extdef, prefix)
    else:
        names = []
    return arch, {n[1:] if n.startswith("_") else n for n in names}


def _thin_dependencies(what: str, buf: memoryview) -> list[str]:
    """The install names of the libraries a thin file loads (``@rpath/libtvm_ffi.dylib``)."""
    _arch, end, _is64, commands = _load_commands(what, buf)
    out: list[str] = []
    for cmd, off, cmdsize in commands:
        if cmd not in _LC_DEPENDENCIES or cmdsize < 24:
            continue
        (name_at,) = struct.unpack_from(end + "I", buf, off + 8)
        if not 24 <= name_at < cmdsize:
            raise BinaryFormatError(f"{what}: malformed Mach-O file (a library name outside its load command)")
        raw = bytes(buf[off + name_at : off + cmdsize])
        out.append(raw.split(b"\0", 1)[0].decode("utf-8", "replace"))
    return out


def macho_dependencies(what: str, data: ReadableBuffer) -> list[str]:
    """The install names of the libraries ``data`` loads (``LC_LOAD_DYLIB`` and its weak,
    re-exported, lazy and upward kinds), in load-command order; a universal file gives each
    name once over its slices."""
    buf = memoryview(data)
    magic = bytes(buf[:4])
    if magic in _THIN:
        return _thin_dependencies(what, buf)
    if magic not in _FAT:
        raise BinaryFormatError(f"{what}: not a Mach-O file")
    out: list[str] = []
    for name, (offset, size) in _fat_slices(what, buf, _FAT[magic]):
        out += [dep for dep in _thin_dependencies(name, buf[offset : offset + size]) if dep not in out]
    return out


def _uleb(what: str, trie: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(trie) or shift > 63:
            raise BinaryFormatError(f"{what}: malformed Mach-O export trie (bad number at trie byte {pos})")
        byte = trie[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _trie(what: str, buf: memoryview, start: int, size: int, prefix: bytes) -> list[str]:
    if start + size > len(buf):
        raise BinaryFormatError(
            f"{what}: truncated Mach-O file (its export trie ends at byte {start + size}, past its {len(buf)} bytes)"
        )
    trie = bytes(buf[start : start + size])
    names: list[str] = []
    seen: set[int] = set()
    todo: list[tuple[int, bytes]] = [(0, b"")]
    while todo:
        node, text = todo.pop()
        if node in seen:  # every node is reached once in a well-formed trie: a loop is malformed
            raise BinaryFormatError(f"{what}: malformed Mach-O export trie (node {node} reached twice)")
        seen.add(node)
        terminal, pos = _uleb(what, trie, node)
        if terminal and text.startswith(prefix):
            names.append(text.decode("utf-8", "replace"))
        pos += terminal
        if pos >= size:
            raise BinaryFormatError(f"{what}: malformed Mach-O export trie (node {node} ends past the trie)")
        children = trie[pos]
        pos += 1
        for _ in range(children):
            nul = trie.find(b"\0", pos)
            if nul < 0:
                raise BinaryFormatError(f"{what}: malformed Mach-O export trie (unterminated edge at trie byte {pos})")
            full = text + trie[pos:nul]
            child, pos = _uleb(what, trie, nul + 1)
            if child >= size:
                raise BinaryFormatError(
                    f"{what}: malformed Mach-O export trie (child node {child} past its {size} bytes)"
                )
            n = min(len(full), len(prefix))
            if full[:n] == prefix[:n]:  # only branches that can still lead to the prefix
                todo.append((child, full))
    return names


def _symtab(
    what: str,
    buf: memoryview,
    end: str,
    is64: bool,
    symtab: tuple[int, int, int, int],
    extdef: tuple[int, int] | None,
    prefix: bytes,
) -> list[str]:
    symoff, nsyms, stroff, strsize = symtab
    entry = struct.Struct(end + ("IBBHQ" if is64 else "IBBhI"))
    if symoff + nsyms * entry.size > len(buf) or stroff + strsize > len(buf):
        raise BinaryFormatError(
            f"{what}: truncated Mach-O file (its symbol table of {nsyms} entries or its"
            f" strings end past its {len(buf)} bytes)"
        )
    first, count = (0, nsyms) if extdef is None else extdef
    if first + count > nsyms:
        raise BinaryFormatError(f"{what}: malformed Mach-O file (external symbols {first}+{count} of {nsyms})")
    strings = bytes(buf[stroff : stroff + strsize])
    raw_prefix = b"_" + prefix if prefix else b""
    names: list[str] = []
    for i in range(first, first + count):
        strx, ntype = entry.unpack_from(buf, symoff + i * entry.size)[:2]
        # defined (N_SECT or N_ABS), external, not private extern, not a debugging entry
        if ntype & 0xE0 or not ntype & 0x01 or ntype & 0x10 or (ntype & 0x0E) not in (0x0E, 0x02):
            continue
        if strx >= strsize:
            raise BinaryFormatError(f"{what}: malformed Mach-O file (symbol name {strx} past its strings)")
        nul = strings.find(b"\0", strx)
        name = strings[strx : nul if nul >= 0 else strsize]
        if name.startswith(raw_prefix):
            names.append(name.decode("utf-8", "replace"))
    return names
