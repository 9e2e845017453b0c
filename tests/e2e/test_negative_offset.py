"""Fields at negative offsets from the object header (issue 12, item 1).

``tests/fixtures/negative_offset.cc`` registers ``negoff.Node``, whose fields live in a
polymorphic non-Object base laid out before ``Object``; the registry gives them negative offsets.
The generator must accept them, and the generated package must read and write them, and check
them for staleness at import, on both runtime paths.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tvmffi_gen.cli.main import main
from tvmffi_gen.registry.snapshot_process import take_snapshot
from tvmffi_gen.verify.checkers import run_mypy

from conftest import ROOT, build_shared
from fixtures import FIXTURES_DIR

NEGATIVE = ("counter", "ratio", "flag", "label", "child")

PROGRAM = r"""
import tvmffi_runtime as rt
from negpkg.negoff import Node, node_offsets, node_sum

# the generated descriptors sit at the offsets the C++ compiler used
expected = [int(x) for x in node_offsets()]
got = [getattr(Node, n).offset for n in ("counter", "ratio", "flag", "label")]
assert got == expected[:4], (got, expected)  # (child, an Optional, goes through the registry)
assert all(o < 0 for o in expected[:5]) and Node.own.offset == expected[5] > 0, expected

n = Node(5, 7)
assert (n.counter, n.own, n.ratio, n.flag, n.label, n.child) == (5, 7, 0.5, False, "start", None)
assert node_sum(n) == 12
n.counter = 40           # written in place, before the header
n.ratio = 2.25
n.flag = True
n.label = "a longer label that is not a small string"
n.child = Node(1, 2)
assert node_sum(n) == 47  # C++ sees the write to the negative-offset int64
assert (n.counter, n.ratio, n.flag, n.label) == (40, 2.25, True, "a longer label that is not a small string")
assert isinstance(n.child, Node) and n.child.counter == 1 and n.child.own == 2
n.label = "tiny"
assert n.label == "tiny"
try:
    n.counter = "x"
except TypeError:
    pass
else:
    raise AssertionError("a str was stored in an int field")
print("accelerated" if rt._backend.accelerated() else "pure", "OK")
"""


@pytest.fixture(scope="module")
def negoff_lib(have_gxx: bool) -> Path:
    return build_shared("negative_offset", (FIXTURES_DIR / "negative_offset.cc").read_text())


@pytest.fixture(scope="module")
def negpkg(negoff_lib: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("negoff") / "negpkg"
    assert main([str(negoff_lib), "-o", str(out), "-q"]) == 0
    return out


def _run(pkg: Path, code: str, pure: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pkg.parent), str(ROOT / "runtime")])}
    env.pop("TVMFFI_RUNTIME_PURE", None)
    if pure:
        env["TVMFFI_RUNTIME_PURE"] = "1"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def test_the_registry_gives_negative_offsets(negoff_lib: Path) -> None:
    snap = take_snapshot(negoff_lib)
    (node,) = [t for t in snap.types if t.type_key == "negoff.Node"]
    offsets = {f.name: f.offset for f in node.fields}
    assert all(offsets[name] < 0 for name in NEGATIVE), offsets
    assert offsets["own"] > 0


def test_generator_writes_the_negative_offsets(negpkg: Path) -> None:
    text = (negpkg / "negoff" / "__init__.py").read_text()
    # the field declares its layout and (negative) offset; register checks that offset at import
    assert re.search(r'\n        counter: \S.* = _bind\.field\("i64", -\d+', text), text


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_negative_offset_fields_read_and_write(negpkg: Path, pure: bool) -> None:
    proc = _run(negpkg, PROGRAM, pure)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["pure" if pure else "accelerated", "OK"]


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "pure"])
def test_stale_negative_offset_refuses_import(negpkg: Path, tmp_path: Path, pure: bool) -> None:
    stale = tmp_path / "negpkg"
    subprocess.run(["cp", "-r", str(negpkg), str(stale)], check=True)
    module = stale / "negoff" / "__init__.py"
    text = module.read_text()
    match = re.search(r'(\n        counter: \S.* = _bind\.field\("i64", )(-\d+)', text)
    assert match is not None, text
    value = int(match.group(2))
    module.write_text(text.replace(match.group(0), f"{match.group(1)}{value - 8}"))
    proc = _run(stale, "import negpkg.negoff", pure)
    assert proc.returncode != 0
    assert f"field negoff.Node.counter moved (offset {value}, generated for {value - 8})" in proc.stderr


@pytest.mark.slow  # a checker over a whole package: see tests/README.md
def test_negative_offset_package_passes_mypy_strict(negpkg: Path) -> None:
    errors, report = run_mypy(negpkg)
    assert errors == 0, report
