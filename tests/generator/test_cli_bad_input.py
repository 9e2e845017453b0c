"""Bad libraries and bad input: each gets a clear message naming the thing at fault and a
non-zero exit — never a crash of the generator, a hang, or a half-written output folder."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main

from conftest import ROOT, TESTING_LIB, build_shared

INIT_TEMPLATE = r"""
#include <tvm/ffi/tvm_ffi.h>
#include <tvm/ffi/reflection/registry.h>
%s
"""

BAD_LIBRARIES = {
    "throws": r"""
#include <stdexcept>
struct Boom { Boom() { throw std::runtime_error("boom from a static initialiser"); } };
static Boom boom;
""",
    "aborts": r"""
#include <cstdlib>
struct Abort { Abort() { std::abort(); } };
static Abort a;
""",
    "hangs": r"""
#include <unistd.h>
struct Hang { Hang() { for (;;) sleep(1); } };
static Hang h;
""",
    "unresolved": r"""
extern "C" int tvmffi_gen_test_missing_symbol(int);
struct Use { Use() { tvmffi_gen_test_missing_symbol(1); } };
static Use u;
""",
    "empty": "",
    "duplicate": r"""
TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("dup.f", [](int64_t x) { return x; });
  tvm::ffi::reflection::GlobalDef().def("dup.f", [](int64_t x) { return x + 1; });
}
""",
    "segfaults": r"""
static int crash_in_init() { volatile int* p = nullptr; return *p; }
TVM_FFI_STATIC_INIT_BLOCK() {
  static int v = crash_in_init();
  (void)v;
}
""",
}


def bad_lib(kind: str) -> Path:
    extra = ["-Wl,-z,now"] if kind == "unresolved" else []
    return build_shared(f"bad_{kind}", INIT_TEMPLATE % BAD_LIBRARIES[kind], extra=extra)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(list(args))
    captured = capsys.readouterr()
    return status, captured.err + captured.out


@pytest.mark.parametrize(
    ("make", "expect"),
    [
        (lambda d: d / "missing.so", "no such file"),
        (lambda d: d, "is a directory"),
        (lambda d: _write(d / "empty.so", b""), "empty"),
        (lambda d: _write(d / "text.so", b"hello\n"), "not an ELF"),
        (lambda d: _write(d / "trunc.so", TESTING_LIB.read_bytes()[:100]), "truncated"),
    ],
    ids=["missing", "directory", "empty", "text", "truncated"],
)
def test_unloadable_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str], make, expect: str) -> None:  # type: ignore[no-untyped-def]
    lib = make(tmp_path)
    out = tmp_path / "out" / "pkg"
    status, text = run(capsys, str(lib), "-o", str(out))
    assert status == 2, text
    assert str(lib) in text and expect in text, text
    assert not out.exists()


def test_elf_for_another_architecture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = bytearray(TESTING_LIB.read_bytes())
    data[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64 on an x86-64 machine (or vice versa)
    if os.uname().machine in ("aarch64", "arm64"):
        data[18:20] = (62).to_bytes(2, "little")
    lib = tmp_path / "otherarch.so"
    lib.write_bytes(bytes(data))
    status, text = run(capsys, str(lib), "-o", str(tmp_path / "pkg"))
    assert status == 2 and "another architecture" in text and str(lib) in text, text


@pytest.mark.parametrize(
    ("kind", "expect"),
    [
        ("throws", "SIGABRT"),
        ("aborts", "SIGABRT"),
        ("unresolved", "tvmffi_gen_test_missing_symbol"),
        ("empty", "registers nothing"),
    ],
)
def test_misbehaving_libraries(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, expect: str) -> None:
    lib = bad_lib(kind)
    out = tmp_path / "pkg"
    status, text = run(capsys, str(lib), "-o", str(out))
    assert status == 2, text
    assert expect in text and lib.name in text, text
    assert not out.exists()


def test_a_library_not_built_on_tvm_ffi_is_named_by_its_full_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library that does not link libtvm_ffi (as zlib does not) is said to be one, by the full
    path of the file given relatively; one that links it and registers nothing is said to be that."""
    source = '#include <cstdio>\nextern "C" int plain_answer() { return std::puts("42"); }\n'
    plain = build_shared("plain_cxx", source, link_tvm_ffi=False)
    monkeypatch.chdir(plain.parent)
    status, text = run(capsys, plain.name, "-o", str(tmp_path / "pkg"))
    assert status == 2 and not (tmp_path / "pkg").exists()
    assert f"{plain} does not link libtvm_ffi (it links libc.so.6 only)" in text, text
    assert text.rstrip().endswith("it is not a library built on TVM FFI, so it registers nothing to generate")
    empty = bad_lib("empty")
    status, text = run(capsys, empty.name, "-o", str(tmp_path / "pkg"))
    assert status == 2 and f"{empty}: the library registers nothing to generate" in text, text


def test_hanging_library_times_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lib = bad_lib("hangs")
    status, text = run(capsys, str(lib), "-o", str(tmp_path / "pkg"), "--timeout", "1")
    assert status == 2 and "did not finish within 1 s" in text, text


def test_output_path_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "pkg"
    target.write_text("not a folder")
    status, text = run(capsys, str(TESTING_LIB), "-o", str(target))
    assert status == 2 and "not a folder" in text and str(target) in text
    assert target.read_text() == "not a folder"


def test_foreign_files_are_refused_then_kept_with_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "pkg"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    status, text = run(capsys, str(TESTING_LIB), "-o", str(target))
    assert status == 2 and "not generated by tvmffi-gen" in text and "--force" in text
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    status, text = run(capsys, str(TESTING_LIB), "-o", str(target), "--force", "-q")
    assert status == 0, text
    assert (target / "notes.txt").read_text() == "mine"
    # regenerating never deletes a file the generator did not write
    status, _ = run(capsys, str(TESTING_LIB), "-o", str(target), "-q", "--prefix", "testing")
    assert status == 0 and (target / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("project", [False, True], ids=["package", "project"])
def test_one_rule_for_a_non_empty_folder_with_or_without_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], project: bool
) -> None:
    """``-o`` naming a non-empty folder tvmffi-gen did not write is refused the same way with
    ``--project`` as without, naming what is in it, before anything is written; ``--force``
    writes beside those files."""
    target = tmp_path / "pkg"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    mode = ["--project"] if project else []
    status, text = run(capsys, str(TESTING_LIB), "-o", str(target), *mode)
    evidence = (
        "no pyproject.toml it wrote, no pkg/.tvmffi-gen.json manifest" if project else "no .tvmffi-gen.json manifest"
    )
    assert status == 2 and text == (
        f"tvmffi-gen: error: {target}: the folder is not empty (notes.txt) and was not generated by"
        f" tvmffi-gen ({evidence}); pass --force to write into it anyway\n"
    )
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    status, text = run(capsys, str(TESTING_LIB), "-o", str(target), *mode, "--force", "-q")
    assert status == 0, text
    assert (target / "notes.txt").read_text() == "mine"
    # the folder is now tvmffi-gen's: regenerating needs no --force
    status, text = run(capsys, str(TESTING_LIB), "-o", str(target), *mode, "-q")
    assert status == 0 and (target / "notes.txt").read_text() == "mine", text


def test_a_project_file_whose_marker_line_the_user_removed_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pyproject.toml's second line says: edit freely once you remove the line above (then it is
    kept). Regenerating keeps it, and says so; in a folder tvmffi-gen did not write it is refused."""
    project = tmp_path / "proj"
    assert main([str(TESTING_LIB), "-o", str(project), "--project", "-q"]) == 0
    pyproject = project / "pyproject.toml"
    mine = pyproject.read_text().split("\n", 1)[1].replace('version = "0.1.0"', 'version = "2.0"')
    pyproject.write_text(mine)
    capsys.readouterr()
    status, text = run(capsys, str(TESTING_LIB), "-o", str(project), "--project")
    assert status == 0 and f"kept your {pyproject} (its marker line removed): not regenerated" in text, text
    assert pyproject.read_text() == mine


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "ro"
    target.mkdir()
    target.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        status, text = run(capsys, str(TESTING_LIB), "-o", str(target / "pkg"))
        assert status == 2 and str(target) in text
    finally:
        target.chmod(stat.S_IRWXU)


def test_failed_run_leaves_previous_output_untouched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pkg"
    assert main([str(TESTING_LIB), "-o", str(out), "-q"]) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    status, _ = run(capsys, str(bad_lib("aborts")), "-o", str(out))
    assert status == 2
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_nothing_under_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, text = run(capsys, str(TESTING_LIB), "-o", str(tmp_path / "pkg"), "--prefix", "nosuchns")
    assert status == 2 and "registers nothing to generate under nosuchns" in text
    assert not (tmp_path / "pkg").exists()  # (the library's exported functions do not make it match)
    # one prefix of two matching nothing is warned about by name; the other's namespace is written
    argv = [str(TESTING_LIB), "-o", str(tmp_path / "pkg"), "--prefix", "testing", "--prefix", "nosuchns"]
    status, text = run(capsys, *argv)
    assert status == 0 and "--prefix nosuchns: the library registers nothing under it" in text
    assert "testing.TestIntPair" in (tmp_path / "pkg" / "testing" / "__init__.py").read_text()


def test_snapshot_round_trip_and_bad_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = tmp_path / "snap.json"
    a, b = tmp_path / "a" / "pkg", tmp_path / "b" / "pkg"
    assert main([str(TESTING_LIB), "-o", str(a), "-q", "--save-snapshot", str(snap)]) == 0
    assert main(["-o", str(b), "-q", "--from-snapshot", str(snap)]) == 0
    for p in a.rglob("*.py"):
        assert p.read_bytes() == (b / p.relative_to(a)).read_bytes()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    status, text = run(capsys, "-o", str(tmp_path / "c" / "pkg"), "--from-snapshot", str(bad))
    assert status == 2 and str(bad) in text and "not a JSON snapshot" in text


def test_keyword_package_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, text = run(capsys, str(TESTING_LIB), "-o", str(tmp_path / "class"))
    assert status == 2 and "'class'" in text and "not a valid Python module name" in text


def test_bundle_copies_the_library(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bundled"
    assert main([str(TESTING_LIB), "-o", str(out), "-q", "--bundle"]) == 0
    assert (out / TESTING_LIB.name).read_bytes() == TESTING_LIB.read_bytes()
    assert "BUNDLED_PATH: str | None = _os.path.join(_os.path.dirname(__file__)" in (out / "_lib.py").read_text()
    shutil.rmtree(out)


def test_preload_excludes_the_preloaded_library(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fixtures import build_expr_ir

    out = tmp_path / "exprpkg"
    assert main([str(build_expr_ir()), "-o", str(out), "-q", "--preload", str(TESTING_LIB)]) == 0
    assert (out / "exprir" / "__init__.py").is_file()
    assert not (out / "testing").exists()


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_verify_runs_mypy_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "vpkg"
    status, text = run(capsys, str(TESTING_LIB), "-o", str(out), "--verify")
    assert status == 0 and "mypy --strict: no errors" in text, text
    # break the output on purpose: --verify must fail the run and show mypy's error
    lib_py = out / "_lib.py"
    lib_py.write_text(lib_py.read_text() + "\nBROKEN: int = 'x'\n")
    from tvmffi_gen.verify.checkers import run_mypy

    errors, report = run_mypy(out)
    assert errors == 1 and "[assignment]" in report


def test_a_library_that_fails_to_load_is_reported_by_its_error_and_its_own_frames(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the error line sits in the middle of the output (neither first nor last), and most frames
    # are the loader's and the interpreter's
    lib = bad_lib("duplicate")
    status, text = run(capsys, str(lib), "-o", str(tmp_path / "pkg"))
    assert status == 2 and lib.name in text and "SIGABRT" in text, text
    assert "Global Function `dup.f` is already registered" in text, text
    assert "at __TVMFFIStaticInitFunc0()" in text and "dl-init.c" not in text and "ceval.c" not in text, text
    status, verbose = run(capsys, str(lib), "-o", str(tmp_path / "pkg"), "-v")
    assert status == 2 and "Please remove the duplicate registration." in verbose and "dl-init.c" in verbose
    lib = bad_lib("segfaults")
    status, text = run(capsys, str(lib), "-o", str(tmp_path / "pkg"))
    assert status == 2 and "SIGSEGV" in text and "Segfault encountered" in text, text
    assert "at __TVMFFIStaticInitFunc0()" in text and "<unknown>" not in text, text
    assert not (tmp_path / "pkg").exists()


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["-o", "{tmp}/x.py"], "the folder's name 'x.py' is not a valid package name"),
        (["-o", "{tmp}/my-pkg"], "the folder's name 'my-pkg' is not a valid package name"),
        (["-o", "{tmp}/out", "--name", "9lives"], "'9lives' is not a valid Python module name"),
        (["-o", "{tmp}/numpy"], "package name 'numpy' is already an importable module"),
        (["-o", "{tmp}/out", "--name", "tvmffi_runtime"], "package name 'tvmffi_runtime' is already an importable"),
        (["-o", "{tmp}/sys"], "package name 'sys' is already an importable module (built in)"),
    ],
    ids=["dotted-folder", "dash", "digit", "numpy", "runtime", "builtin"],
)
def test_bad_or_shadowing_package_names_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expect: str
) -> None:
    status, text = run(capsys, str(TESTING_LIB), *[a.format(tmp=tmp_path) for a in args])
    assert status == 2 and expect in text, text
    assert list(tmp_path.iterdir()) == []


def test_force_allows_a_name_an_importable_module_has(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, text = run(capsys, str(TESTING_LIB), "-o", str(tmp_path / "json"), "--force", "-q")
    assert status == 0, text
    assert (tmp_path / "json" / "testing" / "__init__.py").is_file()


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["-o", "{tmp}/out", "--timeout", "-1"], "--timeout -1: give the seconds to wait, a number above 0"),
        (["-o", "{tmp}/out", "--project-version", "1.0"], "--project-version: it is for --project's pyproject.toml"),
        (["-o", "{tmp}/out", "--exclude", "x.*"], "--exclude chooses the modules of --stubs-for PKG"),
        (
            ["--stubs-for", "tvm_ffi", "-o", "{tmp}/out", "--bundle", "--name", "x"],
            "--stubs-for writes stubs, not a package: --name, --bundle does not apply",
        ),
        (["--list-exports", "{lib}", "-o", "{tmp}/out"], "--list-exports LIB reads one library and writes nothing: -o"),
        (
            ["-o", "{tmp}/out", "--name", "other"],
            "--name other -o {tmp}/out: a package is imported by its folder's name",
        ),
        (
            ["-o", "{tmp}/out", "--save-snapshot", "{tmp}/no/such/dir/s.json"],
            "--save-snapshot {tmp}/no/such/dir/s.json: No such file",
        ),
        (
            ["-o", "{tmp}/out", "--project", "--runtime-requirement", "tvmffi-runtime @ ../r.whl"],
            "'../r.whl' is not a URL (a path goes as file:///absolute/path)",
        ),
        (
            ["-o", "{tmp}/out", "--project", "--runtime-requirement", "tvmffi-runtime @ file:///no/such/r.whl"],
            "/no/such/r.whl does not exist",
        ),
    ],
    ids=[
        "timeout",
        "version-without-project",
        "exclude-without-stubs",
        "package-options-with-stubs",
        "list-exports-with-output",
        "name-unlike-folder",
        "snapshot-unwritable",
        "relative-url",
        "missing-wheel",
    ],
)
def test_options_the_run_would_ignore_or_cannot_use_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expect: str
) -> None:
    """An option that does not apply to the run, or a value it cannot use, is exit 2 naming it
    (never silently ignored, never a traceback), and nothing is written."""
    argv = [a.format(tmp=tmp_path, lib=TESTING_LIB) for a in args]
    status, text = run(capsys, *argv)
    assert status == 2 and expect.format(tmp=tmp_path) in text, text
    assert "Traceback" not in text
    assert list(tmp_path.iterdir()) == []


def test_another_platforms_library_is_named_as_such_before_loading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dll = ROOT / "tests" / "fixtures" / "binfmt" / "few.dll"
    status, text = run(capsys, str(dll), "-o", str(tmp_path / "pkg"))
    assert status == 2 and "few.dll is a Windows library (PE)" in text, text
    assert f"tvmffi-gen --list-exports {dll}" in text and "LibraryLoadError" not in text, text
    assert not (tmp_path / "pkg").exists()


def test_stubs_are_not_written_into_a_package_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--stubs-for PKG -o DIR`` where DIR is a package (a generated one here) is refused before
    PKG is imported, so stubs never land inside another package."""
    pkg = tmp_path / "pkg"
    assert run(capsys, str(TESTING_LIB), "-o", str(pkg), "-q")[0] == 0
    before = sorted(p.relative_to(pkg) for p in pkg.rglob("*"))
    status, text = run(capsys, "--stubs-for", "tvm_ffi", "-o", str(pkg))
    assert status == 2 and f"-o {pkg}: a Python package folder (it has __init__.py)" in text, text
    assert sorted(p.relative_to(pkg) for p in pkg.rglob("*")) == before
