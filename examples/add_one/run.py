"""The add_one example end to end: build the C++ library, generate its typed package, call it.

    python examples/add_one/run.py [--build-dir DIR]

1. ``build.py`` compiles ``add_one.cc`` (``TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one_cpu, ...)`` with
   its type metadata) into ``build/add_one.so``;
2. ``tvmffi-gen build/add_one.so -o add_one_pkg`` writes the typed package beside this script
   (committed, so mypy checks this script against it);
3. ``add_one_pkg.add_one_cpu(x, y)`` runs on numpy arrays, which are passed without copying
   (DLPack): the native function writes ``y`` in place.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def load_build() -> Callable[[str | os.PathLike[str]], Path]:
    """``build`` from ``build.py`` beside this file, loaded by path (the name ``build`` is also
    the PyPI build frontend's)."""
    spec = importlib.util.spec_from_file_location("add_one_build", HERE / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    build: Callable[[str | os.PathLike[str]], Path] = module.build
    return build


def generate(library: Path) -> None:
    """(Re)generate ``add_one_pkg`` for ``library`` (a no-op when it is up to date)."""
    from tvmffi_gen.cli.main import main as tvmffi_gen

    # --portable: the committed package records its library only relative to itself
    status = tvmffi_gen([str(library), "-o", str(HERE / "add_one_pkg"), "--portable", "-q"])
    if status != 0:
        raise SystemExit(f"tvmffi-gen failed with status {status}")


def add_one(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``x + 1`` computed by the native ``add_one_cpu`` into a new array."""
    import add_one_pkg

    y = np.empty_like(x)
    add_one_pkg.add_one_cpu(x, y)
    return y


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build-dir", type=Path, default=HERE / "build")
    args = parser.parse_args(argv)

    library = load_build()(args.build_dir)
    generate(library)
    os.environ["ADD_ONE_PKG_LIBRARY"] = str(library)  # the library just built, wherever it is

    import add_one_pkg

    doc = add_one_pkg.add_one_cpu.__doc__ or ""
    print(f"add_one_cpu doc: {doc.splitlines()[0]}")
    x = np.arange(5, dtype=np.float32)
    y = add_one(x)
    print(f"x = {x}")
    print(f"y = {y}")
    assert y.dtype == np.float32 and y.shape == x.shape
    assert np.array_equal(y, x + 1), (x, y)
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
