"""The ``.pyi`` face beside each generated module: what type checkers and IDEs read in place of
the ``.py`` (fields as their value types, names by their own names, the registry's docs), read
from the committed packages, a synthetic model whose names collide with the imports, and jedi."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from tvmffi_gen.model.builder import build_model
from tvmffi_gen.registry.snapshot import FieldSnap, Snapshot, TypeSnap
from tvmffi_gen.render.package import render_package

from conftest import ROOT

PACKAGES = [ROOT / "generated" / "tvmffi_testing", ROOT / "examples" / "add_one" / "add_one_pkg"]
FACE = ROOT / "generated" / "tvmffi_testing" / "testing" / "__init__.pyi"

#: A name spelled through one of the ``.py``'s private import aliases.
PRIVATE = re.compile(r"(?<![\w.])(_t|_abc|_rt|_bind|_ctypes|_ffi_ns_\w+)\.")


def _code_lines(path: Path) -> list[str]:
    """The lines of ``path`` outside its docstrings and comments."""
    tree = ast.parse(path.read_text())
    doc_lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            assert node.end_lineno is not None
            doc_lines.update(range(node.lineno, node.end_lineno + 1))
    lines = path.read_text().splitlines()
    return [line.split("  #")[0] for i, line in enumerate(lines, 1) if i not in doc_lines and not line.startswith("#")]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_every_module_has_a_face_that_names_no_private_alias(package: Path) -> None:
    modules = sorted(package.rglob("__init__.py"))
    assert modules
    for module in modules:
        face = module.with_suffix(".pyi")
        assert face.is_file(), f"{module} has no .pyi beside it"
        private = [line for line in _code_lines(face) if PRIVATE.search(line)]
        assert not private, (face, private)


def test_fields_are_their_values_and_signatures_name_plain_types() -> None:
    text = FACE.read_text()
    pair = text[text.index("class TestIntPair(Object):") : text.index("class TestNonCopyable(")]
    # read-only: Final of the value type; the unnamed init takes the fields: named after them
    assert "    a: Final[int]\n" in pair and "    b: Final[int]\n" in pair
    assert "    def __init__(self, a: SupportsIndex, b: SupportsIndex, /) -> None: ..." in pair
    every = text[text.index("class SchemaAllTypes(Object):") : text.index("class TestCompare(")]
    # one type read and written: an attribute; a wider type written: a property and its setter
    assert "    v_int: int\n" in every
    assert "    @property\n    def v_arr_int(self) -> Array[int]:" in every
    # the setter repeats the doc: jedi documents a property by its last definition
    doc = '        """array<int>. Reads as `Array[int]`; assigned from any `Sequence[int]`."""\n'
    assert f"    @v_arr_int.setter\n    def v_arr_int(self, value: Sequence[int]) -> None:\n{doc}" in every
    derived = text[text.index("class TestObjectDerived(") :]
    assert "v_map: Mapping[Any, Any]," in derived[: derived.index("\nclass ")]


def test_docstrings_are_the_registrys_in_markdown() -> None:
    text = FACE.read_text()
    for boilerplate in ("Registry type:", "Registry field:", "Registry method:", "Construct through", "auto-init"):
        assert boilerplate not in text, boilerplate
    assert '    """Registered as `testing.TestIntPair`."""' in text
    assert "``" not in text.replace("``Arc``", "")  # Markdown code spans, as every IDE renders them


def test_a_name_of_the_module_keeps_the_alias_of_what_it_hides() -> None:
    # a class named Array (the runtime's Array is imported by that name otherwise) and a field
    # named Final in the same module: those two imports keep the .py's alias, the rest do not
    holder = TypeSnap(
        "ns.Holder",
        ["ffi.Object"],
        init="none",
        fields=[
            FieldSnap("items", schema={"type": "ffi.Array", "args": [{"type": "int"}]}),
            FieldSnap("Final", schema={"type": "int"}),
            FieldSnap("dev", schema={"type": "Device"}),
        ],
    )
    array = TypeSnap("ns.Array", ["ffi.Object"], init="none")
    snap = Snapshot("libx.so", "/nonexistent/libx.so", [0, 1, 16], [holder, array], [], {"ffi.Object": []})
    face = render_package(build_model(snap, "pkg"))["ns/__init__.pyi"]
    assert "import tvmffi_runtime as _rt" in face and "import typing as _t" in face
    assert "    items: _t.Final[_rt.Array[int]]" in face
    assert "    Final: _t.Final[int]" in face
    assert "    dev: _t.Final[Device]" in face and "from tvmffi_runtime import Device, Object" in face


def test_jedi_completes_fields_as_their_values(tmp_path: Path) -> None:
    jedi = pytest.importorskip("jedi")
    project = jedi.Project(str(tmp_path), sys_path=[str(ROOT / "generated"), str(ROOT / "runtime"), *sys.path])
    source = "from tvmffi_testing.testing import TestIntPair, TestObjectDerived\np = TestIntPair(1, 2)\np.\n"
    script = jedi.Script(source, path=str(tmp_path / "use.py"), project=project)
    completions = {c.name: c for c in script.complete(3, 2)}
    assert completions["a"].description == "a: Final[int]"
    assert completions["a"].docstring() == "Field `a`. Read-only."
    call = "from tvmffi_testing.testing import TestObjectDerived\nTestObjectDerived("
    (signature,) = jedi.Script(call, path=str(tmp_path / "use.py"), project=project).get_signatures(2, 18)
    assert signature.to_string().startswith("TestObjectDerived(v_map: Mapping[Any, Any], v_array: Sequence[Any],")


def test_a_run_prints_one_note_counting_the_unnamed_parameters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tvmffi_gen.cli.main import main

    from conftest import TESTING_LIB

    assert main([str(TESTING_LIB), "-o", str(tmp_path / "pkg")]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1, notes
    assert re.match(r"note: \d+ parameters of \d+ functions, methods and constructors have no name", notes[0])
    assert "numpydoc `Parameters` section" in notes[0] and "README's C++ example" in notes[0]
    # -q: nothing but errors
    assert main([str(TESTING_LIB), "-o", str(tmp_path / "pkg"), "-q"]) == 0
    assert capsys.readouterr().out == ""
