"""Time ``tvmffi-gen --stubs-for PKG`` by phase: a baseline revision against this checkout.

    python benchmarks/bench_stubs.py [--baseline-rev 596b70b] [--repeat 3] [--json results_stubs.json]

For each package (``tvm`` with ``--project --exclude tvm.s_tir.meta_schedule.testing`` when
apache-tvm is installed, and ``tvm_ffi``), runs, alternately and ``--repeat`` times each:

* ``baseline``: the generator of ``--baseline-rev`` (exported with ``git archive``), as it was;
* ``new, cold``: this checkout with its cache off (``TVMFFI_GEN_NO_CACHE=1``): a first run;
* ``new, warm``: this checkout with a cache filled by an untimed run before: a rerun;
* ``floor: import``: importing PKG and every module a first run imports, in one fresh process
  (``importing.import_all`` over ``module_files``, what the child does before reading facts);
* ``floor: stubgen``: mypy's stubgen over the same modules (``stubgen.python_stubs``, uncached).

The two floors are what a first run cannot do without (it overlaps them, in two processes); the
table ends with each first run's wall time over the slower floor of its round.

Each run is a fresh process writing a fresh OUT; its phases are timed by wrapping the functions
``build_stubs`` calls (wall seconds, and CPU seconds of the process and of the children it waited
for in the phase): the import of PKG in the child (stubgen runs meanwhile), the wait for stubgen
after it, the libcst rewrite, the ``mypy --strict`` self-check (the CPU of its thread and of
mypy's process: the allowlist is made in the main thread meanwhile, and counted in "other"), and
the total of ``run_stubs``.
Every run's files are compared byte for byte with the first ``new, cold`` run's. Prints a table
(medians, with min-max) and writes the JSON of every run.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PHASES = ["import (child)", "stubgen wait", "libcst rewrite", "mypy self-check", "other", "total"]


def _drive(src: str, package: str, out: str, args: list[str]) -> None:
    """In a fresh process: run ``run_stubs`` of the tree ``src`` with its phases timed; JSON on stdout."""
    sys.path.insert(0, src)
    try:
        from tvmffi_gen.stubs import pipeline
    except ImportError:  # a revision before stubs/build.py was named pipeline.py
        from tvmffi_gen.stubs import build as pipeline  # type: ignore[no-redef]

    times: dict[str, list[float]] = {}

    def clock(thread: bool = False) -> tuple[float, float]:
        t = os.times()
        own = time.thread_time() if thread else t.user + t.system
        return time.perf_counter(), own + t.children_user + t.children_system

    def timed(name: str, fn: Any, thread: bool = False) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            w0, c0 = clock(thread)
            try:
                return fn(*a, **k)
            finally:
                w1, c1 = clock(thread)
                acc = times.setdefault(name, [0.0, 0.0])
                acc[0] += w1 - w0
                acc[1] += c1 - c0

        return wrapper

    setattr(pipeline, "take_collection", timed("import (child)", getattr(pipeline, "take_collection")))
    # the CPU of its own thread (the allowlist is made in another one meanwhile) and of mypy's process
    selfcheck = timed("mypy self-check", getattr(pipeline, "silence_own_errors"), thread=True)
    setattr(pipeline, "silence_own_errors", selfcheck)
    try:
        from tvmffi_gen.stubs import cache
    except ImportError:  # a revision before the cache
        stubs_class = getattr(pipeline, "PythonStubs")
        stubs_class.result = timed("stubgen wait", stubs_class.result)
        setattr(pipeline, "augment", timed("libcst rewrite", getattr(pipeline, "augment")))
    else:
        cache.CachedPythonStubs.result = timed("stubgen wait", cache.CachedPythonStubs.result)  # type: ignore[method-assign]
        cache.cached_augment = timed("libcst rewrite", cache.cached_augment)
    from tvmffi_gen.stubs import run_stubs

    notes: list[str] = []
    run = timed("total", run_stubs)
    project = "--project" in args
    exclude = [args[i + 1] for i, a in enumerate(args) if a == "--exclude"]
    code = run(package, out, exclude, [], project, False, 600.0, notes.append, lambda m: None)
    total = times["total"]
    inner = [times.get(p, [0.0, 0.0]) for p in PHASES[:4]]
    times["other"] = [total[0] - sum(w for w, _ in inner), total[1] - sum(c for _, c in inner)]
    print(json.dumps({"code": code, "times": times, "info": notes}))


def _floor(kind: str, package: str, args: list[str]) -> None:
    """In a fresh process: one floor of a first run (see the module's doc); JSON on stdout."""
    sys.path.insert(0, str(ROOT))
    from tvmffi_gen.stubs.child_run import modules_on_disk

    exclude = [args[i + 1] for i, a in enumerate(args) if a == "--exclude"]
    t0, w0 = os.times(), time.perf_counter()
    files = modules_on_disk(package, exclude) or {}
    if kind == "import":
        from tvmffi_gen.stubs.importing import import_all, quick_getmodule

        quick_getmodule()
        ok, _ = import_all(package, files, {})
    else:
        from tvmffi_gen.stubs.stubgen import python_stubs

        ok = list(python_stubs(files))
    t1, w1 = os.times(), time.perf_counter()
    cpu = (t1.user + t1.system + t1.children_user + t1.children_system) - (
        t0.user + t0.system + t0.children_user + t0.children_system
    )
    print(json.dumps({"code": 0, "times": {"total": [w1 - w0, cpu]}, "info": [f"{len(ok)} modules"]}))
    sys.stdout.flush()
    os._exit(0)  # skip the package's atexit handlers


def _run(src: Path, package: str, out: Path, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    env = {**env, "PYTHONPATH": str(src)}  # the tree under test, for the driver and the importing child
    out.mkdir(parents=True, exist_ok=True)
    floor = env.get("BENCH_STUBS_FLOOR")
    driver = ["--floor", floor, package] if floor else ["--drive", str(src), package, str(out)]
    proc = subprocess.run(
        [sys.executable, __file__, *driver, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=out.parent,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{src} --stubs-for {package} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _same(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(_same(a / d, b / d) for d in cmp.common_dirs)


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    p.add_argument("--baseline-rev", help="git revision of the generator to compare with (none: no baseline)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--package", action="append", help="tvm and/or tvm_ffi (default: both, tvm when installed)")
    p.add_argument("--json", help="write every run's timings here")
    a = p.parse_args()
    packages = a.package or (
        ["tvm"] if subprocess.run([sys.executable, "-c", "import tvm"], capture_output=True).returncode == 0 else []
    ) + ["tvm_ffi"]
    args_of = {"tvm": ["--project", "--exclude", "tvm.s_tir.meta_schedule.testing"], "tvm_ffi": []}
    work = Path(tempfile.mkdtemp(prefix="bench_stubs_"))
    env0 = {k: v for k, v in os.environ.items() if k not in ("TVMFFI_GEN_NO_CACHE", "TVMFFI_GEN_CACHE_DIR")}
    variants: dict[str, tuple[Path, dict[str, str]]] = {}
    if a.baseline_rev:
        base_src = work / "baseline"
        base_src.mkdir()
        archive = subprocess.run(["git", "archive", a.baseline_rev], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base_src)], input=archive, check=True)
        variants["baseline"] = (base_src, {**env0, "TVMFFI_GEN_NO_CACHE": "1"})
    variants["new, cold"] = (ROOT, {**env0, "TVMFFI_GEN_NO_CACHE": "1"})
    variants["new, warm"] = (ROOT, {**env0, "TVMFFI_GEN_CACHE_DIR": str(work / "cache")})
    variants["floor: import"] = (ROOT, {**env0, "BENCH_STUBS_FLOOR": "import"})
    variants["floor: stubgen"] = (ROOT, {**env0, "BENCH_STUBS_FLOOR": "stubgen", "TVMFFI_GEN_NO_CACHE": "1"})
    report: dict[str, Any] = {
        "baseline_rev": a.baseline_rev,
        "repeat": a.repeat,
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg(),
        "runs": {},
    }
    try:
        for package in packages:
            args = args_of.get(package, [])
            _run(ROOT, package, work / "fill", args, variants["new, warm"][1])  # fills the warm cache
            reference = work / f"{package}-ref"
            runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
            for i in range(a.repeat):
                for variant, (src, env) in variants.items():
                    out = work / f"{package}-{variant.replace(', ', '-')}-{i}"
                    r = _run(src, package, out, args, env)
                    if not reference.exists() and variant == "new, cold":
                        shutil.copytree(out, reference)
                    r["load"] = os.getloadavg()[0]
                    runs[variant].append(r)
                    print(
                        f"{package} {variant} #{i}: {r['times']['total'][0]:.1f} s wall,"
                        f" {r['times']['total'][1]:.1f} s CPU (load {r['load']:.1f})",
                        file=sys.stderr,
                    )
            for variant in variants:
                for i, r in enumerate(runs[variant]):
                    out = work / f"{package}-{variant.replace(', ', '-')}-{i}"
                    floor = variant.startswith("floor")
                    r["identical_to_new_cold"] = (
                        None if floor else _same(out, reference) if reference.exists() else None
                    )
                    shutil.rmtree(out, ignore_errors=True)
            report["runs"][package] = runs
    finally:
        report["load_after"] = os.getloadavg()
        shutil.rmtree(work, ignore_errors=True)
    _print_table(report)
    text = json.dumps(report, indent=1, sort_keys=True)
    if a.json:
        Path(a.json).write_text(text + "\n")
    print(text)
    return 0


def _print_table(report: dict[str, Any]) -> None:
    for package, runs in report["runs"].items():
        variants = list(runs)
        print(
            f"\n{package}: median (min-max) of {report['repeat']} runs each, alternated;"
            f" wall s / CPU s (process + waited children)"
        )
        print("| phase | " + " | ".join(variants) + " |")
        print("|---|" + "---|" * len(variants))
        for phase in PHASES:
            cells = []
            for v in variants:
                walls = [r["times"].get(phase, [0.0, 0.0])[0] for r in runs[v]]
                cpus = [r["times"].get(phase, [0.0, 0.0])[1] for r in runs[v]]
                cells.append(
                    f"{statistics.median(walls):.1f} ({min(walls):.1f}-{max(walls):.1f}) /"
                    f" {statistics.median(cpus):.1f} ({min(cpus):.1f}-{max(cpus):.1f})"
                )
            print(f"| {phase} | " + " | ".join(cells) + " |")
        same = {v: [r["identical_to_new_cold"] for r in runs[v]] for v in variants}
        print(
            "| output identical to the first new, cold run | "
            + " | ".join(", ".join("-" if s is None else "yes" if s else "no" for s in same[v]) for v in variants)
            + " |"
        )
        floors = [
            max(i["times"]["total"][0], s["times"]["total"][0])
            for i, s in zip(runs["floor: import"], runs["floor: stubgen"], strict=True)
        ]
        first = [r["times"]["total"][0] / f for r, f in zip(runs["new, cold"], floors, strict=True)]
        print(f"new, cold / the slower floor of its round, wall: {', '.join(f'{x:.2f}' for x in first)}")
        if "baseline" not in runs:
            continue
        base_total = statistics.median(r["times"]["total"][1] for r in runs["baseline"])
        for v in [v for v in variants[1:] if not v.startswith("floor")]:
            ratio = [
                r["times"]["total"][1] / b["times"]["total"][1] for r, b in zip(runs[v], runs["baseline"], strict=True)
            ]
            wall = [
                r["times"]["total"][0] / b["times"]["total"][0] for r, b in zip(runs[v], runs["baseline"], strict=True)
            ]
            print(
                f"{v} / baseline, same round: CPU {', '.join(f'{x:.2f}' for x in ratio)};"
                f" wall {', '.join(f'{x:.2f}' for x in wall)} (baseline median CPU {base_total:.1f} s)"
            )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--floor":
        _floor(sys.argv[2], sys.argv[3], sys.argv[4:])
    if len(sys.argv) > 1 and sys.argv[1] == "--drive":
        _drive(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
        sys.exit(0)
    sys.exit(main())
