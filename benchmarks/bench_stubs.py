"""Time ``tvmffi-gen --stubs-for PKG``, by phase, beside what it cannot be faster than.

    python benchmarks/bench_stubs.py [--baseline-rev REV] [--repeat 3] [--package tvm] [--json F]

For each package (``tvm`` with ``--project --exclude tvm.s_tir.meta_schedule.testing`` when
apache-tvm is installed, and ``tvm_ffi``), runs, alternately and ``--repeat`` times each, each in
a fresh process timed from outside (wall, and CPU of it and its children: what a user waits for,
the interpreter's start and exit included):

* ``baseline``: the generator of ``--baseline-rev`` (exported with ``git archive``), as it was;
* ``new, cold``: this checkout with its cache off (``TVMFFI_GEN_NO_CACHE=1``): a first run;
* ``new, warm``: this checkout with a cache filled by an untimed run before: a rerun;
* ``floor: import``: importing PKG and every module a first run imports, in one process
  (``importing.import_all`` over ``module_files``, what the child does before reading facts);
* ``floor: stubgen``: mypy's stubgen over the same modules, the process ending once the stubs
  are written (``stubgen.python_stubs``, uncached);
* ``stubgen command``: the same as mypy's ``stubgen`` command runs it, which then frees what it
  built before exiting (seconds for tvm).

The two floors are what a first run must do and does not own (it runs them at once, in two
processes); the table ends with each first run's wall time over the slower floor of its round,
and over the ``stubgen`` command of its round.

The generator's runs time their phases by wrapping the functions ``build_stubs`` calls: when
each starts and ends, in seconds from the process's start (the import of PKG in the child and
stubgen run at once, in two threads of the parent waiting for two processes), and the total of
``run_stubs``. Every run's files are compared byte for byte with the first ``new, cold`` run's.
Prints a table (medians, with min-max) and writes the JSON of every run.
"""

from __future__ import annotations

import argparse
import atexit
import filecmp
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PHASES = ["import (child)", "stubgen", "libcst rewrite", "mypy self-check", "run_stubs"]


def _since_start() -> float:
    """Seconds since this process started (Linux; else since the driver started)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            started = float(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime", encoding="ascii") as f:
            return float(f.read().split()[0]) - started
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _T0


_T0 = time.perf_counter()


def _drive(src: str, package: str, out: str, args: list[str]) -> None:
    """In a fresh process: run ``run_stubs`` of the tree ``src`` with its phases timed, print the
    JSON, and end as the ``tvmffi-gen`` command does."""
    sys.path.insert(0, src)
    try:
        from tvmffi_gen.stubs import pipeline
    except ImportError:  # a revision before stubs/build.py was named pipeline.py
        from tvmffi_gen.stubs import build as pipeline  # type: ignore[no-redef, attr-defined]

    spans: dict[str, list[float]] = {}  # phase -> [start, end], from the process's start

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            begin = _since_start()
            try:
                return fn(*a, **k)
            finally:
                span = spans.setdefault(name, [begin, begin])
                span[1] = _since_start()

        return wrapper

    setattr(pipeline, "take_collection", timed("import (child)", getattr(pipeline, "take_collection")))
    setattr(pipeline, "silence_own_errors", timed("mypy self-check", getattr(pipeline, "silence_own_errors")))
    try:
        from tvmffi_gen.stubs import cache
    except ImportError:  # a revision before the cache
        stubs_class = getattr(pipeline, "PythonStubs")
        stubs_class.result = timed("stubgen", stubs_class.result)
        setattr(pipeline, "augment", timed("libcst rewrite", getattr(pipeline, "augment")))
    else:
        cache.CachedPythonStubs.result = timed("stubgen", cache.CachedPythonStubs.result)  # type: ignore[method-assign]
        if hasattr(pipeline, "cached_augment"):  # imported by name: replaced where the pipeline reads it
            setattr(pipeline, "cached_augment", timed("libcst rewrite", getattr(pipeline, "cached_augment")))
        else:  # a revision calling it as ``cache.cached_augment``
            cache.cached_augment = timed("libcst rewrite", cache.cached_augment)
    from tvmffi_gen.stubs import run_stubs

    notes: list[str] = []
    run = timed("run_stubs", run_stubs)
    project = "--project" in args
    exclude = [args[i + 1] for i, a in enumerate(args) if a == "--exclude"]
    code = run(package, out, exclude, [], project, False, 600.0, notes.append, lambda m: None)
    print(json.dumps({"code": code, "spans": spans, "info": notes}))
    atexit._run_exitfuncs()
    sys.stdout.flush()
    os._exit(0)  # as ``cli.run`` ends the command (a revision before it paid the teardown)


def _floor(kind: str, package: str, args: list[str]) -> None:
    """In a fresh process: one floor of a first run (see the module's doc); JSON on stdout."""
    sys.path.insert(0, str(ROOT))
    from tvmffi_gen.stubs.child_run import modules_on_disk

    exclude = [args[i + 1] for i, a in enumerate(args) if a == "--exclude"]
    files = modules_on_disk(package, exclude) or {}
    if kind == "import":
        from tvmffi_gen.stubs.importing import import_all, quick_getmodule

        quick_getmodule()
        ok, _ = import_all(package, files, {})
        info = [f"{len(ok)} modules"]
    elif kind == "stubgen":
        from tvmffi_gen.stubs.stubgen import python_stubs

        info = [f"{len(python_stubs(files))} modules"]
    else:  # mypy's own command, over the sources python_stubs gives it
        with tempfile.TemporaryDirectory() as tmp:
            sources = sorted(p for p in files.values() if p.endswith(".py"))
            run = "import sys; from mypy.stubgen import main; sys.exit(main())"  # the stubgen script
            cmd = [sys.executable, "-c", run, "--no-import", "--include-private", "-q", "-o", tmp]
            subprocess.run([*cmd, *sources], check=True, stdin=subprocess.DEVNULL)
        info = [f"{len(sources)} sources"]
    print(json.dumps({"code": 0, "info": info}))
    sys.stdout.flush()
    os._exit(0)  # skip the package's atexit handlers


def _run(src: Path, package: str, out: Path, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One variant's run in a fresh process, its wall and CPU (its own and its children's)
    measured from here."""
    env = {**env, "PYTHONPATH": str(src)}  # the tree under test, for the driver and the importing child
    out.mkdir(parents=True, exist_ok=True)
    floor = env.get("BENCH_STUBS_FLOOR")
    driver = ["--floor", floor, package] if floor else ["--drive", str(src), package, str(out)]
    before, w0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, *driver, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=out.parent,
    )
    wall, after = time.perf_counter() - w0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{src} --stubs-for {package} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    result["command"] = [wall, cpu]
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
    variants["stubgen command"] = (ROOT, {**env0, "BENCH_STUBS_FLOOR": "command"})
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
                        f"{package} {variant} #{i}: {r['command'][0]:.1f} s wall,"
                        f" {r['command'][1]:.1f} s CPU (load {r['load']:.1f})",
                        file=sys.stderr,
                    )
            for variant in variants:
                for i, r in enumerate(runs[variant]):
                    out = work / f"{package}-{variant.replace(', ', '-')}-{i}"
                    floor = "floor" in variant or "command" in variant
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


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def _print_table(report: dict[str, Any]) -> None:
    for package, runs in report["runs"].items():
        variants = list(runs)
        print(f"\n{package}: median (min-max) of {report['repeat']} runs each, alternated")
        print("| run | wall s | CPU s (with its children) | output identical to the first new, cold run |")
        print("|---|---|---|---|")
        for v in variants:
            walls = [r["command"][0] for r in runs[v]]
            cpus = [r["command"][1] for r in runs[v]]
            same = [r["identical_to_new_cold"] for r in runs[v]]
            shown = ", ".join("-" if x is None else "yes" if x else "no" for x in same)
            print(f"| {v} | {_median(walls)} | {_median(cpus)} | {shown} |")
        for v in [v for v in variants if "spans" in runs[v][0]]:
            print(f"\n{v}: each phase's start and end, s from the process's start")
            print("| phase | starts | ends | takes |")
            print("|---|---|---|---|")
            for phase in PHASES:
                spans = [r["spans"][phase] for r in runs[v] if phase in r["spans"]]
                if spans:
                    begin, end = [s[0] for s in spans], [s[1] for s in spans]
                    took = [s[1] - s[0] for s in spans]
                    print(f"| {phase} | {_median(begin)} | {_median(end)} | {_median(took)} |")
        floors = [
            max(i["command"][0], s["command"][0])
            for i, s in zip(runs["floor: import"], runs["floor: stubgen"], strict=True)
        ]
        first = [r["command"][0] for r in runs["new, cold"]]
        command = [r["command"][0] for r in runs["stubgen command"]]
        for name, against in (("the slower floor", floors), ("the stubgen command", command)):
            ratios = ", ".join(f"{x / y:.2f}" for x, y in zip(first, against, strict=True))
            print(f"new, cold / {name} of its round, wall: {ratios}")
        if "baseline" not in runs:
            continue
        for v in ("new, cold", "new, warm"):
            ratio = [r["command"][0] / b["command"][0] for r, b in zip(runs[v], runs["baseline"], strict=True)]
            print(f"{v} / baseline, same round, wall: {', '.join(f'{x:.2f}' for x in ratio)}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--floor":
        _floor(sys.argv[2], sys.argv[3], sys.argv[4:])
    if len(sys.argv) > 1 and sys.argv[1] == "--drive":
        _drive(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
        sys.exit(0)
    sys.exit(main())
