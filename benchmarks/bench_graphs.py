"""What the cycle / depth guard costs on acyclic graphs: each guarded entry point against the
same native routine called without the guard, side by side in one process.

    python benchmarks/bench_graphs.py [--nodes 10000] [--repeat 7] [--rounds 1] [--json out.json] [--with-pure]

The graph is a tree of ``--nodes`` ``cyc.Node`` objects (tests/fixtures/cycles.cc, built with
g++ like the tests do), four children per node in an Array field, and an empty Map field on
each node: about three handles per node for the guard to look at. Cases are interleaved
(guarded, bare, guarded, ...) and each reports the minimum over the repeats in ms; the ratio
is guarded / bare. ``check`` is the guard alone. Timings are noisy on a shared machine: quote
ratios, from ``--rounds 3`` or more (each case's median ratio over that many measurements of the
whole table; times are the best over all rounds). ``--pure`` measures the pure-ctypes path;
``--with-pure`` runs it in a second process and adds its ratio as a column.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if "--pure" in sys.argv:  # before the runtime is imported: it reads this once
    os.environ["TVMFFI_RUNTIME_PURE"] = "1"
sys.path[:0] = [str(ROOT / "runtime"), str(ROOT / "tests")]


def cases(rt: Any, tree: Any, small: Any) -> list[tuple[str, Callable[[], Any], bool]]:
    """(name, the public call, whether it has an unguarded twin): the twin is the same call
    with the guard patched out of the modules that call it. ``small``: a 5-node tree, for the
    guard's fixed cost per call (its rows are timed over 1 000 calls, in ms per 1 000)."""
    import tvmffi_runtime.structural as S
    from tvmffi_runtime._graph_guard import check_graph

    other = rt.get_global_func("ffi.DeepCopy")(tree)
    absent = S.on(rt.Tensor, lambda x: None)  # a handler the engine tries on every node, never calls
    return [
        ("check (guard alone)", lambda: check_graph(tree, "x", structural=True), False),
        ("structural_hash", lambda: rt.structural_hash(tree), True),
        ("structural_equal", lambda: rt.structural_equal(tree, other), True),
        ("to_json_graph", lambda: rt.copying.to_json_graph(tree), True),
        ("pickle.dumps", lambda: pickle.dumps(tree), True),
        ("structural_walk", lambda: S.structural_walk(tree, absent), True),
        ("structural_map", lambda: S.structural_map(tree, absent), True),
        ("structural_hash, 5 nodes x1000", lambda: rt.structural_hash(small), True),
        ("structural_walk, 5 nodes x1000", lambda: S.structural_walk(small, absent), True),
    ]


#: Where the guard is called from (module, attribute).
GUARDED_MODULES = ("tvmffi_runtime.structural", "tvmffi_runtime.structural.equality", "tvmffi_runtime.copying")


def unguarded(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` run with ``check_graph`` replaced by a no-op where the entry points call it."""
    modules = [sys.modules[m] for m in GUARDED_MODULES]

    def run() -> Any:
        saved = [m.check_graph for m in modules]
        for m in modules:
            m.check_graph = lambda *args, **kwargs: None
        try:
            return fn()
        finally:
            for m, f in zip(modules, saved, strict=True):
                m.check_graph = f

    return run


def measure(fn: Callable[[], Any], number: int) -> float:
    return timeit.timeit(fn, number=number) * 1e3


def run_rounds(nodes: int, repeat: int, rounds: int) -> dict[str, Any]:
    """``rounds`` tables merged: per case the best times and the median ratio."""
    tables = [run(nodes, repeat) for _ in range(rounds)]
    merged = tables[0]
    for i, row in enumerate(merged["rows"]):
        same = [t["rows"][i] for t in tables]
        row["guarded_ms"] = min(r["guarded_ms"] for r in same)
        if row["ratio"] is not None:
            row["bare_ms"] = min(r["bare_ms"] for r in same)
            row["ratio"] = statistics.median(r["ratio"] for r in same)
    merged["rounds"] = rounds
    return merged


def run(nodes: int, repeat: int) -> dict[str, Any]:
    import tvmffi_runtime as rt

    from conftest import ROOT as _root
    from conftest import build_shared

    rt.load_library(build_shared("cycles", (_root / "tests" / "fixtures" / "cycles.cc").read_text()))
    tree = rt.get_global_func("cyc.tree")(nodes, 4)
    small = rt.get_global_func("cyc.tree")(5, 4)
    rows = []
    for name, guarded, twin in cases(rt, tree, small):
        number = 1000 if "x1000" in name else 1
        bare = unguarded(guarded) if twin else None
        guarded()  # warm: plans, caches
        best_g = best_b = float("inf")
        for _ in range(repeat):
            best_g = min(best_g, measure(guarded, number))
            if bare is not None:
                best_b = min(best_b, measure(bare, number))
        row: dict[str, Any] = {"case": name, "guarded_ms": best_g, "bare_ms": None, "ratio": None}
        if bare is not None:
            row.update(bare_ms=best_b, ratio=best_g / best_b)
        rows.append(row)
    path = "compiled" if rt._backend.accelerated() else "pure ctypes"
    return {"path": path, "nodes": nodes, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--pure", action="store_true")
    parser.add_argument("--with-pure", action="store_true")
    args = parser.parse_args(argv)
    result = run_rounds(args.nodes, args.repeat, args.rounds)
    pure: dict[str, Any] = {}
    if args.with_pure:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "pure.json"
            cmd = [sys.executable, __file__, "--pure", "--nodes", str(args.nodes), "--repeat", str(args.repeat),
                   "--rounds", str(args.rounds), "--json", str(out)]  # fmt: skip
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            pure = {r["case"]: r for r in json.loads(out.read_text())["rows"]}
            result["pure_rows"] = list(pure.values())
    print(f"runtime path: {result['path']}; tree of {args.nodes} cyc.Node (fanout 4)")
    width = max(len(r["case"]) for r in result["rows"])
    extra = f"  {'pure ms':>8}  {'pure ratio':>10}" if pure else ""
    print(f"{'case':<{width}}  {'guarded ms':>10}  {'bare ms':>8}  {'ratio':>6}{extra}")
    for r in result["rows"]:
        ratio = f"{r['ratio']:6.2f}" if r["ratio"] is not None else f"{'':>6}"
        tail = ""
        if pure:
            p = pure[r["case"]]
            p_ratio = f"{p['ratio']:10.2f}" if p["ratio"] is not None else f"{'':>10}"
            tail = f"  {p['guarded_ms']:8.2f}  {p_ratio}"
        bare = f"{r['bare_ms']:8.2f}" if r["bare_ms"] is not None else f"{'':>8}"
        print(f"{r['case']:<{width}}  {r['guarded_ms']:10.2f}  {bare}  {ratio}{tail}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
