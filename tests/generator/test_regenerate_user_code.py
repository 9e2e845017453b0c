"""User code survives regeneration: edit a generated package like a user would, change the
library, regenerate, and check that both the user's code and the registry changes are there."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main
from tvmffi_gen.verify.checkers import run_mypy

from conftest import ROOT, build_shared

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


def generate(library: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The package generated from ``library`` into ``tmp_path``: its folder and its module."""
    out = tmp_path / "regenpkg"
    assert main([str(library), "-o", str(out), "-q"]) == 0
    return out, out / "regen" / "__init__.py"


def add_to_class(text: str, cls: str, code: str) -> str:
    """``text`` with ``code`` (lines indented as a class body) at the end of class ``cls``:
    before the next top-level statement after it."""
    end = text.index("\n\n\n", text.index(f"class {cls}("))
    return text[:end] + code + text[end:]


def snapshot_files(root: Path) -> dict[Path, bytes]:
    """Every file below ``root`` and its bytes (to show a refused run wrote nothing)."""
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def edit_like_a_user(module: Path) -> None:
    text = module.read_text()
    # an import after the generated ones
    text = text.replace("import tvmffi_runtime as _rt\n", "import tvmffi_runtime as _rt\nimport math\n", 1)
    # members at the end of class Point: insert before the next top-level statement after it
    text = add_to_class(text, "Point", "\n" + USER_POINT_ADDITIONS.rstrip("\n"))
    text = text.rstrip("\n") + "\n" + USER_MODULE_ADDITIONS
    module.write_text(text)


def run_py(root: Path, code: str, env_lib: Path) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), str(ROOT / "runtime")])
    env["REGENPKG_LIBRARY"] = str(env_lib)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_user_code_survives_library_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v1, v2 = build(1), build(2)
    out, module = generate(v1, tmp_path)
    assert "def manhattan(" in module.read_text() and "class Old(" in module.read_text()
    edit_like_a_user(module)
    errors, report = run_mypy(out)
    assert errors == 0, report
    assert (
        run_py(
            tmp_path,
            "from regenpkg.regen import Point, twice; "
            "print((Point(1, 2) + Point(3, 4)).as_tuple(), twice(Point(1, 1)).x)",
            v1,
        )
        == "(4, 6) 2"
    )

    # the library changes: a field added, a type removed, a method renamed
    assert main([str(v2), "-o", str(out), "--check"]) == 1  # drift is reported
    capsys.readouterr()
    assert main([str(v2), "-o", str(out)]) == 0
    assert "kept" in capsys.readouterr().out
    text = module.read_text()
    assert "z: _t.Final[_bind.ReadOnlyField[int]] = _bind.field(" in text
    assert "def norm1(self) -> int:" in text and "def manhattan(" not in text
    assert "class Old(" not in text
    for user_code in (
        "def __add__(self, other: Point) -> Point:",
        "def as_tuple(self)",
        "def twice(p: Point)",
        "USER_CONSTANT = math.pi",
        "import math",
    ):
        assert user_code in text, user_code
    # the user's members stay inside Point, in their order
    point = text[text.index("class Point(") : text.index("def twice(")]
    assert point.index("def __add__") < point.index("def as_tuple")
    errors, report = run_mypy(out)
    assert errors == 0, report
    assert (
        run_py(
            tmp_path,
            "from regenpkg.regen import Point, twice; p = Point(1, 2); print(p.norm1(), p.z, (p + p).as_tuple())",
            v2,
        )
        == "3 0 (2, 4)"
    )
    # regenerating again changes nothing
    assert main([str(v2), "-o", str(out), "--check", "-q"]) == 0


def test_conflicting_user_member_is_reported_not_resolved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v1, v2 = build(1), build(2)
    out, module = generate(v1, tmp_path)
    text = module.read_text()
    # the user adds norm1 (which v2 generates) and puts code in class Old (which v2 removes)
    text = add_to_class(text, "Point", "\n\n    def norm1(self) -> int:\n        return 0")
    text = add_to_class(text, "Old", "\n\n    def helper(self) -> int:\n        return 1")
    module.write_text(text)
    before = module.read_text()
    assert main([str(v2), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "norm1" in err and "rename yours" in err
    assert "class Old is no longer generated" in err and "helper" in err
    assert module.read_text() == before  # nothing written


def test_unparseable_user_edit_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v1 = build(1)
    out, module = generate(v1, tmp_path)
    module.write_text(module.read_text() + "\ndef broken(:\n")
    assert main([str(v1), "-o", str(out)]) == 2
    assert "cannot parse your edited file" in capsys.readouterr().err
    assert "def broken(" in module.read_text()  # the user's (broken) edit is not lost


def test_bare_strings_in_a_class_belong_to_the_member_before_them() -> None:
    # Only a class's first string is its docstring; a string after an attribute documents that
    # attribute, a string after a method is the user's note on it: both are kept on regeneration,
    # and a user attribute that now conflicts is reported once (not its docstring as well).
    from tvmffi_gen.write.manifest_entries import member_keys
    from tvmffi_gen.write.merge import MergeConflict, merge_source

    gen1 = (
        'class A:\n    """Cls doc."""\n\n    a: int = 1\n    """Field a."""\n\n'
        "    def f(self) -> int:\n        return 1\n"
    )
    user = (
        gen1.replace(
            "    def f",
            '    foo: int = 2\n    """My foo."""\n\n    def f',
        )
        + '\n    def g(self) -> int:\n        return 2\n    """A note about g."""\n'
    )
    keys = member_keys(gen1)
    assert [k.partition("\t")[0] for k in keys] == [  # each with its fingerprint after a tab
        "class A",
        "A::docstring",
        "A::assign a",
        "A::docstring of assign a",
        "A::def f @",
    ]
    result = merge_source("x.py", user, keys, gen1)
    merged, kept = result.text, result.kept
    assert kept == 4
    assert merged == user
    gen2 = gen1.replace("    def f", '    foo: int = 3\n    """Generated foo."""\n\n    def f')
    with pytest.raises(MergeConflict) as info:
        merge_source("x.py", user, keys, gen2)
    assert info.value.problems == [
        "your assign 'foo' in class A has the name of a member the generator now writes; rename yours"
    ]


GEN1 = '''import typing as _t


class Func:
    """Cls doc."""

    name: str = "f"

    @staticmethod
    def make_label() -> str:
        return "x"


def helper() -> int:
    return 1
'''
# the library grows: a field width, make_label renamed to label, a function USER_CONSTANT, a
# class Extra, a function math
GEN2 = GEN1.replace(
    "    @staticmethod\n    def make_label", "    width: int = 0\n\n    @staticmethod\n    def label"
).replace(
    "def helper",
    "class Extra:\n    pass\n\n\ndef USER_CONSTANT() -> int:\n    return 2\n\n\n"
    "def math() -> int:\n    return 3\n\n\ndef helper",
)


@pytest.mark.parametrize(
    ("scope", "user_code", "expect"),
    [
        (
            "class",
            "    def width(self) -> int:\n        return 1\n",
            "your def 'width' in class Func binds 'width' (assignment 'width')",
        ),
        (
            "class",
            "    @property\n    def width(self) -> int:\n        return 1\n",
            "your def 'width' in class Func binds 'width'",
        ),
        (
            "class",
            "    def label(self) -> str:\n        return 'mine'\n",
            "your def 'label' in class Func binds 'label' (def 'label')",
        ),
        (
            "class",
            "    width = 3\n",
            "your assign 'width' in class Func has the name of a member the generator now writes",
        ),
        ("class", "    label: str = 'x'\n", "your assignment 'label' in class Func binds 'label' (def 'label')"),
        ("class", "    class width:\n        pass\n", "your class 'width' in class Func binds 'width'"),
        ("class", "    from os import sep as width\n", "binds 'width' (assignment 'width')"),
        (
            "module",
            "USER_CONSTANT = 42\n",
            "your assignment 'USER_CONSTANT' in the module binds 'USER_CONSTANT' (def 'USER_CONSTANT')",
        ),
        ("module", "USER_CONSTANT: int = 42\n", "binds 'USER_CONSTANT' (def 'USER_CONSTANT')"),
        ("module", "import math\n", "your statement `import math` in the module binds 'math' (def 'math')"),
        ("module", "def Extra() -> None:\n    pass\n", "your def 'Extra' in the module binds 'Extra' (class 'Extra')"),
        ("module", "a, USER_CONSTANT = 1, 2\n", "binds 'USER_CONSTANT'"),
        ("module", "if True:\n    from os import path as math\n", "binds 'math' (def 'math')"),
    ],
    ids=[
        "method-field",
        "property-field",
        "method-staticmethod",
        "assign-field",
        "annotated-method",
        "nested-class",
        "import-in-class",
        "constant-function",
        "annotated-function",
        "import-function",
        "function-class",
        "unpacking",
        "import-in-if",
    ],
)
def test_any_user_binding_meets_any_generated_name(scope: str, user_code: str, expect: str) -> None:
    from tvmffi_gen.write.manifest_entries import member_keys
    from tvmffi_gen.write.merge import MergeConflict, merge_source

    keys = member_keys(GEN1)
    if scope == "class":
        user = GEN1.replace("\n\ndef helper", "\n" + user_code + "\n\ndef helper")
    else:
        user = GEN1 + "\n\n" + user_code
    assert merge_source("x.py", user, keys, GEN1).kept == 1  # no conflict with the first version
    with pytest.raises(MergeConflict) as info:
        merge_source("x.py", user, keys, GEN2)
    assert len(info.value.problems) == 1 and expect in info.value.problems[0], info.value.problems
    # changing what a generated name holds is not binding the name
    extended = GEN1 + "\n\nhelper.__doc__ = 'mine'\n"
    assert merge_source("x.py", extended, keys, GEN2).kept == 1


def test_kind_clash_stops_the_run_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v1, v2 = build(1), build(2)
    out, module = generate(v1, tmp_path)
    text = module.read_text()
    # v2 adds the field z and the method norm1: the user wrote a method z and an attribute norm1
    text = add_to_class(text, "Point", "\n\n    def z(self) -> int:\n        return 7\n\n    norm1 = 1")
    module.write_text(text)
    before = snapshot_files(out)
    assert main([str(v2), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "your def 'z' in class Point binds 'z' (assignment 'z')" in err, err
    assert "your assignment 'norm1' in class Point binds 'norm1' (def 'norm1')" in err, err
    assert snapshot_files(out) == before


def _edit_norm(module: Path) -> None:
    """The user edits a generated member: gives method manhattan (which the registry does not
    document) a docstring."""
    text = module.read_text()
    start = text.index("    def manhattan(")
    body = text.index("        ...\n", start)
    text = text[:body] + '        """Doubled by me."""\n' + text[body:]
    module.write_text(text)


def test_edits_to_generated_members_are_refused_kept_or_replaced_by_choice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v1 = build(1)
    out, module = generate(v1, tmp_path)
    _edit_norm(module)
    edited = module.read_text()
    # default: stop, name the member, write nothing (also with --check)
    for extra in ([], ["--check"]):
        assert main([str(v1), "-o", str(out), *extra]) == 2
        err = capsys.readouterr().err
        assert "you edited the generated def 'manhattan' in class Point" in err and "--keep-edits" in err, err
        assert module.read_text() == edited
    # --keep-edits: the user's version stays, and the run says so
    assert main([str(v1), "-o", str(out), "--keep-edits"]) == 0
    err = capsys.readouterr().err
    assert "kept your edited def 'manhattan' in class Point" in err, err
    assert "Doubled by me." in module.read_text()
    # --overwrite-edits: the generated version comes back, and the run says which member
    assert main([str(v1), "-o", str(out), "--overwrite-edits"]) == 0
    err = capsys.readouterr().err
    assert "replaced your edits to the generated def 'manhattan' in class Point" in err, err
    assert "Doubled by me" not in module.read_text()
    assert main([str(v1), "-o", str(out), "--check", "-q"]) == 0


#: A generated class whose fields ``register`` moves from its nested fields class (version 1),
#: and the library's next version, which adds the field ``b``.
NESTED1 = '''import typing as _t


class Pair:
    """Pair doc."""

    class __fields:  # pyright: ignore[reportUnusedClass] -- `register` moves these onto the class
        a: int = 1
        """The a field."""

    def total(self) -> int:
        return 0
'''
NESTED2 = NESTED1.replace('        """The a field."""\n', '        """The a field."""\n\n        b: int = 2\n')


def test_members_of_the_nested_fields_class_are_keyed_and_merged() -> None:
    from tvmffi_gen.write.manifest_entries import member_keys
    from tvmffi_gen.write.merge import MergeConflict, merge_source

    keys = member_keys(NESTED1)
    assert [k.split("\t")[0] for k in keys if k.startswith("Pair.__fields::")] == [
        "Pair.__fields::assign a",
        "Pair.__fields::docstring of assign a",
    ]
    # an edit to a field declaration is an edit to a generated member: refused, named
    edited = NESTED1.replace("a: int = 1", "a: int = 7")
    with pytest.raises(MergeConflict) as info:
        merge_source("x.py", edited, keys, NESTED2)
    assert info.value.edits == [
        "you edited the generated assignment 'a' in class Pair.__fields (the library did not change it)"
    ], info.value.edits
    kept = merge_source("x.py", edited, keys, NESTED2, edit_policy="keep").text
    assert "a: int = 7" in kept and "b: int = 2" in kept, kept
    # the user's own member in the nested class stays there, after its neighbour
    added = NESTED1.replace('        """The a field."""\n', '        """The a field."""\n\n        mine = 3\n')
    merged = merge_source("x.py", added, keys, NESTED2)
    assert merged.kept == 1 and '"""The a field."""\n\n        mine = 3\n\n        b: int = 2\n' in merged.text, (
        merged.text
    )
    # a member of the class binding a field's name meets the field's declaration
    clash = NESTED1.replace("    def total", "    def b(self) -> int:\n        return 1\n\n    def total")
    with pytest.raises(MergeConflict) as info:
        merge_source("x.py", clash, keys, NESTED2)
    assert info.value.problems == [
        "your def 'b' in class Pair binds 'b' (assignment 'b'), which the generator now writes there; rename yours"
    ], info.value.problems


def test_user_code_in_the_nested_fields_class_of_a_dropped_type_is_reported() -> None:
    from tvmffi_gen.write.manifest_entries import member_keys
    from tvmffi_gen.write.merge import MergeConflict, merge_source

    keys = member_keys(NESTED1)
    without_pair = "import typing as _t\n"
    added = NESTED1.replace('        """The a field."""\n', '        """The a field."""\n\n        mine = 3\n')
    with pytest.raises(MergeConflict) as info:
        merge_source("x.py", added, keys, without_pair)
    assert info.value.problems == [
        "class Pair is no longer generated (its type left the library) but holds your code (assign mine);"
        " move it elsewhere"
    ], info.value.problems
    edited = NESTED1.replace("a: int = 1", "a: int = 7")
    with pytest.raises(MergeConflict) as info:
        merge_source("x.py", edited, keys, without_pair)
    assert info.value.edits == [
        "you edited the generated assignment 'a' in class Pair.__fields (the library no longer has it)"
    ], info.value.edits
