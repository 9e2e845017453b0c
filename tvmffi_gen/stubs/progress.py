"""Progress of ``--stubs-for`` on a terminal: one line on stderr, rewritten in place, with the
phase and, where it has one, a count (``importing tvm: 312/878 modules``); nothing when stderr is
not a terminal or the run is quiet (``-q``), so logs and pipes get the warnings and the summary
only.

The importing child reports each module it is about to import as a line of stderr starting
with ``PROGRESS_MARK`` (``child.py``), which the parent reads as it comes (``child_run.py``)
and does not keep with what the package printed.
"""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["Progress", "PROGRESS_MARK"]

PROGRESS_MARK = "\x1f tvmffi-gen progress "


class Progress:
    """Shows the current phase on ``stream`` when it is a terminal and ``enabled``."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and self.stream.isatty()
        self._width = 0

    def show(self, phase: str, done: int | None = None, total: int | None = None) -> None:
        """``phase`` (with ``done/total`` when given) in place of what was shown."""
        if not self.enabled:
            return
        text = phase if done is None or total is None else f"{phase}: {done}/{total}"
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def child_line(self, line: str) -> bool:
        """Whether ``line`` (of the importing child's stderr) was a progress report; shown if so."""
        if not line.startswith(PROGRESS_MARK):
            return False
        done, _, rest = line[len(PROGRESS_MARK) :].partition("/")
        total, _, package = rest.partition(" ")
        if done.isdigit() and total.isdigit():
            self.show(f"importing {package.strip()} (modules)", int(done), int(total))
        return True

    def clear(self) -> None:
        """Erase the line (before the warnings and the summary are printed)."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
