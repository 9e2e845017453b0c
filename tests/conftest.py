"""Shared fixtures: the reference testing library and a g++ builder for C++ fixture libraries."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD_DIR = ROOT / "tests" / "_build"
sys.path.insert(0, str(ROOT / "runtime"))  # tests run against the source tree's runtime
# --stubs-for caches its stubgen and libcst results in the user's cache folder; the tests keep theirs
# in the build folder instead (the child processes they start inherit this)
os.environ.setdefault("TVMFFI_GEN_CACHE_DIR", str(BUILD_DIR / "stubs-cache"))

import tvmffi_runtime as rt  # noqa: E402
from tvmffi_runtime._call import lacks  # noqa: E402
from tvmffi_runtime._features import Feature  # noqa: E402

TVM_FFI_LIBDIR = Path(rt.LIB_PATH).parent
TVM_FFI_INCLUDE = TVM_FFI_LIBDIR.parent / "include"
TESTING_LIB = TVM_FFI_LIBDIR / "libtvm_ffi_testing.so"

#: The plugins a child pytest the suite starts goes without: the cache, and two its cases do not
#: use (none of the files run in a child uses hypothesis, none asks for workers); hypothesis'
#: plugin alone costs each child ~0.8 s of importing.
CHILD_PYTEST_PLUGINS_OFF = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:xdist"]


def rerun_on_pure_ctypes(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """A child ``pytest -q args`` with the compiled backend off (``TVMFFI_RUNTIME_PURE=1``): how a
    file shows it passes on both runtime paths, since one process runs one backend."""
    env = {**os.environ, "TVMFFI_RUNTIME_PURE": "1"}
    command = [sys.executable, "-m", "pytest", "-q", *CHILD_PYTEST_PLUGINS_OFF, *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def accel_source() -> str:
    """The compiled fast path's whole C source: ``_accel.c`` and the parts it includes."""
    package = ROOT / "runtime" / "tvmffi_runtime"
    parts = sorted((package / "_accel_parts").glob("*.h"))
    return "\n".join(p.read_text() for p in [package / "_accel.c", *parts])


def cxx_flags() -> list[str]:
    """Compiler flags for a library built against the apache-tvm-ffi headers."""
    dlpack = TVM_FFI_LIBDIR.parent / "3rdparty" / "dlpack" / "include"
    flags = ["-std=c++17", "-O1", "-fPIC", f"-I{TVM_FFI_INCLUDE}"]
    if dlpack.is_dir():
        flags.append(f"-I{dlpack}")
    return flags


@contextlib.contextmanager
def _build_lock(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``<out>.lock``: parallel workers wanting the same library wait
    for the first one's build instead of compiling it again."""
    with open(f"{out}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _compiled_once(out: Path, source: str, suffix: str, command: Callable[[str, str], list[str]]) -> Path:
    """``out``, compiled from ``source`` by ``command(source_path, output_path)`` unless it exists.

    Parallel test workers may want the same file at once: the first compiles it under the lock,
    the others wait and reuse it. The source is written beside it and the result renamed into
    place, so a reader never sees a half-written file."""
    if out.exists():
        return out
    with _build_lock(out):
        if out.exists():
            return out
        tag = f"{os.getpid()}"
        src = out.with_name(f"{out.stem}.{tag}{suffix}")
        src.write_text(source)
        cmd = command(str(src), f"{out}.{tag}.tmp")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd[0]} failed for {out.name}:\n{proc.stderr}")
        os.replace(f"{out}.{tag}.tmp", out)
        src.unlink()
    return out


def build_shared(name: str, source: str, extra: list[str] | None = None, link_tvm_ffi: bool = True) -> Path:
    """Compile C++ ``source`` into ``tests/_build/<name>-<hash>.so`` (cached by content, built once)."""
    extra = extra or []
    # the flags name the apache-tvm-ffi headers: a venv with another release builds its own copy
    digest = hashlib.sha256((source + repr(extra) + repr(link_tvm_ffi) + repr(cxx_flags())).encode()).hexdigest()[:12]
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    link = [f"-L{TVM_FFI_LIBDIR}", "-ltvm_ffi"] if link_tvm_ffi else []
    return _compiled_once(
        BUILD_DIR / f"{name}-{digest}.so",
        source,
        ".cc",
        lambda src, tmp: ["g++", "-shared", *cxx_flags(), src, "-o", tmp, *extra, *link],
    )


def build_executable(name: str, source: str, c: bool = True) -> Path:
    """Compile a small C (or C++) program against the apache-tvm-ffi headers."""
    flags = [f for f in cxx_flags() if not f.startswith("-std=")]
    digest = hashlib.sha256((source + repr(flags)).encode()).hexdigest()[:12]
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    compiler = "gcc" if c else "g++"
    return _compiled_once(
        BUILD_DIR / f"{name}-{digest}",
        source,
        ".c" if c else ".cc",
        lambda src, tmp: [compiler, *flags, src, "-o", tmp],
    )


def needs(feature: Feature) -> pytest.MarkDecorator:
    """Skip a test of ``feature`` when the loaded libtvm_ffi is from an apache-tvm-ffi release
    older than it (``tvmffi_runtime._features``; tests/runtime/test_old_tvm_ffi.py runs the core
    of the suite on the oldest supported release)."""
    missing = lacks(feature)
    return pytest.mark.skipif(
        missing is not None,
        reason=f"{feature.name} needs apache-tvm-ffi {feature.since}; the loaded libtvm_ffi has no {missing}",
    )


@pytest.fixture(scope="session")
def testing_lib() -> Path:
    """``libtvm_ffi_testing.so`` loaded into this process."""
    rt.load_library(TESTING_LIB)
    return TESTING_LIB


@pytest.fixture(scope="session")
def have_gxx() -> bool:
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    return True


def pytest_configure(config: pytest.Config) -> None:
    """Under ``--dist loadfile`` the files are handed to the workers in the order collection
    leaves them (``slow_files_first``), not in xdist's default order (most tests first), which
    leaves a file of few, long tests (a wheel build, a venv) to the end, on one worker alone."""
    if getattr(config.option, "dist", "no") == "loadfile":
        config.option.loadscopereorder = False


def slow_files_first(items: list[pytest.Item]) -> None:
    """The files holding ``slow`` tests (builds, venvs, checkers over whole packages) before the
    others, each group in collection order: the quick files then fill the workers' last minutes."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Cases marked ``tvm_ffi_child`` run only in the child interpreters of their file's driver
    test (tests/with_tvm_ffi.py); elsewhere they are deselected, not skipped. Then the slow files
    go first (``slow_files_first``)."""
    if os.environ.get("TVMFFI_TESTS_WITH_TVM_FFI") != "1":
        child = [item for item in items if item.get_closest_marker("tvm_ffi_child")]
        if child:
            config.hook.pytest_deselected(items=child)
            items[:] = [item for item in items if not item.get_closest_marker("tvm_ffi_child")]
    slow_files_first(items)
