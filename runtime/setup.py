"""Build hook for the optional compiled fast path of the runtime (``tvmffi_runtime._accel``).

Everything else is declared in pyproject.toml. The extension is ``optional``: without a C
compiler or Python headers the build goes on (setuptools prints one ``building extension
"tvmffi_runtime._accel" failed`` line) and the runtime runs on ctypes alone. ``_accel.c`` is
portable C11 (no compiler extensions), built with each compiler's own spelling of the flags:
gcc and clang (Linux, macOS) get ``-O2 -std=c11``, MSVC (Windows) ``/O2 /std:c11``.
"""

import importlib.util
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# _accel.c includes its parts (one translation unit); listed so a change to one rebuilds it and
# the source distribution carries them
PARTS = sorted(str(p) for p in Path("tvmffi_runtime", "_accel_parts").glob("*.h"))

FLAGS = {
    "unix": ["-O2", "-std=c11", "-Wall", "-Wno-missing-braces"],  # gcc, clang
    "msvc": ["/O2", "/std:c11", "/W3"],
}


def write_field_kinds_header() -> None:
    """``_accel_parts/field_kinds.h`` from the one table of field layouts (``_field_kinds.py``,
    standard library only: loaded by its path, without importing the runtime package)."""
    spec = importlib.util.spec_from_file_location("_field_kinds", Path("tvmffi_runtime", "_field_kinds.py"))
    assert spec is not None and spec.loader is not None
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    header = Path("tvmffi_runtime", "_accel_parts", "field_kinds.h")
    text = table.c_header()
    if not header.is_file() or header.read_text() != text:
        header.write_text(text)


class BuildExt(build_ext):
    """Writes the generated header, and gives the extension the flags of the compiler
    setuptools chose."""

    def build_extensions(self) -> None:
        write_field_kinds_header()
        flags = FLAGS.get(self.compiler.compiler_type, FLAGS["unix"])
        for ext in self.extensions:
            ext.extra_compile_args = list(flags)
        super().build_extensions()


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "tvmffi_runtime._accel",
            sources=["tvmffi_runtime/_accel.c"],
            depends=PARTS,
            optional=True,
        )
    ],
)
