"""Build the add_one library, load it with tvmffi_runtime and call ``add_one_cpu`` on numpy arrays.

    python examples/add_one/run.py [--build-dir DIR]

The arrays are passed without copying (DLPack): the native function writes ``y`` in place.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt

import tvmffi_runtime as rt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build import build  # noqa: E402


def add_one(mod: rt.Module, x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``x + 1`` computed by the native ``add_one_cpu`` into a new array."""
    y = np.empty_like(x)
    mod.get_function("add_one_cpu")(x, y)
    return y


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", type=Path, default=Path(__file__).resolve().parent / "build")
    args = parser.parse_args(argv)

    lib = build(args.build_dir)
    mod = rt.Module.load_from_file(lib)
    print(f"loaded {mod!r}")
    print(f"add_one_cpu doc: {(mod.function_doc('add_one_cpu') or '').splitlines()[0]}")
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
