"""Library names, search, loader mode, DLL folders, "what is loaded" and foreign-library checks
for Linux, macOS and Windows, all through one seam: ``tvmffi_runtime._platform.Platform``, built
for each platform with fake operating-system calls (``OsCalls``), so all three run on any machine.
What this cannot show is the real dyld / kernel32 calls: those run only on their own platform (CI).
"""

from __future__ import annotations

import ctypes
import shutil
import sys
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import default_library
from tvmffi_gen.registry.runtime_files import platform_module
from tvmffi_gen.registry.snapshot import SnapshotError

P = platform_module()
Platform, OsCalls = P.Platform, P.OsCalls
FIX = Path(__file__).resolve().parents[1] / "fixtures" / "binfmt"
LINUX, MACOS, WINDOWS = (Platform.named(n) for n in ("linux", "darwin", "win32"))


def test_names_follow_apache_tvm_ffi_libinfo() -> None:
    assert LINUX.library_names("tvm_ffi") == ["libtvm_ffi.so"]
    assert MACOS.library_names("tvm_ffi") == ["libtvm_ffi.dylib", "libtvm_ffi.so"]
    assert WINDOWS.library_names("tvm_ffi") == ["tvm_ffi.dll"]
    assert [p.title for p in (LINUX, MACOS, WINDOWS)] == ["Linux", "macOS", "Windows"]
    assert Platform.named("freebsd14").name == "linux" and Platform.named("cygwin").name == "windows"


def test_search_order_per_platform(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    (first / "libfoo.so").write_bytes(b"\x7fELF")
    (second / "libfoo.dylib").write_bytes(b"\xcf\xfa\xed\xfe")
    (second / "foo.dll").write_bytes(b"MZ")
    folders = [str(first), str(second)]
    assert LINUX.find_library("foo", folders)[0] == str(first / "libfoo.so")
    # macOS: .dylib before .so within a folder, folders in order
    found, tried = MACOS.find_library("foo", folders)
    assert found == str(first / "libfoo.so")
    assert tried == [str(first / "libfoo.dylib"), str(first / "libfoo.so")]
    assert MACOS.find_library("foo", [str(second), str(first)])[0] == str(second / "libfoo.dylib")
    assert WINDOWS.find_library("foo", folders) == (
        str(second / "foo.dll"),
        [str(first / "foo.dll"), str(second / "foo.dll")],
    )
    assert WINDOWS.find_library("bar", folders)[0] is None


def test_loader_mode_has_rtld_global_only_where_it_exists() -> None:
    assert WINDOWS.dlopen_mode == 0
    assert MACOS.dlopen_mode == (ctypes.RTLD_GLOBAL if sys.platform == "darwin" else 0x8)
    assert LINUX.dlopen_mode == (ctypes.RTLD_GLOBAL if sys.platform.startswith("linux") else 0x100)


def test_dll_directories_only_on_windows(tmp_path: Path) -> None:
    libdir, own = tmp_path / "tvm_ffi_lib", tmp_path / "build"
    libdir.mkdir()
    own.mkdir()
    lib = str(own / "foo.dll")
    assert WINDOWS.dll_directories(lib, str(libdir)) == [str(libdir), str(own)]
    # the wheel's layout: site-packages/tvm_ffi/lib/tvm_ffi.dll, site-packages/apache_tvm_ffi.libs/msvcp140.dll
    site = tmp_path / "site-packages"
    (site / "tvm_ffi" / "lib").mkdir(parents=True)
    (site / "apache_tvm_ffi.libs").mkdir()
    assert WINDOWS.dll_directories(lib, str(site / "tvm_ffi" / "lib")) == [
        str(site / "tvm_ffi" / "lib"),
        str(site / "apache_tvm_ffi.libs"),
        str(own),
    ]
    assert WINDOWS.dll_directories(lib, str(own)) == [str(own)]
    assert WINDOWS.dll_directories(lib, str(tmp_path / "missing")) == [str(own)]
    assert LINUX.dll_directories(lib, str(libdir)) == [] == MACOS.dll_directories(lib, str(libdir))


def test_what_is_loaded_per_platform() -> None:
    maps = (
        "7f00-7f01 r--p 00000000 08:01 12 /usr/lib/libc.so.6\n"
        "7f01-7f02 r-xp 00001000 08:01 34 /opt/env/tvm_ffi/lib/libtvm_ffi.so\n"
        "7f02-7f03 r--p 00002000 08:01 34 /opt/env/tvm_ffi/lib/libtvm_ffi.so\n"
        "7f03-7f04 rw-p 00000000 00:00 0 \n"
    )
    linux = Platform.named("linux", OsCalls(read_maps=lambda: maps))
    assert linux.loaded_paths("tvm_ffi") == ["/opt/env/tvm_ffi/lib/libtvm_ffi.so"]
    images = ["/usr/lib/dyld", "/Users/me/env/tvm_ffi/lib/libtvm_ffi.dylib", "/usr/lib/libSystem.B.dylib"]
    macos = Platform.named("darwin", OsCalls(dyld_images=lambda: images))
    assert macos.loaded_paths("tvm_ffi") == ["/Users/me/env/tvm_ffi/lib/libtvm_ffi.dylib"]
    asked: list[str] = []

    def module_path(name: str) -> str | None:
        asked.append(name)
        return r"C:\env\Lib\site-packages\tvm_ffi\lib\tvm_ffi.dll" if name == "tvm_ffi.dll" else None

    windows = Platform.named("win32", OsCalls(module_path=module_path))
    assert windows.loaded_paths("tvm_ffi") == [r"C:\env\Lib\site-packages\tvm_ffi\lib\tvm_ffi.dll"]
    assert asked == ["tvm_ffi.dll"]
    assert Platform.named("win32", OsCalls(module_path=lambda n: None)).loaded_paths("tvm_ffi") == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads this process's /proc/self/maps")
def test_the_real_linux_query_finds_the_loaded_libtvm_ffi() -> None:
    from tvmffi_runtime import _lib

    assert LINUX.loaded_paths("tvm_ffi") == [_lib.LIB_PATH]


def test_another_platforms_library_is_named_as_such() -> None:
    assert LINUX.wrong_platform(str(FIX / "few.dll")) == (
        "few.dll is a Windows library (PE); this is Linux, which loads ELF libraries (libNAME.so)"
    )
    assert WINDOWS.wrong_platform(str(FIX / "few_fat.dylib")) == (
        "few_fat.dylib is a macOS library (Mach-O); this is Windows, which loads PE libraries (NAME.dll)"
    )
    assert MACOS.wrong_platform(str(FIX / "few_x86_64.dylib")) is None
    assert MACOS.wrong_platform("/gone/libfoo.so").startswith("libfoo.so is a Linux library (ELF)")
    assert LINUX.wrong_platform("/gone/libfoo.so") is None


def test_default_library_uses_the_platforms_name() -> None:
    assert Path(default_library(LINUX)).name == "libtvm_ffi_testing.so"
    with pytest.raises(SnapshotError, match=r"tvm_ffi_testing\.dll of apache-tvm-ffi"):
        default_library(WINDOWS)


def test_generated_package_names_the_platform_it_was_generated_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tvmffi_runtime import _platform, bind

    with pytest.raises(
        ImportError,
        match=r"\. The package was generated on macOS: generate it on Linux, or set"
        r" \$PKG_LIB to a Linux build of the library\.$",
    ):
        monkeypatch.setattr(_platform, "CURRENT", LINUX)
        bind.find_package_library("pkg", "PKG_LIB", None, str(tmp_path / "libfoo.dylib"))
    bundled = tmp_path / "foo.dll"
    shutil.copy(FIX / "few.dll", bundled)
    monkeypatch.setattr(_platform, "CURRENT", MACOS)
    with pytest.raises(ImportError) as info:
        bind.find_package_library("pkg", "PKG_LIB", str(bundled), str(tmp_path / "foo.dll"))
    assert str(info.value) == (
        f"pkg: its library {bundled} (bundled copy) cannot load here: foo.dll is a Windows library (PE); this"
        " is macOS, which loads Mach-O libraries (libNAME.dylib, libNAME.so). Generate the package on macOS,"
        " or set $PKG_LIB to a macOS build of the library."
    )
    monkeypatch.setattr(_platform, "CURRENT", WINDOWS)
    assert bind.find_package_library("pkg", "PKG_LIB", str(bundled), "x") == str(bundled)


def test_another_architecture_is_named_before_loading() -> None:
    assert MACOS.architecture_problem(str(FIX / "few_x86_64.dylib"), "arm64") == (
        "built for another architecture (Mach-O x86_64; this process is arm64)"
    )
    assert MACOS.architecture_problem(str(FIX / "few_x86_64.dylib"), "x86_64") is None
    assert MACOS.architecture_problem(str(FIX / "few_fat.dylib"), "arm64") is None  # the universal file has both
    assert WINDOWS.architecture_problem(str(FIX / "few.dll"), "AMD64") is None
    assert WINDOWS.architecture_problem(str(FIX / "few.dll"), "ARM64") == (
        "built for another architecture (PE x86_64; this process is arm64)"
    )
    assert WINDOWS.architecture_problem(str(FIX / "few.dll"), "riscv64") is None  # unknown here: left to the loader
    assert LINUX.architecture_problem(str(FIX / "few.dll"), "x86_64") is None  # ELF: _lib's own check
