"""Find the TVM FFI functions a library exports, without loading it: ELF, Mach-O or PE alike.

One entry point for the three formats apache-tvm-ffi ships for (and for the libraries a file
needs, ``dynamic_dependencies``). The format is chosen by the file's first bytes, never by its name or by the platform
running this, so a macOS or Windows library is read on Linux as well as on its own platform. ELF
goes through ``elf``, Mach-O through ``macho`` and PE through ``pe``. Each raises
``BinaryFormatError`` naming the file and what is wrong with it.
"""

from __future__ import annotations

import mmap
import os
import stat
from dataclasses import dataclass

from .elf import ElfError, defined_dynamic_symbols, needed_libraries
from .errors import BinaryFormatError
from .macho import is_macho, macho_dependencies, macho_exports
from .pe import is_pe, pe_dependencies, pe_exports

__all__ = [
    "BinaryFormatError",
    "ExportedFunction",
    "Exports",
    "read_exports",
    "exported_ffi_functions",
    "dynamic_dependencies",
]

EXPORT_PREFIX = "__tvm_ffi_"
METADATA_PREFIX = "__tvm_ffi__metadata_"
DOC_PREFIX = "__tvm_ffi__doc_"


@dataclass(frozen=True)
class ExportedFunction:
    """A ``__tvm_ffi_<name>`` export, and whether its metadata and doc getters are exported too."""

    name: str
    has_metadata: bool
    has_doc: bool


@dataclass(frozen=True)
class Exports:
    """What a file is (``ELF``, ``Mach-O arm64``, ``PE32+ x86_64``...) and its TVM FFI functions."""

    format: str
    functions: list[ExportedFunction]


def _symbols(path: str, prefix: str) -> tuple[str, list[str]]:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise BinaryFormatError(f"{path}: not a regular file")
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            head = fh.read(4)
            if head == b"\x7fELF":
                fh.close()
                try:
                    return "ELF", defined_dynamic_symbols(path, prefix)
                except ElfError as exc:
                    raise BinaryFormatError(str(exc)) from None
            if not head:
                raise BinaryFormatError(f"{path}: empty file, not a shared library")
            if not (is_macho(head) or is_pe(head)):
                raise BinaryFormatError(
                    f"{path}: not a shared library (neither ELF, Mach-O nor PE: it starts with {head!r})"
                )
            if st.st_size < 64:
                raise BinaryFormatError(f"{path}: truncated library file ({st.st_size} bytes)")
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise BinaryFormatError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        reader = macho_exports if is_macho(head) else pe_exports
        return reader(path, data, prefix.encode())
    finally:
        data.close()


def read_exports(path: str) -> Exports:
    """The file's format and the ``__tvm_ffi_<name>`` functions it exports, sorted by name."""
    fmt, symbols = _symbols(path, EXPORT_PREFIX)
    present = set(symbols)
    functions = [
        ExportedFunction(
            name=sym[len(EXPORT_PREFIX) :],
            has_metadata=METADATA_PREFIX + sym[len(EXPORT_PREFIX) :] in present,
            has_doc=DOC_PREFIX + sym[len(EXPORT_PREFIX) :] in present,
        )
        for sym in symbols
        if len(sym) > len(EXPORT_PREFIX) and sym[len(EXPORT_PREFIX)] != "_"
    ]
    return Exports(fmt, functions)


def exported_ffi_functions(path: str) -> list[str]:
    """Names ``<name>`` of the ``__tvm_ffi_<name>`` functions a library of any of the three formats
    exports, sorted (for ELF the same list as ``elf.exported_ffi_functions``)."""
    n = len(EXPORT_PREFIX)
    return [sym[n:] for sym in _symbols(path, EXPORT_PREFIX)[1] if len(sym) > n and sym[n] != "_"]


def dynamic_dependencies(path: str) -> list[str]:
    """The libraries a file names as its dynamic dependencies, as written, read without loading
    it: an ELF file's ``DT_NEEDED`` entries (``libc.so.6``), a Mach-O file's ``LC_LOAD_DYLIB``
    install names (``@rpath/libtvm_ffi.dylib``), a PE file's imported DLLs (``KERNEL32.dll``)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
            if head == b"\x7fELF":
                fh.close()
                try:
                    return needed_libraries(path)
                except ElfError as exc:
                    raise BinaryFormatError(str(exc)) from None
            if not (is_macho(head) or is_pe(head)):
                raise BinaryFormatError(f"{path}: not a shared library (neither ELF, Mach-O nor PE)")
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise BinaryFormatError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        return macho_dependencies(path, data) if is_macho(head) else pe_dependencies(path, data)
    finally:
        data.close()
