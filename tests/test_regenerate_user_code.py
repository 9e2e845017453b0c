"""User code survives regeneration: edit a generated package like a user would, change the
library, regenerate, and check that both the user's code and the registry changes are there."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, build_shared
from tvmffi_gen.cli import main
from tvmffi_gen.verify import run_mypy

SOURCE = r"""
#include <tvm/ffi/tvm_ffi.h>
#include <tvm/ffi/reflection/registry.h>

namespace refl = tvm::ffi::reflection;
using tvm::ffi::Object;
using tvm::ffi::ObjectRef;

class PointObj : public Object {
 public:
  int64_t x;
  int64_t y;
#if VERSION >= 2
  int64_t z = 0;
#endif
  PointObj(int64_t x, int64_t y) : x(x), y(y) {}
  static constexpr bool _type_mutable = true;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("regen.Point", PointObj, Object);
};

class Point : public ObjectRef {
 public:
  TVM_FFI_DEFINE_OBJECT_REF_METHODS_NULLABLE(Point, ObjectRef, PointObj);
};

#if VERSION == 1
class OldObj : public Object {
 public:
  int64_t v = 1;
  OldObj() = default;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("regen.Old", OldObj, Object);
};
#endif

TVM_FFI_STATIC_INIT_BLOCK() {
  refl::ObjectDef<PointObj>().def(refl::init<int64_t, int64_t>())
      .def_ro("x", &PointObj::x, "The x coordinate.")
      .def_ro("y", &PointObj::y)
#if VERSION >= 2
      .def_ro("z", &PointObj::z)
      .def("norm1", [](const PointObj* p) -> int64_t { return p->x + p->y; }, "Renamed method.");
#else
      .def("manhattan", [](const PointObj* p) -> int64_t { return p->x + p->y; });
#endif
#if VERSION == 1
  refl::ObjectDef<OldObj>().def(refl::init<>()).def_ro("v", &OldObj::v);
#endif
  refl::GlobalDef().def("regen.origin", []() { return Point(tvm::ffi::make_object<PointObj>(0, 0)); });
}
"""

USER_POINT_ADDITIONS = '''
    def __add__(self, other: Point) -> Point:
        """Added by the user: vector sum."""
        return Point(self.x + other.x, self.y + other.y)

    def as_tuple(self) -> tuple[int, int]:
        return (self.x, self.y)
'''

USER_MODULE_ADDITIONS = '''

def twice(p: Point) -> Point:
    """A user helper at module level."""
    return p + p


USER_CONSTANT = math.pi
'''


def build(version: int) -> Path:
    return build_shared(f"regen_v{version}", SOURCE, extra=[f"-DVERSION={version}"])


def edit_like_a_user(module: Path) -> None:
    text = module.read_text()
    # an import after the generated ones
    text = text.replace("import tvmffi_runtime as _rt\n", "import tvmffi_runtime as _rt\nimport math\n", 1)
    # members at the end of class Point: insert before the next top-level statement after it
    start = text.index("class Point(")
    nxt = text.index("\n\n\n", start)
    text = text[:nxt] + "\n" + USER_POINT_ADDITIONS.rstrip("\n") + text[nxt:]
    text = text.rstrip("\n") + "\n" + USER_MODULE_ADDITIONS
    module.write_text(text)


def run_py(root: Path, code: str, env_lib: Path) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(ROOT / "runtime")])
    env["REGENPKG_LIBRARY"] = str(env_lib)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_user_code_survives_library_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v1, v2 = build(1), build(2)
    out = tmp_path / "regenpkg"
    assert main([str(v1), "-o", str(out), "-q"]) == 0
    module = out / "regen" / "__init__.py"
    assert "def manhattan(" in module.read_text() and "class Old(" in module.read_text()
    edit_like_a_user(module)
    errors, report = run_mypy(out)
    assert errors == 0, report
    assert run_py(tmp_path, "from regenpkg.regen import Point, twice; print((Point(1, 2) + Point(3, 4)).as_tuple(), twice(Point(1, 1)).x)", v1) == "(4, 6) 2"

    # the library changes: a field added, a type removed, a method renamed
    assert main([str(v2), "-o", str(out), "--check"]) == 1  # drift is reported
    capsys.readouterr()
    assert main([str(v2), "-o", str(out)]) == 0
    assert "kept" in capsys.readouterr().out
    text = module.read_text()
    assert "z: _gen.ReadOnlyField[int] = _gen.field(" in text
    assert "def norm1(self) -> int:" in text and "def manhattan(" not in text
    assert "class Old(" not in text
    for user_code in ("def __add__(self, other: Point) -> Point:", "def as_tuple(self)", "def twice(p: Point)", "USER_CONSTANT = math.pi", "import math"):
        assert user_code in text, user_code
    # the user's members stay inside Point, in their order
    point = text[text.index("class Point("): text.index("def twice(")]
    assert point.index("def __add__") < point.index("def as_tuple")
    errors, report = run_mypy(out)
    assert errors == 0, report
    assert run_py(tmp_path, "from regenpkg.regen import Point, twice; p = Point(1, 2); print(p.norm1(), p.z, (p + p).as_tuple())", v2) == "3 0 (2, 4)"
    # regenerating again changes nothing
    assert main([str(v2), "-o", str(out), "--check", "-q"]) == 0


def test_conflicting_user_member_is_reported_not_resolved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v1, v2 = build(1), build(2)
    out = tmp_path / "regenpkg"
    assert main([str(v1), "-o", str(out), "-q"]) == 0
    module = out / "regen" / "__init__.py"
    text = module.read_text()
    start = text.index("class Point(")
    nxt = text.index("\n\n\n", start)
    # the user adds norm1 (which v2 generates) and puts code in class Old (which v2 removes)
    text = text[:nxt] + "\n\n    def norm1(self) -> int:\n        return 0" + text[nxt:]
    start = text.index("class Old(")
    nxt = text.index("\n\n\n", start)
    text = text[:nxt] + "\n\n    def helper(self) -> int:\n        return 1" + text[nxt:]
    module.write_text(text)
    before = module.read_text()
    assert main([str(v2), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "norm1" in err and "rename yours" in err
    assert "class Old is no longer generated" in err and "helper" in err
    assert module.read_text() == before  # nothing written


def test_unparseable_user_edit_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v1 = build(1)
    out = tmp_path / "regenpkg"
    assert main([str(v1), "-o", str(out), "-q"]) == 0
    module = out / "regen" / "__init__.py"
    module.write_text(module.read_text() + "\ndef broken(:\n")
    assert main([str(v1), "-o", str(out)]) == 2
    assert "cannot parse your edited file" in capsys.readouterr().err
    assert "def broken(" in module.read_text()  # the user's (broken) edit is not lost


def test_bare_strings_in_a_class_belong_to_the_member_before_them() -> None:
    # Only a class's first string is its docstring; a string after an attribute documents that
    # attribute, a string after a method is the user's note on it: both are kept on regeneration,
    # and a user attribute that now conflicts is reported once (not its docstring as well).
    from tvmffi_gen.merge import MergeConflict, member_keys, merge_source

    gen1 = 'class A:\n    """Cls doc."""\n\n    a: int = 1\n    """Field a."""\n\n    def f(self) -> int:\n        return 1\n'
    user = gen1.replace(
        "    def f",
        '    foo: int = 2\n    """My foo."""\n\n    def f',
    ) + '\n    def g(self) -> int:\n        return 2\n    """A note about g."""\n'
    keys = member_keys(gen1)
    assert keys == ["class A", "A::docstring", "A::assign a", "A::docstring of assign a", "A::def f @"]
    merged, kept = merge_source("x.py", user, keys, gen1)
    assert kept == 4
    assert merged == user
    gen2 = gen1.replace("    def f", '    foo: int = 3\n    """Generated foo."""\n\n    def f')
    with pytest.raises(MergeConflict) as info:
        merge_source("x.py", user, keys, gen2)
    assert info.value.problems == [
        "your assign 'foo' in class A has the name of a member the generator now writes; rename yours"
    ]
