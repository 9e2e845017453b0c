"""``tvmffi-gen --stubs-for tvm`` over apache-tvm 0.27 (optional: skipped when it is not installed).

One generation per module; each test reads what it checks in it: the registry's members, the
constructors made from fields, the names that follow the running module (issue 30, 1-4: the
fixture package of test_stubs_for_runtime_kinds.py has each case in small), one warning per
package that failed with its children counted, and mypy --strict over the whole stub package.
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from stubs_for_run import mypy_strict_over_stubs
from stubs_for_run import run_tvmffi_gen as _gen
from stubs_for_run import stubs_for_env as _env

pytestmark = [
    pytest.mark.slow,  # writes and checks the stubs of the whole of tvm: see tests/README.md
    # found, not imported: collecting this file, even to deselect it, must not pay tvm's import
    pytest.mark.skipif(
        importlib.util.find_spec("tvm") is None, reason="apache-tvm is not installed (optional: pip install apache-tvm)"
    ),
]


@pytest.fixture(scope="module")
def tvm_stubs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    base = tmp_path_factory.mktemp("tvm_stubs")
    out = base / "out"
    args = ["--stubs-for", "tvm", "-o", str(out), "--exclude", "tvm.s_tir.meta_schedule.testing"]
    proc = _gen(args, _env([]), base)
    assert proc.returncode == 0, proc.stderr
    return out / "tvm-stubs", proc


def _read(root: Path, rel: str) -> str:
    return (root / rel).read_text()


def test_registry_members_and_public_paths(tvm_stubs: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    root, _ = tvm_stubs
    module = _read(root, "ir/module.pyi")
    # a read-only field no class deriving from IRModule declares again: Final
    assert "    functions: Final[_tvm_ffi.Map[_tvm_ir.GlobalVar, _tvm_ir.BaseFunc]]\n" in module, module
    # prim.Ramp lives in tvm.ir.prim.expr, its public path is tvm.tirx.Ramp
    assert _read(root, "ir/prim/expr.pyi").count("class Ramp(") == 1


def test_constructors_from_fields_take_what_the_native_init_takes(
    tvm_stubs: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    root, _ = tvm_stubs
    attrs = _read(root, "relax/op/op_attrs.pyi")
    argsort = attrs[attrs.index("class ArgsortAttrs(") :]
    # tvm_ffi's order: required, defaulted, keyword-only (dtype has no default)
    assert "def __init__(self, dtype: _tvm_ffi.dtype | str | None, axis: int = ..., descending: bool = ...)" in argsort
    expr = _read(root, "ir/expr.pyi")
    opaque = expr[expr.index("class OpaqueExpr(") :]
    assert "    def __init__(self) -> None: ..." in opaque[: opaque.index("\nclass ")]  # refuses span, ty


def test_names_denote_what_the_running_module_binds(tvm_stubs: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    root, _ = tvm_stubs
    nn = _read(root, "relax/frontend/nn/__init__.pyi")
    assert "\nfrom tvm.relax.frontend.nn.op import extern as extern  # bound so at run time\n" in nn
    dlight = _read(root, "s_tir/dlight/base/transform.pyi")
    assert "class ApplyDefaultSchedule(_tvm_ir_transform.ModulePass, metaclass=type):" in dlight
    spec = _read(root, "relax/frontend/nn/spec.pyi")
    assert "ArgSpecType: _t.TypeAlias = Int | Tensor\n" in spec
    assert "MethodSpecType: _t.TypeAlias = MethodSpec | dict[str, ArgSpecType]\n" in spec
    tensor = _read(root, "runtime/_tensor.pyi")
    # tvm has tvm_ffi make its devices tvm.runtime.Device (_set_class_device): exist, sync...
    assert "def cpu(dev_id: int = ...) -> _tvm_runtime.Device: ..." in tensor, tensor
    disco = _read(root, "runtime/disco/_ffi_api.pyi")  # a registry result typed Device
    assert "def device() -> _tvm_runtime.Device:" in disco, disco
    x86 = _read(root, "s_tir/tensor_intrin/x86.pyi")  # @T.prim_func: a PrimFunc at run time
    assert "\ndot_product_16x4_u8i8i32_desc: _tvm_tirx.PrimFunc  # a decorator made it so at run time\n" in x86
    loss = _read(root, "topi/nn/loss.pyi")  # from . import cpp: tvm.topi.cpp, bound on tvm.topi.nn
    assert "\nimport tvm.topi.cpp as cpp\n" in loss, loss
    base = _read(root, "relax/op/base.pyi")  # tvm annotates -> Object; the registry's schema says ir.Expr
    assert "def make_closure(func: Expr, args: Expr) -> _tvm_ir.Expr: ..." in base, base
    # ffi.Module results are tvm.runtime.Module at run time, named by its own name in its module
    module = _read(root, "runtime/module.pyi")
    assert "def load_static_library(path: Incomplete, func_names: Incomplete) -> Module: ..." in module


def test_results_basedpyright_infers_from_the_sources(
    tvm_stubs: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """A stub never knows less than a checker reading tvm's sources (issue 35, 6)."""
    root, _ = tvm_stubs
    expr = _read(root, "ir/expr.pyi")
    astype = "def astype(self, dtype: Incomplete, span: Incomplete = ...)"
    assert f"    {astype} -> Expr | NotImplementedType: ..." in expr, expr
    tensor = _read(root, "runtime/_tensor.pyi")
    assert "    def numpy(self) -> _numpy.ndarray[tuple[int, ...], _numpy.dtype[_t.Any]]: ..." in tensor, tensor


def test_one_warning_per_failed_package(tvm_stubs: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    _, proc = tvm_stubs
    warnings = [ln for ln in proc.stderr.splitlines() if "not covered" in ln]
    assert not any("its package failed to import" in ln for ln in warnings), warnings
    assert any("; nor " in ln and " modules under it" in ln for ln in warnings), warnings


def test_mypy_strict_finds_nothing(tvm_stubs: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    root, _ = tvm_stubs
    mypy = mypy_strict_over_stubs(root, "tvm", tmp_path)
    assert mypy.returncode == 0, mypy.stdout[-3000:]
