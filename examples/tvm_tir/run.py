"""Apache TVM end to end: generate a package for ``libtvm_compiler.so`` and use it on TIR.

Needs ``apache-tvm`` (``pip install apache-tvm``): its wheel ships ``libtvm_compiler.so``. The
script

1. generates ``tvm_pkg`` for the library (``tvmffi-gen .../libtvm_compiler.so -o OUT``),
   unless ``--package-dir`` names one already generated;
2. builds ``2 * 3 + x`` with the generated package (an ``ir.Var`` typed by an ``ir.PrimType``,
   ``ir.IntImm``s, ``prim.Mul``, ``prim.Add``, made by TVM's constructor functions);
3. folds constants with a generated ``Mapper`` and walks the result with a ``Walker``;
4. builds the same expression with ``tvm``'s own Python API in this process and checks the
   results against it: TVM's simplifier gives the same value once ``x`` is bound, structural
   equality (free variables mapped) holds between our folded expression and ``x + 6`` built by
   ``tvm`` — asked of our runtime and of ``tvm_ffi.structural_equal`` (what ``tvm`` uses) — and TVM's simplifier
   accepts our objects as its own.

Run: ``python examples/tvm_tir/run.py`` (prints what it checked, exits 0 on success).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def tvm_compiler_library() -> Path:
    """``libtvm_compiler.so`` inside the installed apache-tvm wheel (found without importing tvm)."""
    from tvmffi_gen.cli.main import library_shipped_with

    lib = library_shipped_with("tvm", "libtvm_compiler.so")
    if lib is None:
        raise SystemExit("apache-tvm's libtvm_compiler.so was not found: pip install apache-tvm")
    return lib


def generate(out: Path) -> float:
    """Generate the package into ``out`` with the tvmffi-gen command; returns the seconds taken."""
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "tvmffi_gen", str(tvm_compiler_library()), "-o", str(out), "-q"]
    subprocess.run(cmd, check=True)
    return time.perf_counter() - start


def _generated_modules(package_dir: Path) -> tuple[Any, Any, Any]:
    """The generated package's ``ir``, ``prim`` and ``visitors`` modules."""
    sys.path.insert(0, str(package_dir.parent))
    name = package_dir.name
    ir = importlib.import_module(f"{name}.ir")
    prim = importlib.import_module(f"{name}.prim")
    visitors = importlib.import_module(f"{name}.visitors")
    return ir, prim, visitors


def _expression(ir: Any, prim: Any) -> Any:
    """``2 * 3 + x`` built with the generated package."""
    # TVM's constructors are the registry functions ir.PrimType, ir.Var, ir.IntImm, prim.Add...
    # (generated as PrimType_, Var_, ... next to the classes of the same name): they compute
    # derived fields such as the type of an Add, which the classes' reflected auto-init leaves
    # unset. (The span parameters are nullable in TVM although their schemas do not say so.)
    i32 = ir.PrimType_("int32")
    x = ir.Var_("x", i32, None)
    expr = prim.Add_(prim.Mul_(ir.IntImm_("int32", 2, None), ir.IntImm_("int32", 3, None), None), x, None)
    assert isinstance(expr, prim.Add) and isinstance(expr.a, prim.Mul) and isinstance(x.ty, ir.PrimType)
    return expr


def _fold_class(ir: Any, visitors: Any) -> type[Any]:
    """A generated ``Mapper`` that folds constants."""
    import tvmffi_runtime as rt

    class Fold(visitors.Mapper):  # type: ignore[misc]
        """Constant folding of Add and Mul over IntImms (post-order: children first)."""

        def map_add(self, node: Any) -> object:
            return self._fold(node, lambda a, b: a + b)

        def map_mul(self, node: Any) -> object:
            return self._fold(node, lambda a, b: a * b)

        def _fold(self, node: Any, op: Any) -> object:
            a, b = node.a, node.b
            if isinstance(a, ir.IntImm) and isinstance(b, ir.IntImm):
                return ir.IntImm_(node.ty.dtype, op(a.value, b.value), None)
            return rt.UNCHANGED

    return Fold


def _fold_and_walk(expr: Any, fold: type[Any], prim: Any, visitors: Any) -> Any:
    """``expr`` folded with ``fold``, its constants and variables counted by a generated ``Walker``."""
    import tvmffi_runtime as rt

    class Census(visitors.Walker):  # type: ignore[misc]
        """Counts the constants and variables of an expression."""

        def __init__(self) -> None:
            self.ints: list[int] = []
            self.vars: list[str] = []

        def walk_int_imm(self, node: Any) -> None:
            self.ints.append(node.value)

        def walk_var(self, node: Any, kind: Any = None) -> None:
            self.vars.append(node.name)

    folded = rt.structural_map(expr, fold(), rt.WalkOrder.POST_ORDER)
    assert isinstance(folded, prim.Add), folded
    census = Census()
    rt.structural_walk(folded, census)
    assert census.ints == [6] and census.vars == ["x"], (census.ints, census.vars)
    print(
        f"ours:  {type(folded).__name__}(IntImm({folded.a.value}), Var({folded.b.name!r}))"
        f"  constants {census.ints}, variables {census.vars}"
    )
    return folded


def _compare_with_tvm(expr: Any, folded: Any, ir: Any, fold: type[Any]) -> None:
    """The same expression through tvm's own Python API, in this process, against ours."""
    import tvm
    import tvm_ffi
    from tvm import tirx

    import tvmffi_runtime as rt

    tx = tirx.Var("x", "int32")
    theirs = tirx.Add(tirx.Mul(tirx.IntImm("int32", 2), tirx.IntImm("int32", 3)), tx)
    simplified = tvm.sym.Analyzer().simplify(theirs)
    print(f"tvm:   {theirs}  simplifies to  {simplified}")

    # Same value once x is bound: fold ours with x := 5, and let TVM simplify its own.
    class Bind(fold):  # type: ignore[misc]
        def map_var(self, node: Any) -> object:
            return ir.IntImm_("int32", 5, None) if node.name == "x" else rt.UNCHANGED

    ours_at_5 = rt.structural_map(expr, Bind(), rt.WalkOrder.POST_ORDER)
    bound = tvm.sym.Analyzer()
    bound.bind(tx, tirx.IntImm("int32", 5))
    theirs_at_5 = bound.simplify(theirs)
    assert isinstance(ours_at_5, ir.IntImm) and ours_at_5.value == int(theirs_at_5) == 11
    print(f"x = 5: ours {ours_at_5.value}, tvm {int(theirs_at_5)}")

    # Structural equality in the FFI's engine: our folded 6 + x against tvm's 6 + x, asked of
    # our runtime and of tvm's own API (our objects cross into tvm_ffi as its own objects).
    expected = tirx.Add(tirx.IntImm("int32", 6), tx)
    assert rt.structural_equal(folded, expected, map_free_vars=True)
    assert not rt.structural_equal(expr, expected, map_free_vars=True)
    assert tvm_ffi.structural_equal(folded, expected, map_free_vars=True)
    assert not tvm_ffi.structural_equal(expr, expected, map_free_vars=True)
    assert (
        rt.structural_hash(folded, map_free_vars=True) == tvm_ffi.structural_hash(expected, map_free_vars=True) % 2**64
    )
    print("structural_equal(ours folded, tvm's 6 + x): True, asked of our runtime and of tvm")
    # and tvm's analyzer works on our objects directly
    assert str(tvm.sym.Analyzer().simplify(expr)) == str(simplified)
    print(f"tvm's simplifier on our expression: {tvm.sym.Analyzer().simplify(expr)}")


def check(package_dir: Path) -> None:
    """Steps 2 to 4 of the module's docstring on the package generated into ``package_dir``."""
    ir, prim, visitors = _generated_modules(package_dir)
    expr = _expression(ir, prim)
    fold = _fold_class(ir, visitors)
    folded = _fold_and_walk(expr, fold, prim, visitors)
    _compare_with_tvm(expr, folded, ir, fold)
    print("OK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package-dir", type=Path, help="a package already generated for libtvm_compiler.so")
    args = parser.parse_args(argv)
    if args.package_dir is not None:
        check(args.package_dir.resolve())
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tvm_pkg"
        seconds = generate(out)
        print(f"generated {out.name} from {tvm_compiler_library().name} in {seconds:.2f} s")
        check(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
