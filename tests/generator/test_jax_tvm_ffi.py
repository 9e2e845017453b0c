"""jax-tvm-ffi (PyPI ``jax-tvm-ffi``), a package built on tvm_ffi, used as a user would (optional:
skipped when it is not installed; ``pip install jax-tvm-ffi`` brings jax and jaxlib).

The package registers no TVM FFI type and fills no ``_ffi_api`` module: its ``jax_tvm_ffi.so``
only exports three functions, built without type metadata, which ``jax_tvm_ffi`` calls through a
private ``tvm_ffi.Module``. So ``--stubs-for`` refuses it, naming the tools that serve it, and the
package generator gives untyped bindings of the three exports, through which a Python callable
of our runtime becomes a JAX FFI target that jitted JAX code calls on the CPU.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from stubs_for_run import run_tvmffi_gen as _gen
from stubs_for_run import stubs_for_env as _env


def _jax_tvm_ffi_library() -> Path | None:
    """``jax_tvm_ffi/jax_tvm_ffi.so`` of the installed package, found without importing it (that
    imports jax)."""
    spec = importlib.util.find_spec("jax_tvm_ffi")
    if spec is None or not spec.submodule_search_locations:
        return None
    lib = Path(next(iter(spec.submodule_search_locations))) / "jax_tvm_ffi.so"
    return lib if lib.is_file() else None


LIB = _jax_tvm_ffi_library() if sys.platform.startswith("linux") else None
pytestmark = [
    pytest.mark.skipif(LIB is None, reason="jax-tvm-ffi is not installed (optional: pip install jax-tvm-ffi)"),
    pytest.mark.slow,  # each test imports jax in a child process
]
EXPORTS = ("get_last_workspace_peak", "register_tvm_ffi_handler", "registered_count")

DOUBLE_THROUGH_JAX = """
import jax, jax.numpy as jnp, numpy as np
import jaxffi_typed

seen = []


def double(x, y):
    seen.append((type(x).__name__, type(y).__name__))
    np.from_dlpack(y)[...] = np.from_dlpack(x) * 2


handler = jaxffi_typed.register_tvm_ffi_handler(double, ["args", "rets"], 1, 0, True, False)
jax.ffi.register_ffi_target("jaxffi_typed.double", jax.ffi.pycapsule(handler), platform="cpu")
x = jnp.arange(4, dtype=jnp.float32)
call = jax.ffi.ffi_call("jaxffi_typed.double", jax.ShapeDtypeStruct(x.shape, x.dtype))
print(jax.jit(call)(x).tolist(), seen, jaxffi_typed.registered_count())
"""


def test_stubs_for_it_are_refused_naming_what_serves_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = _gen(["--stubs-for", "jax_tvm_ffi", "-o", str(out), "--project"], _env([]), tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert (
        "jax_tvm_ffi: importing it registers no TVM FFI types and fills no _ffi_api module" in proc.stderr
        and "stubgen -p jax_tvm_ffi -o OUT" in proc.stderr
    ), proc.stderr
    assert not out.exists()


def test_its_library_gives_untyped_exports_our_runtime_hands_to_jax(tmp_path: Path) -> None:
    assert LIB is not None
    out = tmp_path / "jaxffi_typed"
    proc = _gen([str(LIB), "-o", str(out)], _env([]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in EXPORTS:
        assert f"warning: exported function {name} has no type metadata" in proc.stderr, proc.stderr
    text = (out / "__init__.py").read_text()
    assert f"__all__ = {list(EXPORTS)!r}".replace("'", '"') in text, text
    assert "def registered_count(*args: _t.Any) -> _t.Any:" in text, text
    assert "register_lazy_types" not in (out / "_lib.py").read_text()

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "runtime")])}
    run = subprocess.run(
        [sys.executable, "-c", DOUBLE_THROUGH_JAX], capture_output=True, text=True, env=env, timeout=120
    )
    assert run.returncode == 0, run.stderr
    # our Function called back with our Tensors (DLPack views of XLA's buffers); one handler registered
    assert run.stdout.strip() == "[0.0, 2.0, 4.0, 6.0] [('Tensor', 'Tensor')] 1", run.stdout
