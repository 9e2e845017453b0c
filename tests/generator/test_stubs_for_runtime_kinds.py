"""``--stubs-for``: each name of a stub denotes what the running module's does (issue 30, 1-4).

The fixture package ``kindpkg`` (over the tinyir fixture library) has each of tvm's cases in
small: a package binding a submodule's name to a function a later star import brings (tvm's
``relax.frontend.nn.extern``), a class a decorator replaces by a subclass of a registered class
(``@module_pass``), a function a decorator replaces by an instance (``@T.prim_func``) beside one
a wrapper keeps a function (``functools.lru_cache``), a name bound to another name of one of the
package's modules (topi's ``from . import cpp``), a type alias with string forward references
(``nn.spec.ArgSpecType``), unannotated functions returning a registry function's call or a
class's construction (``tvm.cpu()``), and one annotated wider than its registry call's schema.
Checked through ``reveal_type`` with mypy and basedpyright from a user's folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import build_shared
from mypy_reports import revealed_types
from stubs_for_run import stubs_for_env, stubs_for_package

pytestmark = pytest.mark.slow  # whole packages through a checker: see tests/README.md

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

PACKAGE = {
    "__init__.py": """
        import ctypes

        import tvm_ffi  # noqa: F401

        _LIB = ctypes.CDLL(@LIB@, ctypes.RTLD_GLOBAL)

        from . import _ffi_api, helpers, nn, nodes, passes, spec
    """,
    "_ffi_api.py": """
        import tvm_ffi

        tvm_ffi.init_ffi_api("tinyir", __name__)
    """,
    "nodes.py": """
        import tvm_ffi


        @tvm_ffi.register_object("tinyir.Node")
        class Node(tvm_ffi.Object):
            def __call__(self, other: "Node") -> "Node":
                return other


        @tvm_ffi.register_object("tinyir.Pair")
        class Pair(Node):
            pass
    """,
    "nn/__init__.py": """
        from .. import spec as layout
        from .extern import ExternModule
        from .op import *
    """,
    "nn/extern.py": """
        class ExternModule:
            pass
    """,
    "nn/op.py": """
        from . import layout  # the package's other name of kindpkg.spec: no module kindpkg.nn.layout


        def extern(name: str) -> int:
            return len(name)
    """,
    "passes.py": """
        import functools

        from .nodes import Node


        def node_pass(cls):
            class Wrapped(Node):  # what the running name is: a subclass of a registered class
                def __init__(self, *args):
                    self.inst = cls(*args)

            return Wrapped


        @node_pass
        class Simplify:
            def __init__(self, level: int) -> None:
                self.level = level


        class FunctionPass:
            def __call__(self, node: Node) -> Node:
                return node


        def function_pass(fn):
            return FunctionPass()


        @function_pass
        def fold(node):  # what the running name is: a FunctionPass
            return node


        @functools.lru_cache
        def cached(n: int) -> int:  # a wrapper called as the function is: stays a function
            return n
    """,
    "spec.py": """
        import typing


        class Int:
            pass


        class Tensor:
            pass


        ArgSpecType = typing.Union["Int", "Tensor"]
        Mode = typing.Literal["a", "b"]
    """,
    "helpers.py": """
        from . import _ffi_api
        from .nodes import Node, Pair


        class Device:
            def __init__(self, index):
                self.index = index


        def cpu(index=0):
            return Device(index)


        def negate(flag):
            return _ffi_api.negate(flag)


        def pair(a, b):
            if a is None:
                raise ValueError("a")
            return _ffi_api.pair(a, b)


        def make_pair(a, b) -> Node:  # the registry function's schema says Pair: narrower
            return _ffi_api.pair(a, b)


        def same_pair(a, b) -> Pair:
            return _ffi_api.pair(a, b)


        def either(flag):
            if flag:
                return Device(0)
            return _ffi_api.negate(flag)  # two kinds of result: left unannotated
    """,
}

USER = """
from kindpkg import helpers, nn, nodes, passes, spec

reveal_type(nn.extern("x"))
reveal_type(helpers.cpu())
reveal_type(helpers.negate(True))
reveal_type(helpers.pair)
def spec_of(arg: spec.ArgSpecType) -> None:
    reveal_type(arg)
simplify = passes.Simplify(2)
reveal_type(simplify)
def apply(node: nodes.Node) -> nodes.Node:
    return simplify(node)
reveal_type(passes.fold)
reveal_type(passes.cached(1))
reveal_type(helpers.make_pair(1, 2))
"""


@pytest.fixture(scope="module")
def kind_stubs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the package's folder, OUT) after ``--stubs-for kindpkg``."""
    lib = build_shared("tinyir", (FIXTURES / "tinyir.cc").read_text())
    base = tmp_path_factory.mktemp("kinds")
    src, out = stubs_for_package(base, "kindpkg", PACKAGE, lib)
    return src, out


def test_the_stubs_bind_what_the_running_names_are(kind_stubs: tuple[Path, Path]) -> None:
    _, out = kind_stubs
    root = out / "kindpkg-stubs"
    nn = (root / "nn" / "__init__.pyi").read_text()
    # the star import's function, bound after the import that binds the submodule's name
    assert nn.rstrip().endswith("from kindpkg.nn.op import extern as extern  # bound so at run time"), nn
    passes = (root / "passes.pyi").read_text()
    assert "class Simplify(_kindpkg_nodes.Node, metaclass=type):" in passes, passes
    assert "fold: FunctionPass  # a decorator made it so at run time" in passes, passes
    assert "def fold" not in passes and "def cached(n: int) -> int: ..." in passes, passes
    op = (root / "nn" / "op.pyi").read_text()
    assert "import kindpkg.spec as layout\n" in op, op  # (an import a stub does not export, as the source's)
    spec = (root / "spec.pyi").read_text()
    assert "ArgSpecType: _t.TypeAlias = Int | Tensor\n" in spec, spec
    assert "Mode: Incomplete" in spec or "Mode = " in spec  # a Literal's strings are values: not this rule
    helpers = (root / "helpers.pyi").read_text()
    assert "def cpu(index: int = ...) -> Device: ..." in helpers, helpers
    assert "def negate(flag: Incomplete) -> bool: ..." in helpers, helpers
    assert "def pair(a: Incomplete, b: Incomplete) -> _kindpkg_nodes.Pair: ..." in helpers, helpers
    # two kinds of result: the rule leaves it; basedpyright infers Device or what it cannot see
    assert "def either(flag: Incomplete) -> Device | Incomplete: ..." in helpers, helpers
    assert "def make_pair(a: Incomplete, b: Incomplete) -> _kindpkg_nodes.Pair: ..." in helpers, helpers
    assert "def same_pair(a: Incomplete, b: Incomplete) -> Pair: ..." in helpers, helpers


# Run beside the package: each public name a stub module binds (a def, a class, an import
# followed through the stubs, a submodule) against ``getattr`` on the running module.
KINDS = r"""
import ast, importlib, inspect, json, sys, types
from pathlib import Path

root = Path(sys.argv[1])
stubs = {}
for path in root.rglob("*.pyi"):
    parts = [root.name.removesuffix("-stubs"), *path.relative_to(root).with_suffix("").parts]
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    stubs[name] = (ast.parse(path.read_text()), path.name == "__init__.pyi")
tables = {}

def table(mod):
    if mod not in tables:
        tables[mod] = {}
        tree, is_pkg = stubs[mod]
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                tables[mod][node.name] = "function" if isinstance(node, ast.FunctionDef) else "class"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        tables[mod][a.asname] = "module"
            elif isinstance(node, ast.ImportFrom):
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                src = ".".join(base[: len(base) - node.level + 1] + [node.module or ""]).rstrip(".")
                src = src if node.level else node.module
                for a in node.names:
                    if a.name == "*":
                        tables[mod].update({k: v for k, v in table(src).items() if not k.startswith("_")})
                    elif f"{src}.{a.name}" in stubs and a.name not in table(src):
                        tables[mod][a.asname or a.name] = "module"
                    elif src in stubs and a.name in table(src):
                        tables[mod][a.asname or a.name] = table(src)[a.name]
    return tables[mod]

def kind(value):
    if isinstance(value, types.ModuleType):
        return "module"
    if inspect.isclass(value):
        return "class"
    packed = type(value).__module__.startswith("tvm_ffi") and type(value).__name__ == "Function"
    return "function" if inspect.isroutine(value) or packed else "value"

differ = []
for mod in sorted(stubs):
    running = importlib.import_module(mod)
    for name, declared in sorted(table(mod).items()):
        if not name.startswith("_") and hasattr(running, name) and kind(getattr(running, name)) != declared:
            differ.append(f"{mod}.{name}: {declared} in the stub, {kind(getattr(running, name))} at run time")
print(json.dumps(differ))
"""


def test_every_public_name_is_of_the_running_kind(kind_stubs: tuple[Path, Path]) -> None:
    src, out = kind_stubs
    proc = subprocess.run(
        [sys.executable, "-c", KINDS, str(out / "kindpkg-stubs")],
        capture_output=True,
        text=True,
        env=stubs_for_env([src]),
    )
    assert proc.returncode == 0, proc.stderr
    # (``cached``, a functools wrapper, is a routine as the function it wraps is)
    assert json.loads(proc.stdout) == []


def _user_folder(src: Path, out: Path, where: Path) -> dict[str, str]:
    shutil.copytree(out / "kindpkg-stubs", where / "stubs" / "kindpkg")
    (where / "user.py").write_text(textwrap.dedent(USER).lstrip())
    return stubs_for_env([where / "stubs", src])


def test_mypy_reveals_what_the_running_names_are(kind_stubs: tuple[Path, Path], tmp_path: Path) -> None:
    src, out = kind_stubs
    env = _user_folder(src, out, tmp_path)
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
        "int",
        "kindpkg.helpers.Device",
        "bool",
        "def (a: Any, b: Any) -> kindpkg.nodes.Pair",
        "kindpkg.spec.Int | kindpkg.spec.Tensor",
        "kindpkg.passes.Simplify",
        "kindpkg.passes.FunctionPass",
        "int",
        "kindpkg.nodes.Pair",
    ], proc.stdout
    assert "error" not in proc.stdout.replace("Revealed type", ""), proc.stdout


@pytest.mark.skipif(shutil.which("basedpyright") is None, reason="basedpyright is not installed")
def test_basedpyright_reveals_what_the_running_names_are(kind_stubs: tuple[Path, Path], tmp_path: Path) -> None:
    src, out = kind_stubs
    env = _user_folder(src, out, tmp_path)
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"stubPath": "stubs", "extraPaths": [str(src)]}))
    proc = subprocess.run(["basedpyright", "user.py"], capture_output=True, text=True, cwd=tmp_path, env=env)
    revealed = [ln.split('Type of "')[1].split('" is ')[1] for ln in proc.stdout.splitlines() if 'Type of "' in ln]
    assert revealed == [
        '"int"',
        '"Device"',
        '"bool"',
        '"(a: Any, b: Any) -> Pair"',
        '"Int | Tensor"',
        '"Simplify"',
        '"FunctionPass"',
        '"int"',
        '"Pair"',
    ], proc.stdout
    assert " - error" not in proc.stdout, proc.stdout
