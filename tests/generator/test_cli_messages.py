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
