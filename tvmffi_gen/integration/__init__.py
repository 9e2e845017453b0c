"""A library author's build: one generation step keyed on the library's registry (``step.py``),
called by the CMake package (``share/cmake/tvmffi_gen/``) and by ``setuptools.py``'s ``build_ext``."""
