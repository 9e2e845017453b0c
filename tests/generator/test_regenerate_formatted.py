"""Regeneration of a package the user formatted (ruff format, black) and whose own code depends on
what the library registers: layout is not an edit, ``__all__`` is the generator's, and user code
using a type the library dropped is a conflict (issue 18)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main

from test_regenerate_user_code import add_to_class, build, edit_like_a_user, generate, run_py, snapshot_files

#: Short enough that both formatters rewrap ``__all__ = ["Old", "Point", "origin"]`` and more.
LINE_LENGTH = "30"
FORMATTERS = {
    "ruff": ["-m", "ruff", "format", "--isolated", "--line-length", LINE_LENGTH],
    "black": ["-m", "black", "-q", "--line-length", LINE_LENGTH],
    # tabs, and the code examples in docstrings rewrapped
    "ruff-tabs": [
        "-m",
        "ruff",
        "format",
        "--isolated",
        "--line-length",
        "34",
        "--config",
        "format.indent-style='tab'",
        "--config",
        "format.docstring-code-format=true",
    ],
}


def format_tree(formatter: str, root: Path) -> None:
    """Run a formatter over the package as a user would over their tree."""
    pytest.importorskip(formatter.split("-")[0])
    proc = subprocess.run([sys.executable, *FORMATTERS[formatter], str(root)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("formatter", ["ruff", "black", "ruff-tabs"])
def test_a_formatted_package_regenerates_keeping_the_users_code(
    formatter: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v1, v2 = build(1), build(2)
    out, module = generate(v1, tmp_path)
    canonical_all = '__all__ = ["Old", "Point", "origin"]\n'
    assert canonical_all in module.read_text()
    edit_like_a_user(module)
    before = snapshot_files(out)
    format_tree(formatter, out)
    formatted = module.read_text()
    assert canonical_all not in formatted  # the formatter really rewrapped __all__
    assert sum(before[p] != p.read_bytes() for p in before) >= 3, "the formatter changed too little to test"

    # the unchanged library: nothing is an edit, the user's code stays, the formatting too
    formatted_tree = snapshot_files(out)
    capsys.readouterr()
    assert main([str(v1), "-o", str(out)]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "kept 5 member(s) you added in" in printed and "; 0 files changed)" in printed, printed
    assert snapshot_files(out) == formatted_tree
    assert main([str(v1), "-o", str(out), "--check", "-q"]) == 0
    text = module.read_text()
    for user_code in ("def __add__(", "def as_tuple(", "def twice(", "USER_CONSTANT = math.pi", "import math"):
        assert user_code in text, user_code  # (in the formatter's layout: the user's code is theirs)
    star = "from regenpkg.regen import *; from regenpkg.regen import twice; "  # `import *` works
    assert run_py(tmp_path, star + "print(twice(Point(1, 2)).as_tuple())", v1) == "(2, 4)"

    # formatted again, then a library that drops Old (unused by the user's code): still fine
    format_tree(formatter, out)
    assert main([str(v2), "-o", str(out), "-q"]) == 0
    text = module.read_text()
    assert "class Old(" not in text and "def norm1(self) -> int:" in text and "def twice(" in text
    # what the library changed is in the generator's form, what it did not stays formatted
    assert '__all__ = ["Point", "origin"]\n' in text
    assert "y: _t.Final[\n" in text  # (the formatter's wrapping of an unchanged field)
    assert run_py(tmp_path, star + "print(Point(1, 2).norm1(), twice(Point(1, 1)).x)", v2) == "3 2"


def test_names_the_user_added_to_all_survive_and_dropped_types_leave_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # formatted, with the user's own function listed in __all__; the library then drops Old.
    # Under --keep-edits too the list is the generator's: the user's stale one would name Old, and
    # `import *` would raise AttributeError.
    v1, v2 = build(1), build(2)
    out, module = generate(v1, tmp_path)
    edit_like_a_user(module)
    module.write_text(
        module.read_text().replace(
            '__all__ = ["Old", "Point", "origin"]', '__all__ = ["Old", "Point", "origin", "twice"]'
        )
    )
    format_tree("ruff", out)
    for policy in ([], ["--keep-edits"]):
        assert main([str(v2), "-o", str(out), *policy]) == 0, capsys.readouterr().err
        assert '__all__ = ["Point", "origin", "twice"]\n' in module.read_text()
        assert run_py(tmp_path, "from regenpkg.regen import *; print(twice(origin()).x)", v2) == "0"


def test_user_code_using_a_type_the_library_dropped_is_a_conflict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v1, v2 = build(1), build(2)
    out, module = generate(v1, tmp_path)
    text = add_to_class(module.read_text(), "Point", "\n\n    def to_old(self) -> Old:\n        return Old()")
    text = (
        text
        + "\n\nclass RichOld(Old):\n    def twice(self) -> int:\n        return 2 * self.v\n"
        + "\n\ndef helper(Old: int) -> int:\n    return Old\n"
    )  # a parameter named Old: not a use
    module.write_text(text)
    assert main([str(v1), "-o", str(out), "-q"]) == 0  # fine while the library has Old
    before = snapshot_files(out)
    assert main([str(v2), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "your class 'RichOld' in the module uses 'Old', which the generated module defined last time" in err, err
    assert "your def 'to_old' in class Point uses 'Old'" in err, err
    assert "helper" not in err
    assert snapshot_files(out) == before  # nothing written


def test_user_code_importing_a_dropped_type_from_another_module_is_a_conflict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v1, v2 = build(1), build(2)
    out = tmp_path / "regenpkg"
    assert main([str(v1), "-o", str(out), "-q"]) == 0
    init = out / "__init__.py"
    init.write_text(
        init.read_text() + "\n\nfrom .regen import Old as _Old, Point as _Point\n\n\n"
        "def make_point() -> _t.Any:\n    from regenpkg.regen import Old, origin\n    return origin()\n"
    )
    assert main([str(v1), "-o", str(out), "-q"]) == 0
    before = snapshot_files(out)
    assert main([str(v2), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    relative = (
        "your statement `from .regen import Old as _Old, Point as _Point` in the module imports 'Old' from .regen,"
    )
    assert relative in err, err
    absolute = "your def 'make_point' in the module imports 'Old' from regenpkg.regen, which the generator wrote there"
    assert absolute in err, err
    assert "'Point'" not in err and "'origin'" not in err
    assert snapshot_files(out) == before


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="needs syntax libcst accepts and this Python does not")
def test_user_code_this_python_cannot_parse_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    v1 = build(1)
    out, module = generate(v1, tmp_path)
    module.write_text(module.read_text() + "\n\ntype PointList = list[Point]\n")  # Python 3.12 syntax
    before = snapshot_files(out)
    assert main([str(v1), "-o", str(out)]) == 2
    assert "cannot parse your edited file with this Python 3." in capsys.readouterr().err
    assert snapshot_files(out) == before


def test_comments_count_but_not_where_a_formatter_puts_them() -> None:
    from tvmffi_gen.write.manifest_entries import member_keys
    from tvmffi_gen.write.merge import MergeConflict, merge_source

    gen = 'def f(a: int) -> list[int]:\n    """Doc."""\n    return [a, a]  # twice\n'
    keys = member_keys(gen)
    moved = (
        'def f(\n    a: int,\n) -> list[int]:\n    """\n    Doc.\n    """\n'
        "    return [\n        a,\n        a,\n    ]  #twice\n"
    )
    assert merge_source("x.py", moved, keys, gen).text == moved  # not an edit; the same code: kept as laid out
    changed = gen.replace("[a, a]", "[a, a, 0]")
    assert merge_source("x.py", moved, keys, changed).text == changed  # the library changed it
    with pytest.raises(MergeConflict, match="you edited the generated def 'f'"):
        merge_source("x.py", gen.replace("# twice", "# twice, see issue 7"), keys, gen)
    with pytest.raises(MergeConflict, match="you edited the generated def 'f'"):
        merge_source("x.py", gen.replace("[a, a]", "[a, a, a]"), keys, gen)


def test_a_class_header_keeps_the_users_layout_while_its_code_is_the_same() -> None:
    from tvmffi_gen.write.manifest_entries import member_keys
    from tvmffi_gen.write.merge import merge_source

    gen = '@reg("a.B")\nclass B(Base):\n    x: int = 1\n'
    keys = member_keys(gen)
    user = "@reg(\n    'a.B',\n)\nclass B(\n    Base,\n):  # my note\n    x: int = 1\n"
    assert merge_source("x.py", user, keys, gen).text == user
    rebased = gen.replace("(Base)", "(Other)").replace("= 1", "= 2")
    assert merge_source("x.py", user, keys, rebased).text == rebased


def test_the_run_reports_project_files_and_only_members_it_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    v1 = build(1)
    proj = tmp_path / "regenproj"
    assert main([str(v1), "-o", str(proj), "--project"]) == 0
    capsys.readouterr()
    assert main([str(v1), "-o", str(proj), "--project", "--project-version", "0.2.0"]) == 0
    out = capsys.readouterr().out
    assert "; 1 file changed)" in out, out
    assert 'version = "0.2.0"' in (proj / "pyproject.toml").read_text()
    # a formatted package: files merged, but no member of the user's to report
    format_tree("ruff", proj / "regenproj")
    assert main([str(v1), "-o", str(proj), "--project", "--project-version", "0.2.0"]) == 0
    out = capsys.readouterr().out
    assert "kept" not in out and "; 0 files changed)" in out, out


def test_imports_are_checked_against_the_module_they_name() -> None:
    # paths the fixture library cannot reach: a namespace dropped (its module removed, or left
    # in place because the user edited it), imports two levels up, and imports from elsewhere
    from tvmffi_gen.write.merge import UserImport
    from tvmffi_gen.write.writer import ImportTargets

    previous = {"a/b/__init__.py": {"members": ["class Gone", "class Kept"]}}
    final = {"__init__.py": "", "a/__init__.py": "", "a/b/__init__.py": "class Kept: pass\n", "a/c.py": ""}
    targets = ImportTargets(final, ["x/__init__.py"], previous, "pkg")

    def stale(importer: str, level: int, module: str, *names: str) -> list[str]:
        return targets.stale(importer, UserImport("your code", level, module, names))

    assert stale("a/c.py", 1, "b", "Gone", "Kept", "Mine") == [
        "your code imports 'Gone' from .b, which the generator wrote there last time and no longer does;"
        " change or remove your code"
    ]
    assert stale("a/b/__init__.py", 2, "b", "Gone") != []  # from ..b (in a/b/) is a/b again
    assert stale("__init__.py", 0, "pkg.a.b", "Gone") != []
    assert stale("__init__.py", 0, "pkg.a", "b", "c") == []  # submodules
    assert stale("__init__.py", 0, "other.a.b", "Gone") == []  # not this package
    assert stale("a/c.py", 3, "a.b", "Gone") == []  # above the package
    assert stale("__init__.py", 1, "x", "Y") == [
        "your code imports from .x, a module no longer generated; change or remove your code"
    ]
    assert stale("__init__.py", 1, "y", "Y") == []  # not removed: never generated, or the user edited it
