"""``--stubs-for``: a stub never knows less than a checker reading the sources (issue 35, 6-7).

The fixture package ``inferpkg`` (over the tinyir fixture library) has what tvm has in small: a
method whose result pyright infers from its body (``ExprOperand.astype``, ``Expr |
NotImplementedType``), results of builtin types and literals, a result of one of two classes of
one name (``inferpkg.a.Tensor`` returned from ``inferpkg.b``, which has a ``Tensor`` of its own),
one nothing determines (stays ``Incomplete``), and a subclass of ``tvm_ffi.Device`` the package
makes ``tvm_ffi`` build its devices of (tvm's ``tvm.runtime.Device``): every device a function
returns is named by it. Checked in the stubs' text and through mypy's ``reveal_type`` from a
user's folder, beside what basedpyright infers from the sources alone.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import build_shared
from mypy_reports import revealed_types
from stubs_for_run import mypy_strict_over_stubs, stubs_for_env, stubs_for_package

pytestmark = pytest.mark.slow  # --stubs-for, basedpyright and mypy over a package: see tests/README.md

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

PACKAGE = {
    "__init__.py": """
        import ctypes

        import tvm_ffi  # noqa: F401

        _LIB = ctypes.CDLL(@LIB@, ctypes.RTLD_GLOBAL)

        from . import a, b, devices, exprs, nodes
    """,
    "nodes.py": """
        import tvm_ffi


        @tvm_ffi.register_object("tinyir.Node")
        class Node(tvm_ffi.Object):
            pass
    """,
    "exprs.py": """
        def _cast(value, dtype):
            if dtype == "none":
                return NotImplemented
            return Expr()


        class ExprOperand:
            def astype(self, dtype, span=None):
                result = _cast(self, dtype)
                if result is NotImplemented and span is not None:
                    raise TypeError(dtype)
                return result

            def shape(self):
                return [1, 2]

            def kind(self, long):
                return "long" if long else "short"

            def same(self, other):
                return other


        class Expr(ExprOperand):
            pass
    """,
    "a.py": """
        class Tensor:
            pass
    """,
    "b.py": """
        from . import a


        class Tensor:  # another class of the same name
            pass


        def make():
            return a.Tensor()


        def own():
            return Tensor()
    """,
    "devices.py": """
        import tvm_ffi
        import tvm_ffi.core


        class Device(tvm_ffi.core.Device):
            def sync(self) -> None:
                pass

            @property
            def exist(self):
                return self.index >= 0


        tvm_ffi.core._set_class_device(Device)


        def cpu(index=0):
            return tvm_ffi.device("cpu", index)


        def pick(flag):
            if flag:
                return tvm_ffi.device("cpu", 0)
            return None
    """,
}

USER = """
from inferpkg import b, devices, exprs

y = exprs.Expr().astype("int64")
reveal_type(y)
reveal_type(exprs.Expr().shape())
reveal_type(exprs.Expr().kind(True))
reveal_type(b.make())
reveal_type(b.own())
reveal_type(devices.cpu())
reveal_type(devices.pick(True))
devices.cpu().sync()
"""


@pytest.fixture(scope="module")
def inferred_stubs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the package's folder, OUT) after ``--stubs-for inferpkg``."""
    lib = build_shared("tinyir", (FIXTURES / "tinyir.cc").read_text())
    base = tmp_path_factory.mktemp("inferred")
    src, out = stubs_for_package(base, "inferpkg", PACKAGE, lib)
    return src, out


def test_results_pyright_infers_are_in_the_stubs(inferred_stubs: tuple[Path, Path]) -> None:
    _, out = inferred_stubs
    root = out / "inferpkg-stubs"
    exprs = (root / "exprs.pyi").read_text()
    astype = "def astype(self, dtype: Incomplete, span: Incomplete = ...) -> NotImplementedType | Expr: ..."
    assert astype in exprs, exprs
    assert "def shape(self) -> list[int]: ..." in exprs, exprs
    assert "def kind(self, long: Incomplete) -> str: ..." in exprs, exprs  # Literal['long', 'short']
    assert "def same(self, other: Incomplete) -> Incomplete: ..." in exprs, exprs  # nothing determines it
    b = (root / "b.pyi").read_text()
    assert "def make() -> _inferpkg_a.Tensor: ..." in b, b  # the other module's class of that name
    assert "def own() -> Tensor: ..." in b, b


def test_a_device_is_the_class_the_package_makes_it_of(inferred_stubs: tuple[Path, Path]) -> None:
    _, out = inferred_stubs
    devices = (out / "inferpkg-stubs" / "devices.pyi").read_text()
    assert "def cpu(index: int = ...) -> Device: ..." in devices, devices
    assert "def pick(flag: Incomplete) -> Device | None: ..." in devices, devices
    assert "    def exist(self) -> bool: ..." in devices, devices  # a property, read on an instance


def test_the_stubs_pass_mypy_strict(inferred_stubs: tuple[Path, Path], tmp_path: Path) -> None:
    _, out = inferred_stubs
    proc = mypy_strict_over_stubs(out / "inferpkg-stubs", "inferpkg", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_reveals_what_pyright_infers_from_the_sources(inferred_stubs: tuple[Path, Path], tmp_path: Path) -> None:
    src, out = inferred_stubs
    shutil.copytree(out / "inferpkg-stubs", tmp_path / "stubs" / "inferpkg")
    (tmp_path / "user.py").write_text(textwrap.dedent(USER).lstrip())
    env = stubs_for_env([tmp_path / "stubs", src])
    env["MYPYPATH"] = str(tmp_path / "stubs")
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "user.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    revealed = revealed_types(proc.stdout)
    assert revealed == [
        "types.NotImplementedType | inferpkg.exprs.Expr",
        "list[int]",
        "str",
        "inferpkg.a.Tensor",
        "inferpkg.b.Tensor",
        "inferpkg.devices.Device",
        "inferpkg.devices.Device | None",
    ], proc.stdout
    assert "error" not in proc.stdout.replace("Revealed type", ""), proc.stdout


def test_basedpyright_alone_infers_the_same_from_the_sources(inferred_stubs: tuple[Path, Path], tmp_path: Path) -> None:
    """The oracle: what basedpyright shows without stubs is what the stubs now say."""
    src, _ = inferred_stubs
    # (without ``sync()``: basedpyright alone takes ``devices.cpu()`` for a ``tvm_ffi.Device``)
    (tmp_path / "user.py").write_text(textwrap.dedent(USER).lstrip().replace("devices.cpu().sync()\n", ""))
    env = stubs_for_env([src])
    proc = subprocess.run(
        [sys.executable, "-m", "basedpyright", "--pythonpath", sys.executable, "user.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": f"{src}:{env['PYTHONPATH']}"},
    )
    revealed = [ln.split('" is ')[1] for ln in proc.stdout.splitlines() if 'information: Type of "' in ln]
    assert revealed == [
        '"NotImplementedType | Expr"',
        '"list[int]"',
        "\"Literal['long', 'short']\"",  # (the stubs say str, as a hand-written stub does)
        '"Tensor"',
        '"Tensor"',
        '"Device"',
        '"Device | None"',
    ], proc.stdout
