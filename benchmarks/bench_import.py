"""Import cost in a fresh interpreter: ``tvmffi_runtime`` vs ``tvm_ffi`` vs bare ``ctypes``, and
a generated package (root import only, then touching one namespace).

    python benchmarks/bench_import.py [--runs 7] [--package DIR/NAME --namespace NS] [--json out.json]

Each case runs ``python -c <stmt>`` ``--runs`` times and reports the median wall time minus the
median of ``python -c pass`` (the interpreter's own start-up).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(stmt: str, runs: int, pythonpath: list[str]) -> float:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*pythonpath, env.get("PYTHONPATH", "")])
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", stmt], check=True, env=env)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--package", type=Path, help="a generated package folder")
    parser.add_argument("--namespace", help="a namespace of --package to touch after importing it")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    paths = [str(ROOT / "runtime"), str(ROOT / "generated")]
    base = timed("pass", args.runs, paths)
    cases = [
        ("import ctypes", "import ctypes"),
        ("import tvmffi_runtime", "import tvmffi_runtime"),
        ("import tvm_ffi", "import tvm_ffi"),
        ("import tvmffi_testing (generated)", "import tvmffi_testing"),
        ("... and touch tvmffi_testing.testing", "import tvmffi_testing.testing"),
    ]
    if args.package:
        paths.insert(0, str(args.package.parent))
        name = args.package.name
        cases.append((f"import {name} (generated)", f"import {name}"))
        if args.namespace:
            cases.append((f"... and touch {name}.{args.namespace}", f"import {name}.{args.namespace}"))
    rows = []
    for label, stmt in cases:
        t = timed(stmt, args.runs, paths) - base
        rows.append({"case": label, "ms": t * 1000})
    width = max(len(r["case"]) for r in rows)
    print(f"python start-up: {base * 1000:.1f} ms (subtracted below)")
    for r in rows:
        print(f"{r['case']:<{width}}  {r['ms']:8.1f} ms")
    by = {r["case"]: r["ms"] for r in rows}
    ratio = by["import tvmffi_runtime"] / by["import tvm_ffi"]
    print(f"tvmffi_runtime / tvm_ffi import time: {ratio:.2f}")
    if args.json:
        args.json.write_text(
            json.dumps({"startup_ms": base * 1000, "rows": rows, "runtime_over_tvm_ffi": ratio}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
