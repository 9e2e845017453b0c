"""``load_library`` failure modes, and how ``libtvm_ffi.so`` itself is found.

Every failure must be a ``LibraryLoadError`` (an ImportError) whose message names the path.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tvmffi_runtime as rt

from conftest import ROOT, TESTING_LIB, TVM_FFI_LIBDIR, build_shared

# A library whose static initialiser calls a function nothing defines. It links (shared objects
# may leave symbols undefined) but -z now makes dlopen resolve every symbol up front and fail.
UNRESOLVED_SOURCE = """
extern "C" int tvmffi_runtime_test_symbol_that_does_not_exist(int);
static int value = tvmffi_runtime_test_symbol_that_does_not_exist(3);
extern "C" int tvmffi_runtime_test_get_value() { return value; }
"""

THROWING_SOURCE = """
#include <stdexcept>
namespace {
struct Boom {
  Boom() { throw std::runtime_error("static initialiser of the test library failed"); }
};
Boom boom;
}  // namespace
"""

NOTHING_SOURCE = """
extern "C" int tvmffi_runtime_test_nothing_registered() { return 7; }
"""

REGISTERING_SOURCE = """
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>
TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("tvmffi_runtime_test.loaded_lib_mul",
                                        [](int64_t a, int64_t b) { return a * b; });
}
"""


def _child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT / "runtime"), env.get("PYTHONPATH", "")] if p)
    env.pop("TVMFFI_RUNTIME_LIBTVM_FFI", None)
    env.update(extra)
    return env


def _run_child(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env=_child_env(**env),
        cwd=str(Path(__file__).parent),  # not the source root: nothing importable by accident
    )


def _expect_load_error(path: Path | str, *words: str) -> rt.LibraryLoadError:
    with pytest.raises(rt.LibraryLoadError) as info:
        rt.load_library(path)
    message = str(info.value)
    assert str(path) in message, message
    for word in words:
        assert word in message.lower(), message
    assert isinstance(info.value, ImportError)
    return info.value


# --------------------------------------------------------------------------------------------
# Files that are not loadable libraries
# --------------------------------------------------------------------------------------------
def test_missing_file(tmp_path):
    _expect_load_error(tmp_path / "no_such_library.so", "no such file")


def test_directory(tmp_path):
    d = tmp_path / "looks_like_a_library.so"
    d.mkdir()
    _expect_load_error(d, "directory")


def test_empty_file(tmp_path):
    f = tmp_path / "empty.so"
    f.write_bytes(b"")
    _expect_load_error(f, "empty")


def test_text_file(tmp_path):
    f = tmp_path / "text.so"
    f.write_text("this is not a shared library\n" * 10)
    _expect_load_error(f, "not an elf")


def test_truncated_elf(tmp_path):
    f = tmp_path / "truncated.so"
    f.write_bytes(Path(rt.LIB_PATH).read_bytes()[:100])
    _expect_load_error(f)


def test_elf_for_another_architecture(tmp_path):
    data = bytearray(TESTING_LIB.read_bytes())
    assert data[:4] == b"\x7fELF"
    machine = int.from_bytes(data[18:20], "little")
    other = 183 if machine != 183 else 62  # aarch64, or x86-64 on an aarch64 host
    data[18:20] = other.to_bytes(2, "little")
    f = tmp_path / "other_arch.so"
    f.write_bytes(bytes(data))
    _expect_load_error(f, "architecture")


def test_unresolved_symbol(have_gxx):
    lib = build_shared("unresolved", UNRESOLVED_SOURCE, extra=["-Wl,-z,now"], link_tvm_ffi=False)
    error = _expect_load_error(lib)
    assert "tvmffi_runtime_test_symbol_that_does_not_exist" in str(error)


def test_library_registering_nothing_loads(have_gxx):
    lib = build_shared("nothing", NOTHING_SOURCE, link_tvm_ffi=False)
    handle = rt.load_library(lib)
    assert handle.tvmffi_runtime_test_nothing_registered() == 7
    assert rt.load_library(lib) is handle  # loading twice returns the first handle
    assert rt.load_library(str(lib)) is handle


def test_library_registering_a_function_loads(have_gxx):
    lib = build_shared("registering", REGISTERING_SOURCE)
    rt.load_library(lib)
    assert rt.get_global_func("tvmffi_runtime_test.loaded_lib_mul")(6, 7) == 42


# --------------------------------------------------------------------------------------------
# A static initialiser that throws
# --------------------------------------------------------------------------------------------
def test_throwing_static_initialiser_kills_the_loading_process(have_gxx):
    """An exception escaping a static initialiser calls std::terminate inside dlopen.

    No in-process check can run before that: the process aborts. So the generator probes
    libraries in a child process; this test pins down what that child sees.
    """
    lib = build_shared("throwing_init", THROWING_SOURCE, link_tvm_ffi=False)
    proc = _run_child(
        f"""
        import tvmffi_runtime as rt
        try:
            rt.load_library({str(lib)!r})
        except rt.LibraryLoadError as exc:
            print("CLEAN ERROR:", exc)
        else:
            print("LOADED")
        """
    )
    assert proc.returncode < 0, (proc.returncode, proc.stdout, proc.stderr)
    assert -proc.returncode == signal.SIGABRT
    assert "static initialiser of the test library failed" in proc.stderr
    assert "LOADED" not in proc.stdout


# --------------------------------------------------------------------------------------------
# Finding libtvm_ffi.so
# --------------------------------------------------------------------------------------------
MAPS_CHECK = """
import os, tvmffi_runtime as rt
maps = {line.split()[-1] for line in open("/proc/self/maps") if line.rstrip().endswith("libtvm_ffi.so")}
print("LIB_PATH", rt.LIB_PATH)
print("MAPPED", sorted(maps))
print("ARRAY", rt.get_global_func("ffi.Array")(1, 2))
"""


def test_env_var_overrides_libtvm_ffi_path(tmp_path):
    copy_dir = tmp_path / "elsewhere"
    copy_dir.mkdir()
    copy = copy_dir / "libtvm_ffi.so"
    shutil.copy2(TVM_FFI_LIBDIR / "libtvm_ffi.so", copy)
    proc = _run_child(MAPS_CHECK, TVMFFI_RUNTIME_LIBTVM_FFI=str(copy))
    assert proc.returncode == 0, proc.stderr
    assert f"LIB_PATH {copy}" in proc.stdout
    assert f"MAPPED ['{copy}']" in proc.stdout  # the copy, and only the copy, is loaded
    assert "Array([1, 2])" in proc.stdout


def test_env_var_pointing_nowhere_is_a_clear_error(tmp_path):
    missing = tmp_path / "missing" / "libtvm_ffi.so"
    proc = _run_child(
        """
        try:
            import tvmffi_runtime
        except ImportError as exc:
            print(type(exc).__name__, exc)
        """,
        TVMFFI_RUNTIME_LIBTVM_FFI=str(missing),
    )
    assert proc.returncode == 0, proc.stderr
    assert "LibraryLoadError" in proc.stdout
    assert str(missing) in proc.stdout and "TVMFFI_RUNTIME_LIBTVM_FFI" in proc.stdout


def test_default_path_is_the_installed_package(tmp_path):
    proc = _run_child(MAPS_CHECK)
    assert proc.returncode == 0, proc.stderr
    expected = TVM_FFI_LIBDIR / "libtvm_ffi.so"
    assert f"LIB_PATH {expected}" in proc.stdout


def test_shares_the_library_already_loaded_by_tvm_ffi(tmp_path):
    # The env var points at a copy: tvmffi_runtime must still prefer the copy tvm_ffi loaded,
    # since two copies would split the type and function registries.
    copy = tmp_path / "libtvm_ffi.so"
    shutil.copy2(TVM_FFI_LIBDIR / "libtvm_ffi.so", copy)
    proc = _run_child(
        f"""
        import os
        import tvm_ffi
        import tvm_ffi.testing
        pair = tvm_ffi.testing.TestIntPair(3, 4)
        tvm_ffi.register_global_func("tvmffi_runtime_test.from_tvm_ffi", lambda x: x + 100)

        import tvmffi_runtime as rt
        rt.load_library({str(TESTING_LIB)!r})
        print("SAME_PATH", os.path.realpath(rt.LIB_PATH) == os.path.realpath(tvm_ffi.libinfo.find_libtvm_ffi()))
        maps = {{l.split()[-1] for l in open("/proc/self/maps") if l.rstrip().endswith("libtvm_ffi.so")}}
        print("N_COPIES", len(maps))
        back = rt.get_global_func("testing.echo")(pair)
        print("SAME_OBJECT", back.handle == pair.__chandle__(), back.type_key)
        print("USE_COUNT", rt.get_global_func("testing.object_use_count")(pair))
        print("SUM", rt.Function.from_type_method(back.type_index, "sum")(pair))
        print("CROSS_REGISTRY", rt.get_global_func("tvmffi_runtime_test.from_tvm_ffi")(1))
        print("ARRAY_SIZE", rt.get_global_func("ffi.ArraySize")(tvm_ffi.convert([1, 2, 3])))
        """,
        TVMFFI_RUNTIME_LIBTVM_FFI=str(copy),
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "SAME_PATH True" in out, out
    assert "N_COPIES 1" in out, out
    assert "SAME_OBJECT True testing.TestIntPair" in out, out
    assert "USE_COUNT 2" in out, out  # tvm_ffi's reference and the runtime's wrapper
    assert "SUM 7" in out and "CROSS_REGISTRY 101" in out and "ARRAY_SIZE 3" in out, out
