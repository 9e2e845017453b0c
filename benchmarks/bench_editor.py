"""Completion latency in the four language servers: ours beside the peer (issue 35).

For each server and each side (the package generated for ``libtvm_ffi_testing.so`` and
``tvm_ffi.testing``'s hand-written classes; with ``--tvm``, ``tvm`` with the stubs
``--stubs-for tvm`` writes and ``tvm`` alone), in a user's folder outside the repository:

- **cold**: a fresh server process, from its start to the answer of the first completion after
  ``pair.`` (``x.`` for tvm): what a user waits for after opening the file;
- **warm**: the same completion again after the file changed (a new version with the same text, as
  a keystroke sends it), the median of ``--repeat`` requests.

The sides alternate within each round (ours, then the peer, per server), and each ratio is the
median over ``--rounds`` rounds of ours ÷ the peer (the machine is noisy). Prints a table and
writes ``benchmarks/results_editor.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "editor")]

from editor_checks import Spot  # noqa: E402
from editor_workspace import Side, generated_sides, tvm_installed, tvm_sides  # noqa: E402
from lsp_answers import completion_items  # noqa: E402
from lsp_client import SERVERS, LanguageServer  # noqa: E402

#: Where each subject's completion is asked, and a member it must offer (a check that the answer
#: timed is the real one, not an empty list of a server still loading).
SPOTS = {"generated package": (Spot("first = pair."), "sum"), "tvm with stubs": (Spot("label = x."), "astype")}


def complete(server: LanguageServer, side: Side, spot: Spot, member: str) -> float:
    """Seconds one completion at ``spot`` takes, after (re)sending the file; fails unless the
    answer offers ``member``."""
    uri = server.open(side.program)
    line, character = spot.position(side.program.read_text())
    start = time.perf_counter()
    answer = server.at("completion", uri, line, character)
    seconds = time.perf_counter() - start
    labels = {item.label.split("(")[0] for item in completion_items(answer)}
    if member not in labels:
        raise RuntimeError(f"{server.name}: completion at {spot.needle!r} in {side.program} offers no {member!r}")
    return seconds


def measure(server_name: str, side: Side, spot: Spot, member: str, repeat: int) -> tuple[float, float]:
    """(cold, warm) seconds of one fresh server on one side."""
    server = LanguageServer(server_name, side.program.parent, side.python_path)
    try:
        complete(server, side, spot, member)
        cold = time.perf_counter() - server.started
        warm = statistics.median(complete(server, side, spot, member) for _ in range(repeat))
    finally:
        server.close()
    return cold, warm


def run(args: argparse.Namespace, base: Path) -> dict[str, object]:
    subjects = [("generated package", generated_sides(base / "testing"))]
    if args.tvm:
        if not tvm_installed():
            raise SystemExit("--tvm: apache-tvm is not installed")
        subjects.append(("tvm with stubs", tvm_sides(base / "tvm")))
    rows = []
    print(HEADER)
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for subject, sides in subjects:
        spot, member = SPOTS[subject]
        for server in args.servers:
            samples: dict[str, list[tuple[float, float]]] = {"ours": [], "peer": []}
            for _ in range(args.rounds):
                for side in sides:
                    samples[side.name].append(measure(server, side, spot, member, args.repeat))
            rows.append(row(subject, server, samples))
            print_row(rows[-1])
    return {"rounds": args.rounds, "repeat": args.repeat, "rows": rows}


def row(subject: str, server: str, samples: dict[str, list[tuple[float, float]]]) -> dict[str, object]:
    """Medians of each side's cold and warm seconds, and the median of the per-round ratios."""
    ours, peer = samples["ours"], samples["peer"]
    return {
        "subject": subject,
        "server": server,
        "cold_ours_s": statistics.median(c for c, _ in ours),
        "cold_peer_s": statistics.median(c for c, _ in peer),
        "cold_ratio": statistics.median(o[0] / p[0] for o, p in zip(ours, peer, strict=True)),
        "warm_ours_ms": 1000 * statistics.median(w for _, w in ours),
        "warm_peer_ms": 1000 * statistics.median(w for _, w in peer),
        "warm_ratio": statistics.median(o[1] / p[1] for o, p in zip(ours, peer, strict=True)),
    }


HEADER = (
    "| subject | server | cold ours (s) | cold peer (s) | ours ÷ peer | warm ours (ms) | warm peer (ms) | ours ÷ peer |"
)


def print_row(r: dict[str, object]) -> None:
    print(
        f"| {r['subject']} | {r['server']} | {r['cold_ours_s']:.2f} | {r['cold_peer_s']:.2f} | {r['cold_ratio']:.2f} "
        f"| {r['warm_ours_ms']:.0f} | {r['warm_peer_ms']:.0f} | {r['warm_ratio']:.2f} |",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="measurements of the whole table (median ratio)")
    parser.add_argument("--repeat", type=int, default=5, help="warm completions per measurement (median)")
    parser.add_argument("--servers", nargs="*", default=list(SERVERS), choices=list(SERVERS))
    parser.add_argument("--tvm", action="store_true", help="also tvm with its stubs beside tvm alone")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results_editor.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-editor-") as folder:
        results = run(args, Path(folder))
    args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
