"""What a field read cannot cost less than: ``pair.a`` (the runtime's C field descriptor)
beside the reads CPython itself offers, in one process, interleaved, best of the rounds.

A field lives in native memory, so a read is a data descriptor's ``__get__``: CPython 3.11's
``LOAD_ATTR`` specializes instance ``__dict__`` values, modules and ``__slots__`` members (a
pointer in the Python object, and ``__class__``, read as the slot ``ob_type``) but no getset or
descriptor, so every C getter takes the generic attribute path. ``(1).real`` (a C getset on a
static type, returning the int itself) is that path with the least getter work; the slot member,
``pair.__class__`` and ``lambda: None`` are below it. Each row is timed as the benchmark table
times it, through a lambda::

    python benchmarks/field_floor.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "generated"), str(ROOT / "runtime")]

from tvm_ffi.testing.testing import TestIntPair as CyIntPair  # noqa: E402  (first: it loads libtvm_ffi.so)

from tvmffi_testing import testing as gen  # noqa: E402


class _Slotted:
    __slots__ = ("a",)

    def __init__(self) -> None:
        self.a = 1


def rows() -> list[tuple[str, Callable[[], Any]]]:
    o_pair, c_pair, slotted, one = gen.TestIntPair(1, 2), CyIntPair(1, 2), _Slotted(), 1
    return [
        ("ours: pair.a (C field descriptor)", lambda: o_pair.a),
        ("tvm_ffi: pair.a (Cython property)", lambda: c_pair.a),
        ("pair.__class__ (specialized, as a slot)", lambda: o_pair.__class__),
        ("(1).real (C getset, static type)", lambda: one.real),
        ("__slots__ member (specialized, a slot)", lambda: slotted.a),
        ("lambda: None", lambda: None),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=300_000)
    args = parser.parse_args()
    cases = rows()
    best = {name: float("inf") for name, _ in cases}
    for _ in range(args.rounds):
        for name, fn in cases:
            t = min(timeit.repeat(fn, number=args.number, repeat=3)) / args.number * 1e9
            best[name] = min(best[name], t)
    cython = best["tvm_ffi: pair.a (Cython property)"]
    for name, _ in cases:
        print(f"{name:<42} {best[name]:6.1f} ns  {best[name] / cython:5.2f} of tvm_ffi's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
