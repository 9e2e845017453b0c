"""The registry facts the package generator and ``--stubs-for`` share (tvmffi_gen/registry/facts.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tvmffi_gen.registry.facts import auto_init_order, chain_fields, nearest_known
from tvmffi_gen.registry.snapshot import FieldSnap, TypeSnap


def _field(name: str, *, default: bool = False, kw_only: bool = False, init: bool = True) -> FieldSnap:
    return FieldSnap(name, has_default=default, kw_only=kw_only, init=init)


def test_the_auto_init_takes_required_then_defaulted_then_keyword_only_fields() -> None:
    fields = {
        "t.Base": [_field("a"), _field("b", default=True), _field("skipped"), _field("hidden", init=False)],
        "t.Node": [_field("c"), _field("k", kw_only=True), _field("d", default=True)],
    }
    node = TypeSnap("t.Node", ["ffi.Object", "t.Base"], init="auto", init_excluded=["skipped"])
    chain = chain_fields("t.Node", lambda k: fields.get(k, []), node.ancestors)
    assert [(o, f.name) for o, f in chain] == [
        ("t.Base", "a"),
        ("t.Base", "b"),
        ("t.Base", "skipped"),
        ("t.Base", "hidden"),
        ("t.Node", "c"),
        ("t.Node", "k"),
        ("t.Node", "d"),
    ]
    # an inherited field the native init does not take is left out, and so is one without init
    assert [f.name for _, f in auto_init_order(node, chain)] == ["a", "c", "b", "d", "k"]


def test_the_nearest_known_type_is_the_type_itself_then_its_nearest_ancestor() -> None:
    known = {"ffi.Object": "Object", "t.Base": "Base"}
    assert nearest_known("t.Node", ["ffi.Object", "t.Base", "t.Mid"], known.get) == "Base"
    assert nearest_known("t.Base", ["ffi.Object"], known.get) == "Base"
    assert nearest_known("t.Other", ["x.Root"], known.get) is None


_COMPARE = """
import inspect, json
import tvm_ffi, tvm_ffi.testing
from tvm_ffi import core
from tvmffi_runtime import reflection as R
from tvmffi_gen.registry.facts import auto_init_order, chain_fields, read_type

out = {}
for key in sorted(R.list_type_keys()):
    t = read_type(key)
    index = core._object_type_key_to_index(key)
    info = core._type_index_to_type_info(index) if index is not None else None
    cls = info.type_cls if info is not None else None
    if t.init != "auto" or cls is None or "__init__" not in cls.__dict__:
        continue
    snaps = {k: read_type(k) for k in t.ancestors}
    chain = chain_fields(key, lambda k: (snaps[k] if k in snaps else t).fields, t.ancestors)
    ours = [f.name for _, f in auto_init_order(t, chain)]
    theirs = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    out[key] = [ours, theirs]
print(json.dumps(out))
"""


def test_the_auto_init_order_is_the_one_tvm_ffi_binds() -> None:
    """Every type of ``tvm_ffi`` (and its testing module) with a native auto-init: the fields
    ``auto_init_order`` gives are the parameters of the ``__init__`` ``tvm_ffi`` installs."""
    pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi's Python package is not installed")
    proc = subprocess.run([sys.executable, "-c", _COMPARE], capture_output=True, text=True, check=True)
    pairs: dict[str, list[list[str]]] = json.loads(proc.stdout)
    child = ["parent_required", "child_required", "parent_default", "child_kw_only"]
    assert pairs["testing.TestCxxAutoInitChild"][0] == child
    assert {k: ours for k, (ours, _) in pairs.items()} == {k: theirs for k, (_, theirs) in pairs.items()}
