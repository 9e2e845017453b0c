"""``--stubs-for``'s importing child stops a module's import that is stuck, not one that is slow."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tvmffi_gen.stubs import importing

pytestmark = pytest.mark.slow  # whole packages through a checker, builds or venvs: see tests/README.md


def test_a_stuck_import_is_stopped_a_slow_one_is_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importing, "MODULE_TIMEOUT", 1.0)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    pkg = tmp_path / "watchpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "waits.py").write_text("import time\ntime.sleep(60)\n")
    (pkg / "spins.py").write_text("while True:\n    pass\n")
    # computes 0.75 s, then waits 0.75 s: under both limits
    (pkg / "works.py").write_text(
        "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.75:\n"
        "    pass\ntime.sleep(0.75)\nDONE = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    files = importing.module_files("watchpkg", [str(pkg)], [])
    try:
        ok, failed = importing.import_all("watchpkg", files, {})
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "watchpkg"]:
            del sys.modules[name]
    assert ok == ["watchpkg", "watchpkg.works"]
    assert failed == {
        "watchpkg.spins": "importing it computed for 1 s of CPU without finishing",
        "watchpkg.waits": "importing it made no progress for 1 s (it waits on something?)",
    }
