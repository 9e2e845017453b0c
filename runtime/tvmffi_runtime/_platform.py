"""What differs between Linux, macOS and Windows when finding and loading libraries: one seam.

Everything platform-specific that ``_lib`` and the generator need is a method of ``Platform``:
library file names (as apache-tvm-ffi's ``libinfo.py`` spells them), the loader's mode, the DLL
folders Windows must be told about, which libraries the process has loaded, and whether a file
is this platform's kind of library. ``CURRENT`` is the one for this process; tests build the
others with ``Platform.named("darwin")`` and hand them fake operating-system calls (``OsCalls``),
so every platform's logic runs on any machine without patching ``sys``.

This module imports nothing from the rest of the runtime: the generator loads it on its own
(``tvmffi_gen.platforms``), without loading ``libtvm_ffi``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Platform", "OsCalls", "CURRENT", "platform_of_file", "platform_of_name"]

_RTLD_GLOBAL = {"linux": 0x100, "darwin": 0x8}  # <dlfcn.h>; ctypes' own value is used on this platform
_TITLES = {"linux": "Linux", "darwin": "macOS", "windows": "Windows"}
_FORMATS = {"linux": "ELF", "darwin": "Mach-O", "windows": "PE"}


@dataclass
class OsCalls:
    """The operating-system queries behind ``Platform.loaded_paths``; each may be replaced in tests.

    - ``read_maps()``: the text of ``/proc/self/maps`` (Linux);
    - ``dyld_images()``: the paths of the images dyld has loaded (macOS: ``_dyld_image_count`` /
      ``_dyld_get_image_name``);
    - ``module_path(name)``: the path of the loaded module ``name``, or None (Windows:
      ``GetModuleHandleW`` / ``GetModuleFileNameW``).
    """

    read_maps: Callable[[], str] = field(default=lambda: _read_maps())
    dyld_images: Callable[[], list[str]] = field(default=lambda: _dyld_images())
    module_path: Callable[[str], str | None] = field(default=lambda name: _module_path(name))


@dataclass(frozen=True)
class Platform:
    """One of ``linux``, ``darwin``, ``windows`` (any other POSIX system is treated as linux)."""

    name: str
    calls: OsCalls = field(default_factory=OsCalls, compare=False, repr=False)

    @staticmethod
    def named(name: str, calls: OsCalls | None = None) -> Platform:
        key = "windows" if name in ("win32", "cygwin", "windows") else "darwin" if name == "darwin" else "linux"
        return Platform(key, calls or OsCalls())

    @property
    def title(self) -> str:
        """``Linux``, ``macOS`` or ``Windows``: how messages name it."""
        return _TITLES[self.name]

    @property
    def library_format(self) -> str:
        """The kind of file its shared libraries are: ``ELF``, ``Mach-O`` or ``PE``."""
        return _FORMATS[self.name]

    def library_names(self, target: str) -> list[str]:
        """File names of the library ``target`` (``tvm_ffi``), in the order to look for them."""
        if self.name == "windows":
            return [f"{target}.dll"]
        if self.name == "darwin":
            return [f"lib{target}.dylib", f"lib{target}.so"]
        return [f"lib{target}.so"]

    def find_library(self, target: str, folders: list[str]) -> tuple[str | None, list[str]]:
        """(the first existing ``folder/name`` of ``library_names(target)``, every path tried)."""
        tried: list[str] = []
        for folder in folders:
            for name in self.library_names(target):
                candidate = os.path.join(folder, name)
                tried.append(candidate)
                if os.path.isfile(candidate):
                    return candidate, tried
        return None, tried

    @property
    def dlopen_mode(self) -> int:
        """``ctypes.CDLL`` mode: ``RTLD_GLOBAL`` where symbols are shared through it (Linux, macOS);
        0 on Windows, where a DLL's imports are bound to the DLL named in it, never to a global pool."""
        if self.name == "windows":
            return 0
        if self.name == sys_platform().name:
            import ctypes

            return int(ctypes.RTLD_GLOBAL)
        return _RTLD_GLOBAL[self.name]

    def dll_directories(self, library: str, tvm_ffi_libdir: str | None) -> list[str]:
        """Folders to pass to ``os.add_dll_directory`` before loading ``library`` (Windows only):
        the tvm_ffi library folder, then the library's own folder, as apache-tvm-ffi does; and the
        ``apache_tvm_ffi.libs`` folder its wheel ships ``msvcp140.dll`` in (beside the ``tvm_ffi``
        package), which ``tvm_ffi``'s own import would add but this runtime does not import."""
        if self.name != "windows":
            return []
        bundled = None
        if tvm_ffi_libdir:
            bundled = os.path.join(os.path.dirname(os.path.dirname(tvm_ffi_libdir)), "apache_tvm_ffi.libs")
        out: list[str] = []
        for folder in (tvm_ffi_libdir, bundled, os.path.dirname(os.path.abspath(library))):
            if folder and os.path.isdir(folder) and folder not in out:
                out.append(folder)
        return out

    def loaded_paths(self, target: str) -> list[str]:
        """Paths of the already loaded libraries named like ``target`` (``tvm_ffi``) in this process."""
        names = set(self.library_names(target))
        if self.name == "windows":
            found = [self.calls.module_path(n) for n in sorted(names)]
            return [p for p in found if p]
        if self.name == "darwin":
            return [p for p in self.calls.dyld_images() if os.path.basename(p) in names]
        out: list[str] = []
        for line in self.calls.read_maps().splitlines():
            path = line.split(None, 5)[-1] if line.count(" ") >= 5 else ""
            if os.path.basename(path) in names and path not in out:
                out.append(path)
        return out

    def wrong_platform(self, path: str) -> str | None:
        """Why ``path`` cannot be this platform's library because it is another's (by its first
        bytes; by its name when it cannot be read), or None."""
        other = platform_of_file(path)
        if other is None and not os.path.exists(path):
            other = platform_of_name(path)
        if other is None or other.name == self.name:
            return None
        return (
            f"{os.path.basename(path)} is a {other.title} library ({other.library_format}); this is"
            f" {self.title}, which loads {self.library_format} libraries ({', '.join(self.library_names('NAME'))})"
        )

    def architecture_problem(self, path: str, machine: str) -> str | None:
        """Why ``path``, a library of this platform's format, cannot load into a process running on
        ``machine`` (``platform.machine()``: ``arm64``, ``x86_64``, ``AMD64``...), or None when it
        can or when that cannot be told from its headers. ELF is checked by ``_lib`` itself."""
        want = _MACHINES.get(machine.lower())
        if want is None or self.name == "linux":
            return None
        try:
            with open(path, "rb") as fh:
                head = fh.read(4096)
        except OSError:
            return None
        found = _macho_archs(head) if self.name == "darwin" else _pe_arch(head)
        if not found or want in found:
            return None
        return f"built for another architecture ({self.library_format} {', '.join(found)}; this process is {want})"


# platform.machine() -> the architecture names used below
_MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "arm64": "arm64", "aarch64": "arm64"}
_MACHO_CPUS = {0x01000007: "x86_64", 0x0100000C: "arm64", 7: "i386", 12: "arm"}
_PE_MACHINES = {0x8664: "x86_64", 0xAA64: "arm64", 0x14C: "i386", 0x1C4: "arm"}


def _macho_archs(head: bytes) -> list[str]:
    """Architectures of a thin or universal Mach-O header (empty when unreadable)."""
    import struct

    if len(head) < 8:
        return []
    magic = head[:4]
    if magic in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe"):
        return [_MACHO_CPUS.get(struct.unpack_from("<I", head, 4)[0], "unknown")]
    if magic in (b"\xfe\xed\xfa\xcf", b"\xfe\xed\xfa\xce"):
        return [_MACHO_CPUS.get(struct.unpack_from(">I", head, 4)[0], "unknown")]
    if magic in (b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf"):
        count = struct.unpack_from(">I", head, 4)[0]
        size = 32 if magic[3] == 0xBF else 20
        if count > 32 or 8 + count * size > len(head):
            return []
        return [_MACHO_CPUS.get(struct.unpack_from(">I", head, 8 + i * size)[0], "unknown") for i in range(count)]
    return []


def _pe_arch(head: bytes) -> list[str]:
    """The architecture in a PE header (empty when unreadable)."""
    import struct

    if len(head) < 0x40 or head[:2] != b"MZ":
        return []
    pe = struct.unpack_from("<I", head, 0x3C)[0]
    if pe + 6 > len(head) or head[pe : pe + 4] != b"PE\0\0":
        return []
    return [_PE_MACHINES.get(struct.unpack_from("<H", head, pe + 4)[0], "unknown")]


_MACHO_MAGICS = (
    b"\xcf\xfa\xed\xfe",
    b"\xce\xfa\xed\xfe",
    b"\xfe\xed\xfa\xcf",
    b"\xfe\xed\xfa\xce",
    b"\xca\xfe\xba\xbe",
    b"\xca\xfe\xba\xbf",
)


def platform_of_file(path: str) -> Platform | None:
    """The platform whose library format ``path`` has (by its first four bytes), or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return None
    if head == b"\x7fELF":
        return Platform("linux")
    if head in _MACHO_MAGICS:
        return Platform("darwin")
    if head[:2] == b"MZ":
        return Platform("windows")
    return None


def platform_of_name(path: str) -> Platform | None:
    """The platform a library file name belongs to (``.so``/``.so.1``, ``.dylib``, ``.dll``), or None."""
    base = os.path.basename(path).lower()
    if base.endswith(".dll"):
        return Platform("windows")
    if base.endswith(".dylib"):
        return Platform("darwin")
    if base.endswith(".so") or ".so." in base:
        return Platform("linux")
    return None


def sys_platform() -> Platform:
    return Platform.named(sys.platform)


# --- the real operating-system calls (each used only on its own platform) -----------------------


def _read_maps() -> str:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return maps.read()
    except OSError:
        return ""


def _dyld_images() -> list[str]:
    import ctypes

    libc = ctypes.CDLL(None)
    count = libc._dyld_image_count
    count.restype = ctypes.c_uint32
    name = libc._dyld_get_image_name
    name.restype = ctypes.c_char_p
    name.argtypes = [ctypes.c_uint32]
    out: list[str] = []
    for i in range(count()):
        raw = name(i)
        if raw:
            out.append(os.fsdecode(raw))
    return out


def _module_path(module: str) -> str | None:
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    get_handle = kernel32.GetModuleHandleW
    get_handle.restype = wintypes.HMODULE
    get_handle.argtypes = [wintypes.LPCWSTR]
    handle = get_handle(module)
    if not handle:
        return None
    get_name = kernel32.GetModuleFileNameW
    get_name.restype = wintypes.DWORD
    get_name.argtypes = [wintypes.HMODULE, wintypes.LPWSTR, wintypes.DWORD]
    size = 260
    while size <= 32768:
        buf = ctypes.create_unicode_buffer(size)
        n = get_name(handle, buf, size)
        if n == 0:
            return None
        if n < size:
            return buf.value
        size *= 2
    return None


CURRENT = sys_platform()
