"""Read the defined dynamic symbols of an ELF shared library (no external tools needed).

Used to find functions a library exports with ``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` (symbols
``__tvm_ffi_<name>``), which are not in the global registry.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct

__all__ = ["defined_dynamic_symbols", "exported_ffi_functions", "ElfError"]

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


def _defined_dynamic_symbols(path: str, data: mmap.mmap, raw_prefix: bytes) -> list[str]:
    if data[:4] != b"\x7fELF":
        raise ElfError(f"{path}: not an ELF file")
    is64 = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    try:
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
        sections: list[tuple[int, int, int, int, int]] = []
        for i in range(shnum):
            off = shoff + i * shentsize
            if is64:
                _name, sh_type, _flags, _addr, sh_offset, sh_size, sh_link, _info, _align, sh_entsize = (
                    struct.unpack_from(end + "IIQQQQIIQQ", data, off)
                )
            else:
                _name, sh_type, _flags, _addr, sh_offset, sh_size, sh_link, _info, _align, sh_entsize = (
                    struct.unpack_from(end + "IIIIIIIIII", data, off)
                )
            sections.append((sh_type, sh_offset, sh_size, sh_link, sh_entsize))
        names: list[str] = []
        for sh_type, sh_offset, sh_size, sh_link, sh_entsize in sections:
            if sh_type != 11:  # SHT_DYNSYM
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
                stop = data.find(b"\0", start)
                if stop < 0:
                    raise ElfError(f"{path}: malformed ELF file (unterminated symbol name)")
                names.append(data[start:stop].decode("utf-8", "replace"))
        return sorted(set(names))
    except ElfError:
        raise
    except (struct.error, IndexError, ValueError) as exc:
        raise ElfError(f"{path}: malformed ELF file ({exc})") from None


def exported_ffi_functions(path: str) -> list[str]:
    """Names ``<name>`` of the ``__tvm_ffi_<name>`` functions a library exports."""
    out: list[str] = []
    for sym in defined_dynamic_symbols(path, EXPORT_PREFIX):
        if sym.startswith(EXPORT_PREFIX):
            rest = sym[len(EXPORT_PREFIX) :]
            if rest and not rest.startswith("_"):  # __tvm_ffi__metadata_x, __tvm_ffi__doc_x, ...
                out.append(rest)
    return out
