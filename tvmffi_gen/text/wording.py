"""How the command's messages spell a count: ``1 module``, ``2 modules`` (shared by the package
and the stubs runs, so both summaries read alike)."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, one: str, many: str = "") -> str:
    """``n`` with its noun in the right number; ``many`` for a plural that is not ``one + "s"``."""
    return f"{n} {one if n == 1 else (many or one + 's')}"
