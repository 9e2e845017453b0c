"""Repeated calls do not leak: RSS stays flat and reference counts come back to where they were.

Each case makes at least 100 000 native calls (about 0.3-1.5 s each on one core). Payloads are
deliberately large (1 KB strings, multi-element containers) so that leaking even one copy per
call would grow RSS by ~100 MB, far beyond the 5 MB bound.
"""

from __future__ import annotations

import gc
import os

import pytest

import tvmffi_runtime as rt
from tvmffi_runtime import _core

CALLS = 100_000
RSS_LIMIT = 5 * 1024 * 1024
_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


@pytest.fixture(scope="module")
def fns(testing_lib):
    g = rt.get_global_func
    return {
        "echo": g("testing.echo"),
        "nop": g("testing.nop"),
        "apply": g("testing.apply"),
        "use_count": g("testing.object_use_count"),
        "raise": g("testing.test_raise_error"),
        "pair": rt.Function.from_type_key_method("testing.TestIntPair", "__ffi_init__"),
    }


def _cases(f):
    echo, nop, apply = f["echo"], f["nop"], f["apply"]
    pair = f["pair"](1, 2)
    long_str = "a long string " * 80  # ~1 KB: heap string, passed as a raw C string
    nul_str = "with\0nul " * 100  # built as a String object for the call
    blob = bytes(range(256)) * 4
    big = (1 << 4000) + 7
    arr = rt.Array([pair, "x" * 100, 3])
    identity = rt.Function.from_callable(lambda x: x)

    def objects(n):
        for _ in range(n // 2):
            echo(pair)
            nop(pair, arr)

    def strings(n):
        for _ in range(n // 4):
            assert len(echo(long_str)) == len(long_str)
            echo(nul_str)
            echo("short")
            echo(blob)

    def containers(n):
        for _ in range(n // 4):
            echo([pair, long_str, 1, 2.0])  # temporary Array
            echo({"k": pair, "s": long_str})  # temporary Map
            echo(arr)
            list(arr)

    def callbacks(n):
        for _ in range(n // 4):
            apply(identity, pair)
            apply(identity, long_str)
        for _ in range(n // 2):
            apply(lambda x: x, 1)  # a new Function per call, released after it

    def bigints(n):
        for _ in range(n):
            echo(big)

    def errors(n):
        def fail():
            raise ValueError("from Python " + long_str)

        for _ in range(n // 2):
            try:
                f["raise"]("ValueError", long_str)
            except ValueError:
                pass
            try:
                apply(fail)
            except ValueError:
                pass

    return pair, {
        "objects": (objects, CALLS),
        "strings": (strings, CALLS),
        "containers": (containers, CALLS),
        "callbacks": (callbacks, CALLS),
        "bigints": (bigints, CALLS),
        "errors": (errors, 10_000),  # exceptions are slower; 10k still shows a per-call leak
    }


@pytest.mark.parametrize("case", ["objects", "strings", "containers", "callbacks", "bigints", "errors"])
def test_no_leak(fns, case):
    pair, cases = _cases(fns)
    loop, n = cases[case]
    loop(2_000)  # warm caches, free lists and allocator arenas
    gc.collect()
    callbacks_before = _core.live_callbacks()  # includes `identity`, alive during the loop
    before = rss()
    loop(n)
    gc.collect()
    grown = rss() - before
    assert grown < RSS_LIMIT, f"{case}: RSS grew by {grown / 1e6:.1f} MB over {n} calls"
    assert fns["use_count"](pair) == 2  # `pair` and the one held by the test Array `arr`
    assert _core.live_callbacks() == callbacks_before  # per-call Functions were all released
    assert len(_core._PY_ERRORS) <= _core._PY_ERRORS_LIMIT


def test_use_counts_balanced_after_loops(fns):
    pair = fns["pair"](1, 2)
    echo, use_count = fns["echo"], fns["use_count"]
    arr = rt.Array([pair])
    for _ in range(10_000):
        echo(pair)
        echo([pair, pair])
        fns["apply"](lambda x: x, pair)
        _ = arr[0]
        _ = list(arr)
    del _
    gc.collect()
    assert use_count(pair) == 2
    del arr
    assert use_count(pair) == 1
