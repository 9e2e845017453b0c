"""Module: loading libraries, function lookup, docs and metadata, imports; the add_one example."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import tvmffi_runtime as rt

from conftest import BUILD_DIR, ROOT, TESTING_LIB, build_shared
from mypy_reports import user_env

EXAMPLE_DIR = ROOT / "examples" / "add_one"
EXAMPLE_BUILD = BUILD_DIR / "add_one"


def _load_example_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("add_one_build", EXAMPLE_DIR / "build.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def example_build(have_gxx: bool) -> ModuleType:
    return _load_example_build()


@pytest.fixture(scope="module")
def add_one_lib(example_build: ModuleType) -> Path:
    path: Path = example_build.build(EXAMPLE_BUILD)
    return path


@pytest.fixture(scope="module")
def add_one_nometa_lib(example_build: ModuleType) -> Path:
    path: Path = example_build.build(EXAMPLE_BUILD, metadata=False)
    return path


@pytest.fixture(scope="module")
def mod(add_one_lib: Path) -> rt.Module:
    return rt.Module.load_from_file(add_one_lib)


def _nm_symbols(lib: Path) -> set[str] | None:
    if shutil.which("nm") is None:
        return None
    proc = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True)
    return {line.split()[-1] for line in proc.stdout.splitlines() if line.strip()}


# ------------------------------------------------------------------------------------------
# Loading
# ------------------------------------------------------------------------------------------
def test_load_and_call(mod: rt.Module, add_one_lib: Path) -> None:
    assert mod.kind == "library"
    assert mod.path == str(add_one_lib.resolve())
    assert repr(mod) == f"Module(kind='library', path={str(add_one_lib.resolve())!r})"
    f = mod.get_function("add_one_cpu")
    assert isinstance(f, rt.Function)
    x = np.array([1.0, 2.5, -3.0, 1e6], dtype=np.float32)
    y = np.zeros_like(x)
    assert f(x, y) is None
    assert np.array_equal(y, x + 1)  # written in place: no copy on the way in
    y2 = np.zeros_like(x)
    mod("add_one_cpu", x, y2)
    assert np.array_equal(y2, x + 1)
    y3 = np.zeros_like(x)
    mod["add_one_cpu"](x, y3)
    assert np.array_equal(y3, x + 1)


def test_add_one_accepts_any_dlpack_object_and_strides(mod: rt.Module) -> None:
    f = mod.get_function("add_one_cpu")
    x = np.arange(10, dtype=np.float32)
    out = np.zeros(20, dtype=np.float32)
    f(x[::2], out[1::4])  # strided input and output
    assert np.array_equal(out[1::4], x[::2] + 1)
    outside = np.ones(20, dtype=bool)
    outside[1::4] = False
    assert not out[outside].any()  # nothing written outside the view
    y = rt.Tensor(np.zeros(5, dtype=np.float32))
    f(rt.Tensor(x[:5]), y)
    assert np.array_equal(y.numpy(), x[:5] + 1)

    class Wrapped:
        def __init__(self, arr: Any) -> None:
            self.arr = arr

        def __dlpack__(self) -> Any:  # legacy producer
            return self.arr.__dlpack__()

    z = np.zeros(5, dtype=np.float32)
    f(Wrapped(x[5:]), Wrapped(z))
    assert np.array_equal(z, x[5:] + 1)


def test_load_keeps_library_alive_for_native_objects(tmp_path: Path, have_gxx: bool) -> None:
    """A tensor allocated by a library outlives every Module/Function of it (keep_alive)."""
    lib = build_shared("alloc_lib", ALLOC_LIB_CC)
    script = tmp_path / "keep_alive.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import gc, sys
            sys.path.insert(0, {str(ROOT / "runtime")!r})
            import tvmffi_runtime as rt
            mod = rt.Module.load_from_file({str(lib)!r})
            t = mod.get_function("make_iota")(1000)
            del mod
            gc.collect()
            junk = [bytearray(4096) for _ in range(1000)]
            assert t.numpy().tolist() == [float(i) for i in range(1000)]
            del t
            gc.collect()
            print("ok")
            """
        )
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


ALLOC_LIB_CC = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>
#include <cstdlib>
struct Alloc {
  void AllocData(DLTensor* t) { t->data = std::malloc(tvm::ffi::GetDataSize(*t)); }
  void FreeData(DLTensor* t) { std::free(t->data); }
};
tvm::ffi::Tensor make_iota(int64_t n) {
  tvm::ffi::Tensor t = tvm::ffi::Tensor::FromNDAlloc(Alloc(), {n}, DLDataType{kDLFloat, 64, 1},
                                                     DLDevice{kDLCPU, 0});
  for (int64_t i = 0; i < n; ++i) static_cast<double*>(t.data_ptr())[i] = i;
  return t;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(make_iota, make_iota);
"""


def test_load_accepts_unusual_library_file_names(add_one_lib: Path, tmp_path: Path) -> None:
    for name in ("libadd_one.so.1", "add_one_no_extension"):
        copy = tmp_path / name
        shutil.copy(add_one_lib, copy)
        m = rt.Module.load_from_file(copy, keep_alive=False)
        x = np.ones(3, dtype=np.float32)
        y = np.zeros(3, dtype=np.float32)
        m.get_function("add_one_cpu")(x, y)
        assert y.tolist() == [2.0, 2.0, 2.0]


def test_load_errors_name_the_path(tmp_path: Path, testing_lib: Any) -> None:
    missing = tmp_path / "missing.so"
    with pytest.raises(rt.LibraryLoadError, match="no such file") as info:
        rt.Module.load_from_file(missing)
    assert str(missing) in str(info.value)

    with pytest.raises(rt.LibraryLoadError, match="directory") as info:
        rt.Module.load_from_file(tmp_path)
    assert str(tmp_path) in str(info.value)

    text = tmp_path / "notalib.so"
    text.write_text("this is not a shared library\n")
    with pytest.raises(rt.LibraryLoadError, match="not an ELF") as info:
        rt.Module.load_from_file(text)
    assert str(text) in str(info.value)

    empty = tmp_path / "empty.so"
    empty.write_bytes(b"")
    with pytest.raises(rt.LibraryLoadError, match="empty") as info:
        rt.Module.load_from_file(empty)
    assert str(empty) in str(info.value)

    truncated = tmp_path / "truncated.so"
    truncated.write_bytes(TESTING_LIB.read_bytes()[:4096])
    with pytest.raises(rt.LibraryLoadError) as info:
        rt.Module.load_from_file(truncated)
    assert str(truncated) in str(info.value)
    assert isinstance(info.value, ImportError)


# ------------------------------------------------------------------------------------------
# Lookup
# ------------------------------------------------------------------------------------------
def test_missing_function(mod: rt.Module, add_one_lib: Path) -> None:
    with pytest.raises(AttributeError) as info:
        mod.get_function("add_two_cpu")
    message = str(info.value)
    assert "add_two_cpu" in message and str(add_one_lib.resolve()) in message
    assert mod.get_function_or_none("add_two_cpu") is None
    assert mod.get_function_or_none("add_one_cpu") is not None
    with pytest.raises(KeyError, match="add_two_cpu"):
        mod["add_two_cpu"]
    assert "add_one_cpu" in mod
    assert "add_two_cpu" not in mod
    assert 3 not in mod
    assert mod.implements("add_one_cpu")


def test_function_doc_and_metadata(mod: rt.Module, add_one_lib: Path) -> None:
    symbols = _nm_symbols(add_one_lib)
    if symbols is not None:
        assert {"__tvm_ffi_add_one_cpu", "__tvm_ffi__doc_add_one_cpu", "__tvm_ffi__metadata_add_one_cpu"} <= symbols
    doc = mod.function_doc("add_one_cpu")
    assert doc is not None and doc.startswith("Write x + 1 into y.") and "float32" in doc
    meta = mod.function_metadata("add_one_cpu")
    assert meta is not None and set(meta) == {"type_schema"}
    schema = json.loads(meta["type_schema"])
    assert schema["type"] == "ffi.Function"
    assert len(schema["named_args"]["params"]) == 2
    assert schema["named_args"]["return"] == [{"type": "None"}]
    raw = mod.function_metadata_json("add_one_cpu")
    assert raw is not None and json.loads(raw) == meta
    assert mod.function_doc("add_two_cpu") is None
    assert mod.function_metadata("add_two_cpu") is None


def test_library_without_metadata_is_still_callable(add_one_nometa_lib: Path) -> None:
    symbols = _nm_symbols(add_one_nometa_lib)
    if symbols is not None:
        assert "__tvm_ffi_add_one_cpu" in symbols
        assert not any(s.startswith(("__tvm_ffi__doc_", "__tvm_ffi__metadata_")) for s in symbols)
    m = rt.Module.load_from_file(add_one_nometa_lib)
    assert "add_one_cpu" in m
    assert m.function_doc("add_one_cpu") is None
    assert m.function_metadata("add_one_cpu") is None
    x = np.arange(4, dtype=np.float32)
    y = np.zeros_like(x)
    m.get_function("add_one_cpu")(x, y)
    assert np.array_equal(y, x + 1)


def test_testing_library_docs(testing_lib: Any) -> None:
    m = rt.Module.load_from_file(TESTING_LIB)
    assert m.function_doc("testing_dll_test_add_with_docstring", query_imports=False) is not None
    meta = m.function_metadata("testing_dll_schema_id_int")
    assert meta is not None and "type_schema" in meta
    assert m.get_function("testing_dll_schema_id_int")(41) == 41


def test_imports(add_one_lib: Path, testing_lib: Any) -> None:
    a = rt.Module.load_from_file(add_one_lib)
    b = rt.Module.load_from_file(TESTING_LIB)
    assert a.imports == [] and b.imports == []
    assert "testing_dll_schema_id_int" not in a
    a.import_module(b)
    imports = a.imports
    assert len(imports) == 1 and imports[0].same_as(b) and imports[0].kind == "library"
    assert "testing_dll_schema_id_int" in a
    assert not a.implements("testing_dll_schema_id_int", query_imports=False)
    assert a.get_function_or_none("testing_dll_schema_id_int", query_imports=False) is None
    assert a.get_function("testing_dll_schema_id_int")(5) == 5
    assert a.function_metadata("testing_dll_schema_id_int") is not None
    assert a.function_metadata("testing_dll_schema_id_int", query_imports=False) is None
    with pytest.raises(RuntimeError, match=r"[Cc]yclic"):
        b.import_module(a)
    with pytest.raises(TypeError):
        a.import_module("not a module")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# Native errors
# ------------------------------------------------------------------------------------------
def test_native_errors_become_python_exceptions(mod: rt.Module) -> None:
    f = mod.get_function("add_one_cpu")
    x = np.zeros(4, dtype=np.float32)
    with pytest.raises(TypeError, match="x must be float32, got float64"):
        f(x.astype(np.float64), x)
    with pytest.raises(TypeError, match="y must be float32, got int32"):
        f(x, np.zeros(4, dtype=np.int32))
    with pytest.raises(ValueError, match=r"same shape, got \(4,\) and \(5,\)"):
        f(x, np.zeros(5, dtype=np.float32))
    with pytest.raises(ValueError, match="x must be a 1-D tensor, got ndim=2"):
        f(x.reshape(2, 2), x)
    with pytest.raises(TypeError, match="add_one_cpu"):
        f(1, x)
    with pytest.raises(TypeError, match="Expected 2 but got 1"):
        f(x)
    assert not x.any()  # nothing was written by the failed calls


# ------------------------------------------------------------------------------------------
# The example
# ------------------------------------------------------------------------------------------
def test_example_runs(example_build: ModuleType) -> None:
    # run.py builds into examples/add_one/build, regenerates the committed add_one_pkg (which
    # must already be up to date) and calls it.
    lib = example_build.build(EXAMPLE_DIR / "build")
    from tvmffi_gen.cli.main import main as tvmffi_gen

    assert tvmffi_gen([str(lib), "-o", str(EXAMPLE_DIR / "add_one_pkg"), "--portable", "--check", "-q"]) == 0, (
        "examples/add_one/add_one_pkg is stale: run examples/add_one/run.py and commit it"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "runtime"), str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE_DIR / "run.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "x = [0. 1. 2. 3. 4.]" in lines
    assert "y = [1. 2. 3. 4. 5.]" in lines
    assert lines[-1] == "OK"
    assert any(line.startswith("add_one_cpu doc: Write x + 1 into y.") for line in lines)


def test_example_package_in_process(example_build: ModuleType) -> None:
    lib = example_build.build(EXAMPLE_DIR / "build")
    sys.path.insert(0, str(EXAMPLE_DIR))
    try:
        import add_one_pkg
    finally:
        sys.path.remove(str(EXAMPLE_DIR))
    assert os.path.samefile(add_one_pkg._lib.path, lib)
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    y = np.zeros_like(x)
    add_one_pkg.add_one_cpu(x, y)
    assert np.array_equal(y, x + 1)
    with pytest.raises(TypeError, match="float32"):
        add_one_pkg.add_one_cpu(x.astype(np.float64), y)
    with pytest.raises(ValueError, match="same shape"):
        add_one_pkg.add_one_cpu(x, np.zeros(3, dtype=np.float32))


def test_untyped_export_is_generated_with_a_hint(
    add_one_nometa_lib: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tvmffi_gen.cli.main import main as tvmffi_gen

    out = tmp_path / "nometa_pkg"
    assert tvmffi_gen([str(add_one_nometa_lib), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "add_one_cpu has no type metadata" in err and "TVM_FFI_DLL_EXPORT_INCLUDE_METADATA" in err
    text = (out / "__init__.py").read_text()
    assert "def add_one_cpu(*args: _t.Any) -> _t.Any:" in text
    code = (
        "import numpy as np, nometa_pkg\n"
        "x = np.arange(3, dtype='float32'); y = np.zeros(3, dtype='float32')\n"
        "nometa_pkg.add_one_cpu(x, y); print(y.tolist())\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT / "runtime")])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1.0, 2.0, 3.0]"


def test_a_library_with_exports_only_gets_no_empty_type_table(add_one_nometa_lib: Path, tmp_path: Path) -> None:
    """A library that registers no types (jax-tvm-ffi's ``jax_tvm_ffi.so``, which only exports
    functions): its ``_lib.py`` has no ``register_lazy_types`` call over an empty table."""
    from tvmffi_gen.cli.main import main as tvmffi_gen

    out = tmp_path / "exports_only"
    assert tvmffi_gen([str(add_one_nometa_lib), "-o", str(out), "-q"]) == 0
    text = (out / "_lib.py").read_text()
    assert "register_lazy_types" not in text and "Where each type's class is defined" not in text, text
    assert text.endswith('module: _rt.Module = _bind.load_package_module("exports_only", path)\n'), text


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_example_package_passes_both_checkers() -> None:
    from tvmffi_gen.verify.checkers import run_mypy, run_pyright

    for run in (run_mypy, run_pyright):
        errors, report = run(EXAMPLE_DIR / "add_one_pkg", [EXAMPLE_DIR / "run.py", EXAMPLE_DIR / "build.py"])
        assert errors == 0, report


def test_example_passes_mypy_strict() -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed")
    env = user_env()
    command = [
        sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
        "--cache-dir", str(BUILD_DIR / "mypy_cache"),
        str(EXAMPLE_DIR / "run.py"), str(EXAMPLE_DIR / "build.py"),
    ]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
