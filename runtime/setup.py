"""Build hook for the optional compiled fast path of the runtime (``tvmffi_runtime._accel``).

Everything else is declared in pyproject.toml. The extension is ``optional``: without a C
compiler or Python headers the build goes on and the runtime runs on ctypes alone.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tvmffi_runtime._accel",
            sources=["tvmffi_runtime/_accel.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wno-missing-braces"],
            optional=True,
        )
    ]
)
