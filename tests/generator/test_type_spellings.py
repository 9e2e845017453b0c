"""Every type spelling TVM FFI's schema emitter writes maps to a precise annotation (issue 12,
item 2): ``tests/fixtures/type_spellings.cc`` uses each on functions and fields; the generated
package has no ``Any`` fallbacks, passes mypy --strict with a program using it, and its values
round-trip on both runtime paths. Warnings about unknown spellings come once per item.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import generate
from tvmffi_gen.cli.options import Options
from tvmffi_gen.model.builder import build_model
from tvmffi_gen.registry.snapshot import FieldSnap, Snapshot, TypeSnap
from tvmffi_gen.verify.checkers import run_mypy
from tvmffi_gen.write.writer import apply_plan, plan_output

from conftest import ROOT, build_shared
from fixtures import FIXTURES_DIR

PROGRAM = r"""
from __future__ import annotations

import numpy as np

import tvmffi_runtime as rt
from spellpkg import spell
from spellpkg.spell import Child, Holder

assert spell.std_string("ab") == "ab!"
t = spell.tuple((3, "x"))
assert list(t) == ["x", 6], t
assert spell.optional(4) == 5 and spell.optional(None) is None
assert spell.variant(12) == "12" and spell.variant("abcd") == 4
assert spell.expected(2) == 20
err = spell.expected(-1)
assert isinstance(err, BaseException) and "negative" in str(err), err
assert spell.rvalue([1, 2, 3]) == 3
assert spell.const_char() == "static text"
assert spell.byte_array() == b"xyz"
assert spell.big_int(1 << 100) == 1 << 100
assert spell.opaque(None) is None
assert str(spell.data_type("float32")) == "float32"
dev = spell.device(rt.Device(1, 0))
assert (dev.device_type, dev.index) == (1, 0)
assert spell.dltensor_ndim(np.zeros((2, 3, 4))) == 3
assert list(spell.shape([2, 3])) == [2, 3]
assert list(spell.list(rt.List([1, 2]))) == [1, 2]
assert dict(spell.dict(rt.Dict({"a": 1})).items()) == {"a": 1}
assert spell.bytes_(b"\x00z") == b"\x00z"
assert spell.unchanged_or(True) is rt.UNCHANGED and spell.unchanged_or(False) == "changed"
assert list(spell.std_vector([1, 2, 3])) == [3, 2, 1]
assert list(spell.std_array([2, 4, 6])) == [1.0, 2.0, 3.0]
assert spell.std_optional(1.5) == 3.0 and spell.std_optional(None) is None
assert spell.std_variant(7) == "7" and spell.std_variant("abc") == 3
assert list(spell.std_tuple((1, "s", True))) == [False, "s", 1]
assert dict(spell.std_map({"a": 1, "b": 2}).items()) == {"a": 2, "b": 3}
assert spell.std_unordered_map({"a": [1, 2], "b": [3]}) == 6


def callback(x: int, s: str) -> int:
    return x * 100 + len(s)


assert spell.std_function(callback, 2) == 202
assert spell.make_callback()(5) == "15"

h = Holder()
h.pair = (1, "one")
h.maybe = "m"
h.either = 9
h.table = [("pi", 3.14)]
assert list(h.pair) == [1, "one"] and h.maybe == "m" and h.either == 9
row = h.table[0]
assert list(row) == ["pi", 3.14]
h.maybe = None
h.either = "nine"
assert h.maybe is None and h.either == "nine"
c = Child()
c.extra = 4
c.pair = (2, "two")
assert isinstance(c, Holder) and c.extra == 4 and list(c.pair) == [2, "two"]
print("OK")
"""


@pytest.fixture(scope="module")
def spelling_lib(have_gxx: bool) -> Path:
    return build_shared("type_spellings", (FIXTURES_DIR / "type_spellings.cc").read_text())


@pytest.fixture(scope="module")
def generated(spelling_lib: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    out = tmp_path_factory.mktemp("spell") / "spellpkg"
    _snap, files, warnings = generate(Options(library=str(spelling_lib), output=str(out)))
    apply_plan(plan_output(out, files, "test"))
    return out, warnings


def test_every_spelling_is_known(generated: tuple[Path, list[str]]) -> None:
    pkg, warnings = generated
    assert warnings == []
    text = (pkg / "spell" / "__init__.py").read_text()
    assert "_t.Any" not in text.split("class Holder", 1)[1].split("_ffi_fn_", 1)[0]
    for line in (
        "def std_string(_0: str, /) -> str:",
        "def tuple(_0: _abc.Sequence[int | str], /) -> _rt.Array[str | int]:",
        "def std_array(_0: _abc.Sequence[int], /) -> _rt.Array[float]:",
        "def std_function(_0: _abc.Callable[[int, str], int], _1: _t.SupportsIndex, /) -> int:",
        "def std_unordered_map(_0: _abc.Mapping[str, _abc.Sequence[int]], /) -> int:",
        "def expected(_0: _t.SupportsIndex, /) -> int | BaseException:",
        "def unchanged_or(_0: bool, /) -> str | _rt.Unchanged:",
        "def rvalue(_0: _abc.Sequence[int], /) -> int:",
    ):
        assert line in text, line


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_program_type_checks(generated: tuple[Path, list[str]], tmp_path: Path) -> None:
    pkg, _ = generated
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    errors, report = run_mypy(pkg, extra_files=[prog])
    assert errors == 0, report


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_values_round_trip(generated: tuple[Path, list[str]], pure: bool) -> None:
    pkg, _ = generated
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pkg.parent), str(ROOT / "runtime")])}
    env.pop("TVMFFI_RUNTIME_PURE", None)
    if pure:
        env["TVMFFI_RUNTIME_PURE"] = "1"
    proc = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "OK"


def test_an_unknown_spelling_warns_once_per_item() -> None:
    # A field of an unknown type in a base with three auto-init subclasses: its schema is read
    # for the base's field and again for each subclass's __init__.
    weird = FieldSnap(name="w", schema={"type": "weird::Thing"}, offset=24, size=8)
    types = [TypeSnap("k.Base", ["ffi.Object"], fields=[weird], init="auto")]
    types += [TypeSnap(f"k.Sub{i}", ["ffi.Object", "k.Base"], init="auto") for i in range(3)]
    snap = Snapshot("libk.so", "/nonexistent/libk.so", [0, 1, 16], types=types, external_types={"ffi.Object": []})
    warnings: list[str] = []
    build_model(snap, "kpkg", warn=warnings.append)
    assert warnings == ["field k.Base.w: unknown type 'weird::Thing' in a type schema; typed as Any"]
