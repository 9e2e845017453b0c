"""Build hook for the optional compiled fast path of the runtime (``tvmffi_runtime._accel``).

Everything else is declared in pyproject.toml. The extension is ``optional``: without a C
compiler or Python headers the build goes on and the runtime runs on ctypes alone.
"""

from pathlib import Path

from setuptools import Extension, setup

# _accel.c includes its parts (one translation unit); listed so a change to one rebuilds it and
# the source distribution carries them
PARTS = sorted(str(p) for p in Path("tvmffi_runtime", "_accel_parts").glob("*.h"))

setup(
    ext_modules=[
        Extension(
            "tvmffi_runtime._accel",
            sources=["tvmffi_runtime/_accel.c"],
            depends=PARTS,
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wno-missing-braces"],
            optional=True,
        )
    ]
)
