"""The generated package does not depend on the interpreter's string hashing: two runs with
different ``PYTHONHASHSEED`` write the same bytes (a set iterated into the output would not)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_two_hash_seeds_write_the_same_package(tmp_path: Path) -> None:
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / seed / "tvmffi_testing"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-m", "tvmffi_gen", "-o", str(out), "-q"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append({p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert outputs[0].keys() == outputs[1].keys()
    assert [rel for rel in outputs[0] if outputs[0][rel] != outputs[1][rel]] == []
