"""Tensor arguments of ``TensorView`` parameters: lent as a borrowed ``DLTensor*``, not made Tensors.

A function exported with a type schema that types a parameter ``DLTensor*`` (``TensorView`` and
``DLTensor*`` in C++) takes the producer's own DLTensor on the compiled path: torch's exchange API
fills one without allocating, numpy's capsule lends the one inside it (released after the call).
Whatever that path declines (a read-only array, a dtype numpy cannot export) goes the Tensor way,
so both paths give the same values and the same errors: the kernel is ``add_one_cpu`` from
``examples/add_one``, called on both paths in child processes and compared.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import tvmffi_runtime as rt
from tvmffi_runtime import _backend
from tvmffi_runtime._functions import dltensor_params

from conftest import BUILD_DIR, ROOT

EXAMPLE_DIR = ROOT / "examples" / "add_one"
CHECK = "Check failed:"


def _schema(params: list[str]) -> dict[str, str]:
    named = {"return": [{"type": "None"}], "params": [{"type": p} for p in params]}
    return {"type_schema": json.dumps({"type": "ffi.Function", "named_args": named})}


def test_dltensor_params_reads_both_schema_forms() -> None:
    assert dltensor_params(_schema(["DLTensor*", "int", "DLTensor*"])) == 0b101
    assert dltensor_params(_schema(["ffi.Tensor", "Optional"])) == 0
    args = {"type_schema": json.dumps({"type": "ffi.Function", "args": [{"type": "int"}, {"type": "DLTensor*"}]})}
    assert dltensor_params(args) == 0b1  # the return type first: the parameter is the first one


@pytest.mark.parametrize("metadata", [None, {}, {"type_schema": "not json"}, {"type_schema": "[1]"}, "text"])
def test_dltensor_params_is_zero_for_unreadable_metadata(metadata: object) -> None:
    assert dltensor_params(metadata) == 0


@pytest.fixture(scope="module")
def add_one_lib(have_gxx: bool) -> Path:
    spec = importlib.util.spec_from_file_location("add_one_build", EXAMPLE_DIR / "build.py")
    assert spec is not None and spec.loader is not None
    build: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    path: Path = build.build(BUILD_DIR / "add_one")
    return path


# Every case prints (what came back or the error's type and message, the output array after).
SCRIPT = r"""
import json, sys
import numpy as np
import ml_dtypes_or_none
import tvmffi_runtime as rt
import add_one_pkg

f = add_one_pkg.add_one_cpu
out = []

def case(name, x, y, show):
    try:
        r = f(x, y)
        got = ["ok", repr(r)]
    except Exception as exc:
        got = [type(exc).__name__, str(exc).splitlines()[0]]
    out.append([name, got, show()])

x, y = np.arange(6, dtype=np.float32), np.zeros(6, dtype=np.float32)
case("numpy", x, y, lambda: y.tolist())
case("strided", x[::2], y[:3], lambda: y.tolist())
case("our Tensor", rt.Tensor.from_dlpack(x), y, lambda: y.tolist())
ro = x.copy()
ro.flags.writeable = False
case("read-only", ro, y, lambda: y.tolist())
case("float64", x, np.zeros(6), lambda: y.tolist())
case("not a tensor", x, 3, lambda: y.tolist())
case("2-D", np.zeros((2, 3), dtype=np.float32), y, lambda: y.tolist())
bf16 = ml_dtypes_or_none.bfloat16
if bf16 is not None:
    case("bfloat16", np.zeros(6, dtype=bf16), y, lambda: y.tolist())
try:
    import torch
except ImportError:
    torch = None
if torch is not None:
    tx, ty = torch.arange(6, dtype=torch.float32), torch.zeros(6)
    case("torch", tx, ty, lambda: ty.tolist())
    case("torch strided", tx[::2], ty[:3], lambda: ty.tolist())
    case("torch and numpy", tx, y, lambda: y.tolist())
    case("torch int", torch.arange(6), ty, lambda: ty.tolist())
# the capsules lent are released: numpy's array is referenced by no capsule after the calls
before = sys.getrefcount(x)
for _ in range(1000):
    f(x, y)
out.append(["refcount after 1000 calls", sys.getrefcount(x) - before])
print(json.dumps(out))
"""

ML_DTYPES_SHIM = "try:\n    from ml_dtypes import bfloat16\nexcept ImportError:\n    bfloat16 = None\n"


def _run(lib: Path, tmp: Path, pure: bool) -> list[object]:
    (tmp / "ml_dtypes_or_none.py").write_text(ML_DTYPES_SHIM)
    env = {**os.environ, "ADD_ONE_PKG_LIBRARY": str(lib), "TVMFFI_RUNTIME_PURE": "1" if pure else ""}
    path = [str(ROOT / "runtime"), str(EXAMPLE_DIR), str(tmp)]
    env["PYTHONPATH"] = os.pathsep.join(path)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: list[object] = json.loads(proc.stdout)
    return result


@pytest.mark.skipif(not _backend.accelerated(), reason="needs the compiled path (it is compared with the pure one)")
def test_view_parameters_give_what_tensor_arguments_give(add_one_lib: Path, tmp_path: Path) -> None:
    compiled = _run(add_one_lib, tmp_path, pure=False)
    assert compiled == _run(add_one_lib, tmp_path, pure=True)
    # and what both agree on is right (written by hand)
    by_name = {row[0]: row[1:] for row in compiled}  # type: ignore[index]
    assert by_name["numpy"] == [["ok", "None"], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]
    assert by_name["strided"] == [["ok", "None"], [1.0, 3.0, 5.0, 4.0, 5.0, 6.0]]
    assert by_name["read-only"][0][0] == "BufferError"
    assert "cannot view a read-only ndarray" in by_name["read-only"][0][1]
    assert by_name["float64"][0] == [
        "TypeError",
        "Check failed: (y.dtype() == f32) is false: y must be float32, got float64",
    ]
    assert by_name["not a tensor"][0][0] == "TypeError"
    assert by_name["2-D"][0][0] == "ValueError"
    assert by_name["refcount after 1000 calls"] == [0]
    if "torch" in by_name:
        assert by_name["torch strided"] == [["ok", "None"], [1.0, 3.0, 5.0, 4.0, 5.0, 6.0]]
        assert by_name["torch int"][0][0] == "TypeError"
    if "bfloat16" in by_name:
        assert by_name["bfloat16"][0] == [
            "TypeError",
            "Check failed: (x.dtype() == f32) is false: x must be float32, got bfloat16",
        ]


def test_exported_function_knows_its_view_parameters(add_one_lib: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADD_ONE_PKG_LIBRARY", str(add_one_lib))
    monkeypatch.syspath_prepend(str(EXAMPLE_DIR))
    from tvmffi_runtime._functions import ModuleFunction

    add_one_pkg = importlib.import_module("add_one_pkg")  # on the path only now

    target = ModuleFunction("add_one_pkg._lib", "add_one_cpu")._call_target()
    assert isinstance(target, tuple) and target[1] == 0b11  # both parameters are TensorViews
    assert isinstance(target[0], rt.Function)
    x, y = np.arange(3, dtype=np.float32), np.zeros(3, dtype=np.float32)
    add_one_pkg.add_one_cpu(x, y)
    assert y.tolist() == [1.0, 2.0, 3.0]
