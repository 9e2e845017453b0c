"""Where a registry global function's documentation comes from, with apache-tvm-ffi 0.1.15.

``GlobalDef().def(name, fn, "doc")`` does not give the generated function that docstring: the
registry offers no way to read it (``ffi.GetGlobalFuncMetadata`` returns the metadata JSON
only, and ``GlobalDef`` applies only a ``char*`` argument as the doc, which a string literal,
a ``const char*``, is not). A ``refl::Metadata({{"doc", ...}})`` argument is in that JSON, and
the generated function carries it. docs/generated-packages.md says the same.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main

from conftest import build_shared

SOURCE = r"""
#include <tvm/ffi/reflection/registry.h>

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = tvm::ffi::reflection;
  refl::GlobalDef()
      .def("fdoc.with_docstring", [](int64_t x) -> int64_t { return x + 1; }, "Add one to x.")
      .def("fdoc.with_metadata_doc", [](int64_t x) -> int64_t { return x * 2; },
           refl::Metadata({{"doc", "Double x."}}));
}
"""


@pytest.fixture(scope="module")
def fdoc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fdoc")
    assert main([str(build_shared("fdoc", SOURCE)), "-o", str(root / "fdocpkg"), "-q"]) == 0
    return root / "fdocpkg"


def test_a_metadata_doc_reaches_the_generated_function(fdoc: Path) -> None:
    sys.path.insert(0, str(fdoc.parent))
    try:
        from fdocpkg.fdoc import with_metadata_doc  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(fdoc.parent))
    assert with_metadata_doc(21) == 42
    assert with_metadata_doc.__doc__ == "Double x. Registered as `fdoc.with_metadata_doc`."


def test_the_registry_gives_no_docstring_argument(fdoc: Path) -> None:
    text = (fdoc / "fdoc" / "__init__.py").read_text()
    assert '"""Registered as `fdoc.with_docstring`."""' in text
    assert "Add one to x." not in text


def test_the_registry_metadata_holds_no_doc_for_a_docstring_argument() -> None:
    # what the generator reads, read with tvm_ffi itself: the metadata JSON has the schema only
    probe = (
        "import json, tvm_ffi\n"
        f"tvm_ffi.load_module({str(build_shared('fdoc', SOURCE))!r})\n"
        "md = tvm_ffi.get_global_func_metadata('fdoc.with_docstring')\n"
        "print(json.dumps(sorted(md)))\n"
        "print(tvm_ffi.get_global_func_metadata('fdoc.with_metadata_doc')['doc'])\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ['["type_schema"]', "Double x."], proc.stdout
