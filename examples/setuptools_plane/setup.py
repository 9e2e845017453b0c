"""The extension: the library of plane, compiled against apache-tvm-ffi's headers and library."""

from pathlib import Path

import tvm_ffi.libinfo
from setuptools import Extension, setup

from tvmffi_gen.integration.setuptools import build_ext

libtvm_ffi = tvm_ffi.libinfo.find_libtvm_ffi()
setup(
    ext_modules=[
        Extension(
            "plane._plane",
            ["src/plane.cc"],
            include_dirs=[tvm_ffi.libinfo.find_include_path(), tvm_ffi.libinfo.find_dlpack_include_path()],
            library_dirs=[str(Path(libtvm_ffi).parent)],
            libraries=["tvm_ffi"],
            extra_compile_args=["-std=c++17"],
            language="c++",
        )
    ],
    # builds the extension, then writes the stubs [tool.tvmffi-gen] asks for
    cmdclass={"build_ext": build_ext},
)
