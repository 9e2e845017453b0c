"""Build ``add_one.cc`` into a shared library with g++, using the flags ``tvm-ffi-config`` reports.

``build(outdir)`` is reusable (tests and later steps call it); it rebuilds only when the source,
the flags or this file changed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "add_one.cc"

__all__ = ["SOURCE", "build", "tvm_ffi_config"]


def tvm_ffi_config(*options: str) -> list[str]:
    """Output of ``tvm-ffi-config <options>`` split into arguments (``python -m tvm_ffi.config``
    when the console script is not on PATH)."""
    exe = shutil.which("tvm-ffi-config")
    cmd = [exe, *options] if exe else [sys.executable, "-m", "tvm_ffi.config", *options]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return proc.stdout.split()


def build(outdir: str | os.PathLike[str], metadata: bool = True) -> Path:
    """Compile ``add_one.cc`` into ``<outdir>/add_one.so`` (``add_one_nometa.so`` without
    metadata) and return its path.

    ``metadata`` sets ``TVM_FFI_DLL_EXPORT_INCLUDE_METADATA``: with it the library also exports
    the type schema and docstring of ``add_one_cpu``.
    """
    out_dir = Path(outdir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / ("add_one.so" if metadata else "add_one_nometa.so")
    cxxflags = tvm_ffi_config("--cxxflags")
    ldflags = tvm_ffi_config("--ldflags")
    libs = tvm_ffi_config("--libs")
    libdirs = [flag[2:] for flag in ldflags if flag.startswith("-L")]
    cmd = [
        "g++",
        "-shared",
        "-fPIC",
        "-O2",
        *cxxflags,
        f"-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA={1 if metadata else 0}",
        str(SOURCE),
        "-o",
        "<out>",
        *ldflags,
        *libs,
        *[f"-Wl,-rpath,{d}" for d in libdirs],
    ]
    key = hashlib.sha256(SOURCE.read_bytes() + repr(cmd).encode()).hexdigest()
    stamp = out.with_suffix(".so.sha256")
    if out.exists() and stamp.exists() and stamp.read_text() == key:
        return out
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    cmd[cmd.index("<out>")] = str(tmp)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"g++ failed building {SOURCE}:\n{' '.join(cmd)}\n{proc.stderr}")
    os.replace(tmp, out)
    stamp.write_text(key)
    return out


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else HERE / "build"))
