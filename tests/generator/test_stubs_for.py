"""``tvmffi-gen --stubs-for PKG``: stubs for a Python package that registers TVM FFI types itself.

The fixture package ``tinyir_py`` is what such packages look like: it loads the C++ fixture
library ``tinyir.cc`` and registers Python classes for some of its types with
``tvm_ffi.register_object``, attaches a method after a class body, fills an ``_ffi_api`` module with
``tvm_ffi.init_ffi_api``, and has a module that runs argparse at import. One generation per
session (``stubs``), checked from a user's folder with the stubs installed by ``pip install``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import build_shared
from stubs_for_run import mypy_strict_over_stubs
from stubs_for_run import run_tvmffi_gen as _gen
from stubs_for_run import stubs_for_env as _env

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _package(lib: Path) -> dict[str, str]:
    return {
        "__init__.py": f'''
            """A package over the tinyir fixture library."""
            import ctypes

            import tvm_ffi  # noqa: F401

            _LIB = ctypes.CDLL({str(lib)!r}, ctypes.RTLD_GLOBAL)

            from .nodes import Expr, Node, Var
            from . import _ffi_api

            __all__ = ["Expr", "Node", "Var", "_ffi_api", "lazy"]
            for _name in ("ALPHA", "BETA"):  # made, and listed, by code a source reader does not run
                globals()[_name] = _name.lower()
                __all__.append(_name)


            def __getattr__(name):  # the lazy submodule __all__ lists, imported on first use
                if name == "lazy":
                    import importlib

                    return importlib.import_module(__name__ + ".lazy")
                raise AttributeError(name)
        ''',
        "lazy.py": """
            LEVEL = 1
        """,
        "nodes.py": '''
            import enum
            import functools

            import tvm_ffi

            from . import _ffi_api


            def _make_hook():
                return lambda f: f


            _hook = _make_hook()  # a decorator whose type nothing declares


            class Mode(enum.Enum):
                FAST = 1


            def _wrapped(cls):
                class _Wrapper:
                    pass

                return _Wrapper


            @_wrapped
            class Visitor:  # replaced by a wrapper class at run time
                def visit(self, node: "Node") -> None:
                    pass


            @tvm_ffi.register_object("tinyir.Node")
            class Node(tvm_ffi.Object):
                """Base of every node."""

                def describe(self, verbose: bool = False) -> str:
                    return "node"

                def kind(self) -> str:
                    return "node"

                def rename(self, new: str = None) -> None:  # an implicit Optional
                    pass

                def scale(self, factor: int | tuple[int, int] = (1, 1, 1)) -> None:  # contradicting default
                    pass

                def pick(self, items: list = None) -> None:  # an implicit Optional of a bare generic
                    pass

                def fast(self, mode: Mode.FAST) -> None:  # an enum member used as a type
                    pass

                def highlight(self) -> "pygments.Token":  # a module it never imports
                    raise NotImplementedError

                @_hook
                def hooked(self, x: int) -> int:
                    return x


            def _register(f):
                return None  # a registering decorator that returns nothing


            @_register
            def on_token(x: int) -> None:  # None at run time
                pass


            @tvm_ffi.register_global_func("tinyir_py.greet")
            def greet(name: str, times: int = 1) -> str:  # a packed function at run time
                return name * times


            @tvm_ffi.register_object("tinyir.Expr")
            class Expr(Node):
                def kind(self) -> int:  # an incompatible override
                    return 1


            @tvm_ffi.register_object("tinyir.Var")
            class Var(Expr):
                pass


            @tvm_ffi.register_object("tinyir.Seq")
            class Seq(Expr):
                def __init__(self, items: list[Expr], tag: bool = False) -> None:
                    """Forwards its parameters unchanged: the registry's schema says what they take."""
                    self.__init_handle_by_constructor__(_ffi_api.seq, items, tag)


            @tvm_ffi.register_object("tinyir.Pair")
            class Pair(Expr):
                def __init__(self, a: Var, b: Var | None = None) -> None:
                    self.__init_handle_by_constructor__(_ffi_api.pair, a, a if b is None else b)


            class Named(Expr):  # not registered: a Python base of the registered Func
                name: str


            @tvm_ffi.register_object("tinyir.Func")
            class Func(Named):
                pass


            @functools.cache
            def table(n: int) -> int:
                return n


            def _shout(self, times):
                return str(self.name) * times


            Var.shout = _shout  # attached after the class body
        ''',
        "_ffi_api.py": """
            import tvm_ffi

            tvm_ffi.init_ffi_api("tinyir", __name__)
        """,
        "tool.py": """
            import argparse

            parser = argparse.ArgumentParser()
            parser.add_argument("--required", required=True)
            ARGS = parser.parse_args()
        """,
    }


def _write_package(where: Path, lib: Path) -> None:
    pkg = where / "tinyir_py"
    pkg.mkdir(parents=True)
    for name, text in _package(lib).items():
        (pkg / name).write_text(textwrap.dedent(text).lstrip())


@pytest.fixture(scope="session")
def stubs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """(the package's folder, OUT, the generator's run): ``--stubs-for tinyir_py --project``."""
    lib = build_shared("tinyir", (FIXTURES / "tinyir.cc").read_text())
    base = tmp_path_factory.mktemp("stubs_for")
    src = base / "src"
    _write_package(src, lib)
    out = base / "out"
    proc = _gen(["--stubs-for", "tinyir_py", "-o", str(out), "--project"], _env([src]), base)
    assert proc.returncode == 0, proc.stderr
    return src, out, proc


def test_registry_members_are_in_the_stubs(stubs: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    _, out, proc = stubs
    # the package's own classes are counted, not tvm_ffi's
    assert ", 6 registered classes, " in proc.stdout, proc.stdout
    nodes = (out / "tinyir_py-stubs" / "nodes.pyi").read_text()
    # Python's own method, with its own annotations; a stub gives no default's value
    assert "def describe(self, verbose: bool = ...) -> str: ..." in nodes
    # registry fields: writable ones as attributes, read-only ones Final (no class deriving from
    # Var declares name again; typing.Final imported by its own name, as a user reads it)
    assert "    version: int\n" in nodes and "    frozen: bool\n" in nodes
    var = nodes[nodes.index("\nclass Var(") : nodes.index("\nclass Seq(")]
    assert "    name: Final[str]\n" in var and "@property" not in var, var
    assert "\nfrom typing import Final\n" in nodes
    # a method attached after the class body, unannotated: Incomplete
    assert "def shout(self, times: Incomplete) -> Incomplete: ..." in nodes
    # a hand-written __init__ that only forwards its parameters to a registry function takes what
    # the function's schema takes too (a tuple of Exprs, an int); one with another body is as written
    assert (
        "    def __init__(self, items: list[Expr] | _abc.Sequence[Expr], tag: bool | int = ...) -> None: ..." in nodes
    ), nodes
    assert "    def __init__(self, a: Var, b: Var | None = ...) -> None: ..." in nodes
    # the _ffi_api functions, typed from their schemas; Node is the Python class's public path
    api = (out / "tinyir_py-stubs" / "_ffi_api.pyi").read_text()
    assert "def negate(_0: bool, /) -> bool:" in api
    assert "def version_of(_0: _tinyir_py.Node, /) -> int:" in api
    # the module that runs argparse at import is reported and skipped; the stubs are partial
    assert "tinyir_py.tool: not covered (it exits at import" in proc.stderr
    assert not (out / "tinyir_py-stubs" / "tool.pyi").exists()
    assert (out / "tinyir_py-stubs" / "py.typed").read_text() == "partial\n"


def test_the_stubs_pass_mypy_strict_with_narrow_ignores_for_what_the_sources_declare(
    stubs: tuple[Path, Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    _, out, _ = stubs
    nodes = (out / "tinyir_py-stubs" / "nodes.pyi").read_text()
    assert "def scale(self, factor: int | tuple[int, int] = ...) -> None: ..." in nodes
    assert "def rename(self, new: str | None = ...) -> None: ..." in nodes
    assert "    @_hook  # type: ignore[untyped-decorator]\n" in nodes
    assert "def kind(self) -> int: ...  # type: ignore[override]" in nodes
    assert "def fast(self, mode: Mode.FAST) -> None: ...  # type: ignore[valid-type]" in nodes
    assert "def highlight(self) -> pygments.Token: ...  # type: ignore[name-defined]" in nodes
    # a function a decorator replaced by None is None
    assert "\non_token: None  # a decorator returned None\n" in nodes and "def on_token" not in nodes
    # a function a decorator replaced by a packed function takes no keywords; stubtest may skip it
    assert "def greet(name: str, times: int = ..., /) -> str: ..." in nodes
    # an implicit Optional is added even when the annotation has an Any inside (list[Incomplete])
    assert "def pick(self, items: list[Incomplete] | None = ...) -> None: ..." in nodes
    # a class whose metaclass is tvm_ffi's private _ObjectSlotsMeta declares one (for stubtest), type
    assert "\nclass Var(Expr, metaclass=type):\n" in nodes and "\nclass Mode(enum.Enum):\n" in nodes
    assert "ABCMeta" not in nodes  # basedpyright's default mode warns on instantiating an ABCMeta class
    # a read-only field a Python base (not registered) annotates is a read-only property there
    named = nodes[nodes.index("\nclass Named(") :]
    assert "    @property\n    def name(self) -> str: ..." in named[: named.index("\nclass Func(")]
    # the package's __all__ as it is at run time; a lazy submodule it lists is bound on it
    init = (out / "tinyir_py-stubs" / "__init__.pyi").read_text()
    assert "__all__ = ['Expr', 'Node', 'Var', '_ffi_api', 'lazy', 'ALPHA', 'BETA']\n" in init, init
    assert "lazy as lazy" in init and "\nALPHA: Incomplete" in init, init
    allowlist = (out / "stubtest-allowlist.txt").read_text()
    entries = [ln for ln in allowlist.splitlines() if ln and not ln.startswith("#")]
    # one regex for every _ffi_api module; the others name exactly what they cover, one per module
    assert entries == [
        "tinyir_py(\\.\\w+)*\\._ffi_api\\.\\w+",
        "tinyir_py\\.nodes\\.greet",  # replaced by a packed function
        "tinyir_py\\.nodes\\.table",  # functools.cache
        "tinyir_py\\.nodes\\.(Func|Var)\\.__init__",  # constructors whose defaults are MISSING
        "tinyir_py\\.nodes\\.(Expr|Node)\\.__init__",  # no constructor: tvm_ffi's raising guard
        "tinyir_py\\.nodes\\.Visitor\\..+",  # replaced by a wrapper class
        "tinyir_py\\.nodes\\.Named\\.name",  # a property on a base that only annotates it
        "tinyir_py\\.tool(\\..+)?",  # not covered (argparse at import)
    ], allowlist
    assert allowlist.count("\n\n# ") == 7  # each group says why
    # mypy --strict over the stub package itself (as a package named tinyir_py) finds nothing
    proc = mypy_strict_over_stubs(out / "tinyir_py-stubs", "tinyir_py", tmp_path)
    assert proc.returncode == 0, proc.stdout


def test_check_reports_up_to_date_then_a_change(stubs: tuple[Path, Path, subprocess.CompletedProcess[str]]) -> None:
    src, out, _ = stubs
    args = ["--stubs-for", "tinyir_py", "-o", str(out), "--project", "--check"]
    same = _gen(args, _env([src]), out)
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout == f"{out}: the stubs of tinyir_py are up to date\n"
    copy = out.parent / "check_copy"
    shutil.copytree(out, copy)
    stub = copy / "tinyir_py-stubs" / "nodes.pyi"
    stub.write_text(stub.read_text() + "\n")
    changed = _gen([*args[:3], str(copy), *args[4:]], _env([src]), out)
    assert changed.returncode == 1
    assert f"would write {stub}" in changed.stdout


@pytest.fixture(scope="session")
def user_folder(
    stubs: tuple[Path, Path, subprocess.CompletedProcess[str]], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, str]]:
    """A user's folder (no configuration of ours) and an environment where ``pip install OUT``
    put the stubs (``--target``, on the path like site-packages)."""
    src, out, _ = stubs
    base = tmp_path_factory.mktemp("stubs_user")
    site = base / "site"
    pip = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stderr
    user = base / "user"
    user.mkdir()
    (user / "good.py").write_text(
        textwrap.dedent("""
        import tinyir_py
        from tinyir_py import _ffi_api
        from tinyir_py.nodes import Seq


        def describe(v: tinyir_py.Var) -> str:
            v.version = v.version + 1
            return v.name + v.describe(verbose=True) + str(_ffi_api.negate(v.frozen))


        def pair_of(v: tinyir_py.Var) -> Seq:
            return Seq((v, v), 3)  # what the forwarding constructor's registry function takes
    """).lstrip()
    )
    (user / "bad.py").write_text(
        "import tinyir_py\nfrom tinyir_py.nodes import Pair\n\ndef f(v: tinyir_py.Var) -> None:\n"
        "    v.name = 'x'\n    Pair(v, 1)\n"  # Pair's constructor is not a forwarder: as annotated
    )
    env = _env([site, src])
    env.pop("MYPYPATH", None)
    return user, env


def test_mypy_strict_in_a_user_folder_sees_the_installed_stubs(user_folder: tuple[Path, dict[str, str]]) -> None:
    user, env = user_folder
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental"]
    good = subprocess.run([*mypy, "good.py"], capture_output=True, text=True, cwd=user, env=env)
    assert good.returncode == 0, good.stdout
    bad = subprocess.run([*mypy, "bad.py"], capture_output=True, text=True, cwd=user, env=env)
    assert bad.returncode == 1 and 'Cannot assign to final attribute "name"' in bad.stdout, bad.stdout
    assert 'Argument 2 to "Pair" has incompatible type "int"; expected "Var | None"' in bad.stdout, bad.stdout


@pytest.mark.skipif(shutil.which("basedpyright") is None, reason="basedpyright is not installed")
def test_basedpyright_default_and_strict_in_a_user_folder_see_the_installed_stubs(
    user_folder: tuple[Path, dict[str, str]],
) -> None:
    user, env = user_folder
    site = env["PYTHONPATH"].split(os.pathsep)[0]
    # basedpyright's default mode first: it also warns (and exits 1) on what strict mode lets pass,
    # such as instantiating a class declared with ABCMeta that has no abstract method
    (user / "pyrightconfig.json").write_text(json.dumps({"extraPaths": [site]}))
    default = subprocess.run(["basedpyright", "good.py"], capture_output=True, text=True, cwd=user, env=env)
    assert default.returncode == 0 and "0 errors, 0 warnings" in default.stdout, default.stdout
    (user / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "strict", "extraPaths": [site]}))
    good = subprocess.run(["basedpyright", "good.py"], capture_output=True, text=True, cwd=user, env=env)
    assert good.returncode == 0, good.stdout
    bad = subprocess.run(["basedpyright", "bad.py"], capture_output=True, text=True, cwd=user, env=env)
    assert bad.returncode == 1 and '"name"' in bad.stdout and "reportAttributeAccessIssue" in bad.stdout, bad.stdout
    assert 'parameter "b" of type "Var | None" in function "__init__"' in bad.stdout, bad.stdout


# --- --exclude that matches nothing, or everything (issue 19) ---------------------------------------


def test_an_exclude_glob_matching_no_module_is_warned_about_by_name(
    stubs: tuple[Path, Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    src, _, _ = stubs
    env = {**_env([src]), "TVMFFI_GEN_CACHE_DIR": str(tmp_path / "cache")}
    proc = _gen(
        [
            "--stubs-for",
            "tinyir_py",
            "-o",
            str(tmp_path / "out"),
            "--exclude",
            "tinyir_py.tool",
            "--exclude",
            "tinyir_py.nodez",
            "--exclude",
            "tinyir.*",
        ],
        env,
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "--exclude tinyir_py.nodez: matches no module of tinyir_py" in proc.stderr
    assert "--exclude tinyir.*: matches no module of tinyir_py" in proc.stderr
    assert "--exclude tinyir_py.tool:" not in proc.stderr  # it matched: the argparse module is left out
    assert "tinyir_py.tool: not covered" not in proc.stderr
    assert not (tmp_path / "out" / "tinyir_py-stubs" / "tool.pyi").exists()
    assert (tmp_path / "out" / "tinyir_py-stubs" / "nodes.pyi").is_file()


def test_excludes_that_drop_every_module_are_an_error_naming_them(
    stubs: tuple[Path, Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    src, _, _ = stubs
    one = _gen(
        ["--stubs-for", "tinyir_py", "-o", str(tmp_path / "out"), "--exclude", "tinyir_*"], _env([src]), tmp_path
    )
    assert one.returncode == 2
    assert (
        "tinyir_py: --exclude 'tinyir_*': it drops every module of tinyir_py, so nothing is left to stub" in one.stderr
    ), one.stderr
    assert "registers no" not in one.stderr
    two = _gen(
        [
            "--stubs-for",
            "tinyir_py",
            "-o",
            str(tmp_path / "out"),
            "--exclude",
            "tinyir_py.nodes",
            "--exclude",
            "tinyir_py",
        ],
        _env([src]),
        tmp_path,
    )
    assert two.returncode == 2
    assert "--exclude 'tinyir_py.nodes' --exclude 'tinyir_py': they drop every module of tinyir_py" in two.stderr
    assert not (tmp_path / "out").exists()
