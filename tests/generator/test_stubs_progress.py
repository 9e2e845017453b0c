"""``--stubs-for``'s progress line on a terminal and its warnings about modules not covered."""

from __future__ import annotations

import io

from tvmffi_gen.registry.facts import run_child
from tvmffi_gen.stubs import not_covered
from tvmffi_gen.stubs.importing import PACKAGE_FAILED
from tvmffi_gen.stubs.progress import PROGRESS_MARK, Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_phase_and_count_are_shown_in_place_on_a_terminal_only() -> None:
    term = _Terminal()
    shown = Progress(stream=term)
    shown.show("importing tvm")
    assert shown.child_line(f"{PROGRESS_MARK}3/878 tvm\n")
    assert not shown.child_line("a line the package printed\n")
    shown.clear()
    assert term.getvalue() == (
        "\rimporting tvm"
        + "\rimporting tvm (modules): 3/878"
        + "\r"
        + " " * len("importing tvm (modules): 3/878")
        + "\r"
    )
    piped = io.StringIO()  # not a terminal: nothing
    quiet = Progress(stream=piped)
    quiet.show("importing tvm")
    assert quiet.child_line(f"{PROGRESS_MARK}3/878 tvm\n")  # still not kept with the child's output
    quiet.clear()
    assert piped.getvalue() == ""
    silenced = _Terminal()  # -q
    Progress(enabled=False, stream=silenced).show("importing tvm")
    assert silenced.getvalue() == ""


def test_a_child_s_stderr_lines_are_read_as_they_come_and_the_reported_ones_dropped() -> None:
    seen: list[str] = []

    def on_line(line: str) -> bool:
        seen.append(line)
        return "Errno" in line

    proc = run_child("py_compile", ["/nonexistent/x.py"], 60, on_line)
    assert proc.returncode == 1 and seen and any("Errno" in ln for ln in seen)
    assert "Errno" not in proc.stderr and proc.stderr == "".join(ln for ln in seen if "Errno" not in ln)


def test_one_warning_per_failed_package_with_what_is_under_it_counted() -> None:
    failed = {
        "pkg.a": "ModuleNotFoundError: No module named 'scipy'",
        "pkg.a.x": PACKAGE_FAILED,
        "pkg.a.y": PACKAGE_FAILED,
        "pkg.a.y.z": PACKAGE_FAILED,
        "pkg.tool": "it exits at import",
    }
    assert not_covered(failed) == {
        "pkg.a": ("ModuleNotFoundError: No module named 'scipy'", 3),
        "pkg.tool": ("it exits at import", 0),
    }
