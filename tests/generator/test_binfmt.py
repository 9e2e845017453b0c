"""The export readers for ELF, Mach-O and PE (tvmffi_gen.registry.binfmt) and ``tvmffi-gen --list-exports``.

Fixtures in tests/fixtures/binfmt/ were cross-compiled here with ``zig cc`` and joined with
``llvm-lipo`` (make_fixtures.py); the expected lists below are what ``llvm-objdump --macho
--exports-trie`` and ``llvm-readobj --coff-exports`` list for them (checked again below when those
tools are installed). The apache-tvm-ffi wheels for macOS and Windows are fetched by name from the
package index in the last tests, which skip with their reason when it cannot be reached.
"""

from __future__ import annotations

import random
import re
import shutil
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main
from tvmffi_gen.registry.binfmt import (
    BinaryFormatError,
    ExportedFunction,
    _symbols,
    dynamic_dependencies,
    elf,
    exported_ffi_functions,
    read_exports,
)
from tvmffi_gen.registry.binfmt.macho import macho_dependencies, macho_exports
from tvmffi_gen.registry.binfmt.pe import pe_dependencies, pe_exports

from conftest import TESTING_LIB

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "binfmt"
FEW = [ExportedFunction("add_one", True, True), ExportedFunction("no_meta", False, False)]
# what llvm-objdump / llvm-readobj list for few.c, with Mach-O's leading underscore removed
# (a dylib exports every visible function, and the linker's __dso_handle and __mh_dylib_header;
# a dll only what is marked dllexport; the static function is exported by neither)
FEW_ALL_MACHO = [
    "__dso_handle",
    "__tvm_ffi__doc_add_one",
    "__tvm_ffi__metadata_add_one",
    "__tvm_ffi_add_one",
    "__tvm_ffi_no_meta",
    "_mh_dylib_header",
    "plain_export",
    "uses_hidden",
]
FEW_ALL_PE = [
    "__tvm_ffi__doc_add_one",
    "__tvm_ffi__metadata_add_one",
    "__tvm_ffi_add_one",
    "__tvm_ffi_no_meta",
    "plain_export",
]


def many_expected() -> list[ExportedFunction]:
    return [ExportedFunction(f"fn_{i:04d}", i % 3 == 0, i % 5 == 0) for i in range(300)]


def test_thin_macho_lists_the_ffi_functions_and_which_metadata_they_carry() -> None:
    exports = read_exports(str(FIX / "few_x86_64.dylib"))
    assert exports.format == "Mach-O x86_64"
    assert exports.functions == FEW
    assert _symbols(str(FIX / "few_x86_64.dylib"), "")[1] == FEW_ALL_MACHO
    assert _symbols(str(FIX / "few_fat.dylib"), "")[1] == FEW_ALL_MACHO


def test_universal_macho_reads_every_slice() -> None:
    exports = read_exports(str(FIX / "few_fat.dylib"))
    assert exports.format == "Mach-O universal (x86_64, arm64)"
    assert exports.functions == FEW


def test_universal_file_with_64_bit_offsets() -> None:
    # FAT_MAGIC_64 (0xcafebabf; fat_arch_64: cputype, cpusubtype, u64 offset, u64 size, align,
    # reserved) -- llvm-lipo 14 cannot write one, so the committed file's header is rewritten
    fat = (FIX / "few_fat.dylib").read_bytes()
    (count,) = struct.unpack_from(">I", fat, 4)
    entries = [struct.unpack_from(">iiIII", fat, 8 + i * 20) for i in range(count)]
    header = struct.pack(">II", 0xCAFEBABF, count) + b"".join(
        struct.pack(">iiQQII", cpu, sub, offset, size, align, 0) for cpu, sub, offset, size, align in entries
    )
    assert len(header) <= entries[0][2]  # the slices stay where they are
    desc, names = macho_exports("fat64", header + fat[len(header) :], b"__tvm_ffi_")
    assert desc == "Mach-O universal (x86_64, arm64)"
    assert names == ["__tvm_ffi__doc_add_one", "__tvm_ffi__metadata_add_one", "__tvm_ffi_add_one", "__tvm_ffi_no_meta"]


def test_pe_export_directory() -> None:
    exports = read_exports(str(FIX / "few.dll"))
    assert exports.format == "PE32+ x86_64"
    assert exports.functions == FEW
    assert _symbols(str(FIX / "few.dll"), "")[1] == FEW_ALL_PE


@pytest.mark.parametrize("name", ["many.dylib", "many.dll"])
def test_many_exports(name: str) -> None:
    assert read_exports(str(FIX / name)).functions == many_expected()


def test_elf_through_the_common_entry_is_the_elf_reader_unchanged() -> None:
    assert read_exports(str(TESTING_LIB)).format == "ELF"
    assert exported_ffi_functions(str(TESTING_LIB)) == elf.exported_ffi_functions(str(TESTING_LIB))
    assert exported_ffi_functions(str(TESTING_LIB)) == [
        "testing_dll_schema_id_int",
        "testing_dll_test_add_with_docstring",
    ]


def _retarget_trie_commands(data: bytearray) -> bytearray:
    """A copy of a thin 64-bit Mach-O whose export-trie load commands are renamed to an unknown
    command, so that the reader must fall back to the symbol table."""
    (ncmds,) = struct.unpack_from("<I", data, 16)
    off = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, off)
        if cmd in (0x22, 0x80000022, 0x80000033):
            struct.pack_into("<I", data, off, 0x7FFF)
        off += size
    return data


def test_symbol_table_fallback_gives_the_same_names() -> None:
    for name in ("few_x86_64.dylib", "many.dylib"):
        data = bytearray((FIX / name).read_bytes())
        want = macho_exports(name, bytes(data), b"")
        assert macho_exports(name, bytes(_retarget_trie_commands(data)), b"") == want


# --- malformed input: a clear error naming the file, never a hang or another exception ---------


def _error(reader, data: bytes) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(BinaryFormatError) as info:
        reader("lib.bin", data, b"")
    assert str(info.value).startswith("lib.bin")
    return str(info.value)


def test_wrong_magic_and_not_a_file(tmp_path: Path) -> None:
    text = tmp_path / "notes.dylib"
    text.write_text("hello, this is text and not a library\n" * 3)
    with pytest.raises(BinaryFormatError, match=r"notes\.dylib: not a shared library \(neither ELF, Mach-O nor PE"):
        read_exports(str(text))
    with pytest.raises(BinaryFormatError, match="not a regular file"):
        read_exports(str(tmp_path))
    with pytest.raises(BinaryFormatError, match=r"missing\.dll: cannot read it"):
        read_exports(str(tmp_path / "missing.dll"))
    mz = b"MZ" + bytes(0x3A) + struct.pack("<I", 0x40) + b"NOPE" + bytes(64)
    assert "an MS-DOS program without a PE header" in _error(pe_exports, mz)


def test_truncated_files_give_a_clear_error() -> None:
    assert "truncated" in _error(macho_exports, (FIX / "few_x86_64.dylib").read_bytes()[:20])
    assert "truncated" in _error(macho_exports, (FIX / "few_x86_64.dylib").read_bytes()[:200])
    assert "truncated" in _error(macho_exports, (FIX / "few_fat.dylib").read_bytes()[:4096])
    assert "truncated" in _error(pe_exports, (FIX / "few.dll").read_bytes()[:300])
    assert "truncated PE file (an exported name" in _error(pe_exports, (FIX / "many.dll").read_bytes()[:20000])
    assert "truncated PE file (the table of 460 exported names" in _error(
        pe_exports, (FIX / "many.dll").read_bytes()[:10000]
    )
    assert "truncated PE file (the export directory" in _error(pe_exports, (FIX / "many.dll").read_bytes()[:5000])


def test_huge_counts_are_refused_at_once() -> None:
    fat = bytearray((FIX / "few_fat.dylib").read_bytes())
    struct.pack_into(">I", fat, 4, 0xFFFFFFF)
    assert "claims 268435455 architectures" in _error(macho_exports, bytes(fat))
    thin = bytearray((FIX / "few_x86_64.dylib").read_bytes())
    struct.pack_into("<I", thin, 16, 0xFFFFFFFF)  # ncmds
    assert "load commands cannot fit" in _error(macho_exports, bytes(thin))
    dll = bytearray((FIX / "many.dll").read_bytes())
    _desc, names = pe_exports("x", bytes(dll), b"")
    at = bytes(dll).find(struct.pack("<II", len(names), len(names)))  # NumberOfFunctions, NumberOfNames
    assert at > 0
    struct.pack_into("<I", dll, at + 4, 0x7FFFFFFF)
    assert "2147483647 exported names" in _error(pe_exports, bytes(dll))
    stripped = _retarget_trie_commands(bytearray((FIX / "few_x86_64.dylib").read_bytes()))
    off = 32
    for _ in range(struct.unpack_from("<I", stripped, 16)[0]):
        cmd, size = struct.unpack_from("<II", stripped, off)
        if cmd == 0x2:  # LC_SYMTAB: nsyms
            struct.pack_into("<I", stripped, off + 12, 0x7FFFFFFF)
        off += size
    assert "symbol table of 2147483647 entries" in _error(macho_exports, bytes(stripped))


def test_a_looping_export_trie_is_refused() -> None:
    # header + LC_DYLD_EXPORTS_TRIE pointing at a trie whose root's one child is the root again
    trie = b"\x00\x01_\x00\x00"
    cmds = struct.pack("<IIII", 0x80000033, 16, 32 + 16, len(trie))
    data = struct.pack("<IiiIIII", 0xFEEDFACF, 0x01000007, 3, 6, 1, len(cmds), 0) + b"\0\0\0\0" + cmds + trie
    data += bytes(64)
    assert "reached twice" in _error(macho_exports, data)


@pytest.mark.parametrize("name", ["few_x86_64.dylib", "few_fat.dylib", "few.dll", "many.dll"])
def test_cut_and_corrupted_files_never_raise_anything_else(name: str) -> None:
    reader = pe_exports if name.endswith(".dll") else macho_exports
    original = (FIX / name).read_bytes()
    rng = random.Random(name)
    start = time.perf_counter()
    cases = [original[:cut] for cut in range(0, len(original), max(1, len(original) // 60))]
    for _ in range(150):
        data = bytearray(original)
        for _ in range(rng.randint(1, 8)):
            # corrupt the headers and tables most of the time: that is where the counts are
            at = rng.randrange(min(len(data), 4096)) if rng.random() < 0.7 else rng.randrange(len(data))
            data[at] = rng.randrange(256)
        cases.append(bytes(data))
    dependencies = pe_dependencies if name.endswith(".dll") else macho_dependencies
    for data in cases:
        try:
            reader("lib.bin", data, b"__tvm_ffi_")
        except BinaryFormatError as exc:
            assert str(exc).startswith("lib.bin")
        try:
            dependencies("lib.bin", data)
        except BinaryFormatError as exc:
            assert str(exc).startswith("lib.bin")
    assert time.perf_counter() - start < 20


# --- the command line --------------------------------------------------------------------------


def test_list_exports_of_another_platforms_library(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIX / "few_fat.dylib")
    assert main(["--list-exports", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{path}: Mach-O universal (x86_64, arm64), 2 exported TVM FFI functions"
    assert lines[1:3] == ["add_one\t[metadata]\t[doc]", "no_meta"]
    assert lines[3] == (
        f"(type schemas, docs and registry not read: a Mach-O universal (x86_64, arm64) library is not loaded on"
        f" {sys.platform})"
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the reference library here is ELF")
def test_list_exports_of_this_platforms_library_reads_schema_and_doc(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list-exports", str(TESTING_LIB)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{TESTING_LIB}: ELF, 2 exported TVM FFI functions"
    name, schema, doc = lines[2].split("\t")
    assert name == "testing_dll_test_add_with_docstring"
    assert '"params":[{"type":"int"},{"type":"int"}]' in schema
    assert doc == "Add two integers and return the sum."
    assert lines[1].split("\t")[0] == "testing_dll_schema_id_int" and len(lines) == 4
    assert lines[3].startswith("(not exports, so not listed: loading it registers "), lines[3]


@pytest.mark.parametrize("content", [b"", b"\x7fELF" + bytes(10), b"just text, not a library at all\n"])
def test_list_exports_of_a_bad_file_exits_2_naming_it(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.so"
    bad.write_bytes(content)
    assert main(["--list-exports", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tvmffi-gen: error: {bad}: ") and err[-1] == "\n" and err.count("\n") == 1


# --- the real apache-tvm-ffi wheels of macOS and Windows ---------------------------------------

WHEEL_VERSION = "0.1.15.post2"
WHEELS = {"macosx_11_0_arm64": ".dylib", "win_amd64": ".dll"}
# name -> (every export, the TVM FFI functions); checked here against llvm-objdump / llvm-readobj
REAL = {
    "libtvm_ffi.dylib": (77, []),
    "libtvm_ffi_testing.dylib": (736, ["schema_id_int", "test_add_with_docstring"]),
    "tvm_ffi.dll": (121, []),
    "tvm_ffi_testing.dll": (6, ["schema_id_int", "test_add_with_docstring"]),
}


@pytest.fixture(scope="module")
def wheel_libs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("wheels")
    libs: dict[str, Path] = {}
    for platform in WHEELS:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                f"apache-tvm-ffi=={WHEEL_VERSION}",
                "--platform",
                platform,
                "--only-binary=:all:",
                "--no-deps",
                "-d",
                str(where),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        wheel = next(where.glob(f"*{platform}.whl"), None)
        if proc.returncode != 0 or wheel is None:
            pytest.skip(
                f"the apache-tvm-ffi {WHEEL_VERSION} wheel for {platform} could not be fetched (offline?):"
                f" {(proc.stderr.strip().splitlines() or ['no wheel'])[-1]}"
            )
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.namelist():
                base = member[len("tvm_ffi/lib/") :]
                if member.startswith("tvm_ffi/lib/") and base in REAL:  # not the .dSYM copies
                    libs[base] = Path(zf.extract(member, where / platform))
    assert sorted(libs) == sorted(REAL)
    return libs


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_wheel_libraries(wheel_libs: dict[str, Path], name: str) -> None:
    path = str(wheel_libs[name])
    count, functions = REAL[name]
    _fmt, every = _symbols(path, "")
    assert len(every) == count
    assert exported_ffi_functions(path) == [f"testing_dll_{f}" for f in functions]
    if functions:
        assert read_exports(path).functions == [
            ExportedFunction("testing_dll_schema_id_int", True, False),
            ExportedFunction("testing_dll_test_add_with_docstring", True, True),
        ]
    if name.endswith(".dylib"):  # the symbol-table fallback agrees with the export trie on real files too
        data = bytearray(wheel_libs[name].read_bytes())
        assert macho_exports(name, bytes(_retarget_trie_commands(data)), b"")[1] == every
    reference = _reference_tool_exports(path)
    if reference is not None:
        assert every == reference
    # the testing library names libtvm_ffi among its dependencies, as its platform writes it
    dependencies = dynamic_dependencies(path)
    tvm_ffi = "tvm_ffi.dll" if name.endswith(".dll") else "@loader_path/libtvm_ffi.dylib"
    assert (tvm_ffi in dependencies) == ("testing" in name), dependencies
    assert ("KERNEL32.dll" if name.endswith(".dll") else "/usr/lib/libSystem.B.dylib") in dependencies


def _reference_tool_exports(path: str) -> list[str] | None:
    """The library's exports as LLVM's own tools list them, when they are installed."""
    if path.endswith(".dll"):
        tool = shutil.which("llvm-readobj")
        if tool is None:
            return None
        out = subprocess.run([tool, "--coff-exports", path], capture_output=True, text=True, check=True).stdout
        return sorted(set(re.findall(r"Name: (\S+)", out)))
    tool = shutil.which("llvm-objdump")
    if tool is None:
        return None
    out = subprocess.run([tool, "--macho", "--exports-trie", path], capture_output=True, text=True, check=True).stdout
    names = {m.group(1) for m in re.finditer(r"^\s*0x[0-9A-Fa-f]+\s+(\S+)", out, re.M)}
    return sorted(n[1:] if n.startswith("_") else n for n in names)


def test_dynamic_dependencies_are_the_loaders_list_as_written(tmp_path: Path) -> None:
    """ELF: ``DT_NEEDED`` in order (the testing library needs libtvm_ffi first), as binutils'
    readelf lists them when it is installed. Mach-O: the load commands' install names (the
    fixtures, thin or universal, link libSystem only). PE: the imported DLLs (the fixtures,
    linked without a C runtime, import none)."""
    needed = dynamic_dependencies(str(TESTING_LIB))
    assert needed[0] == "libtvm_ffi.so" and "libc.so.6" in needed, needed
    readelf = shutil.which("readelf")
    if readelf is not None:
        out = subprocess.run([readelf, "-d", str(TESTING_LIB)], capture_output=True, text=True, check=True).stdout
        assert needed == re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", out)
    for name in ("few_x86_64.dylib", "few_fat.dylib", "many.dylib"):
        assert dynamic_dependencies(str(FIX / name)) == ["/usr/lib/libSystem.B.dylib"], name
    for name in ("few.dll", "many.dll"):
        assert dynamic_dependencies(str(FIX / name)) == [], name
    with pytest.raises(BinaryFormatError, match="neither ELF, Mach-O nor PE"):
        dynamic_dependencies(str(FIX / "few.c"))
    cut = tmp_path / "cut.so"
    cut.write_bytes(TESTING_LIB.read_bytes()[:100])
    with pytest.raises(BinaryFormatError, match=r"cut\.so: truncated ELF file"):
        dynamic_dependencies(str(cut))
