"""Generated dispatch bases (pkg.visitors) on the expression-IR fixture: typed hooks, run in the
library's engine, checked by mypy --strict."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main
from tvmffi_gen.verify.checkers import run_mypy, run_pyright

from conftest import ROOT
from fixtures import build_expr_ir

PROGRAM = '''
from __future__ import annotations

import tvmffi_runtime as rt
from exprpkg.exprir import Add, IntImm, Let, Mul, Var
from exprpkg.visitors import Mapper, Mutator, Visitor, Walker


class Fold(Mapper):
    """Constant folding, post-order."""

    def map_add(self, node: Add) -> object:
        a, b = node.a, node.b
        if isinstance(a, IntImm) and isinstance(b, IntImm):
            return IntImm(a.value + b.value)
        return rt.UNCHANGED

    def map_mul(self, node: Mul) -> object:
        a, b = node.a, node.b
        if isinstance(a, IntImm) and isinstance(b, IntImm):
            return IntImm(a.value * b.value)
        return rt.UNCHANGED


class FreeVars(Walker):
    """Variables used but not bound (Let binds its var: a definition region)."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.used: list[str] = []

    def walk_var(self, node: Var, kind: rt.DefRegionKind = rt.DefRegionKind.NONE) -> None:
        if kind != rt.DefRegionKind.NONE:
            self.bound.add(node.name)
        elif node.name not in self.bound:
            self.used.append(node.name)


class CountInts(Walker):
    def __init__(self) -> None:
        self.ints = 0
        self.objects = 0

    def walk_int_imm(self, node: IntImm) -> rt.WalkResult:
        self.ints += 1
        return rt.WalkResult.ADVANCE

    def walk_object(self, node: rt.Object) -> None:
        self.objects += 1


class Rename(Mutator):
    def mutate_var(self, node: Var) -> object:
        new = self.var_remap_get(node)
        if new is None:
            new = Var(node.name + "_r")
            self.var_remap_set(node, new)
        return new


class Depth(Visitor):
    def __init__(self) -> None:
        self.depth = 0
        self.max_depth = 0

    def visit_let(self, node: Let) -> rt.VisitInterrupt | None:
        self.depth += 1
        self.max_depth = max(self.max_depth, self.depth)
        result = self.default_visit_children(node)
        self.depth -= 1
        return result


class Boom(Walker):
    def walk_mul(self, node: Mul) -> None:
        raise KeyError("boom in a hook")


x, y = Var("x"), Var("y")
expr = Add(Mul(IntImm(2), IntImm(3)), Let(y, IntImm(1), Add(x, y)))
folded = rt.structural_map(expr, Fold(), rt.WalkOrder.POST_ORDER)
assert isinstance(folded, Add), folded
assert isinstance(folded.a, IntImm) and folded.a.value == 6
free = FreeVars()
rt.structural_walk(expr, free)
assert free.used == ["x"] and free.bound == {"y"}, (free.used, free.bound)
counter = CountInts()
rt.structural_walk(expr, counter)
assert counter.ints == 3 and counter.objects >= 5, (counter.ints, counter.objects)
renamed = rt.structural_mutate(expr, Rename())
assert isinstance(renamed, Add) and not renamed.same_as(expr)
depth = Depth()
rt.structural_visit(Let(x, IntImm(1), Let(y, x, y)), depth)
assert depth.max_depth == 2
try:
    rt.structural_walk(expr, Boom())
except KeyError as exc:
    assert "boom" in str(exc)
else:
    raise AssertionError("the hook's exception did not propagate")
print("OK")
'''


@pytest.fixture(scope="module")
def exprpkg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lib = build_expr_ir()
    root = tmp_path_factory.mktemp("visitors")
    assert main([str(lib), "-o", str(root / "exprpkg"), "-q"]) == 0
    return root / "exprpkg"


def test_generated_bases_have_one_typed_hook_per_class(exprpkg: Path) -> None:
    text = (exprpkg / "visitors.py").read_text()
    for hook in (
        "walk_add",
        "walk_int_imm",
        "visit_let",
        "map_mul",
        "mutate_var",
        "walk_object",
        "walk_any",
        "walk_int",
    ):
        assert f"def {hook}(" in text, hook
    # one line per default hook: its typed signature, the return type through the module's alias
    assert "    def walk_var(self, _node: _ffi_ns_exprir.Var, /) -> _Walked: ...\n" in text
    assert '_Walked: _t.TypeAlias = "_rt.WalkResult | _rt.VisitInterrupt | None"\n' in text
    # the four bases share one table of the class each hook handles
    assert text.count('"var": _ffi_ns_exprir.Var,') == 1
    assert text.count("@_bind.dispatch_base(") == 4


BAD_HOOK = """
from exprpkg.exprir import Add
from exprpkg.visitors import Walker

class Bad(Walker):
    def walk_add(self, node: int) -> None:
        pass
"""


@pytest.fixture(scope="module")
def mypy_report(exprpkg: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """One mypy --strict run over the package, ``PROGRAM`` (prog.py) and ``BAD_HOOK`` (bad.py):
    the report's lines. The programs do not import each other; each test reads its own lines."""
    folder = tmp_path_factory.mktemp("visitor_programs")
    (folder / "prog.py").write_text(textwrap.dedent(PROGRAM))
    (folder / "bad.py").write_text(BAD_HOOK)
    _, report = run_mypy(exprpkg, extra_files=[exprpkg, folder / "prog.py", folder / "bad.py"])
    return report.splitlines()


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_program_typechecks(mypy_report: list[str]) -> None:
    assert [line for line in mypy_report if "/prog.py:" in line] == [], "\n".join(mypy_report)


def test_program_runs(exprpkg: Path, tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(PROGRAM))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(exprpkg.parent), str(ROOT / "runtime")])
    proc = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK"


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_wrong_hook_signature_is_a_mypy_error(mypy_report: list[str]) -> None:
    assert any("/bad.py:" in line and "[override]" in line for line in mypy_report), "\n".join(mypy_report)


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_generated_package_passes_mypy_strict(mypy_report: list[str]) -> None:
    # everything reported on no program (the package's errors, or mypy's own failure) is an error
    rest = [line for line in mypy_report if "/prog.py:" not in line and "/bad.py:" not in line]
    assert rest == [], "\n".join(mypy_report)


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_generated_package_and_program_pass_pyright_strict(exprpkg: Path, tmp_path: Path) -> None:
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(PROGRAM))
    errors, report = run_pyright(exprpkg, extra_files=[prog])
    assert errors == 0, report


HELPERS_ARE_NOT_HOOKS = '''
import warnings
import tvmffi_runtime as rt
from exprpkg.exprir import Add, IntImm, Var, Call
from exprpkg.visitors import Mapper, Walker

warnings.simplefilter("error", UserWarning)  # a helper must not warn


class Notes(Walker):
    """Helpers named with a hook prefix are plain methods: only generated names are hooks."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.vars = 0

    def walk_note(self, msg: str) -> None:  # a helper, not a hook for every str
        self.notes.append(msg)

    def walk_var(self, node: Var) -> None:
        self.vars += 1
        self.walk_note(node.name)


class Rename(Mapper):
    def map_name(self, name: str) -> str:  # a helper, not a hook for every str value
        return name + "_"

    def map_var(self, node: Var) -> object:
        return Var(self.map_name(node.name))


tree = Add(Var("x"), Call("f", [Var("y"), IntImm(1)]))
notes = Notes()
rt.structural_walk(tree, notes)
print(notes.vars, notes.notes)
out = rt.structural_map(tree, Rename())
print(out.a.name, out.b.op, out.b.args[0].name)

caught = []
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")

    class Typo(Mapper):
        def map_vra(self, node: Var) -> object:
            return IntImm(0)

    class WrongBase(Walker):
        def map_add(self, node: Add) -> None:
            pass

    class Fine(Walker):
        def helper(self) -> None:
            pass
for w in seen:
    print(w.category.__name__, w.message)
print(rt.structural_map(tree, Typo()).a.name)  # the typo is not a hook
'''


def test_only_generated_names_are_hooks_and_near_misses_warn(exprpkg: Path, tmp_path: Path) -> None:
    prog = tmp_path / "helpers.py"
    prog.write_text(HELPERS_ARE_NOT_HOOKS)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(exprpkg.parent), str(ROOT / "runtime")])
    proc = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "2 ['x', 'y']",
        "x_ f y_",
        "HookNameWarning Typo.map_vra is not a hook of Typo (only the names its base declares are);"
        " did you mean map_var?",
        "HookNameWarning WrongBase.map_add is not a hook of WrongBase (only the names its base declares are);"
        " did you mean walk_add?",
        "x",
    ]
