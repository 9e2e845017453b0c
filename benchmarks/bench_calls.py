"""Per-call cost of a generated package versus the ``tvm_ffi`` Cython binding, side by side.

    python benchmarks/bench_calls.py [--repeat 7] [--rounds 1] [--number N] [--json out.json] [--with-pure]
                                     [--table calls|structural|containers|tensors ...] [--only TEXT]

Both bindings run in one process on the same ``libtvm_ffi_testing.so`` (tvmffi_runtime reuses the
libtvm_ffi.so that tvm_ffi loaded). Cases are interleaved (ours, theirs, ours, ...) and each
reports the minimum over the repeats, in ns per call; the ratio is ours / Cython. Absolute
numbers are noisy on shared machines: compare the ratios, and use ``--rounds 3`` (each case's
median ratio over three measurements of the whole table) for figures worth quoting.

"ours" is the runtime as installed (with its compiled fast path when it was built).
``--pure`` measures the pure-ctypes path instead (``TVMFFI_RUNTIME_PURE=1``); ``--with-pure``
also runs the pure path in a second process right after and adds its ratio as a column.
"""

from __future__ import annotations

import argparse
import json
import math
import os
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
sys.path[:0] = [str(ROOT / "generated"), str(ROOT / "runtime")]


def floor_main() -> None:
    """``--floor``: in a process without tvm_ffi (as in a user's program that imports only the
    generated package), ``lambda: nop()`` against the floor any binding pays, a Python call of a
    trivial C builtin through the same lambda (``abs(1)``), under the default GIL policy
    (``always``: released on every call), under ``auto`` (kept when no thread could want it) and
    with ``nop`` alone marked to keep it (``keep_gil(nop)``, the policy ``always``)."""
    import tvmffi_runtime as rt_only
    from tvmffi_testing import testing as gen_only

    nop = gen_only.nop
    best = {"nop_ns": math.inf, "nop_auto_ns": math.inf, "nop_kept_ns": math.inf, "abs_ns": math.inf}
    for _ in range(7):
        rt_only.set_release_gil("always")
        best["nop_ns"] = min(best["nop_ns"], measure(lambda: nop(), 500_000))
        rt_only.keep_gil(nop)
        best["nop_kept_ns"] = min(best["nop_kept_ns"], measure(lambda: nop(), 500_000))
        rt_only.keep_gil(nop, False)
        rt_only.set_release_gil("auto")
        best["nop_auto_ns"] = min(best["nop_auto_ns"], measure(lambda: nop(), 500_000))
        best["abs_ns"] = min(best["abs_ns"], measure(lambda: abs(1), 500_000))
    print(json.dumps(best))


def measure(fn: Callable[[], Any], number: int) -> float:
    return timeit.timeit(fn, number=number) / number * 1e9


if __name__ == "__main__" and "--floor" in sys.argv:
    floor_main()
    sys.exit(0)

import tvm_ffi  # noqa: E402  (first: it loads libtvm_ffi.so; ours reuses it)
import tvm_ffi.testing as cy  # noqa: E402

import tvmffi_runtime as rt  # noqa: E402
from tvmffi_testing import testing as gen  # noqa: E402

Case = tuple[str, Callable[[], Any], Callable[[], Any], bool]  # name, ours, cython, is_call


def _call_cases() -> list[Case]:
    """Calls, constructors, fields, callbacks and iteration, ours beside the Cython binding's."""
    g = tvm_ffi.get_global_func
    c_nop, c_add_one, c_echo = g("testing.nop"), g("testing.add_one"), g("testing.echo")
    c_float, c_bool = g("testing.schema_id_float"), g("testing.schema_id_bool")
    c_arr, c_apply = g("testing.schema_id_arr_int"), g("testing.apply")
    ints = list(range(100))
    o_pair, c_pair = gen.TestIntPair(1, 2), cy.TestIntPair(1, 2)
    o_base, c_base = gen.TestObjectBase(v_i64=1, v_str="hello"), cy.TestObjectBase(v_i64=1, v_str="hello")
    o_holder = gen.TestObjectPtrHolder(value=o_base)
    c_holder = cy.TestObjectPtrHolder(value=c_base)
    o_objs = rt.Array([gen.TestIntPair(i, i) for i in range(100)])
    c_objs = tvm_ffi.convert([cy.TestIntPair(i, i) for i in range(100)])
    cb = lambda x: x  # noqa: E731

    def o_write() -> None:
        o_base.v_i64 = 5

    def c_write() -> None:
        c_base.v_i64 = 5

    return [
        ("nop()", gen.nop, c_nop, True),
        ("add_one(1)", lambda: gen.add_one(1), lambda: c_add_one(1), True),
        ('echo("abc")', lambda: gen.echo("abc"), lambda: c_echo("abc"), True),
        ("float arg", lambda: gen.schema_id_float(1.5), lambda: c_float(1.5), True),
        ("bool arg", lambda: gen.schema_id_bool(True), lambda: c_bool(True), True),
        ("Array of 100 ints in/out", lambda: gen.schema_id_arr_int(ints), lambda: c_arr(ints), True),
        ("TestIntPair(1, 2)", lambda: gen.TestIntPair(1, 2), lambda: cy.TestIntPair(1, 2), True),
        ("pair.sum()", o_pair.sum, c_pair.sum, True),
        ("read int field", lambda: o_pair.a, lambda: c_pair.a, False),
        ("read str field", lambda: o_base.v_str, lambda: c_base.v_str, False),
        ("read object field", lambda: o_holder.value, lambda: c_holder.value, False),
        ("write int field", o_write, c_write, True),
        ("callback from C++", lambda: gen.apply(cb, 1), lambda: c_apply(cb, 1), True),
        # the comprehension is what is measured
        ("iterate Array of 100 objects", lambda: [x for x in o_objs], lambda: [x for x in c_objs], True),  # noqa: C416
    ]


def _structural_cases() -> list[Case]:
    """The structural engines over a 10 100-node tree, each checked to do the same work both ways."""
    # a 10 100-node tree: 100 Arrays of 100 pairs, walked with one typed hook on TestIntPair
    from tvmffi_testing.visitors import Walker

    o_tree = rt.Array([rt.Array([gen.TestIntPair(i, j) for j in range(100)]) for i in range(100)])
    c_tree = tvm_ffi.convert([[cy.TestIntPair(i, j) for j in range(100)] for i in range(100)])

    class CountPairs(Walker):
        def __init__(self) -> None:
            self.n = 0

        def walk_test_int_pair(self, node: gen.TestIntPair) -> None:
            self.n += 1

    def o_walk() -> int:
        w = CountPairs()
        rt.structural_walk(o_tree, w)
        return w.n

    def c_walk() -> int:
        count = [0]

        def on_pair(node: Any) -> None:
            count[0] += 1

        tvm_ffi.structural_walk(c_tree, [(cy.TestIntPair, on_pair)], order="pre")
        return count[0]

    assert o_walk() == c_walk() == 10_000

    # the same tree mapped with an identity hook on TestIntPair (every node rebuilt unchanged)
    def keep(node: gen.TestIntPair) -> gen.TestIntPair:
        return node

    def o_map() -> Any:
        return rt.structural_map(o_tree, keep, "post")

    def c_map() -> Any:
        return tvm_ffi.structural_map(c_tree, [(cy.TestIntPair, lambda node: node)], order="post")

    assert len(o_map()) == len(c_map()) == 100

    # visit and mutate: the hook owns descent (a pair has no children to descend into)
    from tvmffi_testing.visitors import Mutator, Visitor

    class VisitPairs(Visitor):
        def visit_test_int_pair(self, node: gen.TestIntPair) -> None:
            return None

    class KeepPairs(Mutator):
        def mutate_test_int_pair(self, node: gen.TestIntPair) -> gen.TestIntPair:
            return node

    def o_visit() -> Any:
        return rt.structural_visit(o_tree, VisitPairs())

    def c_visit() -> Any:
        return tvm_ffi.structural_visit(c_tree, [(cy.TestIntPair, lambda node, visitor: None)])

    def o_mutate() -> Any:
        return rt.structural_mutate(o_tree, KeepPairs())

    def c_mutate() -> Any:
        return tvm_ffi.structural_mutate(c_tree, [(cy.TestIntPair, lambda node, mutator: node)])

    assert o_visit() is None and c_visit() is None
    assert len(o_mutate()) == len(c_mutate()) == 100

    return [
        ("walk 10 100 nodes, typed hook", o_walk, c_walk, False),
        ("map 10 100 nodes, identity hook", o_map, c_map, False),
        ("visit 10 100 nodes, typed hook", o_visit, c_visit, False),
        ("mutate 10 100 nodes, identity hook", o_mutate, c_mutate, False),
    ]


def container_cases() -> list[Case]:
    """Sequence and mapping operations on the same values both ways: an Array, a List and a Map /
    Dict of 100 items (str keys ``k0`` ... ``k99``), and a 3-dim Shape."""
    ints = list(range(100))
    pairs = {f"k{i}": i for i in range(100)}
    o_arr, c_arr = rt.Array(ints), tvm_ffi.Array(ints)
    o_list, c_list = rt.List(ints), tvm_ffi.List(ints)
    o_map, c_map = rt.Map(pairs), tvm_ffi.Map(pairs)
    o_dict, c_dict = rt.Dict(pairs), tvm_ffi.Dict(pairs)
    o_shape, c_shape = rt.Shape((2, 3, 4)), tvm_ffi.Shape((2, 3, 4))
    big = "x" * 100_000
    echo, c_echo = gen.echo, tvm_ffi.get_global_func("testing.echo")
    return [
        ("array[50]", lambda: o_arr[50], lambda: c_arr[50], False),
        ("array[-1]", lambda: o_arr[-1], lambda: c_arr[-1], False),
        ("len(array)", lambda: len(o_arr), lambda: len(c_arr), False),
        ("array[10:20]", lambda: o_arr[10:20], lambda: c_arr[10:20], False),
        ("50 in array", lambda: 50 in o_arr, lambda: 50 in c_arr, False),
        ("list(array)", lambda: list(o_arr), lambda: list(c_arr), False),
        ("list[50]", lambda: o_list[50], lambda: c_list[50], False),
        ("len(list)", lambda: len(o_list), lambda: len(c_list), False),
        ("len(map)", lambda: len(o_map), lambda: len(c_map), False),
        ('map["k50"]', lambda: o_map["k50"], lambda: c_map["k50"], False),
        ('"k50" in map', lambda: "k50" in o_map, lambda: "k50" in c_map, False),
        ('map.get("nope")', lambda: o_map.get("nope"), lambda: c_map.get("nope"), False),
        ("list(map.items())", lambda: list(o_map.items()), lambda: list(c_map.items()), False),
        ("list(map)", lambda: list(o_map), lambda: list(c_map), False),
        ("len(dict)", lambda: len(o_dict), lambda: len(c_dict), False),
        ('dict["k50"]', lambda: o_dict["k50"], lambda: c_dict["k50"], False),
        ('"k50" in dict', lambda: "k50" in o_dict, lambda: "k50" in c_dict, False),
        ("shape[1]", lambda: o_shape[1], lambda: c_shape[1], False),
        ("len(shape)", lambda: len(o_shape), lambda: len(c_shape), False),
        ("tuple(shape)", lambda: tuple(o_shape), lambda: tuple(c_shape), False),
        ("Array(range(100))", lambda: rt.Array(range(100)), lambda: tvm_ffi.Array(range(100)), False),
        ("Map({100 str: int})", lambda: rt.Map(pairs), lambda: tvm_ffi.Map(pairs), False),
        ("echo(100 kB str)", lambda: echo(big), lambda: c_echo(big), False),
    ]


def tensor_cases() -> list[Case]:
    """DLPack on the kernel-call path: ``add_one_cpu(x, y)`` from ``examples/add_one`` (built into
    ``benchmarks/build/``) with numpy arrays and, when torch imports, torch tensors; and the
    conversions each way. Ours go through the generated ``add_one_pkg``, theirs through
    ``tvm_ffi.load_module``."""
    import importlib.util

    import numpy as np

    spec = importlib.util.spec_from_file_location("add_one_build", ROOT / "examples" / "add_one" / "build.py")
    assert spec is not None and spec.loader is not None
    build_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_module)
    library = build_module.build(ROOT / "benchmarks" / "build" / "add_one")
    os.environ["ADD_ONE_PKG_LIBRARY"] = str(library)
    sys.path.insert(0, str(ROOT / "examples" / "add_one"))
    import add_one_pkg

    o_add, c_add = add_one_pkg.add_one_cpu, tvm_ffi.load_module(str(library)).add_one_cpu
    x, y = np.arange(16, dtype=np.float32), np.empty(16, dtype=np.float32)
    o_t, c_t = rt.Tensor.from_dlpack(x), tvm_ffi.from_dlpack(x)
    rows: list[Case] = [
        ("add_one_cpu(x, y), numpy arrays", lambda: o_add(x, y), lambda: c_add(x, y), False),
        ("Tensor.from_dlpack(numpy)", lambda: rt.Tensor.from_dlpack(x), lambda: tvm_ffi.from_dlpack(x), False),
        ("np.from_dlpack(tensor)", lambda: np.from_dlpack(o_t), lambda: np.from_dlpack(c_t), False),
        # the producer's own part of each numpy argument, the floor of the rows above: the legacy
        # capsule both bindings ask numpy for, made and dropped (the same code both sides)
        ("numpy x.__dlpack__() alone", lambda: x.__dlpack__(), lambda: x.__dlpack__(), False),
    ]
    try:
        import torch
    except ImportError:
        return rows
    tx, ty = torch.arange(16, dtype=torch.float32), torch.empty(16, dtype=torch.float32)
    return [
        *rows,
        ("add_one_cpu(x, y), torch tensors", lambda: o_add(tx, ty), lambda: c_add(tx, ty), False),
        ("Tensor.from_dlpack(torch)", lambda: rt.Tensor.from_dlpack(tx), lambda: tvm_ffi.from_dlpack(tx), False),
        ("torch.from_dlpack(tensor)", lambda: torch.from_dlpack(o_t), lambda: torch.from_dlpack(c_t), False),
    ]


#: The tables, by the name ``--table`` selects them with.
TABLES: dict[str, Callable[[], list[Case]]] = {
    "calls": lambda: _call_cases(),
    "structural": lambda: _structural_cases(),
    "containers": lambda: container_cases(),
    "tensors": lambda: tensor_cases(),
}


def cases(tables: list[str] | None = None) -> list[tuple[str, Case]]:
    """(table name, case) of the cases of ``tables`` (all when None), in table order."""
    return [(name, case) for name, make in TABLES.items() if tables is None or name in tables for case in make()]


def _measure(selected: list[Case], rounds: int, repeat: int, number: int) -> list[dict[str, Any]]:
    """One row per case: the best time of ours and of Cython's, and the median ratio.

    The whole table is measured ``rounds`` times over; each case reports the median of its
    per-round ratios (a noisy neighbour spoils a round of one case, not the result)."""
    for _, ours, theirs, _ in selected:
        assert_same = ours(), theirs()  # warm up both (and resolve lazy lookups)
        del assert_same
    ratios: dict[str, list[float]] = {name: [] for name, *_ in selected}
    best: dict[str, list[float]] = {name: [math.inf, math.inf] for name, *_ in selected}
    for _ in range(rounds):
        for name, ours, theirs, _ in selected:
            calls = number or max(200, int(2e5 / max(1.0, measure(ours, 50) / 100)))
            calls = min(calls, 200_000)
            best_o = best_c = math.inf
            for _ in range(repeat):
                best_o = min(best_o, measure(ours, calls))
                best_c = min(best_c, measure(theirs, calls))
            ratios[name].append(best_o / best_c)
            best[name] = [min(best[name][0], best_o), min(best[name][1], best_c)]
    return [
        {
            "case": name,
            "ours_ns": best[name][0],
            "cython_ns": best[name][1],
            "ratio": statistics.median(ratios[name]),
            "call": is_call,
        }
        for name, _, _, is_call in selected
    ]


def _floor(rounds: int) -> dict[str, float]:
    """The floor any binding pays, measured in a process of ours alone (see floor_main): the
    median of ``rounds`` runs."""
    runs: list[dict[str, float]] = []
    for _ in range(rounds):
        proc = subprocess.run([sys.executable, __file__, "--floor"], check=True, capture_output=True, text=True)
        runs.append(json.loads(proc.stdout))
    runs.sort(key=lambda r: r["nop_ns"] / r["abs_ns"])
    return runs[len(runs) // 2]


def _add_pure_column(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """The pure-ctypes path's times and ratios, measured in a second process, added to ``rows``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "pure.json"
        cmd = [sys.executable, __file__, "--pure", "--repeat", str(args.repeat), "--json", str(out)]
        cmd += ["--rounds", str(args.rounds)]
        cmd += ["--only", args.only] if args.only else []
        cmd += [arg for table in args.table or () for arg in ("--table", table)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        pure = {r["case"]: r for r in json.loads(out.read_text())["rows"]}
    for r in rows:
        r["pure_ns"] = pure[r["case"]]["ours_ns"]
        r["pure_ratio"] = pure[r["case"]]["ratio"]  # pure ÷ Cython, measured in that process


def _report(rows: list[dict[str, Any]], floor: dict[str, float] | None) -> None:
    """The table, the geometric mean ratio over call cases, and the floor when measured."""
    width = max(len(r["case"]) for r in rows)
    extra = "  pure/Cy" if "pure_ratio" in rows[0] else ""
    print(f"{'case':<{width}}  {'ours ns':>9}  {'Cython ns':>9}  {'ratio':>6}{extra}")
    for i, r in enumerate(rows):
        if i and r["table"] != rows[i - 1]["table"]:
            print(f"-- {r['table']}")
        tail = f"  {r['pure_ratio']:7.2f}" if "pure_ratio" in r else ""
        print(f"{r['case']:<{width}}  {r['ours_ns']:9.0f}  {r['cython_ns']:9.0f}  {r['ratio']:6.2f}{tail}")
    for key, label in (("ratio", "ours"), ("pure_ratio", "pure ctypes")):
        calls = [r[key] for r in rows if r["call"] and key in r]
        if calls:
            geo = math.exp(sum(math.log(x) for x in calls) / len(calls))
            print(f"{label}: geometric mean ratio over call cases: {geo:.2f}; max: {max(calls):.2f}")
    if floor is not None:
        floor["ratio"] = floor["nop_ns"] / floor["abs_ns"]
        floor["ratio_auto"] = floor["nop_auto_ns"] / floor["abs_ns"]
        floor["ratio_kept"] = floor["nop_kept_ns"] / floor["abs_ns"]
        print(
            f"without tvm_ffi in the process: lambda: abs(1) {floor['abs_ns']:.0f} ns; lambda: nop()"
            f" {floor['nop_ns']:.0f} ns ({floor['ratio']:.2f}x), with set_release_gil('auto')"
            f" {floor['nop_auto_ns']:.0f} ns ({floor['ratio_auto']:.2f}x), with keep_gil(nop)"
            f" {floor['nop_kept_ns']:.0f} ns ({floor['ratio_kept']:.2f}x)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=1, help="measure the table this many times; median ratios")
    parser.add_argument("--number", type=int, default=0, help="calls per repeat (0: auto)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", help="run only cases whose name contains this text")
    parser.add_argument("--table", action="append", choices=sorted(TABLES), help="run only this table (repeatable)")
    parser.add_argument("--pure", action="store_true", help="measure the pure-ctypes path")
    parser.add_argument("--with-pure", action="store_true", help="add a pure-ctypes column (second process)")
    args = parser.parse_args(argv)
    print(f"runtime path: {'compiled' if rt._backend.accelerated() else 'pure ctypes'}")
    selected = [(table, c) for table, c in cases(args.table) if not args.only or args.only in c[0]]
    rows = _measure([c for _, c in selected], args.rounds, args.repeat, args.number)
    for row, (table, _) in zip(rows, selected, strict=True):
        row["table"] = table
    floor = None if args.only or args.table else _floor(args.rounds)
    if args.with_pure and not args.pure:
        _add_pure_column(rows, args)
    _report(rows, floor)
    if args.json:
        path = "compiled" if rt._backend.accelerated() else "pure ctypes"
        out = {"runtime": path, "rows": rows, "floor": floor}
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
