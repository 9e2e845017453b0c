"""basedpyright (basic mode) over Python code that ships inside apache-tvm, with and without the
stubs ``tvmffi-gen --stubs-for tvm`` writes.

    python benchmarks/pyright_tvm.py [--stubs OUT] [--work DIR] [--only PATH]... [--keep-checked-stubs]
                                      [--json out.json [--all-errors]]

Steps:

  1. the stubs: ``tvmffi-gen --stubs-for tvm -o OUT --project --exclude tvm.s_tir.meta_schedule.testing``
     into ``WORK/stubs`` (skipped with ``--stubs OUT``, an earlier run's OUT);
  2. a copy of the installed ``tvm`` package's Python files in ``WORK/site/tvm``, and of the stub
     package in ``WORK/stubs-site/tvm-stubs`` without the stubs of the checked subpackages
     (``tvm/topi/``, ``tvm/relax/frontend/``; ``py.typed`` says ``partial``): the checked code is
     then seen as a user's own code is, every import of it (``from ..nn import Module``,
     ``import tvm.relax.frontend.nn``, ``tvm.topi`` as an attribute of the stubbed ``tvm``) naming
     the checked file itself, while the rest of ``tvm`` resolves to the stubs. With
     ``--keep-checked-stubs`` the stubs keep them (absolute imports of the checked modules then
     name their stubs while relative ones name the files: two declarations of each class);
  3. basedpyright in basic mode over ``WORK/site/tvm/topi`` and ``WORK/site/tvm/relax/frontend``
     (or the files ``--only`` names, relative to ``tvm/``) twice, both folders reached by
     ``PYTHONPATH`` as site-packages are: without the stubs (``WORK/site``) and with them
     (``WORK/stubs-site`` before it, where pyright finds ``tvm-stubs`` as after ``pip install OUT``);
  4. prints the error counts per rule for both runs, and the errors the stubs add: each
     ``(file, line, rule)`` of the run with the stubs beyond the count of that triple in the run
     without them, with its message, as a table; ``--json`` writes them (``--all-errors``: and every
     error of both runs).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CHECKED = ("topi", "relax/frontend")


def _installed_tvm() -> Path:
    out = subprocess.run(
        [sys.executable, "-c", "import importlib.util as u; print(u.find_spec('tvm').origin)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return Path(out).parent


def _version(cmd: list[str]) -> str:
    return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0].strip()


def make_stubs(out: Path) -> float:
    start = time.perf_counter()
    cmd = [
        sys.executable,
        "-m",
        "tvmffi_gen",
        "--stubs-for",
        "tvm",
        "-o",
        str(out),
        "--project",
        "--exclude",
        "tvm.s_tir.meta_schedule.testing",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"tvmffi-gen --stubs-for tvm failed:\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def copy_package(tvm: Path, site: Path) -> None:
    """The Python files of the installed ``tvm`` in ``site/tvm``."""
    if site.exists():
        shutil.rmtree(site)
    for f in sorted(tvm.rglob("*.py*")):
        if f.suffix in (".py", ".pyi") and "__pycache__" not in f.parts:
            dest = site / "tvm" / f.relative_to(tvm)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest)


def copy_stubs(stubs: Path, site: Path, keep_checked: bool) -> None:
    """``stubs/tvm-stubs`` in ``site``, without the checked subpackages unless ``keep_checked``."""
    if site.exists():
        shutil.rmtree(site)
    shutil.copytree(stubs / "tvm-stubs", site / "tvm-stubs")
    if not keep_checked:
        for rel in CHECKED:
            shutil.rmtree(site / "tvm-stubs" / rel)
        (site / "tvm-stubs" / "py.typed").write_text("partial\n")


def run_pyright(work: Path, files: list[str], pythonpath: list[Path], base: Path) -> tuple[list[dict[str, Any]], float]:
    """The errors basedpyright reports (file relative to ``base``, line, rule, first message line)."""
    config = {"typeCheckingMode": "basic", "pythonVersion": f"{sys.version_info.major}.{sys.version_info.minor}"}
    (work / "pyrightconfig.json").write_text(json.dumps(config, indent=1) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(map(str, pythonpath))
    start = time.perf_counter()
    proc = subprocess.run(["basedpyright", "--outputjson", *files], capture_output=True, text=True, cwd=work, env=env)
    elapsed = time.perf_counter() - start
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(
            f"basedpyright gave no JSON report (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        ) from None
    errors = []
    for d in report["generalDiagnostics"]:
        if d["severity"] != "error":
            continue
        errors.append(
            {
                "file": str(Path(d["file"]).resolve().relative_to(base)),
                "line": d["range"]["start"]["line"] + 1,
                "rule": d.get("rule", "(none)"),
                "message": d["message"].splitlines()[0],
            }
        )
    return errors, elapsed


def added_errors(without: list[dict[str, Any]], with_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The errors of ``with_`` whose (file, line, rule) occurs more often than in ``without``."""
    left = collections.Counter((e["file"], e["line"], e["rule"]) for e in without)
    out = []
    for e in with_:
        k = (e["file"], e["line"], e["rule"])
        if left[k] > 0:
            left[k] -= 1
        else:
            out.append({**e, "line_had_errors": any((w["file"], w["line"]) == (e["file"], e["line"]) for w in without)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--stubs", type=Path, help="an earlier OUT of --stubs-for tvm (default: generate one)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/pyright_tvm"), help="working folder")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        help="check only this file or folder (relative to tvm/, e.g. relax/frontend/nn/core.py)",
    )
    ap.add_argument(
        "--keep-checked-stubs",
        action="store_true",
        help="keep the stubs of the checked subpackages (their classes then have two declarations)",
    )
    ap.add_argument("--json", type=Path, help="write the counts and the added errors here")
    ap.add_argument("--all-errors", action="store_true", help="--json also lists every error of both runs")
    args = ap.parse_args(argv)
    if shutil.which("basedpyright") is None:
        raise SystemExit("basedpyright is not installed (pip install basedpyright)")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    stubs = args.stubs.resolve() if args.stubs else work / "stubs"
    if args.stubs is None:
        print(f"stubs generated in {make_stubs(stubs):.1f} s", flush=True)
    if not (stubs / "tvm-stubs").is_dir():
        raise SystemExit(f"{stubs}: no tvm-stubs folder in it")
    site, stubs_site = work / "site", work / "stubs-site"
    copy_package(_installed_tvm(), site)
    copy_stubs(stubs, stubs_site, args.keep_checked_stubs)
    base = (site / "tvm").resolve()
    files = [str(base / p) for p in (args.only or CHECKED)]
    for f in files:
        if not Path(f).exists():
            raise SystemExit(f"--only {Path(f).relative_to(base)}: no such file or folder in tvm")
    n_files = sum(1 for f in map(Path, files) for _ in ([f] if f.is_file() else f.rglob("*.py")))
    without, t0 = run_pyright(work, files, [site], base)
    with_, t1 = run_pyright(work, files, [stubs_site, site], base)
    print(f"basedpyright over {n_files} files: {t0:.0f} s without the stubs, {t1:.0f} s with them\n")
    c0 = collections.Counter(e["rule"] for e in without)
    c1 = collections.Counter(e["rule"] for e in with_)
    rules = sorted(set(c0) | set(c1), key=lambda r: (-c0[r], r))
    added = added_errors(without, with_)
    new = collections.Counter(a["rule"] for a in added)
    print("| rule | without stubs | with stubs | gone | new |\n|---|---:|---:|---:|---:|")
    print(f"| all errors | {len(without)} | {len(with_)} | {len(without) - len(with_) + len(added)} | {len(added)} |")
    for r in rules:
        print(f"| {r} | {c0[r]} | {c1[r]} | {c0[r] - c1[r] + new[r]} | {new[r]} |")
    removed = len(without) - (len(with_) - len(added))
    print(
        f"\n{removed} errors removed, {len(added)} added "
        f"({sum(not a['line_had_errors'] for a in added)} on lines with no error without the stubs)"
    )
    if added:
        print("\n| file | line | rule | message |\n|---|---:|---|---|")
        for a in sorted(added, key=lambda a: (a["file"], a["line"], a["rule"])):
            print(f"| {a['file']} | {a['line']} | {a['rule']} | {a['message'][:160]} |")
    if args.json:
        report: dict[str, Any] = {
            "setup": "checked stubs kept" if args.keep_checked_stubs else "checked code as the user's own",
            "basedpyright": _version(["basedpyright", "--version"]),
            "files": n_files,
            "without": dict(c0),
            "with": dict(c1),
            "total_without": len(without),
            "total_with": len(with_),
            "removed": removed,
            "added": added,
        }
        if args.all_errors:
            report.update(errors_without=without, errors_with=with_)
        args.json.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
