"""Read the defined dynamic symbols of an ELF shared library (no external tools needed).

Used to find functions a library exports with ``TVM_FFI_DLL_EXPORT_TYPED_FUNC`` (symbols
``__tvm_ffi_<name>``), which are not in the global registry.
"""

from __future__ import annotations

import struct

__all__ = ["defined_dynamic_symbols", "exported_ffi_functions", "ElfError"]

EXPORT_PREFIX = "__tvm_ffi_"


class ElfError(ValueError):
    """Not a readable ELF file."""


def defined_dynamic_symbols(path: str) -> list[str]:
    """Names of the symbols the library defines in its dynamic symbol table."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:4] != b"\x7fELF":
        raise ElfError(f"{path}: not an ELF file")
    is64 = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    try:
        if is64:
            shoff, = struct.unpack_from(end + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
        else:
            shoff, = struct.unpack_from(end + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
        sections = []
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
            str_off = sections[sh_link][1]
            entsize = sh_entsize or (24 if is64 else 16)
            for off in range(sh_offset, sh_offset + sh_size, entsize):
                if is64:
                    st_name, st_info, _other, st_shndx, _value, _size = struct.unpack_from(end + "IBBHQQ", data, off)
                else:
                    st_name, _value, _size, st_info, _other, st_shndx = struct.unpack_from(end + "IIIBBH", data, off)
                if st_shndx == 0 or st_name == 0:
                    continue
                bind = st_info >> 4
                if bind not in (1, 2):  # GLOBAL, WEAK
                    continue
                stop = data.index(b"\0", str_off + st_name)
                names.append(data[str_off + st_name : stop].decode("utf-8", "replace"))
        return sorted(set(names))
    except (struct.error, IndexError, ValueError) as exc:
        raise ElfError(f"{path}: malformed ELF file ({exc})") from None


def exported_ffi_functions(path: str) -> list[str]:
    """Names ``<name>`` of the ``__tvm_ffi_<name>`` functions a library exports."""
    out = []
    for sym in defined_dynamic_symbols(path):
        if sym.startswith(EXPORT_PREFIX):
            rest = sym[len(EXPORT_PREFIX):]
            if rest and not rest.startswith("_"):  # __tvm_ffi__metadata_x, __tvm_ffi__doc_x, ...
                out.append(rest)
    return out
