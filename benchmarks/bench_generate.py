"""Generator cost on a large synthetic library (tests/fixtures/large_ir.py).

    python benchmarks/bench_generate.py [--types 500] [--functions 2000] [--namespaces 10]
                                        [--units 8] [--jobs 2] [--build-dir DIR] [--json out.json]

Builds the library (C++ split into ``--units`` translation units compiled ``--jobs`` at a time and
linked into one .so, cached by content under ``--build-dir``; the compile time is reported
separately and is not part of the generator's numbers), then times:

  (a) snapshot            the registry read in a child process (``take_snapshot``)
  (b) from snapshot       ``tvmffi-gen --from-snapshot`` in a fresh interpreter (model + render +
                          write), plus the in-process split into model / render / write
  (c) full run            ``tvmffi-gen LIB -o OUT`` in a fresh interpreter
  (d) mypy --strict       ``tvmffi_gen.verify.checkers.run_mypy`` over the output, in a fresh interpreter
  (e) import              fresh interpreters, median of ``--repeat`` runs: ``pass``,
                          ``import tvmffi_runtime``, ``import <pkg>`` (loads the library),
                          one namespace, every namespace

Prints a table and writes the numbers as JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "runtime"), str(ROOT)]

from fixtures.large_ir import Plan, make_plan, make_units  # noqa: E402

if TYPE_CHECKING:
    from tvmffi_gen.registry.snapshot import Snapshot

PKG = "bigpkg"


def _tvm_ffi_dirs() -> tuple[Path, list[str]]:
    import tvmffi_runtime as rt

    libdir = Path(rt.LIB_PATH).parent
    includes = [f"-I{libdir.parent / 'include'}"]
    dlpack = libdir.parent / "3rdparty" / "dlpack" / "include"
    if dlpack.is_dir():
        includes.append(f"-I{dlpack}")
    return libdir, includes


def build_library(
    namespaces: int, types_per_ns: int, funcs_per_ns: int, seed: int, units: int, jobs: int, build_dir: Path
) -> tuple[Path, float, bool]:
    """(library, compile seconds, cached?): compile the units in parallel and link them."""
    header, sources = make_units(namespaces, types_per_ns, funcs_per_ns, seed, units)
    flags = ["-std=c++17", "-O0", "-fPIC"]
    digest = hashlib.sha256((header + "".join(sources) + repr(flags)).encode()).hexdigest()[:12]
    folder = build_dir / f"large_ir-{digest}"
    lib = folder / "libbig.so"
    stamp = folder / "build.json"
    if lib.is_file() and stamp.is_file():
        return lib, float(json.loads(stamp.read_text())["compile_seconds"]), True
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "big.h").write_text(header)
    for k, src in enumerate(sources):
        (folder / f"unit{k}.cc").write_text(src)
    libdir, includes = _tvm_ffi_dirs()

    def compile_unit(k: int) -> float:
        start = time.perf_counter()
        cmd = [
            "g++",
            *flags,
            *includes,
            f"-I{folder}",
            "-c",
            str(folder / f"unit{k}.cc"),
            "-o",
            str(folder / f"unit{k}.o"),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"g++ failed on unit{k}.cc:\n{proc.stderr[-4000:]}")
        return time.perf_counter() - start

    start = time.perf_counter()
    print(f"compiling {len(sources)} translation units with {jobs} jobs into {folder} ...", flush=True)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        per_unit = list(pool.map(compile_unit, range(len(sources))))
    objects = [str(folder / f"unit{k}.o") for k in range(len(sources))]
    tmp = str(lib) + ".tmp"
    proc = subprocess.run(
        ["g++", "-shared", *objects, "-o", tmp, f"-L{libdir}", "-ltvm_ffi"], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"link failed:\n{proc.stderr[-4000:]}")
    os.replace(tmp, lib)
    elapsed = time.perf_counter() - start
    for obj in objects:  # hundreds of MB at -O0; the library is what is cached
        os.remove(obj)
    stamp.write_text(json.dumps({"compile_seconds": elapsed, "unit_seconds": per_unit, "jobs": jobs}))
    return lib, elapsed, False


def _env(extra_path: list[Path] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(p) for p in extra_path or []] + [str(ROOT / "runtime"), str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def _timed_run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed, proc.stdout


def _median_run(code: str, env: dict[str, str], repeat: int) -> tuple[float, list[float]]:
    times = [_timed_run([sys.executable, "-c", code], env)[0] for _ in range(repeat)]
    return statistics.median(times), times


def _package_stats(pkg: Path) -> dict[str, int]:
    files = list(pkg.rglob("*.py"))
    return {
        "modules": len(files),
        "lines": sum(p.read_text().count("\n") for p in files),
        "bytes": sum(p.stat().st_size for p in files),
    }


def _time_snapshot(lib: Path, work: Path, repeat: int) -> tuple[Snapshot, Path, dict[str, Any]]:
    """(a) the snapshot in a child process; the last one, saved, and its timings."""
    from tvmffi_gen.registry.snapshot_process import take_snapshot

    snap_times = []
    snapshot = None
    for _ in range(repeat):
        start = time.perf_counter()
        snapshot = take_snapshot(lib)
        snap_times.append(time.perf_counter() - start)
    assert snapshot is not None
    snap_file = work / "snapshot.json"
    snap_file.write_text(snapshot.to_json())
    timings = {"seconds": statistics.median(snap_times), "runs": snap_times, "json_bytes": snap_file.stat().st_size}
    return snapshot, snap_file, timings


def _time_from_snapshot(
    snapshot: Snapshot, snap_file: Path, work: Path, repeat: int, env: dict[str, str]
) -> dict[str, Any]:
    """(b) from a saved snapshot: the CLI in a fresh interpreter, and the in-process phases."""
    cli_times = []
    for k in range(repeat):
        out = work / f"from_snapshot{k}" / PKG
        t, _ = _timed_run(
            [sys.executable, "-m", "tvmffi_gen", "--from-snapshot", str(snap_file), "-o", str(out), "-q"], env
        )
        cli_times.append(t)
    from tvmffi_gen.cli.main import _tvm_ffi_libdir
    from tvmffi_gen.model.builder import build_model
    from tvmffi_gen.render.package import render_package
    from tvmffi_gen.write.writer import apply_plan, plan_output

    phases: dict[str, list[float]] = {"model": [], "render": [], "write": []}
    for k in range(repeat):
        t0 = time.perf_counter()
        model = build_model(snapshot, PKG, [])
        t1 = time.perf_counter()
        files = render_package(model, _tvm_ffi_libdir())
        t2 = time.perf_counter()
        write_plan = plan_output(work / f"inproc{k}" / PKG, files, "tvmffi-gen bench")
        apply_plan(write_plan)
        t3 = time.perf_counter()
        phases["model"].append(t1 - t0)
        phases["render"].append(t2 - t1)
        phases["write"].append(t3 - t2)
    return {
        "cli_seconds": statistics.median(cli_times),
        "cli_runs": cli_times,
        **{f"{name}_seconds": statistics.median(v) for name, v in phases.items()},
    }


def _time_full_run(lib: Path, pkg: Path, work: Path, repeat: int, env: dict[str, str]) -> dict[str, Any]:
    """(c) the full run, library to package (the first run writes ``pkg``)."""
    full_times = []
    for k in range(repeat):
        out = work / f"full{k}" / PKG if k else pkg
        t, _ = _timed_run([sys.executable, "-m", "tvmffi_gen", str(lib), "-o", str(out), "-q"], env)
        full_times.append(t)
    return {"seconds": statistics.median(full_times), "runs": full_times}


def _time_mypy(pkg: Path, env: dict[str, str]) -> dict[str, Any]:
    """(d) mypy --strict over the output."""
    code = (
        "import sys; from pathlib import Path; from tvmffi_gen.verify.checkers import run_mypy; "
        f"e, r = run_mypy(Path({str(pkg)!r})); print(e); print(r[:2000], file=sys.stderr)"
    )
    t, stdout = _timed_run([sys.executable, "-c", code], env)
    return {"seconds": t, "errors": int(stdout.split()[0])}


def _time_imports(plan: Plan, pkg: Path, repeat: int) -> dict[str, Any]:
    """(e) imports in fresh interpreters: the runtime, the package, one namespace, all of them."""
    ienv = _env([pkg.parent])
    namespaces = sorted(
        {".".join(t.key.split(".")[:-1]) for t in plan.types}
        | {".".join(f.name.split(".")[:-1]) for f in plan.functions}
    )
    all_imports = "; ".join(f"import {PKG}.{n}" for n in namespaces if n)
    cases = {
        "python -c pass": "pass",
        "import tvmffi_runtime": "import tvmffi_runtime",
        f"import {PKG}": f"import {PKG}",
        f"import {PKG}.big.ns0": f"import {PKG}.big.ns0",
        f"import all {len(namespaces)} namespaces": all_imports,
    }
    timings: dict[str, Any] = {}
    for label, code in cases.items():
        med, runs = _median_run(code, ienv, repeat)
        timings[label] = {"median_seconds": med, "runs": runs}
    return timings


def run(args: argparse.Namespace) -> dict[str, Any]:
    ns = args.namespaces
    types_per_ns = max(1, math.ceil(args.types / ns))
    funcs_per_ns = max(1, math.ceil(args.functions / ns))
    plan = make_plan(ns, types_per_ns, funcs_per_ns, args.seed)
    summary = plan.summary()
    print(
        f"library: {summary['types']} types ({ns * types_per_ns} regular, {len(plan.chain)}-level chain, "
        f"{ns} enums), {summary['functions']} global functions, {summary['fields']} fields, "
        f"{summary['methods']} methods, {summary['namespaces']} namespaces",
        flush=True,
    )
    build_dir = Path(args.build_dir).resolve()
    lib, compile_s, cached = build_library(ns, types_per_ns, funcs_per_ns, args.seed, args.units, args.jobs, build_dir)
    print(f"library {lib} ({'cached; ' if cached else ''}compile {compile_s:.1f} s)", flush=True)

    work = Path(tempfile.mkdtemp(prefix="bench_generate_"))
    results: dict[str, Any] = {
        "config": {
            "namespaces": ns,
            "types_per_ns": types_per_ns,
            "funcs_per_ns": funcs_per_ns,
            "seed": args.seed,
            "units": args.units,
            "jobs": args.jobs,
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
        },
        "library_size": summary,
        "compile_seconds": round(compile_s, 2),
        "compile_cached": cached,
        "library": str(lib),
    }
    env = _env()
    try:
        snapshot, snap_file, results["snapshot"] = _time_snapshot(lib, work, args.gen_repeat)
        results["from_snapshot"] = _time_from_snapshot(snapshot, snap_file, work, args.gen_repeat, env)
        pkg = work / "full" / PKG
        results["full_run"] = _time_full_run(lib, pkg, work, args.gen_repeat, env)
        results["package"] = _package_stats(pkg)
        results["mypy"] = _time_mypy(pkg, env)
        results["import"] = _time_imports(plan, pkg, args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            results["work_dir"] = str(work)
    return results


def print_table(r: dict[str, Any]) -> None:
    c, size = r["config"], r["library_size"]
    rows: list[tuple[str, str]] = [
        (
            "library",
            f"{size['types']} types, {size['functions']} functions, {size['fields']} fields, "
            f"{size['methods']} methods, {size['namespaces']} type namespaces",
        ),
        (
            "compile (g++ -O0, not generator)",
            f"{r['compile_seconds']:.1f} s ({c['units']} units, "
            f"{c['jobs']} jobs{', cached' if r['compile_cached'] else ''})",
        ),
        (
            "(a) snapshot (child process)",
            f"{r['snapshot']['seconds']:.2f} s (JSON {r['snapshot']['json_bytes'] / 1e6:.1f} MB)",
        ),
        ("(b) --from-snapshot (fresh CLI)", f"{r['from_snapshot']['cli_seconds']:.2f} s"),
        ("    model (in process)", f"{r['from_snapshot']['model_seconds']:.2f} s"),
        ("    render (in process)", f"{r['from_snapshot']['render_seconds']:.2f} s"),
        ("    write (in process)", f"{r['from_snapshot']['write_seconds']:.2f} s"),
        ("(c) full tvmffi-gen run", f"{r['full_run']['seconds']:.2f} s"),
        (
            "    output",
            f"{r['package']['modules']} modules, {r['package']['lines']} lines, {r['package']['bytes'] / 1e6:.1f} MB",
        ),
        ("(d) mypy --strict", f"{r['mypy']['seconds']:.1f} s, {r['mypy']['errors']} errors"),
    ]
    for label, v in r["import"].items():
        rows.append((f"(e) {label}", f"{v['median_seconds'] * 1000:.0f} ms (median of {len(v['runs'])})"))
    width = max(len(a) for a, _ in rows)
    print()
    for a, b in rows:
        print(f"{a:<{width}}  {b}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--types", type=int, default=500, help="regular types in all (the chain and enums come on top)")
    p.add_argument("--functions", type=int, default=2000, help="global functions in all (at least)")
    p.add_argument("--namespaces", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--units", type=int, default=8, help="C++ translation units")
    p.add_argument("--jobs", type=int, default=2, help="parallel g++ processes")
    p.add_argument("--build-dir", default=str(ROOT / "benchmarks" / "build"))
    p.add_argument("--repeat", type=int, default=5, help="runs per import measurement (median)")
    p.add_argument("--gen-repeat", type=int, default=3, help="runs per generator measurement (median)")
    p.add_argument("--keep", action="store_true", help="keep the generated packages")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    results = run(args)
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
