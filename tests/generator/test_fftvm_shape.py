"""A library shaped like fftvm (PyPI ``fftvm``, FastFlow over TVM FFI), the first third-party
package built on ``tvm_ffi`` tried here: a mutable base type no Python class is registered for,
final subclasses built from a callback (``refl::init<ffi::Function>()``), and a builder whose
methods take the base type and return the object they were called on.

The fixture library ``stages`` has that shape without FastFlow; the package generator and
``--stubs-for`` run over it as a user would. The last test runs against fftvm itself when it
is installed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import build_shared
from stubs_for_run import run_tvmffi_gen as _gen
from stubs_for_run import stubs_for_env as _env

STAGES_CC = r"""
#include <tvm/ffi/container/array.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

#include <vector>

namespace ffi = tvm::ffi;

// The base of every stage; Python registers no class for it.
struct NodeObj : public ffi::Object {
  static constexpr bool _type_mutable = true;
  TVM_FFI_DECLARE_OBJECT_INFO("stages.Node", NodeObj, ffi::Object);
};

struct NodeRef : public ffi::ObjectRef {
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NOTNULLABLE(NodeRef, ffi::ObjectRef, NodeObj);
};

struct SinkObj : public NodeObj {
  ffi::Function fn;
  explicit SinkObj(ffi::Function fn) : fn(std::move(fn)) {}
  static constexpr bool _type_mutable = true;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("stages.Sink", SinkObj, NodeObj);
};

struct PipelineObj : public NodeObj {
  std::vector<NodeRef> stages;
  static constexpr bool _type_mutable = true;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("stages.Pipeline", PipelineObj, NodeObj);
};

TVM_FFI_STATIC_INIT_BLOCK() {
  namespace refl = ffi::reflection;
  refl::ObjectDef<NodeObj>();
  refl::ObjectDef<SinkObj>().def(refl::init<ffi::Function>());
  refl::ObjectDef<PipelineObj>()
      .def(refl::init<>())
      .def("add_stage", [](PipelineObj* p, NodeRef n) { p->stages.push_back(n); return p; })
      .def("size", [](PipelineObj* p) { return static_cast<int64_t>(p->stages.size()); });
}
"""

#: the Python side, as fftvm writes it: load the library, register a class per final type whose
#: hand-written __init__ forwards to the type's own __ffi_init__
STAGES_PY = '''
"""A package over the stages fixture library, written the way fftvm is."""
import tvm_ffi

_LIB = tvm_ffi.load_module({lib!r})


@tvm_ffi.register_object("stages.Pipeline")
class Pipeline(tvm_ffi.Object):
    def __init__(self):
        self.__ffi_init__()


@tvm_ffi.register_object("stages.Sink")
class Sink(tvm_ffi.Object):
    def __init__(self, fn):
        self.__ffi_init__(fn)
'''


@pytest.fixture(scope="module")
def stages_lib(have_gxx: bool) -> Path:
    return build_shared("stages", STAGES_CC)


@pytest.fixture(scope="module")
def generated(stages_lib: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package generated from the fixture library (``stages_gen``), in a folder of its own."""
    base = tmp_path_factory.mktemp("fftvm_shape")
    proc = _gen([str(stages_lib), "-o", str(base / "stages_gen")], _env([]), base)
    assert proc.returncode == 0, proc.stderr
    return base


def test_classes_are_two_blank_lines_apart_and_no_module_ends_in_a_blank_line(generated: Path) -> None:
    # pycodestyle E303 / W391 (ruff's E3 rules are preview-only, so lint does not catch them)
    files = sorted((generated / "stages_gen").rglob("*.py"))
    assert files
    for path in files:
        text = path.read_text()
        assert "\n\n\n\n" not in text, f"{path.name}: three blank lines at {text.index(chr(10) * 4)}"
        assert not text.endswith("\n\n"), f"{path.name} ends in a blank line"
    module = (generated / "stages_gen" / "stages" / "__init__.py").read_text()
    # each class after the first follows the previous one's __replace__ by exactly two blank lines
    assert re.search(r"\]\n\n\n@_bind\.register\(\"stages\.Pipeline\"\)\n", module), module


def test_a_builder_method_returns_the_object_it_was_called_on(generated: Path) -> None:
    code = """
        from stages_gen.stages import Node, Pipeline, Sink

        seen = []
        pipe = Pipeline()
        back = pipe.add_stage(Sink(seen.append)).add_stage(Pipeline())
        assert type(back) is Pipeline and back.same_as(pipe), back
        assert pipe.size() == 2
        assert issubclass(Sink, Node)
        print("ok")
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=_env([generated]),
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr


@pytest.mark.slow
def test_an_init_forwarding_to_ffi_init_takes_what_the_registry_init_takes(stages_lib: Path, tmp_path: Path) -> None:
    src = tmp_path / "src" / "stages_py"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text(STAGES_PY.format(lib=str(stages_lib)))
    out = tmp_path / "out"
    proc = _gen(["--stubs-for", "stages_py", "-o", str(out)], _env([src.parent]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    stub = (out / "stages_py-stubs" / "__init__.pyi").read_text()
    # the registry's Sink.__ffi_init__ takes an ffi.Function: any callable
    assert re.search(r"class Sink\b[^\n]*\n    def __init__\(self, fn: _abc\.Callable\[", stub), stub


@pytest.mark.slow
def test_stubs_for_the_installed_fftvm(tmp_path: Path) -> None:
    """fftvm 0.1.0 builds only where its setup.py can clone FastFlow; skipped where it is absent."""
    pytest.importorskip("fftvm", reason="fftvm is not installed")
    proc = _gen(["--stubs-for", "fftvm", "-o", str(tmp_path)], _env([]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "(1 module, 6 registered classes, 0 modules not covered;" in proc.stdout, proc.stdout
    stub = (tmp_path / "fftvm-stubs" / "__init__.pyi").read_text()
    # fftvm.Node has no Python class: the nearest ancestor that has one
    assert "def add_stage(self, _0: _tvm_ffi_core.Object, /) -> _fftvm.Pipeline: ..." in stub, stub
    # the C++ lambda's default (skip_init = false) does not reach the registry: the flag is required
    assert "def run(self, _0: bool, /) -> None: ..." in stub
    assert "def add_collector(self, _0: _tvm_ffi_core.Object | None, /) -> _fftvm.Farm: ..." in stub
