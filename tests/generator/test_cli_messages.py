"""What the command line says: summaries that count what was written, hints that work when
followed, and notes where a result could be misread."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main
from tvmffi_gen.model.prefixes import kept_by_prefixes

from conftest import TESTING_LIB


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_prefix_rule() -> None:
    assert kept_by_prefixes("testing.TestIntPair", [])
    assert kept_by_prefixes("testing.TestIntPair", ["testing.TestIntPair"])
    assert kept_by_prefixes("testing.TestIntPair", ["testing"])
    assert kept_by_prefixes("testing.TestIntPair", ["testing."])
    assert kept_by_prefixes("testing.sub.X", ["testing"])
    assert not kept_by_prefixes("testingx.Y", ["testing"])
    assert not kept_by_prefixes("testing.TestIntPairSum", ["testing.TestIntPair"])
    assert not kept_by_prefixes("testing", ["testing.TestIntPair"])


def test_prefix_naming_one_type_counts_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pairpkg"
    status, text, err = run(capsys, str(TESTING_LIB), "-o", str(out), "--prefix", "testing.TestIntPair")
    assert status == 0, err
    written = (out / "testing" / "__init__.py").read_text()
    assert written.count("@_bind.register(") == 1 and "class TestIntPair(" in written
    assert "(1 type, " in text, text


def test_header_names_the_c_api_version_libtvm_ffi_reports(tmp_path: Path) -> None:
    """``TVMFFIGetVersion`` gives the C API version of libtvm_ffi (0.1.16 in apache-tvm-ffi
    0.1.15.post2), not the distribution's: the header says which it is."""
    import tvmffi_runtime as rt

    out = tmp_path / "headerpkg"
    assert main([str(TESTING_LIB), "-o", str(out), "-q", "--prefix", "testing.TestIntPair"]) == 0
    first = (out / "__init__.py").read_text().splitlines()[0]
    version = ".".join(map(str, rt.libtvm_ffi_version()))
    assert first.endswith(f"from libtvm_ffi_testing.so (libtvm_ffi C API {version}).")


def test_installed_project_regenerates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """``pip install ./proj`` (not editable) ships no manifest; the installed copy is still known
    as generated, so the same command regenerates instead of refusing the name."""
    import subprocess
    import sys

    proj, site = tmp_path / "proj", tmp_path / "site"
    argv = [str(TESTING_LIB), "-o", str(proj), "--name", "instpkg", "--project", "--prefix", "testing.TestIntPair"]
    assert main([*argv, "-q"]) == 0
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "--no-index"]
    proc = subprocess.run([*pip, "--target", str(site), str(proj)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert not (site / "instpkg" / ".tvmffi-gen.json").exists() and (site / "instpkg" / "__init__.py").is_file()
    monkeypatch.syspath_prepend(str(site))
    status, text, err = run(capsys, *argv)
    assert status == 0, err
    assert "up to date" in text or "0 files changed" in text, text
    # a hand-written package of that name is still refused
    (site / "instpkg" / "__init__.py").write_text('"""Mine."""\n')
    status, _, err = run(capsys, *argv)
    assert status == 2 and "already an importable module" in err and str(site / "instpkg") in err


def test_an_edited_docstring_is_said_to_be_an_edit_not_a_library_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_regenerate_user_code import _edit_norm, build, generate

    v1, v2 = build(1), build(2)
    out, module = generate(v1, tmp_path)
    _edit_norm(module)  # the docstring of the generated method manhattan
    status, _, err = run(capsys, str(v1), "-o", str(out))
    assert status == 2
    assert "conflicts with what the library" not in err, err
    assert "you edited code the generator wrote, which regeneration replaces: pass --keep-edits" in err, err
    assert "you edited the generated def 'manhattan' in class Point (the library did not change it)" in err, err
    assert err.rstrip().endswith("(nothing was written)"), err
    status, _, err = run(capsys, str(v2), "-o", str(out))  # version 2 renames manhattan
    assert status == 2
    assert "you edited the generated def 'manhattan' in class Point (the library no longer has it)" in err, err
    # version 2 adds the field z to Point, so Point.replace takes z too: changed on both sides;
    # it drops the type Old, whose replace goes with it
    text = module.read_text()
    for cls in ("Old", "Point"):
        at = text.index('"""A new object with the given fields changed;', text.index(f"class {cls}("))
        text = text[:at] + '"""Mine. ' + text[at + 3 :]
    module.write_text(text)
    status, _, err = run(capsys, str(v2), "-o", str(out))
    assert status == 2
    assert "you edited the generated def 'replace' in class Point (the library changed it too)" in err, err
    assert "you edited the generated def 'replace' in class Old (the library no longer has it)" in err, err


def test_advice_for_a_folder_name_that_is_no_identifier_works_when_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = [str(TESTING_LIB), "--prefix", "testing.TestIntPair", "-q"]
    status, _, err = run(capsys, *lib, "-o", str(tmp_path / "my-geom"))
    assert status == 2
    assert (
        f"give -o {tmp_path / 'my_geom'}, or make {tmp_path / 'my-geom'} a project folder holding the"
        " package my_geom with --project"
    ) in err, err
    # each of the two ways it names works the first time
    assert run(capsys, *lib, "-o", str(tmp_path / "my_geom"))[0] == 0
    assert (tmp_path / "my_geom" / "__init__.py").is_file()
    status, _, err = run(capsys, *lib, "-o", str(tmp_path / "my-geom"), "--project")
    assert status == 0, err
    assert (tmp_path / "my-geom" / "my_geom" / "__init__.py").is_file()


def test_list_exports_says_registry_functions_are_not_exports(capsys: pytest.CaptureFixture[str]) -> None:
    from test_regenerate_user_code import build

    lib = build(1)  # registers regen.origin, regen.Point and regen.Old; exports nothing
    status, text, _ = run(capsys, "--list-exports", str(lib))
    assert status == 0
    assert text.splitlines() == [
        f"{lib}: ELF, 0 exported TVM FFI functions",
        "(not exports, so not listed: loading it registers 1 global function and 2 types in the TVM FFI"
        f" registry; tvmffi-gen {lib} -o OUT generates them, --save-snapshot FILE saves them as JSON)",
    ]


def test_the_command_reference_names_every_option() -> None:
    """docs/cli.md says it documents every option: each one the parser has is named there."""
    from tvmffi_gen.cli.options import parser

    from conftest import ROOT

    reference = (ROOT / "docs" / "cli.md").read_text()

    def named(option: str) -> bool:
        return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", reference) is not None

    actions = [a for a in parser()._actions if a.option_strings]
    assert len(actions) > 20
    # an option counts as documented under any of its spellings (-q for --quiet)
    missing = [a.option_strings[-1] for a in actions if not any(named(o) for o in a.option_strings)]
    assert missing == []


def test_the_command_ends_with_main_s_status_its_output_whole_and_its_exit_handlers_run(tmp_path: Path) -> None:
    # ``cli.run`` ends the process without the interpreter's teardown; nothing else may change
    import os
    import subprocess
    import sys

    from tvmffi_gen import __version__

    def command(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "tvmffi_gen", *argv], capture_output=True, text=True)

    version = command("--version")
    assert (version.returncode, version.stdout) == (0, f"tvmffi-gen {__version__}\n")
    bad = command("--bogus")
    assert bad.returncode == 2 and "unrecognized arguments: --bogus" in bad.stderr
    script = (
        "import sys, tempfile, tvmffi_gen.cli.main as cli\n"
        "left = tempfile.TemporaryDirectory()\n"  # removed by its exit handler
        "def main():\n"
        "    print(left.name); print('x' * 100000, end=''); return 3\n"
        "cli.main = main\n"
        "cli.run()\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    folder, _, rest = proc.stdout.partition("\n")
    assert proc.returncode == 3 and rest == "x" * 100000
    assert folder and not Path(folder).exists()
    # output that cannot be written (a reader gone) is not a success
    lost = "import tvmffi_gen.cli.main as cli\ncli.main = lambda: print('short') or 0\ncli.run()\n"
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # lost at run's flush
    reader_gone = subprocess.Popen(
        [sys.executable, "-c", lost], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=buffered
    )
    assert reader_gone.stdout is not None
    reader_gone.stdout.close()
    assert reader_gone.wait() == 120
