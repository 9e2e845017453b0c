"""Read the defined dynamic symbols and the dynamic dependencies of an ELF shared library (no
external tools needed).

Used to find functions a library exports with ``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` (symbols
``__tvm_ffi_<name>``), which are not in the global registry, and whether a library links
``libtvm_ffi`` at all.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct

__all__ = ["defined_dynamic_symbols", "exported_ffi_functions", "needed_libraries", "ElfError"]

EXPORT_PREFIX = "__tvm_ffi_"


class ElfError(ValueError):
    """Not a readable ELF file."""


def defined_dynamic_symbols(path: str, prefix: str = "") -> list[str]:
    """Names of the symbols the library defines in its dynamic symbol table (those starting
    with ``prefix``: checked on the raw bytes, so a large table is not decoded whole)."""
    raw_prefix = prefix.encode()
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ElfError(f"{path}: not a regular file")
        if st.st_size < 64:
            raise ElfError(f"{path}: not an ELF file (only {st.st_size} bytes)")
        # mapped, not read: only the headers and symbol tables are touched
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return _defined_dynamic_symbols(path, data, raw_prefix)
    finally:
        data.close()


#: (type, offset, size, link, entry size) of one section header
_Section = tuple[int, int, int, int, int]

_SHT_DYNAMIC = 6
_SHT_DYNSYM = 11
_DT_NEEDED = 1


def _section_headers(path: str, data: mmap.mmap) -> tuple[bool, str, list[_Section]]:
    """Whether the file is 64-bit, its byte order (a ``struct`` prefix), and its section headers."""
    if data[:4] != b"\x7fELF":
        raise ElfError(f"{path}: not an ELF file")
    is64 = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    if is64:
        (shoff,) = struct.unpack_from(end + "Q", data, 0x28)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
    else:
        (shoff,) = struct.unpack_from(end + "I", data, 0x20)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
    if shoff + shnum * shentsize > len(data):
        raise ElfError(
            f"{path}: truncated ELF file ({len(data)} bytes; its section headers end at byte"
            f" {shoff + shnum * shentsize})"
        )
    # Elf_Shdr: name, type, flags, addr, offset, size, link, info, addralign, entsize
    header = struct.Struct(end + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII"))
    sections: list[_Section] = []
    for i in range(shnum):
        fields = header.unpack_from(data, shoff + i * shentsize)
        sections.append((fields[1], fields[4], fields[5], fields[6], fields[9]))
    return is64, end, sections


def _string(path: str, data: mmap.mmap, start: int) -> str:
    """The NUL-terminated string at ``start``."""
    stop = data.find(b"\0", start)
    if stop < 0:
        raise ElfError(f"{path}: malformed ELF file (unterminated string)")
    return data[start:stop].decode("utf-8", "replace")


def _defined_dynamic_symbols(path: str, data: mmap.mmap, raw_prefix: bytes) -> list[str]:
    try:
        is64, end, sections = _section_headers(path, data)
        names: list[str] = []
        for sh_type, sh_offset, sh_size, sh_link, sh_entsize in sections:
            if sh_type != _SHT_DYNSYM:
                continue
            str_off, str_size = sections[sh_link][1], sections[sh_link][2]
            if raw_prefix and data.find(raw_prefix, str_off, str_off + str_size) < 0:
                continue  # no name with the prefix at all: skip the table
            entsize = sh_entsize or (24 if is64 else 16)
            layout = struct.Struct(end + ("IBBHQQ" if is64 else "IIIBBH"))
            if entsize != layout.size or sh_size % entsize:
                raise ElfError(f"{path}: malformed ELF file (dynamic symbol entries of {entsize} bytes)")
            table = data[sh_offset : sh_offset + sh_size]
            if len(table) != sh_size:
                raise ElfError(f"{path}: malformed ELF file (symbol table past the end of the file)")
            for entry in layout.iter_unpack(table):
                if is64:
                    st_name, st_info, _other, st_shndx, _value, _size = entry
                else:
                    st_name, _value, _size, st_info, _other, st_shndx = entry
                if st_shndx == 0 or st_name == 0:
                    continue
                if st_info >> 4 not in (1, 2):  # GLOBAL, WEAK
                    continue
                start = str_off + st_name
                if raw_prefix and data[start : start + len(raw_prefix)] != raw_prefix:
                    continue
                names.append(_string(path, data, start))
        return sorted(set(names))
    except ElfError:
        raise
    except (struct.error, IndexError, ValueError) as exc:
        raise ElfError(f"{path}: malformed ELF file ({exc})") from None


def needed_libraries(path: str) -> list[str]:
    """The libraries the file names as its dynamic dependencies (its ``DT_NEEDED`` entries, as
    written: ``libc.so.6``, ``libtvm_ffi.so``), in the order the loader reads them."""
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size < 64:
            raise ElfError(f"{path}: not an ELF file (too short)")
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        is64, end, sections = _section_headers(path, data)
        entry = struct.Struct(end + ("qQ" if is64 else "iI"))
        needed: list[str] = []
        for sh_type, sh_offset, sh_size, sh_link, _entsize in sections:
            if sh_type != _SHT_DYNAMIC:
                continue
            str_off = sections[sh_link][1]
            table = data[sh_offset : sh_offset + sh_size - sh_size % entry.size]
            for tag, value in entry.iter_unpack(table):
                if tag == 0:  # DT_NULL ends the table
                    break
                if tag == _DT_NEEDED:
                    needed.append(_string(path, data, str_off + value))
        return needed
    except ElfError:
        raise
    except (struct.error, IndexError, ValueError) as exc:
        raise ElfError(f"{path}: malformed ELF file ({exc})") from None
    finally:
        data.close()


def exported_ffi_functions(path: str) -> list[str]:
    """Names ``<name>`` of the ``__tvm_ffi_<name>`` functions a library exports."""
    out: list[str] = []
    for sym in defined_dynamic_symbols(path, EXPORT_PREFIX):
        if sym.startswith(EXPORT_PREFIX):
            rest = sym[len(EXPORT_PREFIX) :]
            if rest and not rest.startswith("_"):  # __tvm_ffi__metadata_x, __tvm_ffi__doc_x, ...
                out.append(rest)
    return out
