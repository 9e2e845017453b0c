"""Build the add_one library, load it with tvmffi_runtime and call ``add_one_cpu`` on numpy arrays.

    python examples/add_one/run.py [--build-dir DIR]

The arrays are passed without copying (DLPack): the native function writes ``y`` in place.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

import tvmffi_runtime as rt

HERE = Path(__file__).resolve().parent


def load_build() -> Callable[[str | os.PathLike[str]], Path]:
    """``build`` from ``build.py`` beside this file, loaded by path (the name ``build`` is also
    the PyPI build frontend's)."""
    spec = importlib.util.spec_from_file_location("add_one_build", HERE / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    build: Callable[[str | os.PathLike[str]], Path] = module.build
    return build


def add_one(mod: rt.Module, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``x + 1`` computed by the native ``add_one_cpu`` into a new array."""
    y = np.empty_like(x)
    mod.get_function("add_one_cpu")(x, y)
    return y


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", type=Path, default=HERE / "build")
    args = parser.parse_args(argv)

    lib = load_build()(args.build_dir)
    mod = rt.Module.load_from_file(lib)
    print(f"loaded {mod!r}")
    doc = mod.function_doc("add_one_cpu")
    print(f"add_one_cpu doc: {doc.splitlines()[0] if doc else '(none)'}")
    print(f"add_one_cpu metadata: {mod.function_metadata('add_one_cpu')}")

    x = np.arange(5, dtype=np.float32)
    y = add_one(mod, x)
    print(f"x = {x}")
    print(f"y = {y}")
    assert y.dtype == np.float32 and y.shape == x.shape
    assert np.array_equal(y, x + 1), (x, y)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
