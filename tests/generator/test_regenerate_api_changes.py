"""Regeneration says what changed: the API summary, warnings on the user's code that names a
member the library dropped, and the runtime's error for a package older than its library."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main
from tvmffi_gen.write.api_changes import ApiChange, api_changes, change_summary, module_api

from conftest import ROOT
from test_regenerate_user_code import add_to_class, build

USER_METHOD = """
    def total(self) -> int:
        return self.manhattan() + self.x
"""

USER_MODULE = """from .regen import Point


def f(p: Point) -> int:
    return p.manhattan()
"""


def test_summary_names_each_change_and_warns_where_user_code_uses_a_removed_member(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "regenpkg"
    assert main([str(build(1)), "-o", str(out), "-q"]) == 0
    module = out / "regen" / "__init__.py"
    module.write_text(add_to_class(module.read_text(), "Point", USER_METHOD))
    (out / "mine.py").write_text(USER_MODULE)
    capsys.readouterr()
    assert main([str(build(2)), "-o", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    summary = stdout[stdout.index("API changes") :].splitlines()[:6]
    assert summary == [
        "API changes since the last generation: 1 type removed, 1 method removed, 1 constructor changed,"
        " 1 field added, 1 method added",
        "  removed type regen.Old",
        # Point(x, y) took its fields one to one, so its parameters were named after them; with z
        # added it no longer does, and they are _0, _1 again (positional-only either way)
        "  changed constructor regen.Point.__init__: signature (self, _0: SupportsIndex, _1: SupportsIndex, /)"
        " -> None, was (self, x: SupportsIndex, y: SupportsIndex, /) -> None",
        "  removed method regen.Point.manhattan(self) -> int",
        "  added method regen.Point.norm1(self) -> int",
        "  added field regen.Point.z: int (read-only)",
    ], stdout
    warnings = [line for line in stderr.splitlines() if "your code uses" in line]
    lines = module.read_text().splitlines()
    at = next(i for i, line in enumerate(lines, 1) if "self.manhattan()" in line)
    assert warnings == [
        f"warning: {out / 'mine.py'}:5: your code uses 'manhattan', but the library no longer has"
        " method regen.Point.manhattan",
        f"warning: {module}:{at}: your code uses 'manhattan', but the library no longer has"
        " method regen.Point.manhattan",
    ], stderr
    # the next run, with the API unchanged, says so and warns again: the code still fails
    assert main([str(build(2)), "-o", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    assert "API unchanged since the last generation" in stdout
    assert [line for line in stderr.splitlines() if "your code uses" in line] == warnings, stderr
    # once the user's code no longer names it, nothing is said and the manifest forgets it
    (out / "mine.py").write_text(USER_MODULE.replace("p.manhattan()", "p.norm1()"))
    module.write_text(module.read_text().replace("self.manhattan()", "self.norm1()"))
    assert main([str(build(2)), "-o", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    assert "API unchanged since the last generation" in stdout and "your code uses" not in stderr
    assert "removed" not in json.loads((out / ".tvmffi-gen.json").read_text())
    assert main([str(build(2)), "-o", str(out)]) == 0
    assert "your code uses" not in capsys.readouterr().err


USER_APP = """\"\"\"The user's own module in the package.\"\"\"

from __future__ import annotations

from .regen import Old, Point


def make() -> object:
    return Old() if Point else None
"""


def test_every_line_naming_a_removed_type_is_warned_about_on_every_run_until_fixed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The import that fails (line 5) is named as well as the use (line 9), on the run that
    removes the type and on each run after it while the code still names it."""
    out = tmp_path / "regenpkg"
    assert main([str(build(1)), "-o", str(out), "-q"]) == 0
    (out / "app.py").write_text(USER_APP)
    expected = [
        f"warning: {out / 'app.py'}:{line}: your code uses 'Old', but the library no longer has type regen.Old"
        for line in (5, 9)
    ]
    for _ in range(2):
        capsys.readouterr()
        assert main([str(build(2)), "-o", str(out)]) == 0
        stderr = capsys.readouterr().err
        assert [line for line in stderr.splitlines() if "your code uses" in line] == expected, stderr
    assert json.loads((out / ".tvmffi-gen.json").read_text())["removed"] == {"regen.Old": "type"}
    # the library gets the type back: nothing to warn about, nothing kept
    assert main([str(build(1)), "-o", str(out)]) == 0
    assert "your code uses" not in capsys.readouterr().err
    assert "removed" not in json.loads((out / ".tvmffi-gen.json").read_text())


def test_summary_of_changed_signatures_and_types() -> None:
    before = module_api(
        "geom/__init__.py",
        '@_bind.register("geom.Circle")\nclass Circle(_rt.Object):\n'
        "    radius: _bind.Field[float, float] = _bind.field('f64', 24)\n"
        "    def area(self) -> float: ...\n"
        "def make(r: float) -> Circle: ...\n"
        "class Helper: ...\n",
    )
    assert before == {
        "geom.Circle": "type",
        "geom.Circle.radius": "field float",
        "geom.Circle.area": "method (self) -> float",
        "geom.make": "function (r: float) -> Circle",
    }
    after = {**before, "geom.Circle.radius": "field int", "geom.make": "function (r: float, /) -> Circle"}
    changes = api_changes(before, after)
    assert changes == [
        ApiChange("field", "geom.Circle.radius", "changed", "float", "int"),
        ApiChange("function", "geom.make", "changed", "(r: float) -> Circle", "(r: float, /) -> Circle"),
    ]
    assert change_summary(changes, limit=1) == [
        "API changes since the last generation: 1 field changed, 1 function changed",
        "  changed field geom.Circle.radius: type int, was float",
        "  ... and 1 more (-v lists them all)",
    ]


def test_package_older_than_its_library_says_the_field_no_longer_exists(tmp_path: Path) -> None:
    out = tmp_path / "regenpkg"
    assert main([str(build(2)), "-o", str(out), "-q"]) == 0  # Point has z in version 2 only
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT / "runtime")]))
    env["REGENPKG_LIBRARY"] = str(build(1))
    proc = subprocess.run(
        [sys.executable, "-c", "import regenpkg.regen"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode != 0
    assert "ImportError: field regen.Point.z no longer exists in the library" in proc.stderr, proc.stderr


def test_stale_uses_of_a_field_another_class_still_has() -> None:
    """``radius`` left Circle but Sphere still has it: ``self.radius`` in Circle's body is
    reported, ``s.radius`` elsewhere may mean Sphere's and is not."""
    import ast

    from tvmffi_gen.write.api_changes import names_used, stale_uses

    before = {"geom.Circle": "type", "geom.Circle.radius": "field float", "geom.Sphere": "type"}
    before["geom.Sphere.radius"] = "field float"
    after = {k: v for k, v in before.items() if k != "geom.Circle.radius"}
    changes = api_changes(before, after)
    in_circle = names_used(ast.parse("def area(self) -> float:\n    return self.radius ** 2\n"), 40, "Circle")
    elsewhere = names_used(ast.parse("def f(s: Sphere) -> float:\n    return s.radius\n"), 60)
    found = stale_uses("geom/__init__.py", [*in_circle, *elsewhere], changes, after)
    assert [(s.line, s.name, s.removed.name) for s in found] == [(41, "radius", "geom.Circle.radius")]
    assert found[0].describe("pkg/geom/__init__.py") == (
        "pkg/geom/__init__.py:41: your code uses 'radius', but the library no longer has field geom.Circle.radius"
    )


def test_fields_of_the_nested_fields_class_are_the_class_api() -> None:
    """A field declared in the class's nested ``__fields`` class is a member of the class, as one
    declared in its body (packages generated before the nested class) is."""
    body = (
        '@_bind.register("geom.Circle")\nclass Circle(_rt.Object):\n'
        "    radius: _bind.Field[float, float] = _bind.field('f64', 24)\n"
        "    def area(self) -> float: ...\n"
    )
    nested = body.replace("    radius:", "    class __fields:\n        radius:")
    assert "class __fields:\n        radius:" in nested
    expected = {
        "geom.Circle": "type",
        "geom.Circle.radius": "field float",
        "geom.Circle.area": "method (self) -> float",
    }
    assert module_api("geom/__init__.py", body) == expected
    assert module_api("geom/__init__.py", nested) == expected
