"""What the command line says: summaries that count what was written, hints that work when
followed, and notes where a result could be misread."""

from __future__ import annotations

from pathlib import Path

import pytest

from tvmffi_gen.cli import main
from tvmffi_gen.prefixes import kept_by_prefixes

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
