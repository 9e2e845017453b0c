"""The generator's own process never loads libtvm_ffi: the snapshot's child process owns the
library, and everything after the snapshot (model, render, write) works from its data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tvmffi_gen.cli.main import main
from tvmffi_gen.model.naming import OBJECT_MEMBERS

from conftest import TESTING_LIB

#: Runs a whole generation from a saved snapshot, then reports what the process holds.
_CHILD = """
import json, sys
from tvmffi_gen.cli.main import main
status = main(["-o", sys.argv[2], "-q", "--from-snapshot", sys.argv[1]])
with open("/proc/self/maps", encoding="utf-8") as fh:
    maps = fh.read()
libraries = sorted({line.split()[-1] for line in maps.splitlines() if "libtvm_ffi" in line})
print(json.dumps({"status": status, "libraries": libraries,
                  "runtime": sorted(m for m in sys.modules if m.split(".")[0] == "tvmffi_runtime")}))
"""


def test_generation_from_a_snapshot_never_maps_libtvm_ffi(tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    assert main([str(TESTING_LIB), "-o", str(tmp_path / "first"), "-q", "--save-snapshot", str(snap)]) == 0
    out = tmp_path / "pkg"
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(snap), str(out)], capture_output=True, text=True, timeout=300, check=True
    )
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["status"] == 0, done.stderr
    assert (out / "__init__.py").is_file() and (out / "_lib.py").is_file()  # it did generate
    assert report["libraries"] == []
    assert report["runtime"] == []


def test_recorded_object_members_are_the_runtimes() -> None:
    """``OBJECT_MEMBERS`` stands for ``dir(tvmffi_runtime.Object)``, which the generator cannot
    import: every member the runtime's Object has is recorded, and the recorded ones it lacks are
    only the pure-Python backend's ``__del__``."""
    import tvmffi_runtime

    members = set(dir(tvmffi_runtime.Object))
    assert members <= OBJECT_MEMBERS
    assert OBJECT_MEMBERS - members <= {"__del__"}
