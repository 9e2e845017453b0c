"""A library extending another library's types (issue 12, item 7): ``--use PKG``.

``tests/fixtures/ext_base.cc`` registers ``extbase.Shape`` and ``extbase.Circle``;
``ext_derived.cc`` (loaded after it) derives ``extderived.Square`` and ``extderived.Ring`` from
them and holds them in ``extderived.Scene``. Generated with ``--preload`` the base library and
``--use`` its package, the derived package's classes subclass the base package's classes, its
annotations and visitors refer to them, and inherited fields and isinstance work on both paths.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main
from tvmffi_gen.verify.checkers import run_mypy

from conftest import ROOT, build_shared
from fixtures import FIXTURES_DIR

PROGRAM = r'''
from __future__ import annotations

import tvmffi_runtime as rt
from basepkg.extbase import Circle, Shape, describe
from basepkg.visitors import Walker as BaseWalker
from derivedpkg.extderived import Ring, Scene, Square, biggest
from derivedpkg.visitors import Walker

sq = Square(name="sq", side=3.0)  # auto-init binds the base's field too
ring = Ring(name="ring", radius=2.0, inner=1.0)
circle = Circle(name="c", radius=1.0)
assert isinstance(sq, Shape) and isinstance(ring, Circle) and isinstance(ring, Shape)
assert issubclass(Walker, BaseWalker)
assert (sq.name, sq.side, ring.radius, ring.inner) == ("sq", 3.0, 2.0, 1.0)  # inherited fields
sq.name = "square"
ring.radius = 3.0
renamed = sq.replace(name="copy")  # replace takes the used base's fields too (issue 20)
assert (sq.name, renamed.name, renamed.side) == ("square", "copy", 3.0) and isinstance(renamed, Square)
assert [f.name for f in rt.fields(ring)] == ["name", "radius", "inner"]  # ancestors' first
assert describe(sq) == "extderived.Square:square"
big: Shape = biggest([circle, sq, ring])
assert isinstance(big, Ring) and big.same_as(ring), big
scene = Scene(shapes=[circle, sq, ring], main=sq)
main = scene.main
assert isinstance(main, Square) and main.side == 3.0
first: Shape = scene.shapes[0]
assert isinstance(first, Circle) and not isinstance(first, Ring)


class Census(Walker):
    """Hooks of both packages: walk_shape and walk_circle come from the base package's Walker."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def walk_circle(self, node: Circle) -> None:
        self.seen.append(f"circle:{node.name}")

    def walk_shape(self, node: Shape) -> None:
        self.seen.append(f"shape:{node.name}")

    def walk_square(self, node: Square) -> None:
        self.seen.append(f"square:{node.name}")


census = Census()
rt.structural_walk(scene, census)
assert census.seen == ["circle:c", "square:square", "circle:ring", "square:square"], census.seen
print("accelerated" if rt._backend.accelerated() else "pure", "OK")
'''


def _build(name: str) -> Path:
    header = (FIXTURES_DIR / "ext_base.h").read_text()
    source = (FIXTURES_DIR / f"{name}.cc").read_text().replace('#include "ext_base.h"', header)
    return build_shared(name, source)


@pytest.fixture(scope="module")
def packages(have_gxx: bool, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Folder holding ``basepkg`` and ``derivedpkg`` (on sys.path while the module runs)."""
    base_lib, derived_lib = _build("ext_base"), _build("ext_derived")
    root = tmp_path_factory.mktemp("ext")
    assert main([str(base_lib), "-o", str(root / "basepkg"), "-q"]) == 0
    sys.path.insert(0, str(root))
    try:
        args = [str(derived_lib), "--preload", str(base_lib), "--use", "basepkg", "-o", str(root / "derivedpkg")]
        assert main([*args, "-q"]) == 0
        yield root
    finally:
        sys.path.remove(str(root))


def test_classes_subclass_the_used_package(packages: Path) -> None:
    text = (packages / "derivedpkg" / "extderived" / "__init__.py").read_text()
    assert "import basepkg.extbase as _ffi_use_basepkg__extbase" in text
    assert "class Square(_ffi_use_basepkg__extbase.Shape):" in text
    assert "class Ring(_ffi_use_basepkg__extbase.Circle):" in text
    assert "def __init__(self, name: str, side: _t.SupportsFloat) -> None:" in text  # the base's field too
    assert (
        "    _0: _abc.Sequence[_ffi_use_basepkg__extbase.Shape],\n    /,\n) -> _ffi_use_basepkg__extbase.Shape:" in text
    )
    visitors = (packages / "derivedpkg" / "visitors.py").read_text()
    assert "class Walker(_ffi_use_basepkg__visitors.Walker):" in visitors
    assert "import basepkg._lib as _ffi_use_basepkg___lib" in (packages / "derivedpkg" / "_lib.py").read_text()


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_program_over_both_packages_type_checks(packages: Path, tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    errors, report = run_mypy(packages / "derivedpkg", extra_files=[prog, packages / "basepkg"])
    assert errors == 0, report


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_derived_objects_are_base_objects(packages: Path, pure: bool) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(packages), str(ROOT / "runtime")])}
    env.pop("TVMFFI_RUNTIME_PURE", None)
    if pure:
        env["TVMFFI_RUNTIME_PURE"] = "1"
    proc = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["pure" if pure else "accelerated", "OK"]


def test_unknown_used_package_is_refused(packages: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    derived_lib, base_lib = _build("ext_derived"), _build("ext_base")
    args = [str(derived_lib), "--preload", str(base_lib), "--use", "no_such_pkg_xyz", "-o", str(tmp_path / "out")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--use no_such_pkg_xyz: no package of that name is importable" in err
    assert not (tmp_path / "out").exists()
